// Numerics of vector-unit instructions (fp32): elementwise maps with broadcasting, strided copies,
// reductions, softmax, layer normalization, per-channel scale/shift, pooling, depthwise
// convolution (on bf16 chips with the precision's bf16 passes, as every convolution: numerics.h).
// Each instruction computes its region [r0, r1) (see VectorDesc in program.h).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "base/activations.h"
#include "base/error.h"
#include "base/extrema.h"
#include "base/numeric_formats.h"
#include "models/tpu/numerics.h"
#include "models/tpu/numerics_map.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace mimic::models::tpu {
namespace {

// The activation functions of the vector unit (base/activations.h has their formulas).
float unary_activation(VectorFunc f, float x, float p0, float p1) {
  switch (f) {
    case VectorFunc::relu:
      return activation::relu(x);
    case VectorFunc::leaky_relu:
      return activation::leaky_relu(x, p0);
    case VectorFunc::elu:
      return activation::elu(x, p0);
    case VectorFunc::selu:
      return activation::selu(x, p0, p1);
    case VectorFunc::sigmoid:
      return activation::sigmoid(x);
    case VectorFunc::hard_sigmoid:
      return activation::hard_sigmoid(x, p0, p1);
    case VectorFunc::hard_swish:
      return activation::hard_swish(x);
    case VectorFunc::gelu:
      return activation::gelu(x);
    case VectorFunc::gelu_tanh:
      return activation::gelu_tanh(x);
    case VectorFunc::softplus:
      return activation::softplus(x);
    case VectorFunc::softsign:
      return activation::softsign(x);
    case VectorFunc::thresholded_relu:
      return activation::thresholded_relu(x, p0);
    case VectorFunc::celu:
      return activation::celu(x, p0);
    case VectorFunc::shrink:
      return activation::shrink(x, p1, p0);
    default:
      return x;
  }
}

float unary(VectorFunc f, float x, float p0, float p1) {
  switch (f) {
    case VectorFunc::identity:
    case VectorFunc::copy:
    case VectorFunc::transpose:
      return x;
    case VectorFunc::clip:
      return std::min(std::max(x, p0), p1);
    case VectorFunc::tanh:
      return std::tanh(x);
    case VectorFunc::exp:
      return std::exp(x);
    case VectorFunc::log:
      return std::log(x);
    case VectorFunc::sqrt:
      return std::sqrt(x);
    case VectorFunc::reciprocal:
      return 1.0f / x;
    case VectorFunc::abs:
      return std::fabs(x);
    case VectorFunc::neg:
      return -x;
    case VectorFunc::erf:
      return std::erf(x);
    case VectorFunc::floor:
      return std::floor(x);
    case VectorFunc::ceil:
      return std::ceil(x);
    case VectorFunc::round:
      return std::nearbyint(x);
    case VectorFunc::sign:
      return static_cast<float>((x > 0) - (x < 0));
    case VectorFunc::sin:
      return std::sin(x);
    case VectorFunc::cos:
      return std::cos(x);
    case VectorFunc::tan:
      return std::tan(x);
    case VectorFunc::scale:
      return x * p0;
    case VectorFunc::trunc:
      return std::trunc(x);
    case VectorFunc::nonzero:
      return x != 0 ? 1.0f : 0.0f;
    case VectorFunc::logical_not:
      return x == 0 ? 1.0f : 0.0f;
    case VectorFunc::is_nan:
      return std::isnan(x) ? 1.0f : 0.0f;
    case VectorFunc::is_inf:
      return (p0 != 0 && x == INFINITY) || (p1 != 0 && x == -INFINITY) ? 1.0f : 0.0f;
    case VectorFunc::asin:
      return std::asin(x);
    case VectorFunc::acos:
      return std::acos(x);
    case VectorFunc::atan:
      return std::atan(x);
    case VectorFunc::sinh:
      return std::sinh(x);
    case VectorFunc::cosh:
      return std::cosh(x);
    case VectorFunc::asinh:
      return std::asinh(x);
    case VectorFunc::acosh:
      return std::acosh(x);
    case VectorFunc::atanh:
      return std::atanh(x);
    default:
      return unary_activation(f, x, p0, p1);
  }
}

float binary(VectorFunc f, float a, float b) {
  switch (f) {
    case VectorFunc::add:
      return a + b;
    case VectorFunc::sub:
      return a - b;
    case VectorFunc::mul:
      return a * b;
    case VectorFunc::div:
      return a / b;
    case VectorFunc::max:
      return max_nan(a, b);
    case VectorFunc::min:
      return min_nan(a, b);
    case VectorFunc::pow:
      return std::pow(a, b);
    case VectorFunc::prelu:
      return a >= 0 ? a : a * b;
    case VectorFunc::fmod:
      return std::fmod(a, b);
    case VectorFunc::mod: {
      float r = std::fmod(a, b);
      return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
    }
    case VectorFunc::equal:
      return a == b ? 1.0f : 0.0f;
    case VectorFunc::less:
      return a < b ? 1.0f : 0.0f;
    case VectorFunc::less_equal:
      return a <= b ? 1.0f : 0.0f;
    case VectorFunc::greater:
      return a > b ? 1.0f : 0.0f;
    case VectorFunc::greater_equal:
      return a >= b ? 1.0f : 0.0f;
    case VectorFunc::logical_and:
      return (a != 0) && (b != 0) ? 1.0f : 0.0f;
    case VectorFunc::logical_or:
      return (a != 0) || (b != 0) ? 1.0f : 0.0f;
    case VectorFunc::logical_xor:
      return (a != 0) != (b != 0) ? 1.0f : 0.0f;
    default:
      return a;
  }
}

// Three or more inputs: where/clamp select, any binary function folds left (variadic Sum/Max/Min).
float nary(VectorFunc f, const float* v, size_t n) {
  if (f == VectorFunc::where) return v[0] != 0 ? v[1] : v[2];
  if (f == VectorFunc::clamp) return std::min(std::max(v[0], v[1]), v[2]);
  float acc = v[0];
  for (size_t i = 1; i < n; ++i) acc = binary(f, acc, v[i]);
  return acc;
}

float store(const Epilogue& e, float v) {
  if (e.activation != VectorFunc::identity) v = unary(e.activation, v, e.p0, e.p1);
  return e.store == Rounding::bf16 ? numeric::round_to_bf16(v) : v;
}

// Elementwise over `dims` for output elements [r0, r1): strided inputs, strided or contiguous
// output.
constexpr size_t kMaxInputs = 16;
void elementwise(const VectorDesc& desc, const std::vector<const float*>& in, float* out,
                 int64_t r0, int64_t r1) {
  const size_t nin = std::min(in.size(), kMaxInputs);
  const map::Walk d = map::coalesced(desc, nin);
  const int rank = static_cast<int>(d.dims.size());
  const int64_t inner = rank ? d.dims.back() : 1;
  std::vector<int64_t> idx(rank, 0);
  int64_t rem = r0;
  for (int i = rank - 1; i >= 0; --i) {
    idx[i] = rem % d.dims[i];
    rem /= d.dims[i];
  }
  const bool contiguous_out = d.out_strides.empty();
  const bool plain = map::plain(desc.epi);
  auto finish = [&desc](float v) { return store(desc.epi, v); };
  for (int64_t e = r0; e < r1;) {
    int64_t run = std::min(inner - (rank ? idx[rank - 1] : 0), r1 - e);
    int64_t off[kMaxInputs] = {0}, out_off = desc.out_offset;
    for (size_t k = 0; k < nin; ++k) {
      off[k] = desc.in_offsets.empty() ? 0 : desc.in_offsets[k];
      for (int i = 0; i < rank; ++i) off[k] += idx[i] * d.in_strides[k][i];
    }
    if (contiguous_out)
      out_off += e;
    else
      for (int i = 0; i < rank; ++i) out_off += idx[i] * d.out_strides[i];
    const int64_t s0 = nin > 0 && rank ? d.in_strides[0][rank - 1] : 0;
    const int64_t s1 = nin > 1 && rank ? d.in_strides[1][rank - 1] : 0;
    const int64_t so = contiguous_out ? 1 : (rank ? d.out_strides[rank - 1] : 0);
    float* y = out + out_off;
    if (nin == 0) {
      for (int64_t j = 0; j < run; ++j) y[j * so] = store(desc.epi, desc.p0);
    } else if (nin == 1) {
      const float* x = in[0] + off[0];
      if (!map::unary(desc.func, x, s0, y, so, run, plain, finish))
        for (int64_t j = 0; j < run; ++j)
          y[j * so] = store(desc.epi, unary(desc.func, x[j * s0], desc.p0, desc.p1));
    } else if (nin == 2) {
      const float* a = in[0] + off[0];
      const float* b = in[1] + off[1];
      if (!map::binary(desc.func, a, s0, b, s1, y, so, run, plain, finish))
        for (int64_t j = 0; j < run; ++j)
          y[j * so] = store(desc.epi, binary(desc.func, a[j * s0], b[j * s1]));
    } else {
      float v[kMaxInputs];
      for (int64_t j = 0; j < run; ++j) {
        for (size_t k = 0; k < nin; ++k)
          v[k] = in[k][off[k] + (rank ? j * d.in_strides[k][rank - 1] : 0)];
        y[j * so] = store(desc.epi, nary(desc.func, v, nin));
      }
    }
    e += run;
    if (rank) idx[rank - 1] += run;
    for (int i = rank - 1; i > 0 && idx[i] >= d.dims[i]; --i) {
      idx[i] = 0;
      idx[i - 1]++;
    }
  }
}

// Index of the first (p0 == 0) or last maximum / minimum along the axis; NaN compares false.
float arg_reduce(const VectorDesc& d, const float* p) {
  const bool want_max = d.func == VectorFunc::arg_max, last = d.p0 != 0;
  int64_t best = 0;
  for (int64_t a = 1; a < d.axis; ++a) {
    float v = p[a * d.inner], b = p[best * d.inner];
    bool better = want_max ? (last ? v >= b : v > b) : (last ? v <= b : v < b);
    if (better) best = a;
  }
  return static_cast<float>(best);
}

// 1 / sqrt(var + eps) of the axis, as layer_norm() computes it.
float inv_std_dev(const VectorDesc& d, const float* p) {
  double mean = 0, var = 0;
  for (int64_t a = 0; a < d.axis; ++a) mean += p[a * d.inner];
  mean /= static_cast<double>(d.axis);
  for (int64_t a = 0; a < d.axis; ++a) var += (p[a * d.inner] - mean) * (p[a * d.inner] - mean);
  var /= static_cast<double>(d.axis);
  return 1.0f / std::sqrt(static_cast<float>(var) + d.epsilon);
}

// Reduction of [outer, axis, inner] to [outer, inner]; output elements [r0, r1).
void reduce(const VectorDesc& d, const float* x, float* y, int64_t r0, int64_t r1) {
#pragma omp parallel for if ((r1 - r0) * d.axis > 65536) schedule(static)
  for (int64_t o = r0; o < r1; ++o) {
    int64_t outer = o / d.inner, inner = o % d.inner;
    const float* p = x + outer * d.axis * d.inner + inner;
    if (d.func == VectorFunc::arg_max || d.func == VectorFunc::arg_min) {
      y[o] = arg_reduce(d, p);
      continue;
    }
    if (d.func == VectorFunc::inv_std_dev) {
      y[o] = store(d.epi, inv_std_dev(d, p));
      continue;
    }
    double acc;
    switch (d.func) {
      case VectorFunc::reduce_max:
        acc = -std::numeric_limits<double>::infinity();
        break;
      case VectorFunc::reduce_min:
        acc = std::numeric_limits<double>::infinity();
        break;
      case VectorFunc::prod:
        acc = 1;
        break;
      default:
        acc = 0;
    }
    double mx = -std::numeric_limits<double>::infinity();
    if (d.func == VectorFunc::log_sum_exp)
      for (int64_t a = 0; a < d.axis; ++a) mx = std::max<double>(mx, p[a * d.inner]);
    for (int64_t a = 0; a < d.axis; ++a) {
      double v = p[a * d.inner];
      switch (d.func) {
        case VectorFunc::reduce_max:
          acc = max_nan(acc, v);
          break;
        case VectorFunc::reduce_min:
          acc = min_nan(acc, v);
          break;
        case VectorFunc::prod:
          acc *= v;
          break;
        case VectorFunc::l1:
          acc += std::fabs(v);
          break;
        case VectorFunc::l2:
        case VectorFunc::sum_square:
          acc += v * v;
          break;
        case VectorFunc::log_sum_exp:
          acc += std::exp(v - mx);
          break;
        default:
          acc += v;
      }
    }
    if (d.func == VectorFunc::mean)
      acc /= static_cast<double>(d.axis);
    else if (d.func == VectorFunc::l2)
      acc = std::sqrt(acc);
    else if (d.func == VectorFunc::log_sum)
      acc = std::log(acc);
    else if (d.func == VectorFunc::log_sum_exp)
      acc = mx + std::log(acc);
    y[o] = store(d.epi, static_cast<float>(acc));
  }
}

void softmax(const VectorDesc& d, const float* x, float* y, int64_t r0, int64_t r1) {
  const bool log_form = d.func == VectorFunc::log_softmax;
#pragma omp parallel for collapse(2) if ((r1 - r0) * d.axis * d.inner > 65536) schedule(static)
  for (int64_t o = r0; o < r1; ++o)
    for (int64_t i = 0; i < d.inner; ++i) {
      const float* p = x + o * d.axis * d.inner + i;
      float* q = y + o * d.axis * d.inner + i;
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t a = 0; a < d.axis; ++a) mx = std::max(mx, p[a * d.inner]);
      float sum = 0;
      for (int64_t a = 0; a < d.axis; ++a) sum += std::exp(p[a * d.inner] - mx);
      float log_sum = std::log(sum);
      for (int64_t a = 0; a < d.axis; ++a) {
        float v = p[a * d.inner] - mx;
        q[a * d.inner] = store(d.epi, log_form ? v - log_sum : std::exp(v) / sum);
      }
    }
}

void layer_norm(const VectorDesc& d, const float* x, const float* scale, const float* bias,
                float* y, int64_t r0, int64_t r1) {
  const int64_t n = d.inner;
#pragma omp parallel for if ((r1 - r0) * n > 65536) schedule(static)
  for (int64_t o = r0; o < r1; ++o) {
    const float* p = x + o * n;
    float* q = y + o * n;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; ++i) mean += p[i];
    mean /= static_cast<double>(n);
    for (int64_t i = 0; i < n; ++i) var += (p[i] - mean) * (p[i] - mean);
    var /= static_cast<double>(n);
    float inv = 1.0f / std::sqrt(static_cast<float>(var) + d.epsilon);
    for (int64_t i = 0; i < n; ++i) {
      float v = (p[i] - static_cast<float>(mean)) * inv;
      if (scale) v *= scale[i];
      if (bias) v += bias[i];
      q[i] = store(d.epi, v);
    }
  }
}

// y = x * s[c] + t[c] over [outer, C, inner]; rows (outer, c) in [r0, r1).
void scale_shift(const VectorDesc& d, const float* x, const float* s, const float* t, float* y,
                 int64_t r0, int64_t r1) {
#pragma omp parallel for if ((r1 - r0) * d.inner > 65536) schedule(static)
  for (int64_t r = r0; r < r1; ++r) {
    int64_t c = r % d.axis;
    const float* p = x + r * d.inner;
    float* q = y + r * d.inner;
    for (int64_t i = 0; i < d.inner; ++i) q[i] = store(d.epi, p[i] * s[c] + (t ? t[c] : 0.0f));
  }
}

// Operands of a depthwise convolution as the chip's matrix numerics see them: bf16 parts of input
// and taps (part 0 = hi, 1 = mid, 2 = lo) and the products of parts its precision takes, or on
// int8 chips the int8 input and taps (one pass) whose exact sum is rescaled by the input's scale
// times the channel's tap scale. Empty `passes` computes in plain fp32.
struct TapParts {
  const float* x[3] = {nullptr, nullptr, nullptr};
  const float* w[3] = {nullptr, nullptr, nullptr};
  std::vector<Pass> passes;
  float x_scale = 0;               // int8: the input's per-tensor scale (0: bf16 or fp32)
  const float* w_scale = nullptr;  // int8: one scale per output channel
};

// One output row (image, oh) of output channel oc of a pooling or depthwise convolution. With
// parts, each pass accumulates its products over the taps in fp32 and the passes are summed
// low-order first, as a matrix unit's passes are (numerics_gemm.cpp).
void window_row(const VectorDesc& d, const float* x, const float* w, const float* bias, float* y,
                int64_t img, int64_t oh, int64_t oc, const TapParts& parts) {
  const Window& g = d.window;
  const bool dw = d.func == VectorFunc::depthwise_conv;
  const size_t npass = dw ? parts.passes.size() : 0;
  const int64_t out_c = dw ? g.m : g.c, ic = oc / (dw ? g.m / g.c : 1);
  for (int64_t ow = 0; ow < g.ow; ++ow) {
    float acc = d.func == VectorFunc::max_pool ? -std::numeric_limits<float>::infinity() : 0.0f;
    float pass_acc[6] = {0, 0, 0, 0, 0, 0};
    int64_t count = 0;
    for (int64_t i = 0; i < g.kh; ++i) {
      int64_t ih = oh * g.sh - g.ph + i * g.dh;
      for (int64_t j = 0; j < g.kw; ++j) {
        int64_t iw = ow * g.sw - g.pw + j * g.dw;
        bool inside = ih >= 0 && ih < g.h && iw >= 0 && iw < g.w;
        if (!inside) {
          if (g.count_include_pad && ih < g.h + g.ph_end && iw < g.w + g.pw_end) ++count;
          continue;
        }
        const int64_t at = g.channels_last ? ((img * g.h + ih) * g.w + iw) * g.c + ic
                                           : ((img * g.c + ic) * g.h + ih) * g.w + iw;
        const int64_t tap = oc * g.kh * g.kw + i * g.kw + j;
        if (npass) {
          for (size_t p = 0; p < npass; ++p)
            pass_acc[p] += parts.x[parts.passes[p].a][at] * parts.w[parts.passes[p].w][tap];
        } else if (dw) {
          acc += x[at] * w[tap];
        } else if (d.func == VectorFunc::max_pool) {
          acc = std::max(acc, x[at]);
        } else {
          acc += x[at];
        }
        ++count;
      }
    }
    for (size_t p = 0; p < npass; ++p) acc += pass_acc[p];
    if (npass && parts.x_scale > 0) acc *= parts.x_scale * parts.w_scale[oc];
    if (d.func == VectorFunc::avg_pool) acc = count ? acc / static_cast<float>(count) : 0.0f;
    if (dw && bias) acc += bias[oc];
    int64_t at = g.channels_last ? ((img * g.oh + oh) * g.ow + ow) * out_c + oc
                                 : ((img * out_c + oc) * g.oh + oh) * g.ow + ow;
    y[at] = store(d.epi, acc);
  }
}

// Max/average pooling and depthwise convolution over rows [r0, r1): image rows (n, oh) of every
// channel, or (n, channel, oh) with Window::channel_rows.
void window_op(const VectorDesc& d, const float* x, const float* w, const float* bias, float* y,
               int64_t r0, int64_t r1, const TapParts& parts) {
  const Window& g = d.window;
  const int64_t out_c = d.func == VectorFunc::depthwise_conv ? g.m : g.c;
  if (g.channel_rows) {
#pragma omp parallel for if ((r1 - r0) * g.ow > 16384) schedule(static)
    for (int64_t r = r0; r < r1; ++r)
      window_row(d, x, w, bias, y, r / (out_c * g.oh), r % g.oh, (r / g.oh) % out_c, parts);
    return;
  }
#pragma omp parallel for collapse(2) if ((r1 - r0) * g.ow * out_c > 16384) schedule(static)
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t oc = 0; oc < out_c; ++oc)
      window_row(d, x, w, bias, y, r / g.oh, r % g.oh, oc, parts);
}

// The window (oh, ow) of channel ch: the first position in row-major order whose x equals the
// pooled y (the maximum the forward pass selected, as the cpu kernel picks it), as (ih, iw), or
// (-1, -1) when none does (a NaN window).
std::pair<int64_t, int64_t> selected(const Window& g, const float* x, float target, int64_t img,
                                     int64_t ch, int64_t oh, int64_t ow) {
  for (int64_t i = 0; i < g.kh; ++i) {
    const int64_t ih = oh * g.sh - g.ph + i * g.dh;
    if (ih < 0 || ih >= g.h) continue;
    for (int64_t j = 0; j < g.kw; ++j) {
      const int64_t iw = ow * g.sw - g.pw + j * g.dw;
      if (iw < 0 || iw >= g.w) continue;
      const int64_t at = g.channels_last ? ((img * g.h + ih) * g.w + iw) * g.c + ch
                                         : ((img * g.c + ch) * g.h + ih) * g.w + iw;
      if (x[at] == target) return {ih, iw};
    }
  }
  return {-1, -1};
}

// Input row ih of image img of a max pool's gradient (SelectAndScatter), channels [c0, c1): each
// element sums, in output order (the order the cpu kernel adds them in fp32), the dy of every
// window that selected it.
void max_pool_grad_row(const VectorDesc& d, const float* x, const float* y, const float* dy,
                       float* dx, int64_t img, int64_t ih, int64_t c0, int64_t c1) {
  const Window& g = d.window;
  std::vector<float> acc(static_cast<size_t>((c1 - c0) * g.w), 0.0f);  // [channel][iw]
  for (int64_t oh = 0; oh < g.oh; ++oh) {
    const int64_t rel = ih - (oh * g.sh - g.ph);
    if (rel < 0 || rel % g.dh != 0 || rel / g.dh >= g.kh) continue;
    for (int64_t ow = 0; ow < g.ow; ++ow)
      for (int64_t ch = c0; ch < c1; ++ch) {
        const int64_t at = g.channels_last ? ((img * g.oh + oh) * g.ow + ow) * g.c + ch
                                           : ((img * g.c + ch) * g.oh + oh) * g.ow + ow;
        auto [sel_h, sel_w] = selected(g, x, y[at], img, ch, oh, ow);
        if (sel_h == ih) acc[static_cast<size_t>((ch - c0) * g.w + sel_w)] += dy[at];
      }
  }
  for (int64_t ch = c0; ch < c1; ++ch)
    for (int64_t iw = 0; iw < g.w; ++iw) {
      const int64_t at = g.channels_last ? ((img * g.h + ih) * g.w + iw) * g.c + ch
                                         : ((img * g.c + ch) * g.h + ih) * g.w + iw;
      dx[at] = store(d.epi, acc[static_cast<size_t>((ch - c0) * g.w + iw)]);
    }
}

// max_pool_grad_row over rows [r0, r1): input rows (n, ih) of every channel, or (n, channel, ih)
// with Window::channel_rows.
void max_pool_grad(const VectorDesc& d, const float* x, const float* y, const float* dy, float* dx,
                   int64_t r0, int64_t r1) {
  const Window& g = d.window;
#pragma omp parallel for if ((r1 - r0) * g.w > 4096) schedule(static)
  for (int64_t r = r0; r < r1; ++r) {
    if (g.channel_rows) {
      const int64_t ch = (r / g.h) % g.c;
      max_pool_grad_row(d, x, y, dy, dx, r / (g.c * g.h), r % g.h, ch, ch + 1);
    } else {
      max_pool_grad_row(d, x, y, dy, dx, r / g.h, r % g.h, 0, g.c);
    }
  }
}

// One output row (image, oh) of output channel oc of a ConvTranspose whose groups have one output
// channel each (weights [C, 1, KH, KW]; a pooling gradient's scatter): y[oh, ow] sums, over the
// group's input channels and the taps (i, j) with oh = ih * sh - ph + i * dh (and likewise ow),
// x[ih, iw] * w[tap], each pass's products in fp32 and the passes summed low-order first.
void transposed_row(const VectorDesc& d, const float* bias, float* y, int64_t img, int64_t oh,
                    int64_t oc, const TapParts& parts) {
  const Window& g = d.window;
  const int64_t cg = g.c / g.groups, kvol = g.kh * g.kw;
  for (int64_t ow = 0; ow < g.ow; ++ow) {
    float pass_acc[6] = {0, 0, 0, 0, 0, 0};
    for (int64_t ic = oc * cg; ic < (oc + 1) * cg; ++ic)
      for (int64_t i = 0; i < g.kh; ++i) {
        const int64_t ty = oh + g.ph - i * g.dh;
        if (ty < 0 || ty % g.sh != 0 || ty / g.sh >= g.h) continue;
        for (int64_t j = 0; j < g.kw; ++j) {
          const int64_t tx = ow + g.pw - j * g.dw;
          if (tx < 0 || tx % g.sw != 0 || tx / g.sw >= g.w) continue;
          const int64_t ih = ty / g.sh, iw = tx / g.sw;
          const int64_t at = g.channels_last ? ((img * g.h + ih) * g.w + iw) * g.c + ic
                                             : ((img * g.c + ic) * g.h + ih) * g.w + iw;
          const int64_t tap = ic * kvol + i * g.kw + j;
          for (size_t p = 0; p < parts.passes.size(); ++p)
            pass_acc[p] += parts.x[parts.passes[p].a][at] * parts.w[parts.passes[p].w][tap];
        }
      }
    float acc = 0;
    for (size_t p = 0; p < parts.passes.size(); ++p) acc += pass_acc[p];
    if (bias) acc += bias[oc];
    const int64_t at = g.channels_last ? ((img * g.oh + oh) * g.ow + ow) * g.m + oc
                                       : ((img * g.m + oc) * g.oh + oh) * g.ow + ow;
    y[at] = store(d.epi, acc);
  }
}

// transposed_row over rows [r0, r1): image rows (n, oh) of every output channel, or
// (n, channel, oh) with Window::channel_rows.
void transposed_op(const VectorDesc& d, const float* bias, float* y, int64_t r0, int64_t r1,
                   const TapParts& parts) {
  const Window& g = d.window;
  if (g.channel_rows) {
#pragma omp parallel for if ((r1 - r0) * g.ow > 16384) schedule(static)
    for (int64_t r = r0; r < r1; ++r)
      transposed_row(d, bias, y, r / (g.m * g.oh), r % g.oh, (r / g.oh) % g.m, parts);
    return;
  }
#pragma omp parallel for collapse(2) if ((r1 - r0) * g.ow * g.m > 16384) schedule(static)
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t oc = 0; oc < g.m; ++oc) transposed_row(d, bias, y, r / g.oh, r % g.oh, oc, parts);
}

// int8 chips: depthwise taps [M, kh*kw] quantized per output channel with the symmetric scale
// max|w| / 127 (round half to even), as a matrix unit's weights are per output column.
void quantize_taps(const Window& g, const float* w, std::vector<float>* q,
                   std::vector<float>* scales) {
  const int64_t kvol = g.kh * g.kw;
  q->resize(static_cast<size_t>(g.m * kvol));
  scales->resize(static_cast<size_t>(g.m));
  for (int64_t oc = 0; oc < g.m; ++oc) {
    float mx = 0;
    for (int64_t t = 0; t < kvol; ++t) mx = std::max(mx, std::fabs(w[oc * kvol + t]));
    const float s = numeric::int8_scale_for(mx);
    (*scales)[oc] = s;
    for (int64_t t = 0; t < kvol; ++t)
      (*q)[oc * kvol + t] = std::clamp(std::nearbyint(w[oc * kvol + t] / s), -127.0f, 127.0f);
  }
}

// Index `v` of an axis of d.axis rows; negative ones count from the end, as ONNX says.
int64_t row_index(const VectorDesc& d, float v, const char* op) {
  int64_t i = static_cast<int64_t>(v);
  if (i < 0) i += d.axis;
  if (i < 0 || i >= d.axis)
    throw std::out_of_range(std::string(op) + " index " + std::to_string(static_cast<int64_t>(v)) +
                            " is outside [-" + std::to_string(d.axis) + ", " +
                            std::to_string(d.axis) + ")");
  return i;
}

// Gather over [outer, axis, inner]: output rows (o, j) in [r0, r1) copy row idx[j] of outer o
// (p0 indices; negative ones count from the end, as ONNX says).
void gather(const VectorDesc& d, const float* x, const float* idx, float* y, int64_t r0,
            int64_t r1) {
  const int64_t count = static_cast<int64_t>(d.p0);
  for (int64_t r = r0; r < r1; ++r) {
    int64_t o = r / count, j = r % count;
    const int64_t i = row_index(d, idx[j], "gather");
    const float* src = x + (o * d.axis + i) * d.inner;
    float* dst = y + r * d.inner;
    for (int64_t k = 0; k < d.inner; ++k) dst[k] = store(d.epi, src[k]);
  }
}

// ScatterND of rows over [axis, inner]: output rows [r0, r1) start as data's, then every update
// row j whose index falls among them is written, or added (p1 != 0), in update order, so repeated
// indices accumulate in the order the cpu reference applies them.
void scatter(const VectorDesc& d, const float* x, const float* idx, const float* upd, float* y,
             int64_t r0, int64_t r1) {
  const int64_t count = static_cast<int64_t>(d.p0);
  for (int64_t k = r0 * d.inner; k < r1 * d.inner; ++k) y[k] = store(d.epi, x[k]);
  for (int64_t j = 0; j < count; ++j) {
    const int64_t i = row_index(d, idx[j], "scatter");
    if (i < r0 || i >= r1) continue;
    float* dst = y + i * d.inner;
    const float* src = upd + j * d.inner;
    for (int64_t k = 0; k < d.inner; ++k)
      dst[k] = store(d.epi, d.p1 != 0 ? dst[k] + src[k] : src[k]);
  }
}

// Gather or ScatterND rows [r0, r1); an index outside the table is the run's error, naming the
// node as the cpu reference kernel does.
void indexed(const OpInfo& op, const VectorDesc& d, const std::vector<const float*>& in, float* y,
             int64_t r0, int64_t r1) {
  try {
    if (d.func == VectorFunc::gather)
      gather(d, in.at(0), in.at(1), y, r0, r1);
    else
      scatter(d, in.at(0), in.at(1), in.at(2), y, r0, r1);
  } catch (const std::out_of_range& e) {
    throw RuntimeError(op.op_type + " '" + op.node + "': " + e.what());
  }
}

}  // namespace

namespace {

// Elementwise maps and copies, the region split across threads when it is large.
void elementwise_parallel(const VectorDesc& d, const std::vector<const float*>& inputs, float* y,
                          int64_t r0, int64_t r1) {
  const int64_t n = r1 - r0;
  if (n <= 65536) {
    elementwise(d, inputs, y, r0, r1);
    return;
  }
#pragma omp parallel
  {
#ifdef _OPENMP
    int nt = omp_get_num_threads(), id = omp_get_thread_num();
#else
    int nt = 1, id = 0;
#endif
    int64_t chunk = (n + nt - 1) / nt, a = r0 + id * chunk, b = std::min(r1, a + chunk);
    if (a < b) elementwise(d, inputs, y, a, b);
  }
}

}  // namespace

void Numerics::run_vector(const Instruction& in, const Kernel& k) {
  const VectorDesc& d = k.vec;
  std::vector<const float*> inputs;
  for (int32_t t : d.in) inputs.push_back(t >= 0 ? data(t) : nullptr);
  float* y = data(d.out);
  const int64_t r0 = in.r0, r1 = in.r1;
  if (r1 <= r0) return;
  switch (d.func) {
    case VectorFunc::sum:
    case VectorFunc::mean:
    case VectorFunc::reduce_max:
    case VectorFunc::reduce_min:
    case VectorFunc::prod:
    case VectorFunc::l1:
    case VectorFunc::l2:
    case VectorFunc::sum_square:
    case VectorFunc::log_sum:
    case VectorFunc::arg_max:
    case VectorFunc::arg_min:
    case VectorFunc::inv_std_dev:
    case VectorFunc::log_sum_exp:
      return reduce(d, inputs.at(0), y, r0, r1);
    case VectorFunc::gather:
    case VectorFunc::scatter:
      return indexed(program_.ops.at(k.op), d, inputs, y, r0, r1);
    case VectorFunc::softmax:
    case VectorFunc::log_softmax:
      return softmax(d, inputs.at(0), y, r0, r1);
    case VectorFunc::layer_norm:
      layer_norm(d, inputs.at(0), inputs.size() > 1 ? inputs[1] : nullptr,
                 inputs.size() > 2 ? inputs[2] : nullptr, y, r0, r1);
      return;
    case VectorFunc::scale_shift:
      scale_shift(d, inputs.at(0), inputs.at(1), inputs.size() > 2 ? inputs[2] : nullptr, y, r0,
                  r1);
      return;
    case VectorFunc::max_pool:
    case VectorFunc::avg_pool:
      return window_op(d, inputs.at(0), nullptr, nullptr, y, r0, r1, TapParts{});
    case VectorFunc::max_pool_grad:
      return max_pool_grad(d, inputs.at(0), inputs.at(1), inputs.at(2), y, r0, r1);
    case VectorFunc::depthwise_conv: {
      // The chip's convolution numerics (numerics.h): bf16 passes, or int8 operands.
      TapParts parts;
      std::vector<float> taps, tap_scales;
      if (program_.numerics == MatrixNumerics::bf16) {
        parts.passes = passes_for(program_.passes);
        for (const Pass& p : parts.passes) {
          parts.x[p.a] = operand(d.in[0], p.a, false, nullptr);
          parts.w[p.w] = operand(d.in[1], p.w, false, nullptr);
        }
      } else {
        parts.passes = {{0, 0}};
        parts.x[0] = operand(d.in[0], 0, false, nullptr);
        parts.x_scale = tensor_scale(d.in[0]);
        quantize_taps(d.window, inputs.at(1), &taps, &tap_scales);
        parts.w[0] = taps.data();
        parts.w_scale = tap_scales.data();
      }
      window_op(d, inputs.at(0), inputs.at(1), inputs.size() > 2 ? inputs[2] : nullptr, y, r0, r1,
                parts);
      return;
    }
    case VectorFunc::conv_transpose_taps: {
      // A convolution's numerics on a bf16 chip (the compiler lowers it there only).
      TapParts parts;
      parts.passes = passes_for(program_.passes);
      for (const Pass& p : parts.passes) {
        parts.x[p.a] = operand(d.in[0], p.a, false, nullptr);
        parts.w[p.w] = operand(d.in[1], p.w, false, nullptr);
      }
      transposed_op(d, inputs.size() > 2 ? inputs[2] : nullptr, y, r0, r1, parts);
      return;
    }
    default:
      break;
  }
  elementwise_parallel(d, inputs, y, r0, r1);
}

}  // namespace mimic::models::tpu
