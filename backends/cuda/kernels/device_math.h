// Per-element and per-row bodies of the CUDA kernels, compiled for the GPU by nvcc and for the host
// by g++ (MIMIC_HD), so that the tests can execute the very same code on the CPU (host emulator)
// and compare it with the cpu backend without a GPU. The semantics follow backends/cpu/ exactly:
// 16-bit floats are widened to f32 and rounded back to nearest even (the bit-level
// conversions of base/numeric_formats.h, shared with the host), reductions accumulate in double
// like the cpu kernels, integer ops compute in int64 and wrap on store.
//
// Only the launch configuration and the warp-parallel row reductions (kernels/*.cu) are GPU-only.
// Convolution, pooling, normalization and reduction bodies are in device_math_nn.h.
#pragma once

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "backends/cuda/kernels/params.h"
#include "base/extrema.h"
#include "base/host_device.h"
#include "base/numeric_formats.h"

namespace mimic::backends::cuda {

using ir::OpType;

// ---- typed loads and stores through a runtime dtype ----

MIMIC_HD int dt_size(DT dt) {
  switch (dt) {
    case DT::f16:
    case DT::bf16:
      return 2;
    case DT::i8:
    case DT::b8:
      return 1;
    case DT::i64:
      return 8;
    default:
      return 4;
  }
}

MIMIC_HD bool dt_is_float(DT dt) {
  return dt == DT::f32 || dt == DT::f16 || dt == DT::bf16;
}

MIMIC_HD float load_f(const void* p, DT dt, int64_t i) {
  switch (dt) {
    case DT::f32:
      return static_cast<const float*>(p)[i];
    case DT::f16:
      return numeric::f16_to_f32(static_cast<const uint16_t*>(p)[i]);
    case DT::bf16:
      return numeric::bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
    case DT::i8:
      return static_cast<float>(static_cast<const int8_t*>(p)[i]);
    case DT::i32:
      return static_cast<float>(static_cast<const int32_t*>(p)[i]);
    case DT::i64:
      return static_cast<float>(static_cast<const int64_t*>(p)[i]);
    case DT::b8:
      return static_cast<const uint8_t*>(p)[i] ? 1.0f : 0.0f;
  }
  return 0.0f;
}

MIMIC_HD void store_f(void* p, DT dt, int64_t i, float v) {
  switch (dt) {
    case DT::f32:
      static_cast<float*>(p)[i] = v;
      break;
    case DT::f16:
      static_cast<uint16_t*>(p)[i] = numeric::f32_to_f16(v);
      break;
    case DT::bf16:
      static_cast<uint16_t*>(p)[i] = numeric::f32_to_bf16(v);
      break;
    case DT::i8:
      static_cast<int8_t*>(p)[i] = static_cast<int8_t>(v);
      break;
    case DT::i32:
      static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v);
      break;
    case DT::i64:
      static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v);
      break;
    case DT::b8:
      static_cast<uint8_t*>(p)[i] = v != 0.0f;
      break;
  }
}

MIMIC_HD int64_t load_i(const void* p, DT dt, int64_t i) {
  switch (dt) {
    case DT::i8:
      return static_cast<const int8_t*>(p)[i];
    case DT::i32:
      return static_cast<const int32_t*>(p)[i];
    case DT::i64:
      return static_cast<const int64_t*>(p)[i];
    case DT::b8:
      return static_cast<const uint8_t*>(p)[i] ? 1 : 0;
    default:
      return static_cast<int64_t>(load_f(p, dt, i));
  }
}

// Integer stores wrap (two's complement), as the cpu kernels' static_cast<T> does.
MIMIC_HD void store_i(void* p, DT dt, int64_t i, int64_t v) {
  switch (dt) {
    case DT::i8:
      static_cast<int8_t*>(p)[i] = static_cast<int8_t>(static_cast<uint64_t>(v) & 0xffu);
      break;
    case DT::i32:
      static_cast<int32_t*>(p)[i] = static_cast<int32_t>(static_cast<uint64_t>(v) & 0xffffffffu);
      break;
    case DT::i64:
      static_cast<int64_t*>(p)[i] = v;
      break;
    case DT::b8:
      static_cast<uint8_t*>(p)[i] = v != 0;
      break;
    default:
      store_f(p, dt, i, static_cast<float>(v));
      break;
  }
}

MIMIC_HD double load_d(const void* p, DT dt, int64_t i) {
  if (dt == DT::i64) return static_cast<double>(static_cast<const int64_t*>(p)[i]);
  if (dt == DT::i32) return static_cast<double>(static_cast<const int32_t*>(p)[i]);
  return static_cast<double>(load_f(p, dt, i));
}

MIMIC_HD void copy_bytes(void* dst, int64_t di, const void* src, int64_t si, int esize) {
  switch (esize) {
    case 1:
      static_cast<uint8_t*>(dst)[di] = static_cast<const uint8_t*>(src)[si];
      break;
    case 2:
      static_cast<uint16_t*>(dst)[di] = static_cast<const uint16_t*>(src)[si];
      break;
    case 4:
      static_cast<uint32_t*>(dst)[di] = static_cast<const uint32_t*>(src)[si];
      break;
    default:
      static_cast<uint64_t*>(dst)[di] = static_cast<const uint64_t*>(src)[si];
      break;
  }
}

MIMIC_HD void zero_bytes(void* dst, int64_t di, int esize) {
  switch (esize) {
    case 1:
      static_cast<uint8_t*>(dst)[di] = 0;
      break;
    case 2:
      static_cast<uint16_t*>(dst)[di] = 0;
      break;
    case 4:
      static_cast<uint32_t*>(dst)[di] = 0;
      break;
    default:
      static_cast<uint64_t*>(dst)[di] = 0;
      break;
  }
}

MIMIC_HD bool is_nan(float x) {
  return x != x;
}
MIMIC_HD bool is_inf(float x) {
  return x == INFINITY || x == -INFINITY;
}
// std::max / std::min semantics (the first argument wins when unordered).
MIMIC_HD float max_std(float a, float b) {
  return a < b ? b : a;
}
MIMIC_HD float min_std(float a, float b) {
  return b < a ? b : a;
}
MIMIC_HD double max_std_d(double a, double b) {
  return a < b ? b : a;
}
MIMIC_HD double min_std_d(double a, double b) {
  return b < a ? b : a;
}
MIMIC_HD float clamp_std(float v, float lo, float hi) {
  return v < lo ? lo : (hi < v ? hi : v);
}

// ---- 32-bit index arithmetic: true when every index and offset of a launch fits int32 ----

MIMIC_HD bool fits32(int64_t v) {
  return v >= 0 && v < 2147483647;
}

// The largest element offset reached through `stride` over `size` (strides are non-negative).
MIMIC_HD int64_t max_offset(int rank, const int64_t* size, const int64_t* stride) {
  int64_t m = 0;
  for (int d = 0; d < rank; ++d) m += (size[d] > 0 ? size[d] - 1 : 0) * stride[d];
  return m;
}

MIMIC_HD int64_t spatial_volume(const Window& w, bool input) {
  int64_t v = 1;
  for (int d = 0; d < w.rank; ++d) v *= input ? w.in[d] : w.out[d];
  return v;
}

MIMIC_HD bool index32(const BinaryParams& p) {
  return fits32(p.n) && fits32(max_offset(p.rank, p.size, p.stride_a)) &&
         fits32(max_offset(p.rank, p.size, p.stride_b));
}
MIMIC_HD bool index32(const VariadicParams& p) {
  bool ok = fits32(p.n);
  for (int k = 0; k < p.count; ++k) ok = ok && fits32(max_offset(p.rank, p.size, p.stride[k]));
  return ok;
}
MIMIC_HD bool index32(const WhereParams& p) {
  return fits32(p.n) && fits32(max_offset(p.rank, p.size, p.stride_c)) &&
         fits32(max_offset(p.rank, p.size, p.stride_x)) &&
         fits32(max_offset(p.rank, p.size, p.stride_y));
}
MIMIC_HD bool index32(const CopyParams& p) {
  return fits32(p.n) && fits32(p.offset + max_offset(p.rank, p.size, p.stride));
}
MIMIC_HD bool index32(const PadParams& p) {
  int64_t in = 1;
  for (int d = 0; d < p.rank; ++d) in *= p.in_size[d];
  return fits32(p.n) && fits32(in);
}
MIMIC_HD bool index32(const Im2colParams& p) {
  return fits32(p.n) && fits32(p.images * p.channels * p.in_spatial);
}
MIMIC_HD bool index32(const Col2imParams& p) {
  return fits32(p.n) && fits32(p.images * p.channels * p.kvol * p.in_spatial);
}
MIMIC_HD bool index32(const DepthwiseParams& p) {
  return fits32(p.n) && fits32(p.batch * p.channels * spatial_volume(p.w, true));
}
MIMIC_HD bool index32(const PoolParams& p) {
  return fits32(p.n) && fits32(p.batch * p.channels * spatial_volume(p.w, true));
}
MIMIC_HD bool index32(const BiasParams& p) {
  return fits32(p.n);
}
MIMIC_HD bool index32(const BatchNormParams& p) {
  return fits32(p.n);
}

// ---- unary ----

MIMIC_HD int64_t unary_int(OpType op, int64_t x) {
  switch (op) {
    case OpType::Abs:
      return x < 0 ? -x : x;
    case OpType::Neg:
      return -x;
    case OpType::Sign:
      return (x > 0) - (x < 0);
    case OpType::Relu:
      return x > 0 ? x : 0;
    default:
      return x;
  }
}

MIMIC_HD void unary_body(const UnaryParams& p, const void* x, void* y, int64_t i) {
  switch (p.op) {
    case OpType::Not:
      store_i(y, DT::b8, i, load_i(x, DT::b8, i) ? 0 : 1);
      return;
    case OpType::IsNaN:
      store_i(y, DT::b8, i, is_nan(load_f(x, p.in_dt, i)));
      return;
    case OpType::IsInf: {
      float v = load_f(x, p.in_dt, i);
      bool hit =
          is_inf(v) && ((v > 0 && p.attrs.detect_positive) || (v < 0 && p.attrs.detect_negative));
      store_i(y, DT::b8, i, hit);
      return;
    }
    case OpType::Clip: {
      double v = load_d(x, p.in_dt, i);
      v = v < p.lo ? p.lo : v;
      v = p.hi < v ? p.hi : v;
      if (dt_is_float(p.out_dt))
        store_f(y, p.out_dt, i, static_cast<float>(v));
      else
        store_i(y, p.out_dt, i, static_cast<int64_t>(v));
      return;
    }
    default:
      break;
  }
  if (dt_is_float(p.in_dt))
    store_f(y, p.out_dt, i, ir::unary_float(p.op, load_f(x, p.in_dt, i), p.attrs));
  else
    store_i(y, p.out_dt, i, unary_int(p.op, load_i(x, p.in_dt, i)));
}

// ---- binary ----

MIMIC_HD bool is_compare(OpType op) {
  return op == OpType::Equal || op == OpType::Greater || op == OpType::Less ||
         op == OpType::GreaterOrEqual || op == OpType::LessOrEqual;
}

template <typename T>
MIMIC_HD bool compare(OpType op, T a, T b) {
  switch (op) {
    case OpType::Equal:
      return a == b;
    case OpType::Greater:
      return a > b;
    case OpType::Less:
      return a < b;
    case OpType::GreaterOrEqual:
      return a >= b;
    default:
      return a <= b;
  }
}

MIMIC_HD float binary_float(OpType op, float a, float b, int fmod_mode) {
  switch (op) {
    case OpType::Add:
      return a + b;
    case OpType::Sub:
      return a - b;
    case OpType::Mul:
      return a * b;
    case OpType::Div:
      return a / b;
    case OpType::Max:
      return max_nan(a, b);
    case OpType::Min:
      return min_nan(a, b);
    case OpType::Pow:
      return powf(a, b);
    case OpType::PRelu:
      return a < 0 ? a * b : a;
    case OpType::Mod: {
      float r = fmodf(a, b);
      if (fmod_mode) return r;
      return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
    }
    default:
      return a;
  }
}

// Integer base to a float exponent, as the cpu's static_cast<T>(std::pow(double, double)); small
// non-negative integral exponents multiply exactly.
MIMIC_HD int64_t pow_int(int64_t base, float exponent) {
  double e = static_cast<double>(exponent);
  if (e >= 0 && e <= 64 && floor(e) == e) {
    double r = 1, b = static_cast<double>(base);
    for (int k = 0; k < static_cast<int>(e); ++k) r *= b;
    return static_cast<int64_t>(r);
  }
  return static_cast<int64_t>(pow(static_cast<double>(base), e));
}

MIMIC_HD int64_t binary_int(OpType op, int64_t a, int64_t b, int fmod_mode) {
  switch (op) {
    // Unsigned arithmetic: wraps like the cpu's narrow types instead of overflowing.
    case OpType::Add:
      return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
    case OpType::Sub:
      return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
    case OpType::Mul:
      return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
    case OpType::Div:
      return b == 0 ? 0 : a / b;
    case OpType::Max:
      return a < b ? b : a;
    case OpType::Min:
      return b < a ? b : a;
    case OpType::Mod: {
      if (b == 0) return 0;
      int64_t r = a % b;
      if (fmod_mode) return r;
      return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
    }
    case OpType::And:
      return a && b;
    case OpType::Or:
      return a || b;
    case OpType::Xor:
      return (a != 0) != (b != 0);
    default:
      return a;
  }
}

// Offsets of output element i in operands with the given strides over `size` (row-major). Index
// arithmetic runs in I: int32 when every offset of the launch fits (fits32() below), which the GPU
// divides several times faster than int64.
template <typename I>
MIMIC_HD void broadcast_offsets2(I i, int rank, const int64_t* size, const int64_t* sa,
                                 const int64_t* sb, I& oa, I& ob) {
  oa = 0;
  ob = 0;
  for (int d = rank - 1; d >= 0; --d) {
    I n = static_cast<I>(size[d]);
    I c = i % n;
    i /= n;
    oa += c * static_cast<I>(sa[d]);
    ob += c * static_cast<I>(sb[d]);
  }
}

template <typename I = int64_t>
MIMIC_HD void binary_body(const BinaryParams& p, const void* a, const void* b, void* y, I i) {
  I ia = i, ib = i;
  if (!p.same) broadcast_offsets2<I>(i, p.rank, p.size, p.stride_a, p.stride_b, ia, ib);
  OpType op = p.op;
  if (dt_is_float(p.a_dt)) {
    float va = load_f(a, p.a_dt, ia), vb = load_f(b, p.b_dt, ib);
    if (is_compare(op))
      store_i(y, DT::b8, i, compare(op, va, vb));
    else
      store_f(y, p.out_dt, i, binary_float(op, va, vb, p.fmod_mode));
    return;
  }
  int64_t va = load_i(a, p.a_dt, ia);
  if (op == OpType::Pow) {
    store_i(y, p.out_dt, i, pow_int(va, load_f(b, p.b_dt, ib)));
    return;
  }
  int64_t vb = load_i(b, p.b_dt, ib);
  if (is_compare(op))
    store_i(y, DT::b8, i, compare(op, va, vb));
  else
    store_i(y, p.out_dt, i, binary_int(op, va, vb, p.fmod_mode));
}

template <typename I = int64_t>
MIMIC_HD void variadic_body(const VariadicParams& p, const void* const* in, void* y, I i) {
  OpType pair = p.op == OpType::Max ? OpType::Max : p.op == OpType::Min ? OpType::Min : OpType::Add;
  I off[kMaxVariadic];
  for (int k = 0; k < p.count; ++k) off[k] = 0;
  I rem = i;
  for (int d = p.rank - 1; d >= 0; --d) {
    I n = static_cast<I>(p.size[d]);
    I c = rem % n;
    rem /= n;
    for (int k = 0; k < p.count; ++k) off[k] += c * static_cast<I>(p.stride[k][d]);
  }
  if (dt_is_float(p.dt)) {
    float acc = load_f(in[0], p.dt, off[0]);
    for (int k = 1; k < p.count; ++k) acc = binary_float(pair, acc, load_f(in[k], p.dt, off[k]), 0);
    if (p.op == OpType::Mean) acc = acc / static_cast<float>(p.count);
    store_f(y, p.dt, i, acc);
    return;
  }
  int64_t acc = load_i(in[0], p.dt, off[0]);
  for (int k = 1; k < p.count; ++k) acc = binary_int(pair, acc, load_i(in[k], p.dt, off[k]), 0);
  store_i(y, p.dt, i, acc);
}

template <typename I = int64_t>
MIMIC_HD void where_body(const WhereParams& p, const void* c, const void* x, const void* yv,
                         void* out, I i) {
  I oc = 0, ox = 0, oy = 0, rem = i;
  for (int d = p.rank - 1; d >= 0; --d) {
    I n = static_cast<I>(p.size[d]);
    I k = rem % n;
    rem /= n;
    oc += k * static_cast<I>(p.stride_c[d]);
    ox += k * static_cast<I>(p.stride_x[d]);
    oy += k * static_cast<I>(p.stride_y[d]);
  }
  if (static_cast<const uint8_t*>(c)[oc])
    copy_bytes(out, i, x, ox, p.esize);
  else
    copy_bytes(out, i, yv, oy, p.esize);
}

// Cast through double; integer and bool sources convert exactly, float to integer truncates
// (NaN -> 0), 16-bit floats round to nearest even.
MIMIC_HD void cast_body(const CastParams& p, const void* x, void* y, int64_t i) {
  if (p.from == p.to) {
    copy_bytes(y, i, x, i, dt_size(p.from));
    return;
  }
  bool exact = !dt_is_float(p.from);
  int64_t iv = exact ? load_i(x, p.from, i) : 0;
  double v = exact ? static_cast<double>(iv) : static_cast<double>(load_f(x, p.from, i));
  if (p.from == DT::i64) v = static_cast<double>(iv);
  switch (p.to) {
    case DT::f32:
    case DT::f16:
    case DT::bf16:
      store_f(y, p.to, i, static_cast<float>(v));
      return;
    case DT::b8:
      store_i(y, DT::b8, i, v != 0);
      return;
    default:
      if (exact)
        store_i(y, p.to, i, iv);
      else
        store_i(y, p.to, i, v != v ? 0 : static_cast<int64_t>(trunc(v)));
  }
}

// ---- data movement ----

template <typename I>
MIMIC_HD I strided_offset(I i, int rank, const int64_t* size, const int64_t* stride) {
  I off = 0;
  for (int d = rank - 1; d >= 0; --d) {
    I n = static_cast<I>(size[d]);
    off += (i % n) * static_cast<I>(stride[d]);
    i /= n;
  }
  return off;
}

template <typename I = int64_t>
MIMIC_HD void copy_body(const CopyParams& p, const void* x, void* y, I i) {
  copy_bytes(y, i, x, p.offset + strided_offset<I>(i, p.rank, p.size, p.stride), p.esize);
}

MIMIC_HD void report_bad_index(ErrorSlot* err, int node, int64_t index) {
  if (!err) return;
#ifdef __CUDA_ARCH__
  unsigned long long* flag = reinterpret_cast<unsigned long long*>(&err->node_plus_one);
  if (atomicCAS(flag, 0ull, static_cast<unsigned long long>(node + 1)) == 0ull) err->index = index;
#else
  if (err->node_plus_one == 0) {
    err->node_plus_one = node + 1;
    err->index = index;
  }
#endif
}

MIMIC_HD void gather_body(const GatherParams& p, const void* data, const void* idx, void* y,
                          ErrorSlot* err, int64_t i) {
  int64_t in = i % p.inner, c = (i / p.inner) % p.count, o = i / (p.inner * p.count);
  int64_t raw = load_i(idx, p.index_dt, c), k = raw < 0 ? raw + p.dim : raw;
  if (k < 0 || k >= p.dim) {
    report_bad_index(err, p.node, raw);
    zero_bytes(y, i, p.esize);
    return;
  }
  copy_bytes(y, i, data, (o * p.dim + k) * p.inner + in, p.esize);
}

// Column k of a ScatterND of whole rows, every update in order (one thread per column: the sums
// are the cpu reference's, without atomics).
MIMIC_HD void scatter_rows_body(const ScatterRowsParams& p, const void* idx, const void* upd,
                                void* y, ErrorSlot* err, int64_t k) {
  float* out = static_cast<float*>(y);
  const float* u = static_cast<const float*>(upd);
  for (int64_t j = 0; j < p.count; ++j) {
    int64_t raw = load_i(idx, p.index_dt, j), r = raw < 0 ? raw + p.rows : raw;
    if (r < 0 || r >= p.rows) {
      report_bad_index(err, p.node, raw);
      return;
    }
    float v = u[j * p.inner + k];
    out[r * p.inner + k] = p.add ? out[r * p.inner + k] + v : v;
  }
}

MIMIC_HD void gather_elements_body(const GatherElementsParams& p, const void* data, const void* idx,
                                   void* y, ErrorSlot* err, int64_t i) {
  int64_t rem = i, off = 0;
  for (int d = p.rank - 1; d >= 0; --d) {
    int64_t c = rem % p.size[d];
    rem /= p.size[d];
    if (d == p.axis) {
      int64_t raw = load_i(idx, p.index_dt, i);
      c = raw < 0 ? raw + p.dim : raw;
      if (c < 0 || c >= p.dim) {
        report_bad_index(err, p.node, raw);
        zero_bytes(y, i, p.esize);
        return;
      }
    }
    off += c * p.data_stride[d];
  }
  copy_bytes(y, i, data, off, p.esize);
}

template <typename I = int64_t>
MIMIC_HD void pad_body(const PadParams& p, const void* x, void* y, I i) {
  I rem = i, off = 0;
  bool inside = true;
  for (int d = p.rank - 1; d >= 0; --d) {
    I out = static_cast<I>(p.out_size[d]);
    I c = rem % out - static_cast<I>(p.before[d]);
    rem /= out;
    I n = static_cast<I>(p.in_size[d]);
    if (c < 0 || c >= n) {
      if (p.mode == PadMode::constant || n == 0) {
        inside = false;
      } else if (p.mode == PadMode::edge) {
        c = c < 0 ? 0 : n - 1;
      } else if (p.mode == PadMode::wrap) {
        c = ((c % n) + n) % n;
      } else {
        I period = 2 * (n - 1);
        c = period == 0 ? 0 : ((c % period) + period) % period;
        if (c >= n) c = period - c;
      }
    }
    off += c * static_cast<I>(p.in_stride[d]);
  }
  if (inside) {
    copy_bytes(y, i, x, off, p.esize);
  } else {
    switch (p.esize) {
      case 1:
        static_cast<uint8_t*>(y)[i] = p.fill[0];
        break;
      case 2: {
        uint16_t v;
        memcpy(&v, p.fill, 2);
        static_cast<uint16_t*>(y)[i] = v;
        break;
      }
      case 4: {
        uint32_t v;
        memcpy(&v, p.fill, 4);
        static_cast<uint32_t*>(y)[i] = v;
        break;
      }
      default: {
        uint64_t v;
        memcpy(&v, p.fill, 8);
        static_cast<uint64_t*>(y)[i] = v;
        break;
      }
    }
  }
}

MIMIC_HD void trilu_body(const TriluParams& p, const void* x, void* y, int64_t i) {
  int64_t j = i % p.cols, r = (i / p.cols) % p.rows;
  bool keep = p.upper ? (j - r >= p.k) : (j - r <= p.k);
  if (keep)
    copy_bytes(y, i, x, i, p.esize);
  else
    zero_bytes(y, i, p.esize);
}

}  // namespace mimic::backends::cuda
