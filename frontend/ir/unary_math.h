// The unary elementwise ops' ONNX attributes (with ONNX's defaults) and their math (the
// activations' formulas are base/activations.h), in one place:
// the cpu reference kernels and the cuda kernels (compiled for the GPU by nvcc, MIMIC_HD) call
// unary_float, and every backend reads the attributes through unary_attrs. Ops without
// attributes ignore UnaryAttrs; Not, IsNaN, IsInf, Clip, Cast, Identity and Dropout are not maps
// of one float and are not here.
#pragma once

#include <math.h>
#include <stdint.h>

#include <cmath>

#include "base/activations.h"
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
  using std::tanh;
  const T alpha = a.alpha;
  switch (op) {
    case OpType::Sigmoid:
      return activation::sigmoid(x);
    case OpType::Tanh:
      return tanh(x);
    case OpType::Relu:
      return activation::relu(x);
    case OpType::Softplus:
      return activation::softplus(x);
    case OpType::Softsign:
      return activation::softsign(x);
    case OpType::LeakyRelu:
      return activation::leaky_relu(x, alpha);
    case OpType::Elu:
      return activation::elu(x, alpha);
    case OpType::Celu:
      return activation::celu(x, alpha);
    case OpType::Selu:
      return activation::selu(x, alpha, T(a.gamma));
    case OpType::HardSigmoid:
      return activation::hard_sigmoid(x, alpha, T(a.beta));
    case OpType::HardSwish:
      return activation::hard_swish(x);
    case OpType::ThresholdedRelu:
      return activation::thresholded_relu(x, alpha);
    case OpType::Shrink:
      return activation::shrink(x, T(a.lambd), T(a.bias));
    case OpType::Gelu:
      return a.gelu_tanh ? activation::gelu_tanh(x) : activation::gelu(x);
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
