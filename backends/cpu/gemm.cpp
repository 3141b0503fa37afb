#include "backends/cpu/gemm.h"

#include <Eigen/Core>

namespace mimic::backends::cpu {
namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMap = Eigen::Map<const RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>>;
using Map = Eigen::Map<RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>>;

template <typename A, typename B>
void assign(Map& c, float alpha, const A& a, const B& b, float beta) {
  if (beta == 0.0f) {
    if (alpha == 1.0f)
      c.noalias() = a * b;
    else
      c.noalias() = alpha * (a * b);
  } else {
    if (beta != 1.0f) c *= beta;
    c.noalias() += alpha * (a * b);
  }
}

void run(int64_t m, int64_t n, int64_t k, float alpha, GemmOperand a, GemmOperand b, float beta,
         float* c_data, int64_t ldc) {
  Map c(c_data, m, n, Eigen::OuterStride<>(ldc));
  if (k == 0) {
    if (beta == 0.0f)
      c.setZero();
    else
      c *= beta;
    return;
  }
  ConstMap am(a.data, a.transposed ? k : m, a.transposed ? m : k, Eigen::OuterStride<>(a.ld));
  ConstMap bm(b.data, b.transposed ? n : k, b.transposed ? k : n, Eigen::OuterStride<>(b.ld));
  if (!a.transposed && !b.transposed)
    assign(c, alpha, am, bm, beta);
  else if (a.transposed && !b.transposed)
    assign(c, alpha, am.transpose(), bm, beta);
  else if (!a.transposed && b.transposed)
    assign(c, alpha, am, bm.transpose(), beta);
  else
    assign(c, alpha, am.transpose(), bm.transpose(), beta);
}

}  // namespace

void gemm_f32(int64_t m, int64_t n, int64_t k, float alpha, GemmOperand a, GemmOperand b,
              float beta, float* c, int64_t ldc) {
  run(m, n, k, alpha, a, b, beta, c, ldc);
}

}  // namespace mimic::backends::cpu
