// Integer arithmetic of the cpu kernels with numpy's results instead of C++ undefined behaviour:
// + - * and negation wrap around (two's complement), INT_MIN / -1 wraps, x % -1 is 0, and
// conversions from floating point saturate (NaN -> 0). Floating-point types pass through.
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

namespace mimic::backends::cpu {

template <typename T>
T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}

template <typename T>
T wrap_sub(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
  } else {
    return a - b;
  }
}

template <typename T>
T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

template <typename T>
T wrap_neg(T a) {
  return wrap_sub(T(0), a);
}

// Truncating division and remainder with y != 0 checked by the caller.
template <typename T>
T int_div(T x, T y) {
  if (y == -1) return wrap_neg(x);
  return static_cast<T>(x / y);
}

template <typename T>
T int_rem(T x, T y) {
  if (y == -1) return T(0);
  return static_cast<T>(x % y);
}

// double -> integer T, truncating toward zero and saturating at T's range (NaN -> 0).
template <typename T>
T saturate_cast(double v) {
  if (std::isnan(v)) return T(0);
  if (v <= static_cast<double>(std::numeric_limits<T>::lowest()))
    return std::numeric_limits<T>::lowest();
  if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

}  // namespace mimic::backends::cpu
