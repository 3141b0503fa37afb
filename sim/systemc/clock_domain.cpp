#include "sim/systemc/clock_domain.h"

#include "sim/systemc/kernel.h"

namespace mimic::sim::systemc {

using sc_core::sc_time;

ClockDomain::ClockDomain(std::string name, Clock clock)
    : name_(std::move(name)), clock_(clock), period_ps_(clock.period_ps()) {
  ensure_time_resolution();
}

sc_time ClockDomain::to_time(Cycles c) const {
  return from_ps(c.count() * period_ps_);
}

Cycles ClockDomain::to_cycles(const sc_time& t) const {
  return Cycles(to_ps(t) / period_ps_);
}

Cycles ClockDomain::ceil_cycles(const sc_time& t) const {
  return Cycles((to_ps(t) + period_ps_ - 1) / period_ps_);
}

Cycles ClockDomain::now() const {
  return to_cycles(sc_core::sc_time_stamp());
}

void ClockDomain::wait(Cycles c) const {
  if (c.count() > 0) sc_core::wait(to_time(c));
}

sc_time ClockDomain::next_edge(const sc_time& t) const {
  return to_time(ceil_cycles(t));
}

uint64_t transfer_ps(uint64_t bytes, uint64_t bytes_per_s) {
  if (bytes_per_s == 0 || bytes == 0) return 0;
  unsigned __int128 num = static_cast<unsigned __int128>(bytes) * 1'000'000'000'000ull;
  return static_cast<uint64_t>((num + bytes_per_s - 1) / bytes_per_s);
}

}  // namespace mimic::sim::systemc
