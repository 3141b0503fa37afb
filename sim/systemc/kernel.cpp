#include "sim/systemc/kernel.h"

#include <stdexcept>
#include <string>

#include <tlm_utils/tlm_quantumkeeper.h>

namespace mimic::sim::systemc {

void ensure_time_resolution() {
  static const bool ok = [] {
    // SystemC's default resolution is already 1 ps; setting it explicitly documents the
    // requirement and fails if the resolution was fixed to something else.
    if (!sc_core::sc_is_running()) {
      try {
        sc_core::sc_set_time_resolution(1, sc_core::SC_PS);
      } catch (const std::exception&) {
        // Already fixed (an sc_time was built): accepted below only if it is 1 ps.
      }
    }
    return sc_core::sc_get_time_resolution() == sc_core::sc_time(1, sc_core::SC_PS);
  }();
  if (!ok)
    throw std::runtime_error(
        "SystemC time resolution is not 1 ps (fixed elsewhere before mimic's models)");
}

sc_core::sc_time run_until_idle() {
  ensure_time_resolution();
  sc_core::sc_time start = sc_core::sc_time_stamp();
  sc_core::sc_start();  // SC_EXIT_ON_STARVATION: returns when no event is pending
  return sc_core::sc_time_stamp() - start;
}

bool elaborated() {
  return sc_core::sc_get_status() != sc_core::SC_ELABORATION;
}

void start_if_needed() {
  ensure_time_resolution();
  if (sc_core::sc_get_status() == sc_core::SC_ELABORATION) sc_core::sc_start(sc_core::SC_ZERO_TIME);
}

void set_global_quantum_ps(uint64_t ps) {
  ensure_time_resolution();
  tlm_utils::tlm_quantumkeeper::set_global_quantum(from_ps(ps));
}

}  // namespace mimic::sim::systemc
