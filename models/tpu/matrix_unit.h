// A systolic matrix unit (MXU) as one SystemC process: one activation per matmul instruction,
// whose folds are scheduled one by one in local time (temporal decoupling), never per PE.
//
// Modeled, per fold (see dataflow.h for the fold decomposition and the closed forms):
//   - the fold's weight tile is fetched from its source (VMEM/UB, HBM/DDR, or the host link) as a
//     TLM read through the unit's weight port, queueing behind other traffic on that memory;
//     up to `mxu.weight_fifo_tiles` tiles are in flight or staged ahead (TPUv1's weight FIFO, S1:
//     "Read_Weights ... decoupled access/execute"). The FIFO fills ahead across instructions: as
//     the current instruction's last tiles leave it, the first tiles of the unit's next matmul are
//     fetched, before that matmul's operands are ready, when its weights are constants streamed
//     from off-chip or host memory (S1: a Read_Weights completes once its address is sent; the
//     matrix unit stalls only if the weights have not arrived). Weights staged in on-chip memory
//     by a DMA wait for it as before;
//   - the stationary block takes R cycles to shift in (ws, is) or out (os);
//   - the streamed operand takes T cycles, and the wavefront's fill/drain skew L = R + C - 2;
//   - with double-buffered weights the next fold's stationary block shifts in while the current
//     one streams (it may start once the current fold started streaming and its tile has arrived),
//     and folds follow each other without draining; without, each fold pays load, stream and skew.
// Busy cycles are the union of the intervals in which the array loads or streams; cycles spent
// waiting for a weight tile that has not arrived are stalls (memory-bound time).
// Approximated: the streamed operand (activations from VMEM/UB) is always available (S3: VMEM
// bandwidth to the MXU is ~22x HBM; S1: 167 GiB/s UB path); the stationary transfer of os is
// scheduled like a load before streaming, which gives the same totals as an unload after it;
// per-fold weight bytes are a whole array tile (weights are stored padded).
#pragma once

#include <cstdint>
#include <vector>

#include "models/tpu/dataflow.h"
#include "models/tpu/units.h"

namespace mimic::models::tpu {

// The fold-by-fold schedule, independent of SystemC so that it can be inspected: `ready[f]` is
// the cycle (relative to the instruction start) at which fold f's weight tile has arrived.
struct FoldTiming {
  uint64_t end = 0;   // last cycle of the instruction (relative)
  uint64_t busy = 0;  // union of load and stream intervals
};

class FoldScheduler {
 public:
  FoldScheduler(int64_t rows, int64_t cols, bool double_buffering, int64_t stream);
  // Schedules the next fold; returns the cycle at which its weight tile leaves the staging FIFO
  // (its FIFO slot frees).
  uint64_t next(uint64_t ready);
  FoldTiming finish() const;

 private:
  void mark_busy(uint64_t a, uint64_t b);
  int64_t r_, skew_, t_;
  bool db_;
  bool first_ = true;
  uint64_t load_end_ = 0, stream_start_ = 0, stream_end_ = 0, cursor_ = 0;
  uint64_t busy_ = 0, active_until_ = 0;
};

class MatrixUnit : public InstructionUnit {
 public:
  // `core` and `slot`: the core it belongs to and its number there (Instruction::unit % per_core).
  MatrixUnit(sc_core::sc_module_name name, RunContext& ctx, const sim::systemc::ClockDomain& clock,
             int32_t index, const TpuSpec& spec, int64_t core, int64_t slot);
  sim::systemc::Initiator weight_onchip, weight_offchip, weight_host;
  uint64_t stall_cycles = 0;
  void reset_run();  // before each run: no stalls counted, nothing fetched ahead

 protected:
  uint64_t execute(const Instruction& in, InstructionTiming& t) override;

 private:
  sim::systemc::Initiator* source(Level l);
  // Fetches tile f of `in`'s weights once its FIFO slot frees at `slot_free` (cycles after the
  // running instruction's start); returns when it has arrived, on the same scale.
  uint64_t fetch(const Instruction& in, int64_t f, uint64_t slot_free, InstructionTiming& t);
  // The unit's next matmul after instruction `index` when its weights can be fetched ahead, or -1.
  int64_t next_prefetchable(size_t index) const;
  const TpuSpec& spec_;
  int64_t core_, slot_;
  std::vector<uint64_t> consumed_;
  // Tiles of instruction `prefetched_for_` fetched while the previous one ran (absolute arrival).
  int64_t prefetched_for_ = -1;
  std::vector<uint64_t> prefetched_;
};

}  // namespace mimic::models::tpu
