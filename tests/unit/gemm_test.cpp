// base/gemm.h, the f32 GEMM every numerics path shares (oneDNN's sgemm): every transpose
// combination, alpha and beta (beta 0 overwrites even a NaN, as BLAS does), leading dimensions
// wider than the matrices (sub-blocks), empty K and empty outputs, against a double-precision loop;
// and exact results for bf16-representable operands, whose products the emulators rely on.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "base/gemm.h"
#include "base/numeric_formats.h"

namespace mimic {
namespace {

struct Case {
  int64_t m, n, k;
  bool ta, tb;
  float alpha, beta;
};

// A stored row-major matrix of `rows` x `cols` with row stride `ld` (>= cols), filled at random.
std::vector<float> random_matrix(int64_t rows, int64_t ld, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(rows * ld));
  for (float& x : v) x = d(rng);
  return v;
}

float at(const std::vector<float>& v, int64_t ld, bool transposed, int64_t i, int64_t j) {
  return transposed ? v[j * ld + i] : v[i * ld + j];
}

void check(const Case& c) {
  std::mt19937 rng(static_cast<unsigned>(c.m * 131 + c.n * 17 + c.k));
  const int64_t pad = 3;  // every leading dimension is wider than its matrix
  const int64_t a_rows = c.ta ? c.k : c.m, a_cols = c.ta ? c.m : c.k;
  const int64_t b_rows = c.tb ? c.n : c.k, b_cols = c.tb ? c.k : c.n;
  const int64_t lda = a_cols + pad, ldb = b_cols + pad, ldc = c.n + pad;
  std::vector<float> a = random_matrix(a_rows, lda, rng), b = random_matrix(b_rows, ldb, rng);
  std::vector<float> y = random_matrix(c.m, ldc, rng);
  if (c.beta == 0.0f && !y.empty()) y[0] = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> y0 = y;
  gemm_f32(c.m, c.n, c.k, c.alpha, {a.data(), lda, c.ta}, {b.data(), ldb, c.tb}, c.beta, y.data(),
           ldc);
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      double sum = 0.0;
      for (int64_t p = 0; p < c.k; ++p)
        sum += double(at(a, lda, c.ta, i, p)) * at(b, ldb, c.tb, p, j);
      double want = c.alpha * sum + (c.beta == 0.0f ? 0.0 : c.beta * double(y0[i * ldc + j]));
      ASSERT_NEAR(y[i * ldc + j], want, 1e-5 * (1.0 + std::abs(want)) * (1 + c.k))
          << "m=" << c.m << " n=" << c.n << " k=" << c.k << " ta=" << c.ta << " tb=" << c.tb
          << " alpha=" << c.alpha << " beta=" << c.beta << " at (" << i << ", " << j << ")";
    }
    for (int64_t j = c.n; j < ldc; ++j)  // the padding beyond each row is left alone
      ASSERT_EQ(y[i * ldc + j], y0[i * ldc + j]) << "column " << j << " of the padding changed";
  }
}

TEST(Gemm, MatchesADoubleLoopForEveryTransposeAlphaAndBeta) {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (float beta : {0.0f, 1.0f, 0.5f})
        for (const Case& shape :
             {Case{1, 1, 1}, Case{7, 5, 3}, Case{33, 65, 130}, Case{8, 1000, 64}, Case{200, 3, 17}})
          check({shape.m, shape.n, shape.k, ta, tb, beta == 0.5f ? 2.0f : 1.0f, beta});
}

TEST(Gemm, EmptyReductionScalesOrClearsAndEmptyOutputIsANoOp) {
  for (float beta : {0.0f, 1.0f, 0.5f}) check({4, 6, 0, false, false, 1.0f, beta});
  std::vector<float> y = {42.0f};
  gemm_f32(0, 5, 3, 1.0f, {nullptr, 3, false}, {nullptr, 5, false}, 0.0f, y.data(), 5);
  gemm_f32(5, 0, 3, 1.0f, {nullptr, 3, false}, {nullptr, 1, false}, 0.0f, y.data(), 1);
  EXPECT_EQ(y[0], 42.0f);
}

TEST(Gemm, ProductsOfBf16OperandsAreExact) {
  // The emulators' bf16 passes are f32 GEMMs over bf16-rounded operands: each product is exact in
  // f32, and with K = 1 nothing is accumulated, so the result is the exact product.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(-4.0f, 4.0f);
  std::vector<float> a(64), b(64), y(64 * 64);
  for (float& x : a) x = numeric::round_to_bf16(d(rng));
  for (float& x : b) x = numeric::round_to_bf16(d(rng));
  gemm_f32(64, 64, 1, 1.0f, {a.data(), 1, false}, {b.data(), 64, false}, 0.0f, y.data(), 64);
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 64; ++j) ASSERT_EQ(y[i * 64 + j], a[i] * b[j]);
}

TEST(Gemm, InsideAParallelRegionEachCallGivesTheSameResult) {
  std::mt19937 rng(3);
  std::vector<float> a = random_matrix(48, 40, rng), b = random_matrix(40, 24, rng);
  std::vector<float> want(48 * 24);
  gemm_f32(48, 24, 40, 1.0f, {a.data(), 40, false}, {b.data(), 24, false}, 0.0f, want.data(), 24);
  std::vector<std::vector<float>> got(4, std::vector<float>(48 * 24));
#pragma omp parallel for
  for (int t = 0; t < 4; ++t)
    gemm_f32(48, 24, 40, 1.0f, {a.data(), 40, false}, {b.data(), 24, false}, 0.0f, got[t].data(),
             24);
  for (const auto& g : got)
    for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], want[i], 1e-5f);
}

}  // namespace
}  // namespace mimic
