// bf16/fp16 conversions: round to nearest even, ties, overflow to inf, NaN kept, fp16 subnormals,
// the scalar and vectorized paths agreeing, and the bf16 split used by multi-pass matmul.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "base/numeric_formats.h"

namespace mimic::numeric {
namespace {

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(round_to_bf16(1.0f), 1.0f);
  // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even mantissa (1.0) wins.
  EXPECT_EQ(round_to_bf16(1.0f + std::ldexp(1.0f, -8)), 1.0f);
  // 1 + 3*2^-8 ties between 1+2^-7 (odd) and 1+2^-6 (even).
  EXPECT_EQ(round_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 1.0f + std::ldexp(1.0f, -6));
  // The jax#9973 inputs (reference sheet section C.2).
  EXPECT_EQ(round_to_bf16(0.3744f), 0.375f);
  EXPECT_EQ(round_to_bf16(0.1656f), 0.166015625f);
  EXPECT_EQ(round_to_bf16(0.1186f), 0.11865234375f);
}

TEST(Bf16, OverflowNanAndArrayPathAgree) {
  EXPECT_TRUE(std::isinf(round_to_bf16(std::numeric_limits<float>::max())));
  EXPECT_TRUE(std::isnan(round_to_bf16(std::nanf(""))));
  std::vector<float> v;
  for (int i = -2000; i < 2000; ++i) v.push_back(static_cast<float>(i) * 0.01234567f);
  v.push_back(std::nanf(""));
  std::vector<float> w = v;
  round_to_bf16(w.data(), w.size());
  for (size_t i = 0; i + 1 < v.size(); ++i) EXPECT_EQ(w[i], round_to_bf16(v[i])) << v[i];
  EXPECT_TRUE(std::isnan(w.back()));
}

TEST(F16, RoundingSubnormalsOverflow) {
  EXPECT_EQ(round_to_f16(1.0f + std::ldexp(1.0f, -11)), 1.0f);  // tie to even
  EXPECT_EQ(round_to_f16(65504.0f), 65504.0f);                  // largest finite
  EXPECT_TRUE(std::isinf(round_to_f16(65520.0f)));              // rounds up to inf
  EXPECT_EQ(round_to_f16(65519.0f), 65504.0f);
  float smallest = std::ldexp(1.0f, -24);  // smallest subnormal
  EXPECT_EQ(round_to_f16(smallest), smallest);
  EXPECT_EQ(round_to_f16(smallest * 0.49f), 0.0f);
  EXPECT_EQ(f16_to_f32(f32_to_f16(-2.5f)), -2.5f);
  EXPECT_TRUE(std::isnan(round_to_f16(std::nanf(""))));
  std::vector<float> v;
  for (int i = -3000; i < 3000; ++i) v.push_back(static_cast<float>(i) * 17.123f + 0.3f);
  std::vector<uint16_t> h(v.size());
  f32_to_f16(v.data(), h.data(), v.size());
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(h[i], f32_to_f16(v[i])) << v[i];
}

TEST(Bf16Split, ThreeTermsRecoverFloat32) {
  for (float x : {0.3744f, 3.14159265f, -1e-3f, 12345.678f}) {
    Bf16Split s = split_bf16(x);
    EXPECT_EQ(round_to_bf16(s.hi), s.hi);
    EXPECT_EQ(round_to_bf16(s.mid), s.mid);
    EXPECT_EQ(round_to_bf16(s.lo), s.lo);
    EXPECT_NEAR(s.hi + s.mid + s.lo, x, std::fabs(x) * 1e-7f);
  }
}

TEST(Int8, SymmetricQuantization) {
  std::vector<float> v{-1.0f, -0.5f, 0.0f, 0.26f, 1.0f};
  std::vector<int8_t> q(v.size());
  float scale = int8_scale_for(1.0f);
  quantize_int8(v.data(), q.data(), v.size(), scale);
  EXPECT_EQ(q[0], -127);
  EXPECT_EQ(q[1], -64);  // -63.5 rounds to even
  EXPECT_EQ(q[3], 33);
  EXPECT_EQ(q[4], 127);
}

}  // namespace
}  // namespace mimic::numeric
