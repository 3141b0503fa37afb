#include "models/tpu/units.h"

#include <algorithm>
#include <stdexcept>

namespace mimic::models::tpu {

using sim::Cycles;
using sim::systemc::Initiator;

void RunContext::reset(const Program& p, int64_t cores, uint64_t start) {
  program = &p;
  board.reset(p.instructions.size());
  timing.assign(p.instructions.size(), InstructionTiming{});
  start_cycle = start;
  occupancy.assign(cores, 0);
  for (int64_t c = 0; c < cores && c < static_cast<int64_t>(p.resident_onchip_bytes.size()); ++c)
    occupancy[c] = p.resident_onchip_bytes[c];
  peak = occupancy;
  samples.assign(cores, {});
  for (int64_t c = 0; c < cores; ++c) samples[c].push_back({0, occupancy[c]});
}

void RunContext::take(const Instruction& in, uint64_t now) {
  if (!in.onchip_alloc) return;
  int64_t& occ = occupancy[in.core];
  occ += in.onchip_alloc;
  peak[in.core] = std::max(peak[in.core], occ);
  samples[in.core].push_back({now - start_cycle, occ});
}

void RunContext::release(const Instruction& in, uint64_t now) {
  if (!in.onchip_free) return;
  int64_t& occ = occupancy[in.core];
  occ -= in.onchip_free;
  samples[in.core].push_back({now - start_cycle, occ});
}

InstructionUnit::InstructionUnit(sc_core::sc_module_name name, RunContext& ctx,
                                 const sim::systemc::ClockDomain& clock, std::string kind,
                                 int32_t index, size_t queue_depth)
    : sc_module(name),
      ctx_(ctx),
      clock_(clock),
      local_(clock),
      kind_(std::move(kind)),
      index_(index),
      queue_(queue_depth) {
  stats.name = basename();
  stats.kind = kind_;
  SC_THREAD(loop);
}

void InstructionUnit::loop() {
  while (true) {
    uint32_t index = queue_.pop();
    const Program& p = *ctx_.program;
    const Instruction& in = p.instructions[index];
    for (uint32_t d = in.dep_begin; d < in.dep_begin + in.dep_count; ++d)
      ctx_.board.wait_for(p.deps[d]);
    uint64_t start = clock_.now().count();
    ctx_.take(in, start);
    InstructionTiming& t = ctx_.timing[index];
    t.busy = execute(in, t);
    uint64_t end = clock_.now().count();
    t.start = start - ctx_.start_cycle;
    t.end = end - ctx_.start_cycle;
    t.unit = index_;
    stats.busy_cycles += t.busy;
    stats.instructions++;
    ctx_.release(in, end);
    ctx_.board.complete(index);
  }
}

DmaEngine::DmaEngine(sc_core::sc_module_name name, RunContext& ctx,
                     const sim::systemc::ClockDomain& clock, int32_t index, const DmaSpec& spec,
                     size_t onchip_ports)
    : InstructionUnit(name, ctx, clock, "dma", index, 16),
      host_read("host_read_socket"),
      host_write("host_write_socket"),
      offchip_read("offchip_read_socket"),
      offchip_write("offchip_write_socket"),
      spec_(spec) {
  for (size_t i = 0; i < onchip_ports; ++i) {
    std::string r = "onchip" + std::to_string(i) + "_read_socket",
                w = "onchip" + std::to_string(i) + "_write_socket";
    onchip_read.push_back(std::make_unique<Initiator>(r.c_str()));
    onchip_write.push_back(std::make_unique<Initiator>(w.c_str()));
  }
}

Initiator& DmaEngine::port(Level level, bool write, int core) {
  switch (level) {
    case Level::host:
      return write ? host_write : host_read;
    case Level::offchip:
      return write ? offchip_write : offchip_read;
    case Level::onchip: {
      size_t i = onchip_read.size() == 1 ? 0 : static_cast<size_t>(core);
      return write ? *onchip_write.at(i) : *onchip_read.at(i);
    }
  }
  return host_read;
}

uint64_t DmaEngine::execute(const Instruction& in, InstructionTiming&) {
  uint64_t before = local_.now().count();
  local_.advance(Cycles(spec_.setup_cycles));
  if (in.bytes > 0) {
    // Source read and destination write stream concurrently; the slower side sets completion.
    sc_core::sc_time start = local_.offset();
    sc_core::sc_time read_done =
        port(in.src, false, in.core)
            .transport(tlm::TLM_READ_COMMAND, in.src_address, in.bytes, start, in.runs);
    uint64_t written = in.dst_bytes ? in.dst_bytes : in.bytes;
    sc_core::sc_time write_done =
        port(in.dst, true, in.core)
            .transport(tlm::TLM_WRITE_COMMAND, in.dst_address, written, start, in.runs);
    local_.advance_to(std::max(read_done, write_done));
  }
  uint64_t busy = local_.now().count() - before;
  local_.sync();
  return busy;
}

VectorUnit::VectorUnit(sc_core::sc_module_name name, RunContext& ctx,
                       const sim::systemc::ClockDomain& clock, int32_t index, const VpuSpec& spec)
    : InstructionUnit(name, ctx, clock, "vector", index, 16), spec_(spec) {}

uint64_t VectorUnit::cycles(const VpuSpec& spec, uint64_t elements, uint32_t ops_per_element) {
  uint64_t per_cycle = static_cast<uint64_t>(spec.lanes * spec.sublanes * spec.alus);
  uint64_t work = elements * ops_per_element;
  return static_cast<uint64_t>(spec.latency_cycles) + (work + per_cycle - 1) / per_cycle;
}

uint64_t VectorUnit::execute(const Instruction& in, InstructionTiming&) {
  uint64_t c = cycles(spec_, in.elements, in.ops_per_element);
  local_.advance(Cycles(c));
  local_.sync();
  return c;
}

SyncUnit::SyncUnit(sc_core::sc_module_name name, RunContext& ctx,
                   const sim::systemc::ClockDomain& clock, int32_t index)
    : InstructionUnit(name, ctx, clock, "sync", index, 64) {}

Sequencer::Sequencer(sc_core::sc_module_name name, RunContext& ctx) : sc_module(name), ctx_(ctx) {
  SC_THREAD(loop);
}

InstructionUnit* Sequencer::route(const Instruction& in) const {
  switch (in.opcode) {
    case Opcode::dma:
      if (in.src == Level::host || in.dst == Level::host) return host_dma;
      return dma.at(in.unit % dma.size());
    case Opcode::matmul:
      return mxu.at(in.unit % mxu.size());
    case Opcode::vector:
      return vpu;
    case Opcode::sync:
      return sync;
  }
  return sync;
}

void Sequencer::loop() {
  while (true) {
    sc_core::wait(start_);
    for (uint32_t index : stream) route(ctx_.program->instructions[index])->enqueue(index);
  }
}

}  // namespace mimic::models::tpu
