// Per-output bodies of the convolution, pooling, normalization and reduction kernels (see
// device_math.h: compiled for the GPU and the host, semantics of backends/cpu/).
#pragma once

#include "backends/cuda/kernels/device_math.h"

namespace mimic::backends::cuda {

// ---- convolution helpers ----

// Splits a flat index over up to three dims (row-major) into coordinates.
template <typename I>
MIMIC_HD void unflatten3(I flat, int rank, const int64_t* size, I* coord) {
  for (int d = rank - 1; d >= 0; --d) {
    I n = static_cast<I>(size[d]);
    coord[d] = flat % n;
    flat /= n;
  }
}

// Input offset (within one image and channel plane) of output position `p` and kernel position
// `kk`, or -1 when it falls into padding.
template <typename I>
MIMIC_HD I window_source(const Window& w, I p, I kk) {
  I o[kMaxSpatial], k[kMaxSpatial];
  unflatten3<I>(p, w.rank, w.out, o);
  unflatten3<I>(kk, w.rank, w.kernel, k);
  I off = 0;
  for (int d = 0; d < w.rank; ++d) {
    I in = o[d] * static_cast<I>(w.stride[d]) - static_cast<I>(w.pad_begin[d]) +
           k[d] * static_cast<I>(w.dilation[d]);
    I size = static_cast<I>(w.in[d]);
    if (in < 0 || in >= size) return -1;
    off = off * size + in;
  }
  return off;
}

template <typename I = int64_t>
MIMIC_HD void im2col_body(const Im2colParams& p, const void* x, void* col, I i) {
  int es = dt_size(p.dt);
  I src, channels = static_cast<I>(p.channels), kvol = static_cast<I>(p.kvol);
  I out_sp = static_cast<I>(p.out_spatial), in_sp = static_cast<I>(p.in_spatial);
  if (!p.channels_last) {
    I rows = channels * kvol;
    I pos = i % out_sp, row = (i / out_sp) % rows, img = i / (out_sp * rows);
    I s = window_source<I>(p.w, pos, row % kvol);
    src = s < 0 ? -1 : (img * channels + row / kvol) * in_sp + s;
  } else {
    I cols = channels * kvol, cg = channels / static_cast<I>(p.groups);
    I q = i % cols, r = i / cols;
    I img = r / out_sp, pos = r % out_sp;
    I g = q / (kvol * cg), rem = q % (kvol * cg);
    I s = window_source<I>(p.w, pos, rem / cg);
    src = s < 0 ? -1 : (img * in_sp + s) * channels + g * cg + rem % cg;
  }
  if (src < 0)
    zero_bytes(col, i, es);
  else
    copy_bytes(col, i, x, src, es);
}

// col is f32 [images][channels * kvol][in_spatial]; y is [images][channels][out_spatial].
template <typename I = int64_t>
MIMIC_HD void col2im_body(const Col2imParams& p, const float* col, void* y, I i) {
  I out_sp = static_cast<I>(p.out_spatial), channels = static_cast<I>(p.channels);
  I kvol = static_cast<I>(p.kvol), in_sp = static_cast<I>(p.in_spatial);
  I pos = i % out_sp, m = (i / out_sp) % channels;
  I img = i / (out_sp * channels);
  const Window& w = p.w;
  I o[kMaxSpatial], k[kMaxSpatial];
  unflatten3<I>(pos, w.rank, w.out, o);
  const float* base = col + static_cast<int64_t>(img * channels + m) * kvol * in_sp;
  float acc = 0.0f;
  for (I kk = 0; kk < kvol; ++kk) {
    unflatten3<I>(kk, w.rank, w.kernel, k);
    I off = 0;
    bool hit = true;
    for (int d = 0; d < w.rank && hit; ++d) {
      I stride = static_cast<I>(w.stride[d]), size = static_cast<I>(w.in[d]);
      I t = o[d] + static_cast<I>(w.pad_begin[d]) - k[d] * static_cast<I>(w.dilation[d]);
      if (t < 0 || t % stride != 0 || t / stride >= size)
        hit = false;
      else
        off = off * size + t / stride;
    }
    if (hit) acc += base[static_cast<int64_t>(kk) * in_sp + off];
  }
  store_f(y, p.dt, i, acc);
}

// One output of a 2-D depthwise convolution; weights [C, 1, kh, kw].
template <typename I = int64_t>
MIMIC_HD void depthwise_body(const DepthwiseParams& p, const void* x, const void* wt,
                             const void* bias, void* y, I i) {
  const Window& w = p.w;
  I oh = static_cast<I>(w.out[0]), ow = static_cast<I>(w.out[1]), ih = static_cast<I>(w.in[0]);
  I iw = static_cast<I>(w.in[1]), channels = static_cast<I>(p.channels), c, n, oy, ox;
  if (p.channels_last) {
    c = i % channels;
    ox = (i / channels) % ow;
    oy = (i / (channels * ow)) % oh;
    n = i / (channels * ow * oh);
  } else {
    ox = i % ow;
    oy = (i / ow) % oh;
    c = (i / (ow * oh)) % channels;
    n = i / (ow * oh * channels);
  }
  float acc = 0.0f;
  for (I ky = 0; ky < static_cast<I>(w.kernel[0]); ++ky) {
    I iy = oy * static_cast<I>(w.stride[0]) - static_cast<I>(w.pad_begin[0]) +
           ky * static_cast<I>(w.dilation[0]);
    if (iy < 0 || iy >= ih) continue;
    for (I kx = 0; kx < static_cast<I>(w.kernel[1]); ++kx) {
      I ix = ox * static_cast<I>(w.stride[1]) - static_cast<I>(w.pad_begin[1]) +
             kx * static_cast<I>(w.dilation[1]);
      if (ix < 0 || ix >= iw) continue;
      I src = p.channels_last ? ((n * ih + iy) * iw + ix) * channels + c
                              : ((n * channels + c) * ih + iy) * iw + ix;
      acc += load_f(wt, p.dt, (c * w.kernel[0] + ky) * w.kernel[1] + kx) * load_f(x, p.dt, src);
    }
  }
  if (p.has_bias) acc += load_f(bias, p.bias_dt, c);
  store_f(y, p.dt, i, acc);
}

// y[i] = x[i] + bias[c]; x may be an f32 GEMM result and y the 16-bit output.
template <typename I = int64_t>
MIMIC_HD void bias_body(const BiasParams& p, const void* x, const void* bias, void* y, I i) {
  float v = load_f(x, p.in_dt, i);
  if (bias) {
    I channels = static_cast<I>(p.channels);
    I c = p.channels_last ? i % channels : (i / static_cast<I>(p.spatial)) % channels;
    v += load_f(bias, p.bias_dt, c);
  }
  store_f(y, p.dt, i, v);
}

template <typename I = int64_t>
MIMIC_HD void pool_body(const PoolParams& p, const void* x, void* y, I i) {
  const Window& w = p.w;
  I out_sp = 1, in_sp = 1, channels = static_cast<I>(p.channels);
  for (int d = 0; d < w.rank; ++d) {
    out_sp *= static_cast<I>(w.out[d]);
    in_sp *= static_cast<I>(w.in[d]);
  }
  I c, n, pos;
  if (p.channels_last) {
    c = i % channels;
    pos = (i / channels) % out_sp;
    n = i / (channels * out_sp);
  } else {
    pos = i % out_sp;
    c = (i / out_sp) % channels;
    n = i / (out_sp * channels);
  }
  I o[kMaxSpatial], begin[kMaxSpatial], k[kMaxSpatial];
  unflatten3<I>(pos, w.rank, w.out, o);
  I padded = 1, kvol = 1;
  for (int d = 0; d < w.rank; ++d) {
    I dil = static_cast<I>(w.dilation[d]);
    begin[d] = o[d] * static_cast<I>(w.stride[d]) - static_cast<I>(w.pad_begin[d]);
    I end = begin[d] + (static_cast<I>(w.kernel[d]) - 1) * dil + 1;
    I limit = static_cast<I>(w.in[d] + w.pad_end[d]);
    if (end > limit) end = limit;
    padded *= (end - begin[d] + dil - 1) / dil;
    kvol *= static_cast<I>(w.kernel[d]);
  }
  float acc = p.is_max ? -INFINITY : 0.0f;
  I valid = 0;
  for (I kk = 0; kk < kvol; ++kk) {
    unflatten3<I>(kk, w.rank, w.kernel, k);
    I off = 0;
    bool inside = true;
    for (int d = 0; d < w.rank && inside; ++d) {
      I size = static_cast<I>(w.in[d]);
      I at = begin[d] + k[d] * static_cast<I>(w.dilation[d]);
      inside = at >= 0 && at < size;
      off = off * size + at;
    }
    if (!inside) continue;
    I src = p.channels_last ? (n * in_sp + off) * channels + c : (n * channels + c) * in_sp + off;
    float v = load_f(x, p.dt, src);
    acc = p.is_max ? max_std(acc, v) : acc + v;
    ++valid;
  }
  if (!p.is_max) acc /= static_cast<float>(p.include_pad ? padded : (valid > 1 ? valid : 1));
  store_f(y, p.dt, i, acc);
}

// ---- normalization ----

template <typename I = int64_t>
MIMIC_HD void batch_norm_body(const BatchNormParams& p, const void* x, const float* mul,
                              const float* add, void* y, I i) {
  I channels = static_cast<I>(p.channels);
  I c = p.channels_last ? i % channels : (i / static_cast<I>(p.spatial)) % channels;
  store_f(y, p.dt, i, load_f(x, p.dt, i) * mul[c] + add[c]);
}

MIMIC_HD void bn_prep_body(const BnPrepParams& p, const void* scale, const void* bias,
                           const void* mean, const void* var, float* mul, float* add, int64_t c) {
  float m = static_cast<float>(load_f(scale, p.scale_dt, c) /
                               sqrt(static_cast<double>(load_f(var, p.var_dt, c)) + p.epsilon));
  mul[c] = m;
  add[c] = load_f(bias, p.bias_dt, c) - load_f(mean, p.mean_dt, c) * m;
}

MIMIC_HD void lrn_body(const LrnParams& p, const void* x, void* y, int64_t i) {
  int64_t s = i % p.spatial, c = (i / p.spatial) % p.channels, n = i / (p.spatial * p.channels);
  int64_t before = (p.size - 1) / 2, after = p.size - 1 - before;
  int64_t lo = c - before < 0 ? 0 : c - before,
          hi = c + after > p.channels - 1 ? p.channels - 1 : c + after;
  double sq = 0;
  for (int64_t k = lo; k <= hi; ++k) {
    double v = load_f(x, p.dt, (n * p.channels + k) * p.spatial + s);
    sq += v * v;
  }
  double v = load_f(x, p.dt, i);
  store_f(y, p.dt, i,
          static_cast<float>(v / pow(p.bias + p.alpha / static_cast<double>(p.size) * sq, p.beta)));
}

// ---- reductions (one output per call; the GPU runs these for strided layouts) ----

MIMIC_HD double reduce_init(OpType op) {
  switch (op) {
    case OpType::ReduceMax:
      return -INFINITY;
    case OpType::ReduceMin:
      return INFINITY;
    case OpType::ReduceProd:
      return 1.0;
    default:
      return 0.0;
  }
}

MIMIC_HD double reduce_step(OpType op, double acc, double v) {
  switch (op) {
    case OpType::ReduceMax:
      return max_nan(acc, v);
    case OpType::ReduceMin:
      return min_nan(acc, v);
    case OpType::ReduceProd:
      return acc * v;
    case OpType::ReduceL1:
      return acc + fabs(v);
    case OpType::ReduceL2:
    case OpType::ReduceSumSquare:
      return acc + v * v;
    default:
      return acc + v;
  }
}

// Combines two partial accumulators (GPU warp reductions).
MIMIC_HD double reduce_merge(OpType op, double a, double b) {
  switch (op) {
    case OpType::ReduceMax:
      return max_nan(a, b);
    case OpType::ReduceMin:
      return min_nan(a, b);
    case OpType::ReduceProd:
      return a * b;
    default:
      return a + b;
  }
}

MIMIC_HD double reduce_finish(OpType op, double acc, int64_t n) {
  switch (op) {
    case OpType::ReduceL2:
      return sqrt(acc);
    case OpType::ReduceMean:
      return n ? acc / static_cast<double>(n) : NAN;
    case OpType::ReduceLogSum:
      return log(acc);
    default:
      return acc;
  }
}

MIMIC_HD int64_t int_min_of(DT dt) {
  return dt == DT::i8 ? -128 : dt == DT::i32 ? -2147483647ll - 1 : -9223372036854775807ll - 1;
}
MIMIC_HD int64_t int_max_of(DT dt) {
  return dt == DT::i8 ? 127 : dt == DT::i32 ? 2147483647ll : 9223372036854775807ll;
}

MIMIC_HD void reduce_body(const ReduceParams& p, const void* x, void* y, int64_t j) {
  int64_t o = j / p.inner, in = j % p.inner, base = o * p.extent * p.inner + in;
  if (!dt_is_float(p.in_dt)) {
    int64_t acc = p.op == OpType::ReduceProd ? 1 : 0;
    if (p.op == OpType::ReduceMax) acc = int_min_of(p.in_dt);
    if (p.op == OpType::ReduceMin) acc = int_max_of(p.in_dt);
    for (int64_t r = 0; r < p.extent; ++r) {
      int64_t v = load_i(x, p.in_dt, base + r * p.inner);
      switch (p.op) {
        case OpType::ReduceMax:
          acc = acc < v ? v : acc;
          break;
        case OpType::ReduceMin:
          acc = v < acc ? v : acc;
          break;
        case OpType::ReduceProd:
          acc *= v;
          break;
        case OpType::ReduceL1:
          acc += v < 0 ? -v : v;
          break;
        case OpType::ReduceSumSquare:
          acc += v * v;
          break;
        default:
          acc += v;
      }
    }
    if (p.op == OpType::ReduceMean && p.extent) acc /= p.extent;
    store_i(y, p.out_dt, j, acc);
    return;
  }
  double acc;
  if (p.op == OpType::ReduceLogSumExp) {
    double mx = -INFINITY;
    for (int64_t r = 0; r < p.extent; ++r)
      mx = max_std_d(mx, load_f(x, p.in_dt, base + r * p.inner));
    if (mx == INFINITY || mx == -INFINITY) {
      acc = mx;
    } else {
      double s = 0;
      for (int64_t r = 0; r < p.extent; ++r) s += exp(load_f(x, p.in_dt, base + r * p.inner) - mx);
      acc = mx + log(s);
    }
  } else {
    acc = reduce_init(p.op);
    for (int64_t r = 0; r < p.extent; ++r)
      acc = reduce_step(p.op, acc, load_f(x, p.in_dt, base + r * p.inner));
    acc = reduce_finish(p.op, acc, p.extent);
  }
  store_f(y, p.out_dt, j, static_cast<float>(acc));
}

// True when candidate (v, i) beats the current best (bv, bi) of an ArgMax/ArgMin scan.
template <typename V>
MIMIC_HD bool arg_better(const ArgReduceParams& p, V v, int64_t i, V bv, int64_t bi) {
  if (v == bv) return p.select_last ? i > bi : i < bi;
  return p.is_max ? v > bv : v < bv;
}

MIMIC_HD void arg_reduce_body(const ArgReduceParams& p, const void* x, int64_t* y, int64_t j) {
  int64_t o = j / p.inner, in = j % p.inner, base = o * p.extent * p.inner + in, best = 0;
  if (dt_is_float(p.dt)) {
    float bv = load_f(x, p.dt, base);
    for (int64_t r = 1; r < p.extent; ++r) {
      float v = load_f(x, p.dt, base + r * p.inner);
      bool better =
          p.is_max ? (p.select_last ? v >= bv : v > bv) : (p.select_last ? v <= bv : v < bv);
      if (better) {
        best = r;
        bv = v;
      }
    }
  } else {
    int64_t bv = load_i(x, p.dt, base);
    for (int64_t r = 1; r < p.extent; ++r) {
      int64_t v = load_i(x, p.dt, base + r * p.inner);
      bool better =
          p.is_max ? (p.select_last ? v >= bv : v > bv) : (p.select_last ? v <= bv : v < bv);
      if (better) {
        best = r;
        bv = v;
      }
    }
  }
  y[j] = best;
}

// Softmax family over one (outer, inner) column.
MIMIC_HD void softmax_body(const SoftmaxParams& p, const void* x, void* y, int64_t j) {
  int64_t o = j / p.inner, in = j % p.inner, base = o * p.dim * p.inner + in;
  float mx = -INFINITY;
  int64_t arg = 0;
  for (int64_t d = 0; d < p.dim; ++d) {
    float v = load_f(x, p.dt, base + d * p.inner);
    if (v > mx) {
      mx = v;
      arg = d;
    }
  }
  if (p.op == OpType::Hardmax) {
    for (int64_t d = 0; d < p.dim; ++d)
      store_f(y, p.dt, base + d * p.inner, d == arg ? 1.0f : 0.0f);
    return;
  }
  double sum = 0;
  for (int64_t d = 0; d < p.dim; ++d)
    sum += exp(static_cast<double>(load_f(x, p.dt, base + d * p.inner) - mx));
  if (p.op == OpType::LogSoftmax) {
    float log_sum = static_cast<float>(log(sum));
    for (int64_t d = 0; d < p.dim; ++d)
      store_f(y, p.dt, base + d * p.inner, load_f(x, p.dt, base + d * p.inner) - mx - log_sum);
  } else {
    float inv = static_cast<float>(1.0 / sum);
    for (int64_t d = 0; d < p.dim; ++d)
      store_f(y, p.dt, base + d * p.inner, expf(load_f(x, p.dt, base + d * p.inner) - mx) * inv);
  }
}

// Normalizes element k of row `row` given the row's mean and inverse standard deviation.
MIMIC_HD float row_norm_value(const RowNormParams& p, const void* scale, const void* bias, float x,
                              double mean, double inv, int64_t row, int64_t k) {
  if (p.per_channel) {
    int64_t c = row % p.channels;
    double s = p.has_scale ? load_f(scale, p.scale_dt, c) : 1.0;
    double b = p.has_bias ? load_f(bias, p.bias_dt, c) : 0.0;
    return static_cast<float>((x - mean) * inv * s + b);
  }
  float s = p.has_scale ? load_f(scale, p.scale_dt, k) : 1.0f;
  float b = p.has_bias ? load_f(bias, p.bias_dt, k) : 0.0f;
  return static_cast<float>((x - mean) * inv) * s + b;
}

MIMIC_HD void row_norm_body(const RowNormParams& p, const void* x, const void* scale,
                            const void* bias, void* y, float* mean_out, float* inv_out,
                            int64_t row) {
  int64_t base = row * p.length;
  double sum = 0, sq = 0;
  for (int64_t k = 0; k < p.length; ++k) sum += load_f(x, p.dt, base + k);
  double mean = sum / static_cast<double>(p.length);
  for (int64_t k = 0; k < p.length; ++k) {
    double d = load_f(x, p.dt, base + k) - mean;
    sq += d * d;
  }
  double inv = 1.0 / sqrt(sq / static_cast<double>(p.length) + p.epsilon);
  for (int64_t k = 0; k < p.length; ++k)
    store_f(y, p.dt, base + k,
            row_norm_value(p, scale, bias, load_f(x, p.dt, base + k), mean, inv, row, k));
  if (mean_out) mean_out[row] = static_cast<float>(mean);
  if (inv_out) inv_out[row] = static_cast<float>(inv);
}

MIMIC_HD void cumsum_body(const CumSumParams& p, const void* x, void* y, int64_t j) {
  int64_t o = j / p.inner, in = j % p.inner;
  double acc = 0;
  bool is_float = dt_is_float(p.dt);
  for (int64_t k = 0; k < p.dim; ++k) {
    int64_t d = p.reverse ? p.dim - 1 - k : k;
    int64_t off = (o * p.dim + d) * p.inner + in;
    double v = load_d(x, p.dt, off);
    if (!p.exclusive) acc += v;
    if (is_float)
      store_f(y, p.dt, off, static_cast<float>(acc));
    else
      store_i(y, p.dt, off, static_cast<int64_t>(acc));
    if (p.exclusive) acc += v;
  }
}

}  // namespace mimic::backends::cuda
