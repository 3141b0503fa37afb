// Pooling, normalizations and softmax.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "backends/cpu/kernels.h"
#include "backends/cpu/tensor_iter.h"
#include "backends/cpu/threading.h"
#include "frontend/ir/nn_geometry.h"

namespace mimic::backends::cpu {
namespace {

using ir::WindowGeometry;

// Element offset of (n, c, spatial s) in either layout.
struct Layout {
  int64_t channels, spatial;
  bool last;
  int64_t at(int64_t n, int64_t c, int64_t s) const {
    return last ? (n * spatial + s) * channels + c : (n * channels + c) * spatial + s;
  }
};

// One pooling window: visits valid input offsets, and reports the padded window size.
template <typename Visit>
int64_t visit_window(const WindowGeometry& g, const std::vector<int64_t>& o,
                     const std::vector<int64_t>& in_strides, Visit visit) {
  int sr = g.spatial_rank;
  std::vector<int64_t> begin(sr), k(sr, 0);
  int64_t padded = 1;
  for (int d = 0; d < sr; ++d) {
    begin[d] = o[d] * g.strides[d] - g.pad_begin[d];
    int64_t end =
        std::min(begin[d] + (g.kernel[d] - 1) * g.dilations[d] + 1, g.in_size[d] + g.pad_end[d]);
    padded *= (end - begin[d] + g.dilations[d] - 1) / g.dilations[d];
  }
  do {
    int64_t off = 0;
    bool inside = true;
    for (int d = 0; d < sr && inside; ++d) {
      int64_t i = begin[d] + k[d] * g.dilations[d];
      inside = i >= 0 && i < g.in_size[d];
      off += i * in_strides[d];
    }
    if (inside) visit(off);
  } while (next_index(k, g.kernel));
  return padded;
}

}  // namespace

namespace {

// 2-D pooling with hoisted window bounds: the path every CNN takes.
void pool2d(const float* x, float* y, const WindowGeometry& g, bool is_max, bool include_pad) {
  int64_t oh = g.out_size[0], ow = g.out_size[1], ih = g.in_size[0], iw = g.in_size[1];
  int64_t c = g.in_channels, dy = g.dilations[0], dx = g.dilations[1];
  int64_t step = g.channels_last ? c : 1;
  Layout in{c, ih * iw, g.channels_last}, out{c, oh * ow, g.channels_last};
#pragma omp parallel for collapse(2) if (g.batch * c * oh * ow > parallel_threshold(4096))
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t ch = 0; ch < c; ++ch) {
      const float* base = x + in.at(n, ch, 0);
      for (int64_t yo = 0; yo < oh; ++yo) {
        int64_t y0 = yo * g.strides[0] - g.pad_begin[0];
        int64_t y_end = std::min(y0 + (g.kernel[0] - 1) * dy + 1, ih + g.pad_end[0]);
        for (int64_t xo = 0; xo < ow; ++xo) {
          int64_t x0 = xo * g.strides[1] - g.pad_begin[1];
          int64_t x_end = std::min(x0 + (g.kernel[1] - 1) * dx + 1, iw + g.pad_end[1]);
          float acc = is_max ? -std::numeric_limits<float>::infinity() : 0.0f;
          int64_t valid = 0;
          for (int64_t iy = y0; iy < y_end; iy += dy) {
            if (iy < 0 || iy >= ih) continue;
            for (int64_t ix = x0; ix < x_end; ix += dx) {
              if (ix < 0 || ix >= iw) continue;
              float v = base[(iy * iw + ix) * step];
              acc = is_max ? std::max(acc, v) : acc + v;
              ++valid;
            }
          }
          if (!is_max) {
            int64_t padded = ((y_end - y0 + dy - 1) / dy) * ((x_end - x0 + dx - 1) / dx);
            acc /= static_cast<float>(include_pad ? padded : std::max<int64_t>(valid, 1));
          }
          y[out.at(n, ch, yo * ow + xo)] = acc;
        }
      }
    }
}

}  // namespace

void pool_kernel(const KernelArgs& a) {
  WindowGeometry g = ir::window_geometry(a.graph, a.node);
  bool is_max = a.node.op == ir::OpType::MaxPool;
  bool include_pad = a.node.attrs.get_int("count_include_pad", 0) != 0;
  const float* x = f32(a.input(0));
  float* y = f32(a.output(0));
  if (g.spatial_rank == 2) return pool2d(x, y, g, is_max, include_pad);
  Layout in{g.in_channels, g.in_spatial(), g.channels_last};
  Layout out{g.in_channels, g.out_spatial(), g.channels_last};
  std::vector<int64_t> in_strides(g.spatial_rank, 1);
  for (int d = g.spatial_rank - 2; d >= 0; --d)
    in_strides[d] = in_strides[d + 1] * g.in_size[d + 1];
  int64_t step = g.channels_last ? g.in_channels : 1;
#pragma omp parallel for collapse(2) if (g.batch * g.in_channels * out.spatial > \
                                         parallel_threshold(4096))
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t c = 0; c < g.in_channels; ++c) {
      const float* base = x + in.at(n, c, 0);
      std::vector<int64_t> o(g.spatial_rank, 0);
      int64_t p = 0;
      do {
        float acc = is_max ? -std::numeric_limits<float>::infinity() : 0.0f;
        int64_t valid = 0;
        int64_t padded = visit_window(g, o, in_strides, [&](int64_t off) {
          float v = base[off * step];
          acc = is_max ? std::max(acc, v) : acc + v;
          ++valid;
        });
        if (!is_max) acc /= static_cast<float>(include_pad ? padded : std::max<int64_t>(valid, 1));
        y[out.at(n, c, p++)] = acc;
      } while (next_index(o, g.out_size));
    }
}

namespace {

// The first window position begin + k * step (k >= 0) that is not negative.
int64_t first_inside(int64_t begin, int64_t step) {
  return begin < 0 ? begin + (-begin + step - 1) / step * step : begin;
}

// One (image, channel) plane of MaxPoolGrad in 2-D: each window's dY goes to its first element
// equal to Y, in window order.
void max_pool_grad_plane_2d(const float* x, const float* y, const float* dy, float* dx,
                            const WindowGeometry& g, int64_t step, int64_t out_step) {
  int64_t oh = g.out_size[0], ow = g.out_size[1], ih = g.in_size[0], iw = g.in_size[1];
  int64_t dil_y = g.dilations[0], dil_x = g.dilations[1];
  for (int64_t yo = 0; yo < oh; ++yo) {
    int64_t y0 = yo * g.strides[0] - g.pad_begin[0];
    int64_t y_end = std::min(y0 + (g.kernel[0] - 1) * dil_y + 1, ih);
    for (int64_t xo = 0; xo < ow; ++xo) {
      int64_t x0 = xo * g.strides[1] - g.pad_begin[1];
      int64_t x_end = std::min(x0 + (g.kernel[1] - 1) * dil_x + 1, iw);
      const int64_t o = (yo * ow + xo) * out_step;
      const float target = y[o];
      int64_t hit = -1;  // selected without a data-dependent branch: the first equal element wins
      for (int64_t iy = first_inside(y0, dil_y); iy < y_end; iy += dil_y)
        for (int64_t ix = first_inside(x0, dil_x); ix < x_end; ix += dil_x) {
          const int64_t at = (iy * iw + ix) * step;
          hit = hit < 0 && x[at] == target ? at : hit;
        }
      if (hit >= 0) dx[hit] += dy[o];
    }
  }
}

}  // namespace

// MaxPoolGrad(X, Y, dY): each window's dY is added at its first element equal to Y (window order,
// as PyTorch picks it); a window with none (a NaN maximum) adds nothing.
void max_pool_grad_kernel(const KernelArgs& a) {
  WindowGeometry g = ir::window_geometry(a.graph, a.node);
  const float *x = f32(a.input(0)), *y = f32(a.input(1)), *dy = f32(a.input(2));
  float* dx = f32(a.output(0));
  const int64_t total = a.output(0).numel();
#pragma omp parallel for if (total > parallel_threshold(int64_t{1} << 20))
  for (int64_t start = 0; start < total; start += 65536)
    std::fill(dx + start, dx + std::min(total, start + 65536), 0.0f);
  Layout in{g.in_channels, g.in_spatial(), g.channels_last};
  Layout out{g.in_channels, g.out_spatial(), g.channels_last};
  std::vector<int64_t> in_strides(g.spatial_rank, 1);
  for (int d = g.spatial_rank - 2; d >= 0; --d)
    in_strides[d] = in_strides[d + 1] * g.in_size[d + 1];
  const int64_t step = g.channels_last ? g.in_channels : 1;
#pragma omp parallel for collapse(2) if (g.batch * g.in_channels * out.spatial > \
                                         parallel_threshold(4096))
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t c = 0; c < g.in_channels; ++c) {
      const int64_t at = in.at(n, c, 0), out_at = out.at(n, c, 0);
      if (g.spatial_rank == 2) {
        max_pool_grad_plane_2d(x + at, y + out_at, dy + out_at, dx + at, g, step, step);
        continue;
      }
      std::vector<int64_t> o(g.spatial_rank, 0);
      int64_t p = 0;
      do {
        const float target = y[out.at(n, c, p)], grad = dy[out.at(n, c, p)];
        bool found = false;
        visit_window(g, o, in_strides, [&](int64_t off) {
          if (found || x[at + off * step] != target) return;
          dx[at + off * step] += grad;
          found = true;
        });
        ++p;
      } while (next_index(o, g.out_size));
    }
}

void global_pool_kernel(const KernelArgs& a) {
  const ir::Shape& s = a.input(0).shape();
  bool last = ir::is_channels_last(a.node);
  int64_t n = s[0], c = last ? s.dim(-1) : s[1], sp = s.numel() / (n * c);
  bool is_max = a.node.op == ir::OpType::GlobalMaxPool;
  const float* x = f32(a.input(0));
  float* y = f32(a.output(0));
  Layout in{c, sp, last};
#pragma omp parallel for collapse(2) if (n * c * sp > parallel_threshold(65536))
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch) {
      double acc = is_max ? -INFINITY : 0.0;
      for (int64_t p = 0; p < sp; ++p) {
        float v = x[in.at(i, ch, p)];
        acc = is_max ? std::max<double>(acc, v) : acc + v;
      }
      y[i * c + ch] = static_cast<float>(is_max ? acc : acc / static_cast<double>(sp));
    }
}

void batch_norm_kernel(const KernelArgs& a) {
  const ir::Shape& s = a.input(0).shape();
  assert(s.rank() >= 2);  // infer::batch_norm, which also checks the four per-channel inputs
  bool last = ir::is_channels_last(a.node);
  int64_t n = s[0], c = last ? s.dim(-1) : s[1], sp = s.numel() / std::max<int64_t>(1, n * c);
  double eps = a.node.attrs.get_float("epsilon", 1e-5);
  const float *scale = f32(a.input(1)), *bias = f32(a.input(2));
  const float *mean = f32(a.input(3)), *var = f32(a.input(4));
  std::vector<float> mul(c), add(c);
  for (int64_t ch = 0; ch < c; ++ch) {
    mul[ch] = static_cast<float>(scale[ch] / std::sqrt(static_cast<double>(var[ch]) + eps));
    add[ch] = bias[ch] - mean[ch] * mul[ch];
  }
  const float* x = f32(a.input(0));
  float* y = f32(a.output(0));
  if (last) {
#pragma omp parallel for if (n * sp * c > parallel_threshold(65536))
    for (int64_t i = 0; i < n * sp; ++i)
      for (int64_t ch = 0; ch < c; ++ch) y[i * c + ch] = x[i * c + ch] * mul[ch] + add[ch];
    return;
  }
#pragma omp parallel for collapse(2) if (n * sp * c > parallel_threshold(65536))
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch) {
      const float* xr = x + (i * c + ch) * sp;
      float* yr = y + (i * c + ch) * sp;
      float m = mul[ch], b = add[ch];
      for (int64_t p = 0; p < sp; ++p) yr[p] = xr[p] * m + b;
    }
}

void layer_norm_kernel(const KernelArgs& a) {
  const ir::Shape& s = a.input(0).shape();
  int axis = ir::normalize_axis(a.node.attrs.get_int("axis", -1), s.rank(), "axis");
  int64_t outer = s.product(0, axis), inner = s.product(axis, s.rank());
  double eps = a.node.attrs.get_float("epsilon", 1e-5);
  ir::Shape norm_shape(std::vector<int64_t>(s.dims().begin() + axis, s.dims().end()));
  auto expand_param = [&](int i, float fill) {
    std::vector<float> v(inner, fill);
    if (a.has_input(i))
      strided_copy(v.data(), a.input(i).raw(), norm_shape.dims(),
                   broadcast_strides(a.input(i).shape(), norm_shape), 0, 4);
    return v;
  };
  std::vector<float> scale = expand_param(1, 1.0f), bias = expand_param(2, 0.0f);
  const float* x = f32(a.input(0));
  float* y = f32(a.output(0));
  float* mean_out = a.out.size() > 1 && a.out[1] ? f32(*a.out[1]) : nullptr;
  float* inv_out = a.out.size() > 2 && a.out[2] ? f32(*a.out[2]) : nullptr;
#pragma omp parallel for if (outer * inner > parallel_threshold(16384))
  for (int64_t o = 0; o < outer; ++o) {
    const float* xr = x + o * inner;
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < inner; ++i) sum += xr[i];
    double mean = sum / inner;
    for (int64_t i = 0; i < inner; ++i) sq += (xr[i] - mean) * (xr[i] - mean);
    double inv = 1.0 / std::sqrt(sq / inner + eps);
    float* yr = y + o * inner;
    for (int64_t i = 0; i < inner; ++i)
      yr[i] = static_cast<float>((xr[i] - mean) * inv) * scale[i] + bias[i];
    if (mean_out) mean_out[o] = static_cast<float>(mean);
    if (inv_out) inv_out[o] = static_cast<float>(inv);
  }
}

void instance_norm_kernel(const KernelArgs& a) {
  const ir::Shape& s = a.input(0).shape();
  // Shape inference (infer::instance_norm) guarantees these.
  assert(s.rank() >= 3 && a.input(1).numel() == s[1] && a.input(2).numel() == s[1]);
  int64_t n = s[0], c = s[1], sp = s.numel() / (n * c);
  double eps = a.node.attrs.get_float("epsilon", 1e-5);
  const float *x = f32(a.input(0)), *scale = f32(a.input(1)), *bias = f32(a.input(2));
  float* y = f32(a.output(0));
#pragma omp parallel for collapse(2)
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch) {
      const float* xr = x + (i * c + ch) * sp;
      double sum = 0, sq = 0;
      for (int64_t p = 0; p < sp; ++p) sum += xr[p];
      double mean = sum / sp;
      for (int64_t p = 0; p < sp; ++p) sq += (xr[p] - mean) * (xr[p] - mean);
      double inv = 1.0 / std::sqrt(sq / sp + eps);
      float* yr = y + (i * c + ch) * sp;
      for (int64_t p = 0; p < sp; ++p)
        yr[p] = static_cast<float>((xr[p] - mean) * inv * scale[ch] + bias[ch]);
    }
}

void lrn_kernel(const KernelArgs& a) {
  const ir::Shape& s = a.input(0).shape();
  assert(s.rank() >= 3);  // infer::lrn
  int64_t n = s[0], c = s[1], sp = s.numel() / (n * c);
  double alpha = a.node.attrs.get_float("alpha", 1e-4), beta = a.node.attrs.get_float("beta", 0.75);
  double bias = a.node.attrs.get_float("bias", 1.0);
  int64_t size = a.node.attrs.require_int("size");
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  const float* x = f32(a.input(0));
  float* y = f32(a.output(0));
#pragma omp parallel for collapse(2)
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < sp; ++p) {
        double sq = 0;
        for (int64_t k = std::max<int64_t>(0, ch - before); k <= std::min(c - 1, ch + after); ++k) {
          double v = x[(i * c + k) * sp + p];
          sq += v * v;
        }
        double v = x[(i * c + ch) * sp + p];
        y[(i * c + ch) * sp + p] = static_cast<float>(v / std::pow(bias + alpha / size * sq, beta));
      }
}

void softmax_kernel(const KernelArgs& a) {
  const ir::Shape& s = a.input(0).shape();
  int axis = ir::normalize_axis(a.node.attrs.get_int("axis", -1), s.rank(), "axis");
  bool coerce = a.node.attrs.get_int("coerce_2d", 0) != 0;
  int64_t outer = s.product(0, axis);
  int64_t dim = coerce ? s.product(axis, s.rank()) : s[axis];
  int64_t inner = coerce ? 1 : s.product(axis + 1, s.rank());
  ir::OpType op = a.node.op;
  const float* x = f32(a.input(0));
  float* y = f32(a.output(0));
#pragma omp parallel for collapse(2) if (outer * inner * dim > parallel_threshold(16384))
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const float* xr = x + o * dim * inner + i;
      float* yr = y + o * dim * inner + i;
      float mx = -std::numeric_limits<float>::infinity();
      int64_t arg = 0;
      for (int64_t d = 0; d < dim; ++d)
        if (xr[d * inner] > mx) {
          mx = xr[d * inner];
          arg = d;
        }
      if (op == ir::OpType::Hardmax) {
        for (int64_t d = 0; d < dim; ++d) yr[d * inner] = d == arg ? 1.0f : 0.0f;
        continue;
      }
      double sum = 0;
      for (int64_t d = 0; d < dim; ++d) sum += std::exp(static_cast<double>(xr[d * inner] - mx));
      if (op == ir::OpType::LogSoftmax) {
        float log_sum = static_cast<float>(std::log(sum));
        for (int64_t d = 0; d < dim; ++d) yr[d * inner] = xr[d * inner] - mx - log_sum;
      } else {
        float inv = static_cast<float>(1.0 / sum);
        for (int64_t d = 0; d < dim; ++d) yr[d * inner] = std::exp(xr[d * inner] - mx) * inv;
      }
    }
}

}  // namespace mimic::backends::cpu
