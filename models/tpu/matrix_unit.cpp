#include "models/tpu/matrix_unit.h"

#include <algorithm>

namespace mimic::models::tpu {

using sim::Cycles;

FoldScheduler::FoldScheduler(int64_t rows, int64_t cols, bool double_buffering, int64_t stream)
    : r_(rows), skew_(rows + cols - 2), t_(stream), db_(double_buffering) {}

void FoldScheduler::mark_busy(uint64_t a, uint64_t b) {
  uint64_t from = std::max(a, active_until_);
  if (b > from) busy_ += b - from;
  active_until_ = std::max(active_until_, b);
}

uint64_t FoldScheduler::next(uint64_t ready) {
  uint64_t r = static_cast<uint64_t>(r_), t = static_cast<uint64_t>(t_);
  if (!db_) {
    // Classic: load, stream, drain; the next fold starts when this one has fully drained.
    uint64_t start = std::max(cursor_, ready);
    cursor_ = start + r + t + static_cast<uint64_t>(skew_);
    mark_busy(start, cursor_);
    stream_end_ = cursor_;
    return start;
  }
  // The shadow weight buffer frees when the previous fold starts streaming; loads are serial.
  uint64_t load_start = ready;
  if (!first_) load_start = std::max({load_start, stream_start_, load_end_});
  uint64_t load_end = load_start + r;
  uint64_t stream_start = first_ ? load_end : std::max(load_end, stream_end_);
  mark_busy(load_start, load_end);
  mark_busy(stream_start, stream_start + t);
  load_end_ = load_end;
  stream_start_ = stream_start;
  stream_end_ = stream_start + t;
  first_ = false;
  return load_start;
}

FoldTiming FoldScheduler::finish() const {
  FoldTiming out;
  if (!db_) {
    out.end = cursor_;
    out.busy = busy_;
    return out;
  }
  if (first_) return out;
  out.end = stream_end_ + static_cast<uint64_t>(skew_);
  out.busy = busy_ + (out.end - std::max(stream_end_, active_until_));
  return out;
}

MatrixUnit::MatrixUnit(sc_core::sc_module_name name, RunContext& ctx,
                       const sim::systemc::ClockDomain& clock, int32_t index, const TpuSpec& spec)
    : InstructionUnit(name, ctx, clock, "matrix", index, 16),
      weight_onchip("weight_onchip_socket"),
      weight_offchip("weight_offchip_socket"),
      weight_host("weight_host_socket"),
      spec_(spec) {}

sim::systemc::Initiator* MatrixUnit::source(Level l) {
  return l == Level::onchip ? &weight_onchip : l == Level::offchip ? &weight_offchip : &weight_host;
}

uint64_t MatrixUnit::execute(const Instruction& in, InstructionTiming& t) {
  const Dataflow d = spec_.mxu.dataflow;
  const int64_t rows = spec_.mxu.rows, cols = spec_.mxu.cols;
  const GemmDims g{in.m, in.k, in.n};
  const FoldPlan plan = fold_plan(d, g, rows, cols, in.passes);
  if (plan.folds == 0 || plan.stream == 0) {
    local_.sync();
    return 0;
  }
  const int64_t depth = spec_.mxu.weight_fifo_tiles;
  const int64_t element_bytes = spec_.matrix_element_bytes();
  FoldScheduler schedule(rows, cols, spec_.mxu.weight_double_buffering, plan.stream);
  consumed_.assign(plan.folds, 0);
  sim::systemc::Initiator* port = source(in.weight_source);
  uint64_t address = in.weight_address;
  std::vector<uint64_t> ready(plan.folds, 0);
  int64_t issued = 0;
  for (int64_t f = 0; f < plan.folds; ++f) {
    // Keep up to `depth` tiles fetched ahead: tile j may be fetched once tile j - depth has left
    // the FIFO (shifted into the array).
    for (; issued < plan.folds && issued < f + depth; ++issued) {
      uint64_t slot_free = issued >= depth ? consumed_[issued - depth] : 0;
      uint64_t bytes = fold_weight_bytes(d, g, rows, cols, in.passes, issued, element_bytes);
      sc_core::sc_time at = clock_.to_time(Cycles(slot_free));
      sc_core::sc_time done = port->transport(tlm::TLM_READ_COMMAND, address, bytes, at);
      ready[issued] = clock_.ceil_cycles(done).count();
      t.fetched_bytes += bytes;
    }
    consumed_[f] = schedule.next(ready[f]);
  }
  FoldTiming ft = schedule.finish();
  local_.advance(Cycles(ft.end));
  local_.sync();
  stall_cycles += ft.end - ft.busy;
  return ft.busy;
}

}  // namespace mimic::models::tpu
