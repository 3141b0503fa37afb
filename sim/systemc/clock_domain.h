// Clock domains: the one place where integer cycles become SystemC time and back.
//
// SystemC time is kept at a 1 ps resolution (set once by kernel.h before anything else creates an
// sc_time), and every clock period is an integer number of picoseconds (sim::Clock::period_ps), so
// cycle counts convert exactly: a model that only ever waits whole cycles of its domain stays on
// that domain's clock edges. Hardware models never construct sc_time themselves: they ask their
// ClockDomain to wait N cycles, to read the current cycle, or to round a time (e.g. the completion
// of a memory transfer computed in picoseconds) up to the next edge.
#pragma once

#include <cstdint>
#include <string>

#include <systemc>

#include "sim/cycles.h"

namespace mimic::sim::systemc {

class ClockDomain {
 public:
  ClockDomain(std::string name, Clock clock);

  const std::string& name() const { return name_; }
  const Clock& clock() const { return clock_; }
  uint64_t period_ps() const { return period_ps_; }

  // Cycles <-> SystemC time in this domain.
  sc_core::sc_time to_time(Cycles c) const;
  // Whole cycles elapsed in `t` (rounded down); use ceil_cycles for completions.
  Cycles to_cycles(const sc_core::sc_time& t) const;
  Cycles ceil_cycles(const sc_core::sc_time& t) const;
  // The current simulated time as a cycle count of this domain (rounded down).
  Cycles now() const;
  // Suspends the calling SC_THREAD for `c` cycles (no-op for zero cycles, so no delta cycle).
  void wait(Cycles c) const;
  // Rounds an absolute time up to the next clock edge of this domain.
  sc_core::sc_time next_edge(const sc_core::sc_time& t) const;

 private:
  std::string name_;
  Clock clock_;
  uint64_t period_ps_;
};

// Picoseconds to move `bytes` at `bytes_per_s`, rounded up (128-bit integer arithmetic).
uint64_t transfer_ps(uint64_t bytes, uint64_t bytes_per_s);

}  // namespace mimic::sim::systemc
