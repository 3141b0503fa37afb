// Numerics of matmul instructions: one f32 GEMM (oneDNN's sgemm) per bf16 pass over the
// instruction's whole K range (rows [r0, r1) x columns [c0, c1) of batch `batch`), then the fused
// epilogue.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/activations.h"
#include "base/gemm.h"
#include "base/numeric_formats.h"
#include "models/tpu/numerics.h"

namespace mimic::models::tpu {
namespace {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Map = Eigen::Map<RowMat, Eigen::Unaligned, Eigen::OuterStride<>>;

// A fused epilogue activation (the formulas are base/activations.h, as for the vector unit).
float activate(VectorFunc f, float x, float p0, float p1) {
  switch (f) {
    case VectorFunc::identity:
      return x;
    case VectorFunc::relu:
      return activation::relu(x);
    case VectorFunc::clip:
      return std::min(std::max(x, p0), p1);
    case VectorFunc::leaky_relu:
      return activation::leaky_relu(x, p0);
    case VectorFunc::sigmoid:
      return activation::sigmoid(x);
    case VectorFunc::tanh:
      return std::tanh(x);
    case VectorFunc::gelu:
      return activation::gelu(x);
    case VectorFunc::gelu_tanh:
      return activation::gelu_tanh(x);
    case VectorFunc::hard_swish:
      return activation::hard_swish(x);
    case VectorFunc::hard_sigmoid:
      return activation::hard_sigmoid(x, p0, p1);
    case VectorFunc::elu:
      return activation::elu(x, p0);
    default:
      return x;
  }
}

// im2col rows [r0, r1) of group `g` from a channels-last input x[N, H, W, C]; K = kh*kw*Cg,
// ordered (kh, kw, c), matching the compiler's weight layout.
void im2col(const float* x, float* col, const Window& w, int64_t g, int64_t r0, int64_t r1) {
  int64_t cg = w.c / w.groups, k = w.kh * w.kw * cg, ohw = w.oh * w.ow;
#pragma omp parallel for if ((r1 - r0) * k > 65536) schedule(static)
  for (int64_t row = r0; row < r1; ++row) {
    int64_t img = row / ohw, p = row % ohw, oh = p / w.ow, ow = p % w.ow;
    float* dst = col + (row - r0) * k;
    for (int64_t i = 0; i < w.kh; ++i) {
      int64_t ih = oh * w.sh - w.ph + i * w.dh;
      for (int64_t j = 0; j < w.kw; ++j, dst += cg) {
        int64_t iw = ow * w.sw - w.pw + j * w.dw;
        if (ih < 0 || ih >= w.h || iw < 0 || iw >= w.w)
          std::memset(dst, 0, cg * sizeof(float));
        else
          std::memcpy(dst, x + ((img * w.h + ih) * w.w + iw) * w.c + g * cg, cg * sizeof(float));
      }
    }
  }
}

// The same block transposed, [K x (r1 - r0)], from a channels-first input x[N, C, H, W] (NCHW
// convolutions: no relayout, and Y^T = W^T x col is a plain GEMM).
void im2col_columns(const float* x, float* col, const Window& w, int64_t g, int64_t r0,
                    int64_t r1) {
  const int64_t cg = w.c / w.groups, k_total = w.kh * w.kw * cg, ohw = w.oh * w.ow, rows = r1 - r0;
#pragma omp parallel for if (rows * k_total > 65536) schedule(static)
  for (int64_t k = 0; k < k_total; ++k) {
    const int64_t c = k % cg, i = (k / cg) / w.kw, j = (k / cg) % w.kw;
    float* dst = col + k * rows;
    for (int64_t row = r0; row < r1;) {
      const int64_t img = row / ohw, p = row % ohw, oh = p / w.ow, ow0 = p % w.ow;
      const int64_t n = std::min(r1 - row, w.ow - ow0), ih = oh * w.sh - w.ph + i * w.dh;
      float* out = dst + (row - r0);
      if (ih < 0 || ih >= w.h) {
        std::memset(out, 0, static_cast<size_t>(n) * sizeof(float));
      } else {
        const float* src = x + ((img * w.c + g * cg + c) * w.h + ih) * w.w;
        for (int64_t t = 0; t < n; ++t) {
          int64_t iw = (ow0 + t) * w.sw - w.pw + j * w.dw;
          out[t] = iw < 0 || iw >= w.w ? 0.0f : src[iw];
        }
      }
      row += n;
    }
  }
}

bool pointwise(const Window& w) {
  return w.kh == 1 && w.kw == 1 && w.sh == 1 && w.sw == 1 && w.ph == 0 && w.pw == 0;
}

}  // namespace

std::vector<Pass> passes_for(int64_t passes) {
  if (passes >= 6) return {{1, 1}, {2, 0}, {0, 2}, {1, 0}, {0, 1}, {0, 0}};
  if (passes >= 3) return {{1, 0}, {0, 1}, {0, 0}};
  return {{0, 0}};
}

// dst[i] = store(act(src[i] * alpha + bias + residual[i])) over n contiguous elements; `bias` is
// per element when `bias_vec` is given, else the scalar. Simple loops the compiler vectorizes.
void gemm_epilogue(const float* src, int64_t n, const float* bias_vec, float bias,
                   const float* residual, float* dst, const Epilogue& e) {
  const float alpha = e.alpha;
  if (bias_vec)
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i] * alpha + bias_vec[i];
  else
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i] * alpha + bias;
  if (residual)
    for (int64_t i = 0; i < n; ++i) dst[i] += residual[i];
  switch (e.activation) {
    case VectorFunc::identity:
      break;
    case VectorFunc::relu:
      for (int64_t i = 0; i < n; ++i) dst[i] = dst[i] > 0 ? dst[i] : 0.0f;
      break;
    case VectorFunc::clip:
      for (int64_t i = 0; i < n; ++i) dst[i] = std::min(std::max(dst[i], e.p0), e.p1);
      break;
    default:
      for (int64_t i = 0; i < n; ++i) dst[i] = activate(e.activation, dst[i], e.p0, e.p1);
  }
  if (e.store == Rounding::bf16) numeric::round_to_bf16(dst, static_cast<size_t>(n));
}

const float* Numerics::weight(int32_t t, int part) {
  int64_t key = static_cast<int64_t>(t) * 8 + part;
  auto it = weights_.find(key);
  if (it != weights_.end()) return it->second.data.get();
  int32_t b = base(t);
  const TensorInfo& info = program_.tensors[b];
  int64_t n = info.numel();
  const float* src = data(b);
  Buffer out;
  out.data.reset(new float[std::max<int64_t>(n, 1)]);
  out.capacity = n;
  float* dst = out.data.get();
  if (program_.numerics == MatrixNumerics::int8) {
    // [batch][K][N]: one scale per (batch, column).
    int64_t cols = info.dims.back(),
            k = info.dims.size() >= 2 ? info.dims[info.dims.size() - 2] : 1;
    int64_t mats = n / std::max<int64_t>(cols * k, 1);
    std::vector<float> scales(mats * cols);
    for (int64_t m = 0; m < mats; ++m)
      for (int64_t c = 0; c < cols; ++c) {
        float mx = 0;
        for (int64_t r = 0; r < k; ++r) mx = std::max(mx, std::fabs(src[(m * k + r) * cols + c]));
        float s = numeric::int8_scale_for(mx);
        scales[m * cols + c] = s;
        for (int64_t r = 0; r < k; ++r) {
          int64_t i = (m * k + r) * cols + c;
          dst[i] = std::clamp(std::nearbyint(src[i] / s), -127.0f, 127.0f);
        }
      }
    weight_scales_[t] = std::move(scales);
  } else {
    for (int64_t i = 0; i < n; ++i) {
      numeric::Bf16Split s = numeric::split_bf16(src[i]);
      dst[i] = part == 0 ? s.hi : part == 1 ? s.mid : s.lo;
    }
  }
  auto& slot = weights_[key];
  slot = std::move(out);
  return slot.data.get();
}

// One instruction's block of a GEMM: rows [r0, r1) by columns [c0, c1) of batch b, computed in
// Numerics::block_ (transposed for NCHW convolution outputs).
struct GemmBlock {
  GemmBlock(Numerics& n, const Instruction& in, const GemmDesc& g)
      : n(n),
        in(in),
        g(g),
        b(in.batch),
        r0(in.r0),
        rows(in.r1 - in.r0),
        c0(in.c0),
        cols(in.c1 - in.c0),
        K(g.k),
        conv(g.a_view == GemmDesc::AView::conv),
        w_constant(n.program_.tensors[n.base(g.w)].constant),
        out_t(conv && !g.conv.channels_last),
        planar(out_t && pointwise(g.conv)),
        columns(out_t && !planar),
        acc(block_data(n, rows * cols), rows, cols, Eigen::OuterStride<>(cols)),
        acc_t(n.block_.data(), cols, rows, Eigen::OuterStride<>(rows)) {}

  static float* block_data(Numerics& n, int64_t elements) {
    n.block_.resize(static_cast<size_t>(elements));
    return n.block_.data();
  }

  // The A operand's block for `part` and its leading dimension.
  const float* a_block(int part, int64_t& ld) {
    if (g.on_vpu) {
      ld = g.a_transposed ? g.m : K;
      return n.data(g.a) + b * g.a_batch_stride;
    }
    if (!conv) {
      ld = g.a_transposed ? g.m : K;
      return n.operand(g.a, part, false, nullptr) + b * g.a_batch_stride;
    }
    const Window& w = g.conv;
    if (planar) {
      ld = w.h * w.w;
      return n.operand(g.a, part, false, nullptr);
    }
    int64_t key[5] = {in.kernel, b, r0, in.r1, part};
    bool fresh = false;
    if (columns) {
      const float* block = n.im2col_block(key, static_cast<size_t>(rows * K), &fresh);
      if (fresh)
        im2col_columns(n.operand(g.a, part, false, nullptr), const_cast<float*>(block), w, b, r0,
                       in.r1);
      ld = rows;
      return block;
    }
    const float* x = n.operand(g.a, part, true, &w);
    if (pointwise(w)) {
      ld = w.c;
      return x + r0 * w.c + b * (w.c / w.groups);
    }
    const float* block = n.im2col_block(key, static_cast<size_t>(rows * K), &fresh);
    if (fresh) im2col(x, const_cast<float*>(block), w, b, r0, in.r1);
    ld = K;
    return block;
  }

  const float* w_block(int part, int64_t& ld) {
    ld = g.w_transposed ? K : g.n;
    const float* base_ptr = g.on_vpu     ? n.data(g.w)
                            : w_constant ? n.weight(g.w, part)
                            : g.w_view != GemmDesc::WView::matrix
                                ? n.filter_operand(g, in.kernel, part)
                                : n.operand(g.w, part, false, nullptr);
    return base_ptr + b * g.w_batch_stride;
  }

  // acc (+)= op(A) x op(W), or acc_t (+)= op(W)^T x op(A)^T.
  void product(GemmOperand a, GemmOperand w, bool first) {
    const float beta = first ? 0.0f : 1.0f;
    if (out_t)
      gemm_f32(cols, rows, K, 1.0f, {w.data, w.ld, !w.transposed}, {a.data, a.ld, !a.transposed},
               beta, acc_t.data(), rows);
    else
      gemm_f32(rows, cols, K, 1.0f, a, w, beta, acc.data(), cols);
  }

  // NCHW pointwise convolutions read the planes in place: per image, Y^T[cols x p] = W^T x X.
  void gemm_planar(const float* a, int64_t plane, const float* w, int64_t ldw, bool first) {
    const int64_t channels = g.conv.c, cg = channels / g.conv.groups;
    for (int64_t row = r0; row < in.r1;) {
      const int64_t img = row / plane, p = row % plane, len = std::min(in.r1 - row, plane - p);
      gemm_f32(cols, len, cg, 1.0f, {w + c0, ldw, true},
               {a + (img * channels + b * cg) * plane + p, plane, false}, first ? 0.0f : 1.0f,
               acc_t.data() + (row - r0), rows);
      row += len;
    }
  }

  void gemm(const float* a, int64_t lda, const float* w, int64_t ldw, bool first) {
    if (planar) return gemm_planar(a, lda, w, ldw, first);
    if (columns) {  // other NCHW convolutions: the im2col block is built transposed ([K x rows])
      gemm_f32(cols, rows, K, 1.0f, {w + c0, ldw, true}, {a, lda, false}, first ? 0.0f : 1.0f,
               acc_t.data(), rows);
      return;
    }
    const bool at = g.a_transposed && !conv;
    // Transposed operands address the stored matrices with swapped extents.
    product({a + (at     ? r0
                  : conv ? 0
                         : r0 * lda),
             lda, at},
            {w + (g.w_transposed ? c0 * ldw : c0), ldw, g.w_transposed}, first);
  }

  // A weight gradient (GemmDesc::AView::filter), one pass: acc[(c, kh, kw), m] (+)= the sum over
  // the forward's output positions (n, oh, ow) of x[n, oh*sh + kh*dh - ph, ow*sw + kw*dw - pw, c]
  // x dy[n, oh, ow, m], both channels last; taps over padding add nothing. Per tap, one product
  // of [positions x channels]^T by [positions x columns] per output row.
  void filter(int part_a, int part_w, bool first) {
    const Window& w = g.conv;
    const int64_t taps = w.kh * w.kw, c_lo = r0 / taps, cc = (in.r1 - 1) / taps + 1 - c_lo;
    const float* x = n.operand(g.a, part_a, false, nullptr);
    const float* dy = n.operand(g.w, part_w, false, nullptr);
    if (first) acc.setZero();
    RowMat tap(cc, cols);
    for (int64_t kh = 0; kh < w.kh; ++kh)
      for (int64_t kw = 0; kw < w.kw; ++kw) {
        tap.setZero();
        const int64_t off = kw * w.dw - w.pw;  // input column of output column 0
        const int64_t ow0 = off >= 0 ? 0 : (-off + w.sw - 1) / w.sw;
        const int64_t ow1 = w.w - 1 - off < 0 ? -1 : std::min(w.ow - 1, (w.w - 1 - off) / w.sw);
        if (ow1 < ow0) continue;
        for (int64_t img = 0; img < w.n; ++img)
          for (int64_t oh = 0; oh < w.oh; ++oh) {
            const int64_t ih = oh * w.sh + kh * w.dh - w.ph;
            if (ih < 0 || ih >= w.h) continue;
            gemm_f32(
                cc, cols, ow1 - ow0 + 1, 1.0f,
                {x + ((img * w.h + ih) * w.w + ow0 * w.sw + off) * w.c + c_lo, w.sw * w.c, true},
                {dy + ((img * w.oh + oh) * w.ow + ow0) * w.m + c0, w.m, false}, 1.0f, tap.data(),
                cols);
          }
        for (int64_t ch = 0; ch < cc; ++ch) {
          const int64_t row = (c_lo + ch) * taps + kh * w.kw + kw;
          if (row >= r0 && row < in.r1) acc.row(row - r0) += tap.row(ch);
        }
      }
  }

  // int8 chips: integer products (in double when a partial sum could exceed 2^24), then the
  // activation and weight scales.
  void run_int8() {
    int64_t lda, ldw;
    const float* a = a_block(0, lda);
    const float* w = w_block(0, ldw);
    if (static_cast<double>(K) * 127.0 * 127.0 < 16777216.0)
      gemm(a, lda, w, ldw, true);  // exact: every partial sum is an integer below 2^24
    else
      gemm_double(a, lda, w, ldw);
    float sa = n.tensor_scale(g.a);
    const std::vector<float>* sw = w_constant ? &n.weight_scales_.at(g.w) : nullptr;
    float sw_tensor = w_constant ? 1.0f : n.tensor_scale(g.w);
    for (int64_t j = 0; j < cols; ++j) {
      float s = sa * (sw ? (*sw)[b * g.n + c0 + j] : sw_tensor);
      if (out_t)
        acc_t.row(j) *= s;
      else
        acc.col(j) *= s;
    }
  }

  void gemm_double(const float* a, int64_t lda, const float* w, int64_t ldw) {
    using RowMatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    RowMatD ad(rows, K), wd(K, cols);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < K; ++j) {
        const int64_t row = r0 + i;
        if (planar)
          ad(i, j) = a[((row / lda) * g.conv.c + b * K + j) * lda + row % lda];
        else if (columns)
          ad(i, j) = a[j * lda + i];
        else
          ad(i, j) = g.a_transposed && !conv ? a[j * lda + r0 + i]
                                             : a[(conv ? 0 : r0 * lda) + i * lda + j];
      }
    for (int64_t i = 0; i < K; ++i)
      for (int64_t j = 0; j < cols; ++j)
        wd(i, j) = g.w_transposed ? w[(c0 + j) * ldw + i] : w[i * ldw + c0 + j];
    if (out_t)
      acc_t = (ad * wd).transpose().cast<float>();
    else
      acc = (ad * wd).cast<float>();
  }

  Numerics& n;
  const Instruction& in;
  const GemmDesc& g;
  const int64_t b, r0, rows, c0, cols, K;
  const bool conv, w_constant;
  // NCHW outputs are computed transposed ([cols x rows]: one row per output channel), so that
  // the epilogue writes contiguous runs of each channel plane.
  const bool out_t, planar, columns;
  Map acc, acc_t;
};

void Numerics::run_gemm(const Instruction& in, const Kernel& kernel) {
  const GemmDesc& g = kernel.gemm;
  if (in.r1 <= in.r0 || in.c1 <= in.c0) return;
  GemmBlock block(*this, in, g);
  if (g.a_view == GemmDesc::AView::filter) {
    bool first = true;
    for (const Pass& p : passes_for(program_.passes)) {
      block.filter(p.a, p.w, first);
      first = false;
    }
  } else if (program_.numerics == MatrixNumerics::int8 && !g.on_vpu) {
    block.run_int8();
  } else {
    bool first = true;
    for (const Pass& p : g.on_vpu ? std::vector<Pass>{{0, 0}} : passes_for(program_.passes)) {
      int64_t lda, ldw;
      const float* a = block.a_block(p.a, lda);
      const float* w = block.w_block(p.w, ldw);
      block.gemm(a, lda, w, ldw, first);
      first = false;
    }
  }
  store_block(in, g, block.out_t);
}

// Epilogue (alpha, bias, residual, activation, rounding) of the block in block_, stored into Y.
void Numerics::store_block(const Instruction& in, const GemmDesc& g, bool transposed) {
  const Epilogue& e = g.epi;
  const bool conv = g.a_view == GemmDesc::AView::conv;
  const int64_t b = in.batch, r0 = in.r0, rows = in.r1 - in.r0, c0 = in.c0, cols = in.c1 - in.c0;
  const float* bias = e.bias >= 0 ? data(e.bias) + (conv ? b * g.n : 0) + c0 : nullptr;
  const float* residual = e.residual >= 0 ? data(e.residual) : nullptr;
  float* y = data(g.y);
  if (transposed) {  // NCHW: channel j of rows [r0, r1) = runs of each image's plane
    const int64_t ohw = g.conv.oh * g.conv.ow, channels = g.conv.m;
#pragma omp parallel for if (rows * cols > 65536) schedule(static)
    for (int64_t j = 0; j < cols; ++j) {
      const int64_t ch = b * g.n + c0 + j;
      for (int64_t row = r0; row < in.r1;) {
        const int64_t img = row / ohw, p = row % ohw, n = std::min(in.r1 - row, ohw - p);
        const int64_t at = (img * channels + ch) * ohw + p;
        gemm_epilogue(block_.data() + j * rows + (row - r0), n, nullptr, bias ? bias[j] : 0.0f,
                      residual ? residual + at : nullptr, y + at, e);
        row += n;
      }
    }
    return;
  }
#pragma omp parallel for if (rows * cols > 65536) schedule(static)
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t row = r0 + i;
    const int64_t at = conv ? row * g.conv.m + b * g.n + c0 : b * g.y_batch_stride + row * g.n + c0;
    gemm_epilogue(block_.data() + i * cols, cols, bias, 0.0f, residual ? residual + at : nullptr,
                  y + at, e);
  }
}

}  // namespace mimic::models::tpu
