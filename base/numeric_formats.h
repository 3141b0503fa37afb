// Numeric formats of accelerator datapaths: IEEE binary16 (fp16) and bfloat16 conversions with
// round-to-nearest-even (overflow to inf, NaN kept quiet, fp16 subnormals kept), rounding helpers
// that emulate storing a float in a narrower format, and the bf16 operand split used by TPU
// multi-pass matmul (precision high/highest: hi + mid + lo, each exactly representable in bf16).
// The fp16 conversion follows F. Giesen's exhaustively verified float_to_half_fast3_rtne.
// The scalar conversions are MIMIC_HD: the cuda kernels call these very functions on the GPU.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/host_device.h"

namespace mimic::numeric {

MIMIC_HD uint32_t float_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
#endif
}

MIMIC_HD float bits_float(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  memcpy(&f, &u, 4);
  return f;
#endif
}

MIMIC_HD uint16_t f32_to_bf16(float f) {
  uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

MIMIC_HD float bf16_to_f32(uint16_t h) {
  return bits_float(static_cast<uint32_t>(h) << 16);
}

MIMIC_HD uint16_t f32_to_f16(float f) {
  const uint32_t f32_infinity = 255u << 23, f16_limit = (127u + 16u) << 23;
  const uint32_t denorm_magic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
  uint32_t u = float_bits(f);
  uint32_t sign = u & 0x80000000u;
  u ^= sign;
  uint16_t out;
  if (u >= f16_limit) {
    out = u > f32_infinity ? 0x7e00 : 0x7c00;
  } else if (u < (113u << 23)) {
    out =
        static_cast<uint16_t>(float_bits(bits_float(u) + bits_float(denorm_magic)) - denorm_magic);
  } else {
    uint32_t mantissa_odd = (u >> 13) & 1u;
    u += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu;
    u += mantissa_odd;
    out = static_cast<uint16_t>(u >> 13);
  }
  return static_cast<uint16_t>(out | (sign >> 16));
}

MIMIC_HD float f16_to_f32(uint16_t h) {
  const uint32_t magic = 113u << 23, shifted_exp = 0x7c00u << 13;
  uint32_t o = (static_cast<uint32_t>(h) & 0x7fffu) << 13;
  uint32_t exp = shifted_exp & o;
  o += (127u - 15u) << 23;
  if (exp == shifted_exp) {
    o += (128u - 16u) << 23;
  } else if (exp == 0) {
    o += 1u << 23;
    o = float_bits(bits_float(o) - bits_float(magic));
  }
  o |= (static_cast<uint32_t>(h) & 0x8000u) << 16;
  return bits_float(o);
}

MIMIC_HD float round_to_bf16(float f) {
  return bf16_to_f32(f32_to_bf16(f));
}
MIMIC_HD float round_to_f16(float f) {
  return f16_to_f32(f32_to_f16(f));
}

// Array conversions (vectorized where the CPU allows).
void f32_to_bf16(const float* in, uint16_t* out, size_t n);
void bf16_to_f32(const uint16_t* in, float* out, size_t n);
void f32_to_f16(const float* in, uint16_t* out, size_t n);
void f16_to_f32(const uint16_t* in, float* out, size_t n);
void round_to_bf16(float* data, size_t n);
void round_to_f16(float* data, size_t n);

// Splits x into bf16 terms with x ~= hi + mid + lo (each term exactly representable in bf16).
struct Bf16Split {
  float hi, mid, lo;
};
MIMIC_HD Bf16Split split_bf16(float x) {
  float hi = round_to_bf16(x);
  float mid = round_to_bf16(x - hi);
  float lo = round_to_bf16(x - hi - mid);
  return {hi, mid, lo};
}

// Symmetric int8 quantization with a power-free float scale: q = clamp(round_half_even(x/scale)).
float int8_scale_for(float max_abs);
void quantize_int8(const float* in, int8_t* out, size_t n, float scale);

}  // namespace mimic::numeric
