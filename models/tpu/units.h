// The chip's units as SystemC processes: each unit is one SC_THREAD that takes instructions in
// order from its queue, waits for their dependencies, spends their time, and marks them done.
//
// Modeled: in-order issue per core (the sequencer fills per-unit queues in program order, blocking
// when one is full), out-of-order completion across units limited only by explicit dependencies;
// DMA engines moving bytes between memory levels as TLM-2.0 LT transactions against bandwidth-
// and latency-limited targets (two transactions per DMA, source read and destination write,
// overlapped); the vector unit as a lanes x sublanes SIMD array issuing `alus` operations per
// element per cycle plus its pipeline latency per instruction; on-chip memory occupancy.
// Approximated: instruction issue costs no time (VLIW bundles issue one per cycle; tile
// instructions last hundreds of cycles); the vector unit's VMEM accesses are not transactions
// (vector loads/stores are assumed to keep up, S3: 1 load + 1 store per cycle); DMA descriptor
// setup is a fixed `dma.setup_cycles`. Timing sources: S3 (VPU issue, DMA per core), S1 (TPUv1
// decoupled access/execute pipeline where instructions occupy a station for thousands of cycles).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include "models/tpu/program.h"
#include "models/tpu/timing_result.h"
#include "models/tpu/tpu_spec.h"
#include "sim/systemc/clock_domain.h"
#include "sim/systemc/initiator.h"
#include "sim/systemc/scoreboard.h"

namespace mimic::models::tpu {

// State of the run in progress, shared by the units of one chip.
struct RunContext {
  const Program* program = nullptr;
  sim::systemc::Scoreboard board;
  std::vector<InstructionTiming> timing;
  uint64_t start_cycle = 0;  // absolute cycle at which the run started
  std::vector<int64_t> occupancy, peak;
  std::vector<std::vector<OccupancySample>> samples;

  void reset(const Program& p, int64_t cores, uint64_t start);
  void take(const Instruction& in, uint64_t now);
  void release(const Instruction& in, uint64_t now);
};

class InstructionUnit : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(InstructionUnit);
  InstructionUnit(sc_core::sc_module_name name, RunContext& ctx,
                  const sim::systemc::ClockDomain& clock, std::string kind, int32_t index,
                  size_t queue_depth);

  // Called by a sequencer's thread; blocks while the queue is full.
  void enqueue(uint32_t instruction) { queue_.push(instruction); }
  const std::string& unit_kind() const { return kind_; }
  UnitStats stats;

 protected:
  // Runs instruction `in` starting at the current simulated time; returns its busy cycles. Must
  // leave local time synchronized (the instruction ends at the simulated time on return).
  virtual uint64_t execute(const Instruction& in, InstructionTiming& t) = 0;

  RunContext& ctx_;
  const sim::systemc::ClockDomain& clock_;
  sim::systemc::LocalTime local_;

 private:
  void loop();
  std::string kind_;
  int32_t index_;
  sim::systemc::WorkQueue<uint32_t> queue_;
};

// Ports to the memory levels a unit can reach (null where it cannot).
struct MemoryPorts {
  sim::systemc::Initiator* host = nullptr;
  sim::systemc::Initiator* offchip = nullptr;
  sim::systemc::Initiator* onchip = nullptr;
  sim::systemc::Initiator* at(Level l) const {
    return l == Level::host ? host : l == Level::offchip ? offchip : onchip;
  }
};

class DmaEngine : public InstructionUnit {
 public:
  DmaEngine(sc_core::sc_module_name name, RunContext& ctx, const sim::systemc::ClockDomain& clock,
            int32_t index, const DmaSpec& spec, size_t onchip_ports);
  // One read and one write port per level; the host DMA engine reaches every core's on-chip memory.
  sim::systemc::Initiator host_read, host_write, offchip_read, offchip_write;
  std::vector<std::unique_ptr<sim::systemc::Initiator>> onchip_read, onchip_write;

 protected:
  uint64_t execute(const Instruction& in, InstructionTiming& t) override;

 private:
  sim::systemc::Initiator& port(Level level, bool write, int core);
  DmaSpec spec_;
};

class VectorUnit : public InstructionUnit {
 public:
  VectorUnit(sc_core::sc_module_name name, RunContext& ctx, const sim::systemc::ClockDomain& clock,
             int32_t index, const VpuSpec& spec);
  // Closed form: latency + ceil(elements * ops / (lanes * sublanes * alus)).
  static uint64_t cycles(const VpuSpec& spec, uint64_t elements, uint32_t ops_per_element);

 protected:
  uint64_t execute(const Instruction& in, InstructionTiming& t) override;

 private:
  VpuSpec spec_;
};

// Completes when its dependencies have: joins many producers into one dependency.
class SyncUnit : public InstructionUnit {
 public:
  SyncUnit(sc_core::sc_module_name name, RunContext& ctx, const sim::systemc::ClockDomain& clock,
           int32_t index);

 protected:
  uint64_t execute(const Instruction&, InstructionTiming&) override { return 0; }
};

// Issues one core's instructions in program order to its units' queues.
class Sequencer : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Sequencer);
  Sequencer(sc_core::sc_module_name name, RunContext& ctx);
  // The units this core issues to (set before the first run).
  std::vector<InstructionUnit*> dma, mxu;
  InstructionUnit* vpu = nullptr;
  InstructionUnit* sync = nullptr;
  InstructionUnit* host_dma = nullptr;
  // Instructions of this core for the next run; start() wakes the sequencer.
  std::vector<uint32_t> stream;
  void start() { start_.notify(sc_core::SC_ZERO_TIME); }

 private:
  void loop();
  InstructionUnit* route(const Instruction& in) const;
  RunContext& ctx_;
  sc_core::sc_event start_;
};

}  // namespace mimic::models::tpu
