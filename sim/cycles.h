// Integer simulated time. Cycles are counted in a strong type so that they are never mixed with
// seconds or bytes by accident; clock periods are integer picoseconds. Only sim/ converts to
// SystemC's sc_time.
#pragma once

#include <cstdint>

namespace mimic::sim {

class Cycles {
 public:
  constexpr Cycles() = default;
  constexpr explicit Cycles(uint64_t n) : n_(n) {}
  constexpr uint64_t count() const { return n_; }

  constexpr Cycles operator+(Cycles o) const { return Cycles(n_ + o.n_); }
  constexpr Cycles operator-(Cycles o) const { return Cycles(n_ > o.n_ ? n_ - o.n_ : 0); }
  constexpr Cycles& operator+=(Cycles o) {
    n_ += o.n_;
    return *this;
  }
  constexpr Cycles operator*(uint64_t k) const { return Cycles(n_ * k); }
  constexpr bool operator<(Cycles o) const { return n_ < o.n_; }
  constexpr bool operator<=(Cycles o) const { return n_ <= o.n_; }
  constexpr bool operator>(Cycles o) const { return n_ > o.n_; }
  constexpr bool operator>=(Cycles o) const { return n_ >= o.n_; }
  constexpr bool operator==(Cycles o) const { return n_ == o.n_; }
  constexpr bool operator!=(Cycles o) const { return n_ != o.n_; }

 private:
  uint64_t n_ = 0;
};

constexpr Cycles max(Cycles a, Cycles b) {
  return a < b ? b : a;
}

struct Clock {
  uint64_t hz = 1'000'000'000;
  // Picoseconds per cycle, rounded to the nearest integer.
  constexpr uint64_t period_ps() const { return (1'000'000'000'000ull + hz / 2) / hz; }
  double seconds(Cycles c) const {
    return static_cast<double>(c.count()) / static_cast<double>(hz);
  }
};

}  // namespace mimic::sim
