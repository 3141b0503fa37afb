#include "sim/systemc/bsp_clock.h"

#include <stdexcept>

namespace mimic::sim::systemc {

BspClock::BspClock(uint64_t hz) : clock_{hz}, period_ps_(Clock{hz}.period_ps()) {
  if (hz == 0 || period_ps_ == 0)
    throw std::invalid_argument("BspClock: clock must be between 1 Hz and 1 THz");
  if (sc_core::sc_get_time_resolution() != sc_core::sc_time(1, sc_core::SC_PS))
    throw std::logic_error("BspClock: SystemC time resolution must be 1 ps");
}

sc_core::sc_time BspClock::time(Cycles c) const {
  return sc_core::sc_time::from_value(c.count() * period_ps_);
}

Cycles BspClock::cycles(const sc_core::sc_time& t) const {
  return Cycles(t.value() / period_ps_);
}

Cycles BspClock::now() const {
  return cycles(sc_core::sc_time_stamp());
}

void BspClock::wait(Cycles c) const {
  if (c.count()) sc_core::wait(time(c));
}

void bsp_elaborate() {
  if (sc_core::sc_get_status() == sc_core::SC_ELABORATION) sc_core::sc_start(sc_core::SC_ZERO_TIME);
}

void bsp_run_until_idle() {
  bsp_elaborate();
  if (sc_core::sc_end_of_simulation_invoked())
    throw std::runtime_error("the SystemC simulation was stopped and cannot run again");
  sc_core::sc_start();
}

}  // namespace mimic::sim::systemc
