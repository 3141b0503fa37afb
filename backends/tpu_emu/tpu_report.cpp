#include "backends/tpu_emu/tpu_report.h"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "models/tpu/ici.h"

namespace mimic::backends::tpu_emu {

using namespace models::tpu;

namespace {

struct OpTotals {
  uint64_t first = std::numeric_limits<uint64_t>::max(), last = 0;
  uint64_t before = 0;  // latest end of the instructions issued before this op's first one
  int64_t offchip_bytes = 0;
  bool any = false;
};

// Off-chip traffic of one instruction: DMAs touching host or off-chip memory, weight fetches from
// there.
int64_t offchip_bytes(const Instruction& in, const InstructionTiming& t) {
  if (in.opcode == Opcode::dma) {
    int64_t b = 0;
    if (in.src != Level::onchip) b += static_cast<int64_t>(in.bytes);
    if (in.dst != Level::onchip) b += static_cast<int64_t>(in.dst_bytes ? in.dst_bytes : in.bytes);
    return b;
  }
  if (in.opcode == Opcode::matmul && in.weight_source != Level::onchip)
    return static_cast<int64_t>(t.fetched_bytes);
  return 0;
}

std::string event_name(const Program& p, const Instruction& in) {
  switch (in.opcode) {
    case Opcode::dma:
      if (in.src == Level::host) return "dma host->" + std::string(level_name(in.dst));
      if (in.dst == Level::host) return "dma " + std::string(level_name(in.src)) + "->host";
      return in.dst == Level::onchip ? (in.src == Level::onchip ? "dma onchip" : "dma in")
                                     : "dma out";
    case Opcode::matmul:
      return "matmul";
    case Opcode::vector:
      if (in.kernel >= 0 && in.computes) {
        const Kernel& k = p.kernels[in.kernel];
        return k.kind == KernelKind::gemm ? "matvec" : vector_func_name(k.vec.func);
      }
      return in.kernel >= 0 && p.kernels[in.kernel].kind == KernelKind::gemm ? "epilogue"
                                                                             : "relayout";
    case Opcode::sync:
      return "sync";
  }
  return "?";
}

const char* track_kind(const std::string& unit_kind) {
  if (unit_kind == "matrix") return "compute";
  return unit_kind == "vector" ? "vector" : "dma";
}

// Per op: the span of its instructions and what was issued before it (an instruction no other
// waits for, a training step's prefetch of the next batch, holds no op back).
std::vector<OpTotals> op_totals(const Program& p, const TimingResult& t) {
  std::vector<OpTotals> totals(p.ops.size());
  std::vector<bool> awaited(p.instructions.size(), false);
  for (uint32_t d : p.deps) awaited[d] = true;
  uint64_t issued_end = 0;  // latest end among the instructions so far in program order
  for (size_t i = 0; i < p.instructions.size(); ++i) {
    const Instruction& in = p.instructions[i];
    uint64_t end = t.instructions[i].end;
    int32_t op = in.kernel >= 0 ? p.kernels[in.kernel].op : -1;
    if (op < 0 || in.opcode == Opcode::sync) {
      if (awaited[i] || op >= 0) issued_end = std::max(issued_end, end);
      continue;
    }
    OpTotals& o = totals[op];
    if (!o.any) o.before = issued_end;
    issued_end = std::max(issued_end, end);
    o.first = std::min(o.first, t.instructions[i].start);
    o.last = std::max(o.last, t.instructions[i].end);
    o.offchip_bytes += offchip_bytes(in, t.instructions[i]);
    o.any = true;
  }
  return totals;
}

// The step with data parallelism: the gradients' all-reduce runs on the ICI while the backward
// pass goes on (ici.h); the ops that read the gradients (the optimizer's) wait for all of it,
// which delays them and every instruction after the first of them by `exposed` cycles.
// (XLA waits per combined all-reduce; with one bucket, the common case under 32 MiB, the same.)
struct StepTiming {
  AllReduceSchedule allreduce;
  uint64_t update_start = 0;   // first instruction reading a gradient (the run's end if none)
  size_t first_update_op = 0;  // in program order: it and the ops after it wait
  uint64_t exposed = 0;        // cycles the all-reduce adds to the step
};

StepTiming step_timing(const TpuSpec& spec, const Program& p, const std::vector<OpTotals>& totals,
                       uint64_t cycles) {
  StepTiming s;
  s.update_start = cycles;
  s.first_update_op = p.ops.size();
  std::vector<GradientReady> ready;
  uint64_t done = 0;  // ops without instructions (aliases) are done when the ops before them are
  for (size_t i = 0; i < p.ops.size(); ++i) {
    if (totals[i].any) done = std::max(done, totals[i].last);
    if (p.ops[i].gradient_bytes > 0)
      ready.push_back({done, static_cast<uint64_t>(p.ops[i].gradient_bytes)});
    if (p.ops[i].reads_gradients && totals[i].any) {
      s.update_start = std::min(s.update_start, totals[i].first);
      s.first_update_op = std::min(s.first_update_op, i);
    }
  }
  s.allreduce = schedule_allreduce(spec, p.replicas, ready);
  s.exposed = s.allreduce.end > s.update_start ? s.allreduce.end - s.update_start : 0;
  return s;
}

// op_windows: each op's cycles before the at-peak floor (build_report), which partition the run.
void report_phases(const Program& p, const StepTiming& step,
                   const std::vector<uint64_t>& op_windows, RunReport& r) {
  std::map<std::string, uint64_t> phase = {
      {"forward", 0}, {"loss", 0}, {"backward", 0}, {"allreduce", step.exposed}, {"update", 0}};
  uint64_t accounted = step.exposed;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    phase[p.ops[i].phase] += op_windows[i];
    accounted += op_windows[i];
  }
  // What no op accounts for: the host transfers of the batch and the outputs.
  phase["other"] = r.cycles > accounted ? r.cycles - accounted : 0;
  for (const auto& [name, cycles] : phase)
    r.metrics["phase." + name + "_cycles"] = static_cast<double>(cycles);
  // Samples a step consumes: every replica's batch (mimic train and sweep --train read it).
  if (p.replicas > 1) r.metrics["train.batches_per_step"] = static_cast<double>(p.replicas);
  r.metrics["replicas"] = static_cast<double>(p.replicas);
  r.metrics["allreduce.bytes"] = static_cast<double>(step.allreduce.bytes);
  r.metrics["allreduce.buckets"] = static_cast<double>(step.allreduce.buckets.size());
  r.metrics["allreduce.total_cycles"] = static_cast<double>(step.allreduce.busy_cycles);
  r.metrics["allreduce.exposed_cycles"] = static_cast<double>(step.exposed);
  if (p.replicas > 1)
    r.notes.push_back(fmt::format(
        "{} replicas: {} bytes of gradients all-reduced in {} bucket(s), {} cycles on the ICI, {} "
        "of them not hidden behind the backward pass",
        p.replicas, step.allreduce.bytes, step.allreduce.buckets.size(), step.allreduce.busy_cycles,
        step.exposed));
}

}  // namespace

namespace {

// Unit busy time, bytes moved per memory level, and the matrix units' busy fraction.
void unit_report(const TpuSpec& spec, const TimingResult& t, RunReport& r) {
  uint64_t mxu_busy = 0;
  int64_t mxus = 0;
  for (const UnitStats& u : t.units) {
    if (u.kind == "sync") continue;
    UnitReport ur{u.name, u.kind, u.busy_cycles,
                  t.cycles ? static_cast<double>(u.busy_cycles) / t.cycles : 0.0};
    r.units.push_back(ur);
    if (u.kind == "matrix") {
      mxu_busy += u.busy_cycles;
      ++mxus;
    }
  }
  for (const MemoryStats& m : t.memories) {
    std::string key = m.level == Level::host      ? spec.host_link.name
                      : m.level == Level::offchip ? spec.offchip.name
                                                  : spec.onchip.name;
    r.bytes_moved[key] += static_cast<int64_t>(m.bytes_read + m.bytes_written);
  }
  r.metrics["mxu_busy_fraction"] =
      mxus && t.cycles ? static_cast<double>(mxu_busy) / (mxus * static_cast<double>(t.cycles)) : 0;
}

}  // namespace

RunReport build_report(const TpuSpec& spec, const Program& p, const TimingResult& t,
                       bool timing_only) {
  RunReport r;
  r.device = "tpu-emu:" + spec.name;
  r.backend = "tpu-emu";
  // What the matrix units computed, not the option's name: "bf16" (one pass), "bf16x3", "f32"
  // (six passes: fp32-faithful) or "int8"; the conformance runner picks its tolerance from it.
  r.precision = p.numerics == models::tpu::MatrixNumerics::int8 ? "int8"
                : p.passes <= 1                                 ? "bf16"
                : p.passes <= 3                                 ? "bf16x3"
                                                                : "f32";
  r.clock_hz = static_cast<double>(spec.clock_hz);
  r.peak_flops_per_s = spec.peak_flops_per_s();
  r.ridge_intensity = spec.ridge_flops_per_byte();
  std::vector<OpTotals> totals = op_totals(p, t);
  StepTiming step = step_timing(spec, p, totals, t.cycles);
  r.cycles = t.cycles + step.exposed;
  r.device_seconds = static_cast<double>(r.cycles) / r.clock_hz;
  const double peak_flops_per_cycle = 2.0 * static_cast<double>(spec.peak_macs_per_cycle());
  int64_t total_flops = 0;
  std::vector<uint64_t> op_windows(p.ops.size(), 0);
  // Ops overlap a little (a kernel prefetches its weights while the previous one computes): each
  // op is charged from when everything issued before it (earlier ops, input transfers) finished,
  // or from its own first instruction if later, to its last instruction, so that op cycles add up
  // to at most the run; but never fewer cycles than its FLOPs need at the chip's peak (an op whose
  // work ran early, overlapped with the one before, would otherwise show over 100% utilization).
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const OpInfo& info = p.ops[i];
    OpReport o;
    o.node = info.node;
    o.op_type = info.op_type;
    o.backend = "tpu-emu";
    o.shapes = info.shapes;
    o.flops = info.flops;
    o.bytes_in = info.bytes_in;
    o.bytes_out = info.bytes_out;
    total_flops += info.flops;
    if (totals[i].any) {
      uint64_t begin = std::max(totals[i].first, totals[i].before);
      const auto at_peak =
          static_cast<uint64_t>(std::ceil(static_cast<double>(info.flops) / peak_flops_per_cycle));
      op_windows[i] = totals[i].last > begin ? totals[i].last - begin : 0;
      o.cycles = std::max(op_windows[i], at_peak);
      o.device_seconds = static_cast<double>(o.cycles) / r.clock_hz;
      o.utilization = o.cycles ? static_cast<double>(info.flops) /
                                     (peak_flops_per_cycle * static_cast<double>(o.cycles))
                               : 0;
      o.intensity = totals[i].offchip_bytes ? static_cast<double>(info.flops) /
                                                  static_cast<double>(totals[i].offchip_bytes)
                                            : 0;
      o.bound = totals[i].offchip_bytes && o.intensity < r.ridge_intensity ? "memory" : "compute";
    }
    r.ops.push_back(std::move(o));
  }
  r.achieved_flops_per_s =
      r.device_seconds > 0 ? static_cast<double>(total_flops) / r.device_seconds : 0;
  unit_report(spec, t, r);
  r.metrics["instructions"] = static_cast<double>(p.instructions.size());
  r.metrics["mxu_weight_stall_cycles"] = static_cast<double>(t.weight_stall_cycles);
  r.metrics["simulation_seconds"] = t.host_seconds;
  r.metrics["simulated_cycles_per_second"] =
      t.host_seconds > 0 ? static_cast<double>(t.cycles) / t.host_seconds : 0;
  int64_t peak = 0;
  for (int64_t b : t.onchip_peak_bytes) peak = std::max(peak, b);
  r.metrics["onchip_peak_bytes"] = static_cast<double>(peak);
  r.metrics["matrix_passes"] = static_cast<double>(p.passes);
  report_phases(p, step, op_windows, r);
  if (timing_only) r.notes.push_back("timing only: numerics skipped, outputs are zeros");
  return r;
}

namespace {

// One op per all-reduce bucket ("allreduce/bucket<k>": the trace's allreduce phase) and its event
// on the ICI track.
void record_allreduce(sim::EventSink& sink, sim::DeviceId dev, const AllReduceSchedule& s) {
  if (s.buckets.empty()) return;
  sim::TrackId track = sink.add_track(dev, "ici", "dma");
  for (size_t b = 0; b < s.buckets.size(); ++b) {
    const AllReduceBucket& k = s.buckets[b];
    auto bytes = static_cast<int64_t>(k.bytes);
    sim::OpId op = sink.add_op(sim::OpDesc{fmt::format("allreduce/bucket{}", b), "AllReduce",
                                           fmt::format("{} bytes", k.bytes), "f32", 0, bytes, bytes,
                                           "tpu-emu", false});
    sink.event(track, op, "allreduce", k.start, k.end - k.start);
  }
}

}  // namespace

void record_trace(sim::EventSink& sink, const TpuSpec& spec, const Program& p,
                  const TimingResult& t) {
  sim::DeviceId dev = sink.add_device(sim::DeviceDesc{"tpu-emu", spec.name, spec.clock_hz,
                                                      sim::TimeUnit::cycles, spec_to_json(spec)});
  std::vector<sim::TrackId> tracks(t.units.size(), -1);
  for (size_t u = 0; u < t.units.size(); ++u)
    if (t.units[u].kind != "sync")
      tracks[u] = sink.add_track(dev, t.units[u].name, track_kind(t.units[u].kind));
  std::vector<sim::OpId> ops;
  for (const OpInfo& o : p.ops)
    ops.push_back(sink.add_op(sim::OpDesc{o.node, o.op_type, o.shapes, o.dtype, o.flops, o.bytes_in,
                                          o.bytes_out, "tpu-emu", false}));
  StepTiming step = step_timing(spec, p, op_totals(p, t), t.cycles);
  for (size_t i = 0; i < p.instructions.size(); ++i) {
    const Instruction& in = p.instructions[i];
    const InstructionTiming& it = t.instructions[i];
    if (in.opcode == Opcode::sync || it.unit < 0 || tracks[it.unit] < 0) continue;
    sim::OpId op =
        in.kernel >= 0 && p.kernels[in.kernel].op >= 0 ? ops[p.kernels[in.kernel].op] : sim::kNoOp;
    // The update's ops and those after them in program order wait for the all-reduce; a gradient
    // still being computed when the first update began (on another unit) does not.
    const int32_t op_index = in.kernel >= 0 ? p.kernels[in.kernel].op : -1;
    const bool waits = op_index >= 0 ? static_cast<size_t>(op_index) >= step.first_update_op
                                     : it.start >= step.update_start;
    uint64_t start = waits ? it.start + step.exposed : it.start;
    sink.event(tracks[it.unit], op, event_name(p, in), start, it.end - it.start);
  }
  record_allreduce(sink, dev, step.allreduce);
  for (size_t c = 0; c < t.onchip_occupancy.size(); ++c) {
    sim::TrackId track =
        sink.add_track(dev, fmt::format("core{}_{}", c, spec.onchip.name), "memory");
    for (const OccupancySample& s : t.onchip_occupancy[c])
      sink.counter(track, s.cycle, static_cast<double>(s.bytes));
  }
}

}  // namespace mimic::backends::tpu_emu
