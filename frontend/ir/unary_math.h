// The unary elementwise ops' ONNX attributes (with ONNX's defaults) and their math, in one place:
// the cpu reference kernels and the cuda kernels (compiled for the GPU by nvcc, MIMIC_HD) call
// unary_float, and every backend reads the attributes through unary_attrs. Ops without
// attributes ignore UnaryAttrs; Not, IsNaN, IsInf, Clip, Cast, Identity and Dropout are not maps
// of one float and are not here.
#pragma once

#include <math.h>
#include <stdint.h>

#include <cmath>

#include "base/host_device.h"
#include "frontend/ir/op_type.h"

namespace mimic::ir {

struct Node;

// Plain data: it travels by value into cuda kernels.
struct UnaryAttrs {
  float alpha = 0, beta = 0, gamma = 0, lambd = 0, bias = 0;
  int32_t gelu_tanh = 0;                             // Gelu approximate="tanh"
  int32_t detect_positive = 1, detect_negative = 1;  // IsInf
};

// The attributes of node `n` that its op reads, each defaulted as ONNX (opset 17) says.
UnaryAttrs unary_attrs(const Node& n);

// The activations among the unary ops (unary_float's second half).
template <typename T>
MIMIC_HD T unary_activation(OpType op, T x, const UnaryAttrs& a) {
  using std::erf, std::exp, std::log1p, std::tanh;
  const T zero = 0, one = 1, half = T(0.5);
  switch (op) {
    case OpType::Sigmoid:  // never exp of a large positive number
      return x >= 0 ? one / (one + exp(-x)) : exp(x) / (one + exp(x));
    case OpType::Tanh:
      return tanh(x);
    case OpType::Relu:
      return x > 0 ? x : zero;
    case OpType::Softplus:
      return x > 20 ? x : log1p(exp(x));
    case OpType::Softsign:
      return x / (one + std::fabs(x));
    case OpType::LeakyRelu:
      return x >= 0 ? x : T(a.alpha) * x;
    case OpType::Elu:
      return x >= 0 ? x : T(a.alpha) * (exp(x) - one);
    case OpType::Celu: {
      T neg = T(a.alpha) * (exp(x / T(a.alpha)) - one);
      return (x > 0 ? x : zero) + (neg < 0 ? neg : zero);
    }
    case OpType::Selu:
      return T(a.gamma) * (x > 0 ? x : T(a.alpha) * (exp(x) - one));
    case OpType::HardSigmoid: {
      T y = T(a.alpha) * x + T(a.beta);
      return y < 0 ? zero : (y > 1 ? one : y);
    }
    case OpType::HardSwish: {
      T y = x / 6 + half;
      return x * (y < 0 ? zero : (y > 1 ? one : y));
    }
    case OpType::ThresholdedRelu:
      return x > T(a.alpha) ? x : zero;
    case OpType::Shrink:
      return x < -T(a.lambd) ? x + T(a.bias) : (x > T(a.lambd) ? x - T(a.bias) : zero);
    case OpType::Gelu:
      if (a.gelu_tanh)
        return half * x * (one + tanh(T(0.79788456080286535588) * (x + T(0.044715) * x * x * x)));
      return half * x * (one + erf(x * T(0.70710678118654752440)));
    default:
      return x;
  }
}

// y = op(x) in T (float, or double for the cpu backend's f64 tensors).
template <typename T>
MIMIC_HD T unary_float(OpType op, T x, const UnaryAttrs& a) {
  using std::erf, std::exp, std::log;
  const T one = 1;
  switch (op) {
    case OpType::Abs:
      return std::fabs(x);
    case OpType::Neg:
      return -x;
    case OpType::Exp:
      return exp(x);
    case OpType::Log:
      return log(x);
    case OpType::Sqrt:
      return std::sqrt(x);
    case OpType::Reciprocal:
      return one / x;
    case OpType::Floor:
      return std::floor(x);
    case OpType::Ceil:
      return std::ceil(x);
    case OpType::Round:  // half to even, as ONNX says
      return std::rint(x);
    case OpType::Sign:
      return static_cast<T>((x > 0) - (x < 0));
    case OpType::Sin:
      return std::sin(x);
    case OpType::Cos:
      return std::cos(x);
    case OpType::Tan:
      return std::tan(x);
    case OpType::Asin:
      return std::asin(x);
    case OpType::Acos:
      return std::acos(x);
    case OpType::Atan:
      return std::atan(x);
    case OpType::Sinh:
      return std::sinh(x);
    case OpType::Cosh:
      return std::cosh(x);
    case OpType::Asinh:
      return std::asinh(x);
    case OpType::Acosh:
      return std::acosh(x);
    case OpType::Atanh:
      return std::atanh(x);
    case OpType::Erf:
      return erf(x);
    default:
      return unary_activation(op, x, a);
  }
}

}  // namespace mimic::ir
