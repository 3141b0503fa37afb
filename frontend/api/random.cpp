#include "frontend/api/random.h"

#include <cmath>

#include "base/numeric_formats.h"

namespace mimic {
namespace {

uint64_t splitmix(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

}  // namespace

Random::Random(uint64_t seed) {
  for (auto& s : s_) s = splitmix(seed);
}

uint64_t Random::next_u64() {
  uint64_t result = rotl(s_[1] * 5, 7) * 9, t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Random::uniform() {
  return static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
}

// Marsaglia's polar method: a pair of normals per accepted point of the unit disc (acceptance
// pi/4), with one log and one sqrt and no trigonometry (about 3x faster than Box-Muller's sincos,
// which dominated building the zoo's weights).
float Random::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  double x, y, s;
  do {
    x = 2.0 * uniform() - 1.0;
    y = 2.0 * uniform() - 1.0;
    s = x * x + y * y;
  } while (s >= 1.0 || s == 0.0);
  double scale = std::sqrt(-2.0 * std::log(s) / s);
  spare_ = static_cast<float>(y * scale);
  has_spare_ = true;
  return static_cast<float>(x * scale);
}

ir::HostTensor Random::uniform_tensor(const ir::Shape& shape, float bound) {
  ir::HostTensor t(ir::DType::f32, shape);
  float* data = t.data<float>();
  const float scale = 2.0f * bound * 0x1.0p-24f;
  for (int64_t i = 0; i < t.numel(); ++i)
    data[i] = static_cast<float>(next_u64() >> 40) * scale - bound;  // 24 random bits
  return t;
}

ir::HostTensor Random::tensor(ir::DType dtype, const ir::Shape& shape, int64_t int_high,
                              float stddev) {
  ir::HostTensor t(dtype, shape);
  int64_t n = t.numel();
  switch (dtype) {
    case ir::DType::f32:
      for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = normal() * stddev;
      break;
    case ir::DType::f16:
      for (int64_t i = 0; i < n; ++i)
        t.data<ir::Float16>()[i].bits = numeric::f32_to_f16(normal() * stddev);
      break;
    case ir::DType::bf16:
      for (int64_t i = 0; i < n; ++i)
        t.data<ir::BFloat16>()[i].bits = numeric::f32_to_bf16(normal() * stddev);
      break;
    case ir::DType::i8:
      for (int64_t i = 0; i < n; ++i)
        t.data<int8_t>()[i] = static_cast<int8_t>(next_u64() % 255) - 127;
      break;
    case ir::DType::i32:
      for (int64_t i = 0; i < n; ++i)
        t.data<int32_t>()[i] = static_cast<int32_t>(next_u64() % int_high);
      break;
    case ir::DType::i64:
      for (int64_t i = 0; i < n; ++i)
        t.data<int64_t>()[i] = static_cast<int64_t>(next_u64() % int_high);
      break;
    case ir::DType::boolean:
      for (int64_t i = 0; i < n; ++i) t.data<bool>()[i] = next_u64() & 1;
      break;
    case ir::DType::f64:
      for (int64_t i = 0; i < n; ++i) t.data<double>()[i] = static_cast<double>(normal()) * stddev;
      break;
  }
  return t;
}

}  // namespace mimic
