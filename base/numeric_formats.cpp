#include "base/numeric_formats.h"

#include <algorithm>
#include <cmath>
#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace mimic::numeric {

void f32_to_bf16(const float* in, uint16_t* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = f32_to_bf16(in[i]);
}

void bf16_to_f32(const uint16_t* in, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = bf16_to_f32(in[i]);
}

void f32_to_f16(const float* in, uint16_t* out, size_t n) {
  size_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
#endif
  for (; i < n; ++i) out[i] = f32_to_f16(in[i]);
}

void f16_to_f32(const uint16_t* in, float* out, size_t n) {
  size_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
#endif
  for (; i < n; ++i) out[i] = f16_to_f32(in[i]);
}

void round_to_bf16(float* data, size_t n) {
  // Branch-free so that the loop vectorizes: NaNs keep their bits.
  uint32_t* u = reinterpret_cast<uint32_t*>(data);
  for (size_t i = 0; i < n; ++i) {
    uint32_t x = u[i];
    uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) & 0xffff0000u;
    u[i] = (x & 0x7fffffffu) > 0x7f800000u ? x : rounded;
  }
}

void round_to_f16(float* data, size_t n) {
  size_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(data + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_ps(data + i, _mm256_cvtph_ps(h));
  }
#endif
  for (; i < n; ++i) data[i] = round_to_f16(data[i]);
}

float int8_scale_for(float max_abs) {
  return max_abs > 0 ? max_abs / 127.0f : 1.0f;
}

void quantize_int8(const float* in, int8_t* out, size_t n, float scale) {
  float inv = 1.0f / scale;
  for (size_t i = 0; i < n; ++i) {
    float q = std::nearbyint(in[i] * inv);
    out[i] = static_cast<int8_t>(std::clamp(q, -127.0f, 127.0f));
  }
}

}  // namespace mimic::numeric
