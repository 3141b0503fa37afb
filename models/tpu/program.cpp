// Names and vector-unit costs of the program's enums.
//
// Vector costs are ALU operations per element, issued at vpu.alus per (lane, sublane) per cycle.
// [assumed] values: adds, multiplies, compares and selects are one operation (S3: "most ops issue
// once per cycle"); divisions and reciprocals are Newton iterations (~4); exp/log/tanh/sigmoid/erf
// go through a transcendental unit at a quarter rate plus a few fix-up operations (~8). Reductions
// cost one operation per element plus a cross-lane tree paid once per instruction.
#include "models/tpu/program.h"

namespace mimic::models::tpu {

const char* level_name(Level l) {
  switch (l) {
    case Level::host:
      return "host";
    case Level::offchip:
      return "offchip";
    case Level::onchip:
      return "onchip";
  }
  return "?";
}

const char* opcode_name(Opcode o) {
  switch (o) {
    case Opcode::dma:
      return "dma";
    case Opcode::matmul:
      return "matmul";
    case Opcode::vector:
      return "vector";
    case Opcode::sync:
      return "sync";
  }
  return "?";
}

const char* vector_func_name(VectorFunc f) {
  switch (f) {
    // clang-format off
#define MIMIC_NAME(x) case VectorFunc::x: return #x;
    MIMIC_NAME(identity) MIMIC_NAME(relu) MIMIC_NAME(clip) MIMIC_NAME(leaky_relu) MIMIC_NAME(elu)
    MIMIC_NAME(selu) MIMIC_NAME(sigmoid) MIMIC_NAME(hard_sigmoid) MIMIC_NAME(hard_swish)
    MIMIC_NAME(tanh) MIMIC_NAME(exp) MIMIC_NAME(log) MIMIC_NAME(sqrt) MIMIC_NAME(reciprocal)
    MIMIC_NAME(abs) MIMIC_NAME(neg) MIMIC_NAME(erf) MIMIC_NAME(gelu) MIMIC_NAME(gelu_tanh)
    MIMIC_NAME(softplus) MIMIC_NAME(softsign) MIMIC_NAME(floor) MIMIC_NAME(ceil) MIMIC_NAME(round)
    MIMIC_NAME(sign) MIMIC_NAME(sin) MIMIC_NAME(cos) MIMIC_NAME(tan) MIMIC_NAME(scale)
    MIMIC_NAME(trunc) MIMIC_NAME(nonzero) MIMIC_NAME(logical_not) MIMIC_NAME(is_nan)
    MIMIC_NAME(is_inf) MIMIC_NAME(asin) MIMIC_NAME(acos) MIMIC_NAME(atan) MIMIC_NAME(sinh)
    MIMIC_NAME(cosh) MIMIC_NAME(asinh) MIMIC_NAME(acosh) MIMIC_NAME(atanh)
    MIMIC_NAME(thresholded_relu) MIMIC_NAME(celu) MIMIC_NAME(shrink) MIMIC_NAME(add) MIMIC_NAME(sub)
    MIMIC_NAME(mul) MIMIC_NAME(div) MIMIC_NAME(max) MIMIC_NAME(min) MIMIC_NAME(pow)
    MIMIC_NAME(prelu) MIMIC_NAME(mod) MIMIC_NAME(fmod) MIMIC_NAME(equal) MIMIC_NAME(less)
    MIMIC_NAME(less_equal) MIMIC_NAME(greater) MIMIC_NAME(greater_equal) MIMIC_NAME(logical_and)
    MIMIC_NAME(logical_or) MIMIC_NAME(logical_xor) MIMIC_NAME(where) MIMIC_NAME(clamp)
    MIMIC_NAME(sum) MIMIC_NAME(mean) MIMIC_NAME(reduce_max) MIMIC_NAME(reduce_min) MIMIC_NAME(prod)
    MIMIC_NAME(l1) MIMIC_NAME(l2) MIMIC_NAME(sum_square) MIMIC_NAME(log_sum) MIMIC_NAME(arg_max)
    MIMIC_NAME(arg_min) MIMIC_NAME(inv_std_dev) MIMIC_NAME(log_sum_exp) MIMIC_NAME(softmax)
    MIMIC_NAME(log_softmax) MIMIC_NAME(layer_norm) MIMIC_NAME(scale_shift) MIMIC_NAME(max_pool)
    MIMIC_NAME(avg_pool) MIMIC_NAME(depthwise_conv) MIMIC_NAME(matvec) MIMIC_NAME(copy)
    MIMIC_NAME(transpose) MIMIC_NAME(gather)
#undef MIMIC_NAME
    // clang-format on
  }
  return "?";
}

uint32_t vector_ops_per_element(VectorFunc f) {
  switch (f) {
    case VectorFunc::identity:
    case VectorFunc::copy:
    case VectorFunc::relu:
    case VectorFunc::abs:
    case VectorFunc::neg:
    case VectorFunc::floor:
    case VectorFunc::ceil:
    case VectorFunc::round:
    case VectorFunc::sign:
    case VectorFunc::add:
    case VectorFunc::sub:
    case VectorFunc::mul:
    case VectorFunc::max:
    case VectorFunc::min:
    case VectorFunc::sum:
    case VectorFunc::mean:
    case VectorFunc::reduce_max:
    case VectorFunc::reduce_min:
    case VectorFunc::prod:
    case VectorFunc::l1:
    case VectorFunc::transpose:
    case VectorFunc::scale:
    case VectorFunc::trunc:
    case VectorFunc::nonzero:
    case VectorFunc::logical_not:
    case VectorFunc::is_nan:
    case VectorFunc::equal:
    case VectorFunc::less:
    case VectorFunc::less_equal:
    case VectorFunc::greater:
    case VectorFunc::greater_equal:
    case VectorFunc::logical_and:
    case VectorFunc::logical_or:
    case VectorFunc::logical_xor:
    case VectorFunc::where:
    case VectorFunc::gather:
      return 1;
    case VectorFunc::is_inf:
    case VectorFunc::clamp:
    case VectorFunc::arg_max:
    case VectorFunc::arg_min:
      return 2;  // compare + select (index tracking for arg reductions)
    case VectorFunc::mod:
    case VectorFunc::fmod:
      return 6;  // divide (Newton), truncate, multiply-subtract, sign fix
    case VectorFunc::inv_std_dev:
      return 4;  // mean and centered square sum, rsqrt once per row
    case VectorFunc::clip:
    case VectorFunc::thresholded_relu:
    case VectorFunc::leaky_relu:
    case VectorFunc::prelu:
    case VectorFunc::sum_square:
    case VectorFunc::scale_shift:
    case VectorFunc::hard_sigmoid:
    case VectorFunc::l2:
      return 2;
    case VectorFunc::hard_swish:
    case VectorFunc::shrink:
      return 4;
    case VectorFunc::div:
    case VectorFunc::reciprocal:
    case VectorFunc::sqrt:
    case VectorFunc::softsign:
      return 4;
    case VectorFunc::exp:
    case VectorFunc::log:
    case VectorFunc::tanh:
    case VectorFunc::sigmoid:
    case VectorFunc::erf:
    case VectorFunc::elu:
    case VectorFunc::selu:
    case VectorFunc::softplus:
    case VectorFunc::sin:
    case VectorFunc::cos:
    case VectorFunc::tan:
    case VectorFunc::asin:
    case VectorFunc::acos:
    case VectorFunc::atan:
    case VectorFunc::sinh:
    case VectorFunc::cosh:
    case VectorFunc::asinh:
    case VectorFunc::acosh:
    case VectorFunc::atanh:
    case VectorFunc::celu:
    case VectorFunc::log_sum:
    case VectorFunc::log_sum_exp:
    case VectorFunc::pow:
      return 8;
    case VectorFunc::gelu:
    case VectorFunc::gelu_tanh:
      return 12;
    case VectorFunc::softmax:
    case VectorFunc::log_softmax:
      return 12;  // max, exp, sum, scale
    case VectorFunc::layer_norm:
      return 8;  // mean, variance, normalize, affine
    case VectorFunc::max_pool:
    case VectorFunc::avg_pool:
      return 1;  // per window element
    case VectorFunc::depthwise_conv:
    case VectorFunc::matvec:
      return 2;  // multiply + add per tap
  }
  return 1;
}

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

}  // namespace mimic::models::tpu
