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
                       const sim::systemc::ClockDomain& clock, int32_t index, const TpuSpec& spec,
                       int64_t core, int64_t slot)
    : InstructionUnit(name, ctx, clock, "matrix", index, 16),
      weight_onchip("weight_onchip_socket"),
      weight_offchip("weight_offchip_socket"),
      weight_host("weight_host_socket"),
      spec_(spec),
      core_(core),
      slot_(slot) {}

sim::systemc::Initiator* MatrixUnit::source(Level l) {
  return l == Level::onchip ? &weight_onchip : l == Level::offchip ? &weight_offchip : &weight_host;
}

void MatrixUnit::reset_run() {
  stall_cycles = 0;
  prefetched_for_ = -1;
  prefetched_.clear();
}

uint64_t MatrixUnit::fetch(const Instruction& in, int64_t f, uint64_t slot_free,
                           InstructionTiming& t) {
  uint64_t bytes = fold_weight_bytes(spec_.mxu.dataflow, GemmDims{in.m, in.k, in.n}, spec_.mxu.rows,
                                     spec_.mxu.cols, in.passes, f, spec_.matrix_element_bytes());
  sc_core::sc_time at = clock_.to_time(Cycles(slot_free));
  sc_core::sc_time done =
      source(in.weight_source)->transport(tlm::TLM_READ_COMMAND, in.weight_address, bytes, at);
  t.fetched_bytes += bytes;
  return clock_.ceil_cycles(done).count();
}

int64_t MatrixUnit::next_prefetchable(size_t index) const {
  const Program& p = *ctx_.program;
  for (size_t i = index + 1; i < p.instructions.size(); ++i) {
    const Instruction& in = p.instructions[i];
    if (in.opcode != Opcode::matmul || in.core != core_ || in.unit % spec_.mxu.per_core != slot_)
      continue;
    bool constant = in.kernel >= 0 && p.kernels[in.kernel].kind == KernelKind::gemm &&
                    p.tensors[p.kernels[in.kernel].gemm.w].constant;
    return constant && in.weight_source != Level::onchip ? static_cast<int64_t>(i) : -1;
  }
  return -1;
}

uint64_t MatrixUnit::execute(const Instruction& in, InstructionTiming& t) {
  const Dataflow d = spec_.mxu.dataflow;
  const int64_t rows = spec_.mxu.rows, cols = spec_.mxu.cols;
  const FoldPlan plan = fold_plan(d, GemmDims{in.m, in.k, in.n}, rows, cols, in.passes);
  const size_t index = static_cast<size_t>(&in - ctx_.program->instructions.data());
  const uint64_t start = local_.now().count();
  std::vector<uint64_t> ready(std::max<int64_t>(plan.folds, 0), 0);
  int64_t issued = 0;
  if (prefetched_for_ == static_cast<int64_t>(index))
    for (; issued < plan.folds && issued < static_cast<int64_t>(prefetched_.size()); ++issued)
      ready[issued] = prefetched_[issued] > start ? prefetched_[issued] - start : 0;
  prefetched_for_ = -1;
  prefetched_.clear();
  if (plan.folds == 0 || plan.stream == 0) {
    local_.sync();
    return 0;
  }
  const int64_t depth = spec_.mxu.weight_fifo_tiles;
  // Virtual tile indices past this instruction's folds are the next matmul's first tiles.
  const int64_t next = next_prefetchable(index);
  const Instruction* after = next >= 0 ? &ctx_.program->instructions[next] : nullptr;
  const FoldPlan after_plan =
      after ? fold_plan(d, GemmDims{after->m, after->k, after->n}, rows, cols, after->passes)
            : FoldPlan{};
  const int64_t limit = plan.folds + std::min(depth, after_plan.folds);
  FoldScheduler schedule(rows, cols, spec_.mxu.weight_double_buffering, plan.stream);
  consumed_.assign(plan.folds, 0);
  // Tile j may be fetched once tile j - depth has left the FIFO (shifted into the array).
  auto issue = [&](int64_t j) {
    uint64_t slot_free = j >= depth ? consumed_[j - depth] : 0;
    if (j < plan.folds)
      ready[j] = fetch(in, j, slot_free, t);
    else
      prefetched_.push_back(start + fetch(*after, j - plan.folds, slot_free, ctx_.timing[next]));
  };
  for (int64_t f = 0; f < plan.folds; ++f) {
    for (; issued < limit && issued < f + depth; ++issued) issue(issued);
    consumed_[f] = schedule.next(ready[f]);
  }
  for (; issued < limit; ++issued) issue(issued);
  if (after) prefetched_for_ = next;
  FoldTiming ft = schedule.finish();
  local_.advance(Cycles(ft.end));
  local_.sync();
  stall_cycles += ft.end - ft.busy;
  return ft.busy;
}

}  // namespace mimic::models::tpu
