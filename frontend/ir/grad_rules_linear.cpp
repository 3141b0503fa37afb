// Gradient rules of MatMul, Gemm, Conv and ConvTranspose, written as the same ops: MatMul with
// transposed operands; Gemm with flipped trans flags; Conv's data gradient as a ConvTranspose with
// the same weights, strides, pads, dilations and groups; Conv's weight gradient as a convolution of
// the input by the output gradient; ConvTranspose as the adjoint of that Conv.
#include <fmt/format.h>

#include <algorithm>

#include "frontend/ir/autodiff.h"
#include "frontend/ir/nn_geometry.h"

namespace mimic::ir {
namespace {

std::vector<int64_t> swap_last_two(int rank) {
  std::vector<int64_t> perm(rank);
  for (int i = 0; i < rank; ++i) perm[i] = i;
  std::swap(perm[rank - 1], perm[rank - 2]);
  return perm;
}

ValueId matrix_t(GraphBuilder& b, ValueId v) {
  return b.transpose(v, swap_last_two(b.shape(v).rank()));
}

void matmul_rule(GradContext& c) {
  auto& b = c.b;
  if (c.x_shape(0).rank() < 2 || c.x_shape(1).rank() < 2)
    c.unsupported("MatMul with a 1-D operand has no gradient rule (reshape it to a matrix)");
  ValueId g = c.dy();
  if (c.needs(0))
    c.set(0, b.unbroadcast(b.op(OpType::MatMul, {g, matrix_t(b, c.x(1))}), c.x_shape(0)));
  if (!c.needs(1)) return;
  const Shape &a = c.x_shape(0), &w = c.x_shape(1);
  if (w.rank() == 2 && a.rank() > 2) {
    // A weight [K, N] shared by every matrix of a batched x: one product over all rows,
    // x[rows, K]^T dy[rows, N], as PyTorch computes it, instead of a product per matrix (a
    // [batch, K, N] tensor) summed over the batch afterwards.
    int64_t rows = a.numel() / a[a.rank() - 1];
    ValueId x2 = b.reshape(c.x(0), Shape({rows, a[a.rank() - 1]}));
    ValueId g2 = b.reshape(g, Shape({rows, w[1]}));
    c.set(1, b.op(OpType::MatMul, {matrix_t(b, x2), g2}));
    return;
  }
  c.set(1, b.unbroadcast(b.op(OpType::MatMul, {matrix_t(b, c.x(0)), g}), w));
}

ValueId gemm(GraphBuilder& b, ValueId a, ValueId m, double alpha, bool ta, bool tb) {
  return b.op(OpType::Gemm, {a, m},
              {{"alpha", alpha}, {"transA", int64_t{ta}}, {"transB", int64_t{tb}}});
}

// Y = alpha * A' B' + beta * C with A' = transA ? A^T : A, B' likewise.
void gemm_rule(GradContext& c) {
  auto& b = c.b;
  double alpha = c.attrs().get_float("alpha", 1.0), beta = c.attrs().get_float("beta", 1.0);
  bool ta = c.attrs().get_int("transA", 0) != 0, tb = c.attrs().get_int("transB", 0) != 0;
  ValueId g = c.dy(), A = c.x(0), B = c.x(1);
  if (c.needs(0)) c.set(0, ta ? gemm(b, B, g, alpha, tb, true) : gemm(b, g, B, alpha, false, !tb));
  if (c.needs(1)) c.set(1, tb ? gemm(b, g, A, alpha, true, ta) : gemm(b, A, g, alpha, !ta, false));
  if (c.needs(2)) c.set(2, b.unbroadcast(beta == 1.0 ? g : b.scale(g, beta), c.x_shape(2)));
}

// dx of a Conv: the ConvTranspose of dy by the same weights, in the Conv's layout.
ValueId conv_data_grad(GraphBuilder& b, ValueId dy, ValueId weights, const WindowGeometry& w) {
  std::vector<int64_t> pads = w.pad_begin, out_pad(w.spatial_rank);
  pads.insert(pads.end(), w.pad_end.begin(), w.pad_end.end());
  for (int i = 0; i < w.spatial_rank; ++i) {
    int64_t produced = w.strides[i] * (w.out_size[i] - 1) + (w.kernel[i] - 1) * w.dilations[i] + 1 -
                       w.pad_begin[i] - w.pad_end[i];
    out_pad[i] = w.in_size[i] - produced;  // rows the forward conv never reached
  }
  Attributes at{{"strides", w.strides},
                {"dilations", w.dilations},
                {"pads", pads},
                {"group", w.group},
                {"output_padding", out_pad}};
  if (w.channels_last) at.set("layout", std::string("NHWC"));
  return b.op(OpType::ConvTranspose, {dy, weights}, at);
}

// `perm` of x split as [.., G, cg, ..] with G = 1, as a permutation of x itself: the group axis
// (at `group_axis` of the split shape) removed and the later axes renumbered.
std::vector<int64_t> drop_group_axis(const std::vector<int64_t>& perm, int64_t group_axis) {
  std::vector<int64_t> out;
  for (int64_t p : perm)
    if (p != group_axis) out.push_back(p > group_axis ? p - 1 : p);
  return out;
}

// dW[g*mg + m, c, k] = sum over (n, o) of dy[n, g*mg + m, o] * x[n, g*cg + c, o*s + k*d - p]: a
// convolution of x, its batch and channels swapped (channels-last [cg, in..., G*N]), by dy as the
// kernel ([G*mg, N, out...]), with stride d, dilation s and x's pads, G groups; its channels-last
// [cg, k..., G*mg] result transposed to W's layout. This is how XLA and cuDNN compute a weight
// gradient: every backend runs it as a convolution (an implicit GEMM with K = N * out positions)
// and no window tensor of x is materialized. x and dy are channels-last when `channels_last`.
ValueId conv_weight_grad(GraphBuilder& b, ValueId x, ValueId dy, const WindowGeometry& w,
                         bool channels_last) {
  const int r = w.spatial_rank;
  const int64_t n = w.batch, G = w.group, cg = w.in_channels / G, mg = w.out_channels / G;
  std::vector<int64_t> split{n}, x_perm{channels_last ? r + 2 : 2}, merged{cg}, k_perm;
  std::vector<int64_t> pads = w.pad_begin, pad_end(r), axes, ends;
  bool crop = false;
  for (int i = 0; i < r; ++i) {
    // Input rows past the forward's last window: dropped from the end padding, then from x.
    const int64_t span =
        w.in_size[i] + w.pad_begin[i] + w.pad_end[i] - 1 - w.strides[i] * (w.out_size[i] - 1);
    const int64_t unread = span - w.dilations[i] * (w.kernel[i] - 1);
    pad_end[i] = std::max<int64_t>(0, w.pad_end[i] - unread);
    const int64_t in = w.in_size[i] - std::max<int64_t>(0, unread - w.pad_end[i]);
    crop = crop || in != w.in_size[i];
    axes.push_back(channels_last ? 1 + i : 2 + i);
    ends.push_back(in);
    split.push_back(in);
    merged.push_back(in);
    x_perm.push_back(channels_last ? 1 + i : 3 + i);
  }
  if (crop)
    x = b.op(OpType::Slice, {x, b.ints(std::vector<int64_t>(r, 0)), b.ints(ends), b.ints(axes)});
  if (channels_last) {
    split.insert(split.end(), {G, cg});
    x_perm.insert(x_perm.end(), {r + 1, 0});
    k_perm = {r + 1, 0};
    for (int i = 0; i < r; ++i) k_perm.push_back(1 + i);
  } else {
    split.insert(split.begin() + 1, {G, cg});
    x_perm.insert(x_perm.end(), {1, 0});
    k_perm = {1, 0};
    for (int i = 0; i < r; ++i) k_perm.push_back(2 + i);
  }
  merged.push_back(G * n);
  pads.insert(pads.end(), pad_end.begin(), pad_end.end());
  // One group: a single transpose; more: through [cg, in..., G, N] (G and N adjacent, merged).
  ValueId x2 = G == 1 ? b.transpose(x, drop_group_axis(x_perm, channels_last ? r + 1 : 1))
                      : b.reshape(b.transpose(b.reshape(x, Shape(split)), x_perm), Shape(merged));
  Attributes at{{"strides", w.dilations},
                {"dilations", w.strides},
                {"pads", pads},
                {"group", G},
                {"layout", std::string("NHWC")}};
  ValueId y2 = b.op(OpType::Conv, {x2, b.transpose(dy, k_perm)}, at);
  // [cg, k..., G*mg] is [cg * K, G*mg] row-major, and W's layout is its transpose: one 2-D
  // transpose, with no small kernel dimensions in the minor position of a tensor.
  std::vector<int64_t> w_shape{G * mg, cg};
  w_shape.insert(w_shape.end(), w.kernel.begin(), w.kernel.end());
  ValueId flat = b.reshape(y2, Shape({cg * w.kernel_volume(), G * mg}));
  return b.reshape(b.transpose(flat, {1, 0}), Shape(w_shape));
}

void set_bias_grad(GradContext& c, const WindowGeometry& w) {
  if (!c.needs(2)) return;
  std::vector<int64_t> axes{0};
  for (int i = 0; i < w.spatial_rank; ++i) axes.push_back(w.channels_last ? 1 + i : 2 + i);
  c.set(2, c.b.reduce_sum(c.dy(), axes, false));
}

// Every gradient of a Conv reads x and dy in the Conv's own layout.
void conv_rule(GradContext& c) {
  GraphBuilder& b = c.b;
  const WindowGeometry w = window_geometry(b.graph(), c.node());
  if (c.needs(0)) c.set(0, conv_data_grad(b, c.dy(), c.x(1), w));
  if (c.needs(1)) c.set(1, conv_weight_grad(b, c.x(0), c.dy(), w, w.channels_last));
  set_bias_grad(c, w);
}

// ConvTranspose is the adjoint of the Conv C(dy) with the same weights, strides, pads, dilations
// and groups: dx = C(dy), and dW is C's weight gradient with dy as C's input and x as its output
// gradient.
void conv_transpose_rule(GradContext& c) {
  if (is_channels_last(c.node())) return channels_first_grad(c, conv_transpose_rule);
  WindowGeometry w = window_geometry(c.b.graph(), c.node());
  std::vector<int64_t> pads = w.pad_begin;
  pads.insert(pads.end(), w.pad_end.begin(), w.pad_end.end());
  if (c.needs(0)) {
    Attributes at{
        {"strides", w.strides}, {"dilations", w.dilations}, {"pads", pads}, {"group", w.group}};
    c.set(0, c.b.op(OpType::Conv, {c.dy(), c.x(1)}, at));
  }
  if (c.needs(1)) {
    WindowGeometry adj = w;  // the geometry of C: from the output side back to the input side
    std::swap(adj.in_size, adj.out_size);
    std::swap(adj.in_channels, adj.out_channels);
    c.set(1, conv_weight_grad(c.b, c.dy(), c.x(0), adj, false));
  }
  set_bias_grad(c, w);
}

}  // namespace

GradRule linear_grad_rule(OpType op) {
  switch (op) {
    case OpType::MatMul:
      return matmul_rule;
    case OpType::Gemm:
      return gemm_rule;
    case OpType::Conv:
      return conv_rule;
    case OpType::ConvTranspose:
      return conv_transpose_rule;
    default:
      return nullptr;
  }
}

}  // namespace mimic::ir
