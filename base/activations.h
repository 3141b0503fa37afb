// The formulas of the activation functions, once, as ONNX (opset 17) defines them, for every
// layer that computes one: the IR's unary ops (frontend/ir/unary_math.h, used by the cpu and cuda
// kernels) and the TPU model's vector unit (models/tpu/numerics_vector.cpp). T is float or
// double; MIMIC_HD compiles them for cuda kernels too.
#pragma once

#include <cmath>

#include "base/host_device.h"

namespace mimic::activation {

template <typename T>
MIMIC_HD T clamp01(T y) {  // NaN stays NaN
  return y < 0 ? T(0) : (y > 1 ? T(1) : y);
}
template <typename T>
MIMIC_HD T relu(T x) {  // NaN stays NaN, as max(0, x) in ONNX's reference and PyTorch
  return x < 0 ? T(0) : x;
}
template <typename T>
MIMIC_HD T leaky_relu(T x, T alpha) {
  return x >= 0 ? x : alpha * x;
}
template <typename T>
MIMIC_HD T sigmoid(T x) {  // never exp of a large positive number
  using std::exp;
  return x >= 0 ? T(1) / (T(1) + exp(-x)) : exp(x) / (T(1) + exp(x));
}
template <typename T>
MIMIC_HD T softplus(T x) {
  using std::exp, std::log1p;
  return x > 20 ? x : log1p(exp(x));
}
template <typename T>
MIMIC_HD T softsign(T x) {
  return x / (T(1) + std::fabs(x));
}
template <typename T>
MIMIC_HD T elu(T x, T alpha) {
  using std::exp;
  return x >= 0 ? x : alpha * (exp(x) - T(1));
}
template <typename T>
MIMIC_HD T selu(T x, T alpha, T gamma) {
  using std::exp;
  return gamma * (x > 0 ? x : alpha * (exp(x) - T(1)));
}
template <typename T>
MIMIC_HD T celu(T x, T alpha) {
  using std::exp;
  T neg = alpha * (exp(x / alpha) - T(1));
  return (x > 0 ? x : T(0)) + (neg < 0 ? neg : T(0));
}
template <typename T>
MIMIC_HD T hard_sigmoid(T x, T alpha, T beta) {
  return clamp01(alpha * x + beta);
}
template <typename T>
MIMIC_HD T hard_swish(T x) {
  return x * clamp01(x / 6 + T(0.5));
}
template <typename T>
MIMIC_HD T thresholded_relu(T x, T alpha) {
  return x > alpha ? x : T(0);
}
template <typename T>
MIMIC_HD T shrink(T x, T lambd, T bias) {
  return x < -lambd ? x + bias : (x > lambd ? x - bias : T(0));
}
template <typename T>
MIMIC_HD T gelu(T x) {
  using std::erf;
  return T(0.5) * x * (T(1) + erf(x * T(0.70710678118654752440)));
}
template <typename T>
MIMIC_HD T gelu_tanh(T x) {
  using std::tanh;
  return T(0.5) * x * (T(1) + tanh(T(0.79788456080286535588) * (x + T(0.044715) * x * x * x)));
}

}  // namespace mimic::activation
