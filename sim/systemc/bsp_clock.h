// SystemC glue for bulk-synchronous (BSP) device models: one clock domain per device that converts
// integer cycles to SystemC time and back (the only place the IPU model touches sc_time), and
// running the kernel until no activity is left, so that one elaborated model can execute many
// programs in one process (SystemC 2.3 cannot restart after sc_stop).
// Time resolution is SystemC's default of 1 ps; a clock period is rounded to whole picoseconds and
// cycle counts stay exact because every wait is a whole number of periods.
#pragma once

#include <systemc>

#include "sim/cycles.h"

namespace mimic::sim::systemc {

class BspClock {
 public:
  explicit BspClock(uint64_t hz);
  uint64_t hz() const { return clock_.hz; }
  uint64_t period_ps() const { return period_ps_; }
  sc_core::sc_time time(Cycles c) const;
  // Whole cycles in `t` (rounded down).
  Cycles cycles(const sc_core::sc_time& t) const;
  // The current simulation time in cycles.
  Cycles now() const;
  // Suspends the calling SC_THREAD for `c` cycles (no-op for zero).
  void wait(Cycles c) const;

 private:
  Clock clock_;
  uint64_t period_ps_;
};

// Finishes elaboration and initialization (every thread reaches its first wait) without advancing
// time. Safe to call more than once.
void bsp_elaborate();
// Runs the kernel until no events are pending; returns with the simulation paused, ready for
// more work. Throws std::runtime_error if the simulation was stopped (sc_stop) earlier.
void bsp_run_until_idle();

}  // namespace mimic::sim::systemc
