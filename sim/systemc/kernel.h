// The SystemC kernel as mimic uses it: one simulation per process, elaborated once, then run
// "until idle" any number of times.
//
// SystemC 2.3 cannot restart after sc_stop (E546) nor add modules after elaboration (E529). A
// device model is therefore built once (its modules constructed before the first run) and every
// later run only hands new work to its processes and calls run_until_idle(), which returns when no
// event is pending (starvation), without sc_stop, so the next run can continue from there. Time
// keeps increasing across runs: callers measure a run as the difference of two time stamps.
//
// Time resolution is 1 ps; ensure_time_resolution() fixes it before the first sc_time is built and
// fails loudly if something else fixed another resolution first.
#pragma once

#include <cstdint>

#include <systemc>

#include "sim/cycles.h"

namespace mimic::sim::systemc {

// Sets SystemC's time resolution to 1 ps (idempotent). Throws std::runtime_error when the
// resolution was already fixed to another value.
void ensure_time_resolution();

// Exact conversions at 1 ps resolution.
inline uint64_t to_ps(const sc_core::sc_time& t) {
  return t.value();
}
inline sc_core::sc_time from_ps(uint64_t ps) {
  return sc_core::sc_time::from_value(ps);
}

// Runs the simulation until no event is pending and returns the simulated time that elapsed.
// The first call elaborates the design. Exceptions thrown by processes propagate to the caller;
// after one, the simulation must be considered broken (the process should be restarted).
sc_core::sc_time run_until_idle();

// True once the design has been elaborated (no module may be constructed after that).
bool elaborated();

// Elaborates and initializes the design (runs every process to its first wait) without
// advancing time, if that has not happened yet. Call it before notifying events that processes
// wait on from outside the simulation: notifications made before initialization can be lost.
void start_if_needed();

// Sets the global quantum used by every tlm_quantumkeeper (initiators sync at least this often).
void set_global_quantum_ps(uint64_t ps);

}  // namespace mimic::sim::systemc
