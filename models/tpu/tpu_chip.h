// The whole chip: memories, per-core units and sequencers, and the host DMA engine, elaborated
// once from a TpuSpec; then any number of programs run on it, one after another.
//
// Structure (one SystemC process per unit, TLM-2.0 LT sockets for memory traffic):
//   host link (PCIe/USB target) <- host DMA engine -> off-chip memory, every core's on-chip memory
//   per core: sequencer -> DMA engines (off-chip <-> on-chip), matrix units (weight port to
//             on-chip, off-chip and host link), vector unit, sync unit
//   off-chip memory: one target shared by all cores, or one per core (offchip_per_core, v2/v3)
// Modeled: everything units.h and matrix_unit.h list, and contention wherever several initiators
// bind one memory target (sim/systemc/memory_target.h). Approximated: no interconnect between
// the units and memories beyond each memory's bandwidth (no NoC, no CMEM on v4, no ICI).
#pragma once

#include <memory>
#include <vector>

#include <systemc>

#include "models/tpu/matrix_unit.h"
#include "models/tpu/timing_result.h"
#include "models/tpu/tpu_spec.h"
#include "models/tpu/units.h"
#include "sim/systemc/clock_domain.h"
#include "sim/systemc/memory_target.h"

namespace mimic::models::tpu {

class TpuChip : public sc_core::sc_module {
 public:
  TpuChip(sc_core::sc_module_name name, const TpuSpec& spec);
  ~TpuChip() override;

  // Runs `program` to completion (outside any SystemC process). Throws mimic::RuntimeError when
  // the program deadlocks (an instruction's dependencies never complete) or a unit fails.
  TimingResult run(const Program& program);

  const TpuSpec& spec() const { return spec_; }
  const sim::systemc::ClockDomain& clock() const { return clock_; }

 private:
  struct Core;
  void check(const Program& program) const;
  TimingResult collect(uint64_t end_cycle);

  TpuSpec spec_;
  sim::systemc::ClockDomain clock_;
  RunContext ctx_;
  std::unique_ptr<sim::systemc::MemoryTarget> host_link_;
  std::vector<std::unique_ptr<sim::systemc::MemoryTarget>> offchip_;  // one, or one per core
  std::vector<std::unique_ptr<Core>> cores_;
  std::unique_ptr<DmaEngine> host_dma_;
  std::vector<InstructionUnit*> units_;  // indexed by InstructionTiming::unit
};

}  // namespace mimic::models::tpu
