// Max and min that propagate NaN from either operand, as numpy's maximum/minimum, PyTorch's
// maximum/amax and ONNX's reference Max/Min/ReduceMax/ReduceMin do (std::max and std::min drop a
// NaN in their second operand). Every backend's Max, Min and max/min reductions use these.
#pragma once

#include "base/host_device.h"

namespace mimic {

template <typename T>
MIMIC_HD T max_nan(T a, T b) {
  return (a != a || a > b) ? a : b;  // a != a: a is NaN
}
template <typename T>
MIMIC_HD T min_nan(T a, T b) {
  return (a != a || a < b) ? a : b;
}

}  // namespace mimic
