#include "models/tpu/tpu_chip.h"

#include <fmt/format.h>
#include <chrono>
#include "base/error.h"
#include "sim/systemc/kernel.h"

namespace mimic::models::tpu {

using sim::systemc::MemoryTarget;
using sim::systemc::MemoryTargetSpec;

namespace {

MemoryTargetSpec target_spec(const MemorySpec& m, uint64_t capacity, uint64_t bytes_per_s) {
  MemoryTargetSpec t;
  t.capacity_bytes = capacity;
  t.bytes_per_s = bytes_per_s;
  t.latency_cycles = m.latency_cycles;
  t.min_access_bytes = m.min_access_bytes;
  return t;
}

// The host's memory is not modeled: its link accepts any address.
constexpr uint64_t kHostAddressSpace = 1ull << 48;

}  // namespace

struct TpuChip::Core {
  std::unique_ptr<MemoryTarget> onchip;
  std::unique_ptr<Sequencer> sequencer;
  std::vector<std::unique_ptr<DmaEngine>> dma;
  std::vector<std::unique_ptr<MatrixUnit>> mxu;
  std::unique_ptr<VectorUnit> vpu;
  std::unique_ptr<SyncUnit> sync;
};

TpuChip::TpuChip(sc_core::sc_module_name name, const TpuSpec& spec)
    : sc_module(name), spec_(spec), clock_("core", sim::Clock{spec.clock_hz}) {
  validate(spec_);
  if (sim::systemc::elaborated())
    throw RuntimeError("TpuChip: the SystemC design is already elaborated (one chip per process)");
  sim::systemc::set_global_quantum_ps(clock_.to_time(sim::Cycles(spec_.quantum_cycles)).value());
  host_link_ = std::make_unique<MemoryTarget>(
      spec_.host_link.name.c_str(), clock_,
      target_spec(spec_.host_link, kHostAddressSpace, spec_.host_link.bytes_per_s));
  if (spec_.offchip.bytes > 0) {
    int64_t parts = spec_.offchip_per_core ? spec_.cores : 1;
    for (int64_t i = 0; i < parts; ++i) {
      std::string n =
          parts > 1 ? fmt::format("core{}_{}", i, spec_.offchip.name) : spec_.offchip.name;
      offchip_.push_back(
          std::make_unique<MemoryTarget>(n.c_str(), clock_,
                                         target_spec(spec_.offchip, spec_.offchip.bytes / parts,
                                                     spec_.offchip.bytes_per_s / parts)));
    }
  }
  host_dma_ = std::make_unique<DmaEngine>("host_dma", ctx_, clock_, 0, spec_.dma, spec_.cores);
  units_.push_back(host_dma_.get());
  host_dma_->host_read.initiator_socket.bind(host_link_->target_socket);
  host_dma_->host_write.initiator_socket.bind(host_link_->target_socket);
  MemoryTarget* shared_offchip = offchip_.empty() ? host_link_.get() : offchip_[0].get();
  host_dma_->offchip_read.initiator_socket.bind(shared_offchip->target_socket);
  host_dma_->offchip_write.initiator_socket.bind(shared_offchip->target_socket);
  for (int64_t c = 0; c < spec_.cores; ++c) {
    auto core = std::make_unique<Core>();
    std::string prefix = fmt::format("core{}_", c);
    MemoryTarget* offchip =
        offchip_.empty() ? host_link_.get() : offchip_[spec_.offchip_per_core ? c : 0].get();
    core->onchip = std::make_unique<MemoryTarget>(
        (prefix + spec_.onchip.name).c_str(), clock_,
        target_spec(spec_.onchip, spec_.onchip.bytes, spec_.onchip.bytes_per_s));
    host_dma_->onchip_read[c]->initiator_socket.bind(core->onchip->target_socket);
    host_dma_->onchip_write[c]->initiator_socket.bind(core->onchip->target_socket);
    core->sequencer = std::make_unique<Sequencer>((prefix + "sequencer").c_str(), ctx_);
    for (int64_t e = 0; e < spec_.dma.engines_per_core; ++e) {
      auto dma =
          std::make_unique<DmaEngine>(fmt::format("{}dma{}", prefix, e).c_str(), ctx_, clock_,
                                      static_cast<int32_t>(units_.size()), spec_.dma, 1);
      units_.push_back(dma.get());
      dma->host_read.initiator_socket.bind(host_link_->target_socket);
      dma->host_write.initiator_socket.bind(host_link_->target_socket);
      dma->offchip_read.initiator_socket.bind(offchip->target_socket);
      dma->offchip_write.initiator_socket.bind(offchip->target_socket);
      dma->onchip_read[0]->initiator_socket.bind(core->onchip->target_socket);
      dma->onchip_write[0]->initiator_socket.bind(core->onchip->target_socket);
      core->sequencer->dma.push_back(dma.get());
      core->dma.push_back(std::move(dma));
    }
    for (int64_t m = 0; m < spec_.mxu.per_core; ++m) {
      auto mxu =
          std::make_unique<MatrixUnit>(fmt::format("{}mxu{}", prefix, m).c_str(), ctx_, clock_,
                                       static_cast<int32_t>(units_.size()), spec_, c, m);
      units_.push_back(mxu.get());
      mxu->weight_onchip.initiator_socket.bind(core->onchip->target_socket);
      mxu->weight_offchip.initiator_socket.bind(offchip->target_socket);
      mxu->weight_host.initiator_socket.bind(host_link_->target_socket);
      core->sequencer->mxu.push_back(mxu.get());
      core->mxu.push_back(std::move(mxu));
    }
    core->vpu = std::make_unique<VectorUnit>((prefix + "vpu").c_str(), ctx_, clock_,
                                             static_cast<int32_t>(units_.size()), spec_.vpu);
    units_.push_back(core->vpu.get());
    core->sync = std::make_unique<SyncUnit>((prefix + "sync").c_str(), ctx_, clock_,
                                            static_cast<int32_t>(units_.size()));
    units_.push_back(core->sync.get());
    core->sequencer->vpu = core->vpu.get();
    core->sequencer->sync = core->sync.get();
    core->sequencer->host_dma = host_dma_.get();
    cores_.push_back(std::move(core));
  }
}

TpuChip::~TpuChip() = default;

void TpuChip::check(const Program& p) const {
  for (size_t i = 0; i < p.instructions.size(); ++i) {
    const Instruction& in = p.instructions[i];
    if (in.core >= spec_.cores)
      throw RuntimeError(fmt::format("program: instruction {} runs on core {}, the chip has {}", i,
                                     in.core, spec_.cores));
    if (in.dep_begin + static_cast<uint64_t>(in.dep_count) > p.deps.size())
      throw RuntimeError(fmt::format("program: instruction {} has dependencies out of range", i));
    for (uint32_t d = in.dep_begin; d < in.dep_begin + in.dep_count; ++d)
      if (p.deps[d] >= i)
        throw RuntimeError(
            fmt::format("program: instruction {} depends on later instruction {}", i, p.deps[d]));
    if (in.opcode == Opcode::dma && (in.src == Level::host || in.dst == Level::host) &&
        in.core != 0)
      throw RuntimeError(fmt::format("program: host transfer {} must be issued by core 0", i));
  }
}

TimingResult TpuChip::run(const Program& program) {
  check(program);
  sim::systemc::start_if_needed();
  auto wall = std::chrono::steady_clock::now();
  uint64_t start = clock_.now().count();
  ctx_.reset(program, spec_.cores, start);
  for (auto& core : cores_) core->sequencer->stream.clear();
  for (uint32_t i = 0; i < program.instructions.size(); ++i)
    cores_[program.instructions[i].core]->sequencer->stream.push_back(i);
  for (auto* u : units_) u->stats = UnitStats{u->stats.name, u->stats.kind, 0, 0};
  for (auto& core : cores_)
    for (auto& m : core->mxu) m->reset_run();
  std::vector<sim::systemc::MemoryCounters> before;
  auto memories = [&] {
    std::vector<MemoryTarget*> m{host_link_.get()};
    for (auto& o : offchip_) m.push_back(o.get());
    for (auto& c : cores_) m.push_back(c->onchip.get());
    return m;
  }();
  for (auto* m : memories) m->reset_counters();
  for (auto& core : cores_) core->sequencer->start();
  sim::systemc::run_until_idle();
  if (ctx_.board.completed() != program.instructions.size()) {
    size_t stuck = 0;
    while (stuck < program.instructions.size() && ctx_.board.done(stuck)) ++stuck;
    throw RuntimeError(fmt::format(
        "program deadlocked: {} of {} instructions completed; instruction {} ({}) never ran",
        ctx_.board.completed(), program.instructions.size(), stuck,
        opcode_name(program.instructions[stuck].opcode)));
  }
  for (int64_t c = 0; c < spec_.cores; ++c)
    if (ctx_.peak[c] > static_cast<int64_t>(spec_.onchip.bytes))
      throw RuntimeError(
          fmt::format("program overflows core {}'s {}: {} bytes in use at the peak, {} available",
                      c, spec_.onchip.name, ctx_.peak[c], spec_.onchip.bytes));
  uint64_t end = start;
  for (const auto& t : ctx_.timing) end = std::max(end, start + t.end);
  TimingResult r = collect(end);
  r.host_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
  return r;
}

TimingResult TpuChip::collect(uint64_t end_cycle) {
  TimingResult r;
  r.cycles = end_cycle - ctx_.start_cycle;
  r.instructions = std::move(ctx_.timing);
  for (auto* u : units_) r.units.push_back(u->stats);
  auto add_memory = [&](const MemoryTarget& m, Level level, std::string name) {
    MemoryStats s;
    s.name = std::move(name);
    s.level = level;
    s.bytes_read = m.counters().bytes_read;
    s.bytes_written = m.counters().bytes_written;
    s.transactions = m.counters().transactions;
    s.busy_cycles = clock_.ceil_cycles(sim::systemc::from_ps(m.counters().busy_ps)).count();
    r.memories.push_back(s);
  };
  add_memory(*host_link_, Level::host, spec_.host_link.name);
  for (auto& o : offchip_) add_memory(*o, Level::offchip, o->basename());
  for (auto& c : cores_) add_memory(*c->onchip, Level::onchip, c->onchip->basename());
  r.onchip_occupancy = std::move(ctx_.samples);
  r.onchip_peak_bytes = ctx_.peak;
  for (auto& core : cores_)
    for (auto& m : core->mxu) r.weight_stall_cycles += m->stall_cycles;
  return r;
}

}  // namespace mimic::models::tpu
