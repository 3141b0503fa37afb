#include "sim/systemc/scoreboard.h"

namespace mimic::sim::systemc {

void Scoreboard::reset(size_t items) {
  done_.assign(items, 0);
  events_.reset(new sc_core::sc_event[items]);
  completed_ = 0;
}

void Scoreboard::wait_for(size_t i) {
  if (!done_[i]) sc_core::wait(events_[i]);
}

void Scoreboard::complete(size_t i) {
  if (done_[i]) return;
  done_[i] = 1;
  ++completed_;
  events_[i].notify();
}

}  // namespace mimic::sim::systemc
