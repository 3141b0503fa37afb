// Convolution and transposed convolution.
//
// Conv: per image and group, out[Mg, P] = W[Mg, K] x col[K, P] where col is the im2col expansion
// of the input window (K = Cg * kernel volume, P = output pixels); 1x1/stride-1 convolutions skip
// im2col, depthwise convolutions use a direct loop. Channels-last inputs use the transposed
// formulation out[P, Mg] = col[P, K] x W^T with col ordered (kernel position, channel).
// ConvTranspose: col[Mg*kvol, P_in] = W^T x X, then col2im scatter-adds the windows.
// Any spatial rank is supported; 2-D has unrolled index loops.
#include <cstring>
#include <vector>

#include "backends/cpu/kernels.h"
#include "backends/cpu/tensor_iter.h"
#include "backends/cpu/threading.h"
#include "base/gemm.h"
#include "frontend/ir/nn_geometry.h"

namespace mimic::backends::cpu {
namespace {

using ir::WindowGeometry;

// For spatial dim d, input coordinate of (output o, kernel k), or -1 when it falls in padding.
std::vector<std::vector<int64_t>> input_index_tables(const WindowGeometry& g, int d) {
  std::vector<std::vector<int64_t>> table(g.kernel[d], std::vector<int64_t>(g.out_size[d]));
  for (int64_t k = 0; k < g.kernel[d]; ++k)
    for (int64_t o = 0; o < g.out_size[d]; ++o) {
      int64_t i = o * g.strides[d] - g.pad_begin[d] + k * g.dilations[d];
      table[k][o] = (i >= 0 && i < g.in_size[d]) ? i : -1;
    }
  return table;
}

// col[K, P] for channels-first input x[Cg, in spatial] (one image, one group).
void im2col_cf(const float* x, float* col, int64_t channels, const WindowGeometry& g) {
  int sr = g.spatial_rank;
  int64_t kvol = g.kernel_volume(), p_total = g.out_spatial(), in_sp = g.in_spatial();
  std::vector<std::vector<std::vector<int64_t>>> tables(sr);
  for (int d = 0; d < sr; ++d) tables[d] = input_index_tables(g, d);
  if (sr == 2) {
    int64_t oh = g.out_size[0], ow = g.out_size[1], iw = g.in_size[1];
#pragma omp parallel for collapse(2) if (channels * kvol * p_total > parallel_threshold(65536)) \
    schedule(static)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t kk = 0; kk < kvol; ++kk) {
        const auto& ty = tables[0][kk / g.kernel[1]];
        const auto& tx = tables[1][kk % g.kernel[1]];
        float* row = col + (c * kvol + kk) * p_total;
        const float* plane = x + c * in_sp;
        for (int64_t y = 0; y < oh; ++y) {
          int64_t iy = ty[y];
          float* dst = row + y * ow;
          if (iy < 0) {
            std::memset(dst, 0, ow * sizeof(float));
            continue;
          }
          const float* src = plane + iy * iw;
          for (int64_t xo = 0; xo < ow; ++xo) dst[xo] = tx[xo] < 0 ? 0.0f : src[tx[xo]];
        }
      }
    return;
  }
  std::vector<int64_t> in_strides(sr, 1);
  for (int d = sr - 2; d >= 0; --d) in_strides[d] = in_strides[d + 1] * g.in_size[d + 1];
#pragma omp parallel for if (channels * kvol * p_total > parallel_threshold(65536))
  for (int64_t c = 0; c < channels; ++c) {
    std::vector<int64_t> k(sr, 0);
    int64_t kk = 0;
    do {
      float* row = col + (c * kvol + kk) * p_total;
      std::vector<int64_t> o(sr, 0);
      int64_t p = 0;
      do {
        int64_t off = 0;
        bool inside = true;
        for (int d = 0; d < sr && inside; ++d) {
          int64_t i = tables[d][k[d]][o[d]];
          inside = i >= 0;
          off += i * in_strides[d];
        }
        row[p++] = inside ? x[c * in_sp + off] : 0.0f;
      } while (next_index(o, g.out_size));
      ++kk;
    } while (next_index(k, g.kernel));
  }
}

// col[P, K] with K ordered (kernel position, channel) for channels-last 2-D input x[H, W, C].
void im2col_cl2d(const float* x, float* col, int64_t c0, int64_t cg, const WindowGeometry& g) {
  int64_t oh = g.out_size[0], ow = g.out_size[1], iw = g.in_size[1], c_total = g.in_channels;
  int64_t kh = g.kernel[0], kw = g.kernel[1], k_row = kh * kw * cg;
  auto ty = input_index_tables(g, 0), tx = input_index_tables(g, 1);
#pragma omp parallel for if (oh * ow * k_row > parallel_threshold(65536)) schedule(static)
  for (int64_t y = 0; y < oh; ++y)
    for (int64_t xo = 0; xo < ow; ++xo) {
      float* dst = col + (y * ow + xo) * k_row;
      for (int64_t ky = 0; ky < kh; ++ky)
        for (int64_t kx = 0; kx < kw; ++kx, dst += cg) {
          int64_t iy = ty[ky][y], ix = tx[kx][xo];
          if (iy < 0 || ix < 0)
            std::memset(dst, 0, cg * sizeof(float));
          else
            std::memcpy(dst, x + (iy * iw + ix) * c_total + c0, cg * sizeof(float));
        }
    }
}

void add_bias(float* y, const float* bias, const WindowGeometry& g, int64_t images) {
  if (!bias) return;
  int64_t p = g.out_spatial(), m = g.out_channels;
  if (g.channels_last) {
#pragma omp parallel for if (images * p * m > parallel_threshold(65536))
    for (int64_t i = 0; i < images * p; ++i)
      for (int64_t c = 0; c < m; ++c) y[i * m + c] += bias[c];
  } else {
#pragma omp parallel for collapse(2) if (images * p * m > parallel_threshold(65536))
    for (int64_t n = 0; n < images; ++n)
      for (int64_t c = 0; c < m; ++c) {
        float b = bias[c];
        float* row = y + (n * m + c) * p;
        for (int64_t i = 0; i < p; ++i) row[i] += b;
      }
  }
}

// Depthwise (one input and one output channel per group), channels first, 2-D.
void depthwise_cf2d(const float* x, const float* w, float* y, const WindowGeometry& g) {
  int64_t oh = g.out_size[0], ow = g.out_size[1], ih = g.in_size[0], iw = g.in_size[1];
  int64_t kh = g.kernel[0], kw = g.kernel[1];
  auto ty = input_index_tables(g, 0), tx = input_index_tables(g, 1);
#pragma omp parallel for collapse(2)
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t c = 0; c < g.in_channels; ++c) {
      const float* plane = x + (n * g.in_channels + c) * ih * iw;
      const float* wk = w + c * kh * kw;
      float* out = y + (n * g.in_channels + c) * oh * ow;
      std::memset(out, 0, oh * ow * sizeof(float));
      for (int64_t ky = 0; ky < kh; ++ky)
        for (int64_t kx = 0; kx < kw; ++kx) {
          float wv = wk[ky * kw + kx];
          for (int64_t yo = 0; yo < oh; ++yo) {
            int64_t iy = ty[ky][yo];
            if (iy < 0) continue;
            const float* src = plane + iy * iw;
            float* dst = out + yo * ow;
            for (int64_t xo = 0; xo < ow; ++xo)
              if (tx[kx][xo] >= 0) dst[xo] += wv * src[tx[kx][xo]];
          }
        }
    }
}

void conv_channels_first(const float* x, const float* w, float* y, const WindowGeometry& g) {
  int64_t cg = g.in_channels / g.group, mg = g.out_channels / g.group;
  int64_t kdim = cg * g.kernel_volume(), p = g.out_spatial(), in_sp = g.in_spatial();
  bool pointwise = g.is_pointwise();
  std::vector<float> col(pointwise ? 0 : kdim * p);
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t grp = 0; grp < g.group; ++grp) {
      const float* xin = x + (n * g.in_channels + grp * cg) * in_sp;
      const float* b = xin;
      if (!pointwise) {
        im2col_cf(xin, col.data(), cg, g);
        b = col.data();
      }
      gemm_f32(mg, p, kdim, 1.0f, {w + grp * mg * kdim, kdim, false}, {b, p, false}, 0.0f,
               y + (n * g.out_channels + grp * mg) * p, p);
    }
}

// Channels-last 2-D: weights re-ordered to [M, kh, kw, Cg] so col rows match.
void conv_channels_last_2d(const float* x, const float* w, float* y, const WindowGeometry& g) {
  int64_t cg = g.in_channels / g.group, mg = g.out_channels / g.group;
  int64_t kvol = g.kernel_volume(), kdim = cg * kvol, p = g.out_spatial();
  int64_t in_sp = g.in_spatial();
  if (g.is_pointwise()) {
    for (int64_t grp = 0; grp < g.group; ++grp)
      gemm_f32(g.batch * p, mg, cg, 1.0f, {x + grp * cg, g.in_channels, false},
               {w + grp * mg * cg, cg, true}, 0.0f, y + grp * mg, g.out_channels);
    return;
  }
  std::vector<float> wt(g.out_channels * kdim);
  for (int64_t m = 0; m < g.out_channels; ++m)
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t kk = 0; kk < kvol; ++kk)
        wt[(m * kvol + kk) * cg + c] = w[(m * cg + c) * kvol + kk];
  std::vector<float> col(p * kdim);
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t grp = 0; grp < g.group; ++grp) {
      im2col_cl2d(x + n * in_sp * g.in_channels, col.data(), grp * cg, cg, g);
      gemm_f32(p, mg, kdim, 1.0f, {col.data(), kdim, false},
               {wt.data() + grp * mg * kdim, kdim, true}, 0.0f,
               y + n * p * g.out_channels + grp * mg, g.out_channels);
    }
}

// Moves channels between position 1 and last: [N, C, S...] <-> [N, S..., C].
ir::HostTensor move_channels(const ir::HostTensor& t, bool to_last) {
  const ir::Shape& s = t.shape();
  int r = s.rank();
  std::vector<int64_t> perm(r);
  perm[0] = 0;
  for (int i = 1; i < r; ++i)
    perm[i] = to_last ? (i == r - 1 ? 1 : i + 1) : (i == 1 ? r - 1 : i - 1);
  std::vector<int64_t> dims(r), strides = ir::contiguous_strides(s), src(r);
  for (int i = 0; i < r; ++i) {
    dims[i] = s[static_cast<int>(perm[i])];
    src[i] = strides[perm[i]];
  }
  ir::HostTensor out(t.dtype(), ir::Shape(dims));
  strided_copy(out.raw(), t.raw(), dims, src, 0, ir::dtype_size(t.dtype()));
  return out;
}

ir::Shape channels_first_shape(const ir::Shape& s) {
  std::vector<int64_t> dims{s[0], s[s.rank() - 1]};
  for (int i = 1; i < s.rank() - 1; ++i) dims.push_back(s[i]);
  return ir::Shape(dims);
}

WindowGeometry as_channels_first(WindowGeometry g) {
  g.channels_last = false;
  return g;
}

}  // namespace

void conv_kernel(const KernelArgs& a) {
  WindowGeometry g = ir::window_geometry(a.graph, a.node);
  const float* w = f32(a.input(1));
  const float* bias = a.has_input(2) ? f32(a.input(2)) : nullptr;
  float* y = f32(a.output(0));
  bool depthwise = g.group == g.in_channels && g.group == g.out_channels && g.group > 1;
  if (g.channels_last && g.spatial_rank == 2) {
    conv_channels_last_2d(f32(a.input(0)), w, y, g);
  } else if (g.channels_last) {
    ir::HostTensor x = move_channels(a.input(0), false);
    ir::HostTensor tmp(ir::DType::f32, channels_first_shape(a.output(0).shape()));
    conv_channels_first(f32(x), w, f32(tmp), as_channels_first(g));
    ir::HostTensor back = move_channels(tmp, true);
    std::memcpy(y, back.raw(), back.nbytes());
  } else if (depthwise && g.spatial_rank == 2) {
    depthwise_cf2d(f32(a.input(0)), w, y, g);
  } else {
    conv_channels_first(f32(a.input(0)), w, y, g);
  }
  add_bias(y, bias, g, g.batch);
}

namespace {

// col2im_cf for two spatial dimensions: the same additions in the same order, with each input
// row's in-range columns found once instead of testing every element.
void col2im_cf_2d(const float* col, float* out, int64_t channels, const WindowGeometry& g) {
  const int64_t ih = g.in_size[0], iw = g.in_size[1], oh = g.out_size[0], ow = g.out_size[1];
  const int64_t kh = g.kernel[0], kw = g.kernel[1], sh = g.strides[0], sw = g.strides[1];
  const int64_t p_in = ih * iw, out_sp = oh * ow;
#pragma omp parallel for if (channels * kh * kw * p_in > parallel_threshold(65536))
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t ky = 0; ky < kh; ++ky)
      for (int64_t kx = 0; kx < kw; ++kx) {
        const float* row = col + ((c * kh + ky) * kw + kx) * p_in;
        const int64_t dy = ky * g.dilations[0] - g.pad_begin[0];
        const int64_t dx = kx * g.dilations[1] - g.pad_begin[1];
        // Input columns x with 0 <= x * sw + dx < ow.
        const int64_t x_lo = dx >= 0 ? 0 : (-dx + sw - 1) / sw;
        const int64_t x_hi = std::min(iw, ow - dx <= 0 ? 0 : (ow - dx - 1) / sw + 1);
        for (int64_t y = 0; y < ih; ++y) {
          const int64_t o = y * sh + dy;
          if (o < 0 || o >= oh) continue;
          float* dst = out + c * out_sp + o * ow + dx;
          const float* src = row + y * iw;
          for (int64_t x = x_lo; x < x_hi; ++x) dst[x * sw] += src[x];
        }
      }
}

// Scatter-adds col[Mg * kvol, P_in] into out[Mg, out spatial] (one image, one group).
void col2im_cf(const float* col, float* out, int64_t channels, const WindowGeometry& g) {
  if (g.spatial_rank == 2) {
    col2im_cf_2d(col, out, channels, g);
    return;
  }
  int sr = g.spatial_rank;
  int64_t kvol = g.kernel_volume(), p_in = g.in_spatial(), out_sp = g.out_spatial();
  std::vector<int64_t> out_strides(sr, 1);
  for (int d = sr - 2; d >= 0; --d) out_strides[d] = out_strides[d + 1] * g.out_size[d + 1];
#pragma omp parallel for if (channels * kvol * p_in > parallel_threshold(65536))
  for (int64_t c = 0; c < channels; ++c) {
    std::vector<int64_t> k(sr, 0);
    int64_t kk = 0;
    do {
      const float* row = col + (c * kvol + kk) * p_in;
      std::vector<int64_t> i(sr, 0);
      int64_t p = 0;
      do {
        int64_t off = 0;
        bool inside = true;
        for (int d = 0; d < sr && inside; ++d) {
          int64_t o = i[d] * g.strides[d] - g.pad_begin[d] + k[d] * g.dilations[d];
          inside = o >= 0 && o < g.out_size[d];
          off += o * out_strides[d];
        }
        if (inside) out[c * out_sp + off] += row[p];
        ++p;
      } while (next_index(i, g.in_size));
      ++kk;
    } while (next_index(k, g.kernel));
  }
}

void conv_transpose_cf(const float* x, const float* w, float* y, const WindowGeometry& g) {
  int64_t cg = g.in_channels / g.group, mg = g.out_channels / g.group, kvol = g.kernel_volume();
  int64_t p_in = g.in_spatial(), out_sp = g.out_spatial();
  std::vector<float> col(mg * kvol * p_in);
  std::memset(y, 0, g.batch * g.out_channels * out_sp * sizeof(float));
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t grp = 0; grp < g.group; ++grp) {
      // W[g] is [Cg, Mg * kvol]; col = W[g]^T x X[g].
      gemm_f32(mg * kvol, p_in, cg, 1.0f, {w + grp * cg * mg * kvol, mg * kvol, true},
               {x + (n * g.in_channels + grp * cg) * p_in, p_in, false}, 0.0f, col.data(), p_in);
      col2im_cf(col.data(), y + (n * g.out_channels + grp * mg) * out_sp, mg, g);
    }
}

}  // namespace

void conv_transpose_kernel(const KernelArgs& a) {
  WindowGeometry g = ir::window_geometry(a.graph, a.node);
  const float* w = f32(a.input(1));
  const float* bias = a.has_input(2) ? f32(a.input(2)) : nullptr;
  float* y = f32(a.output(0));
  if (g.channels_last) {
    ir::HostTensor x = move_channels(a.input(0), false);
    ir::HostTensor tmp(ir::DType::f32, channels_first_shape(a.output(0).shape()));
    conv_transpose_cf(f32(x), w, f32(tmp), as_channels_first(g));
    ir::HostTensor back = move_channels(tmp, true);
    std::memcpy(y, back.raw(), back.nbytes());
  } else {
    conv_transpose_cf(f32(a.input(0)), w, y, g);
  }
  add_bias(y, bias, g, g.batch);
}

}  // namespace mimic::backends::cpu
