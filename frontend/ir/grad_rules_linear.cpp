// Gradient rules of MatMul, Gemm, Conv and ConvTranspose, written as the same ops: MatMul with
// transposed operands; Gemm with flipped trans flags; Conv's data gradient as a ConvTranspose with
// the same weights, strides, pads, dilations and groups; Conv's weight gradient as a Conv over the
// input and the output gradient with batch and channels swapped (the convolution's stride becomes
// the dilation and vice versa), per group; ConvTranspose as the adjoint of that Conv.
#include <fmt/format.h>

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
  if (c.needs(1))
    c.set(1, b.unbroadcast(b.op(OpType::MatMul, {matrix_t(b, c.x(0)), g}), c.x_shape(1)));
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

std::vector<int64_t> iota(int n, int start = 0) {
  std::vector<int64_t> v(n);
  for (int i = 0; i < n; ++i) v[i] = start + i;
  return v;
}

ValueId conv_data_grad(GradContext& c, const WindowGeometry& w) {
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
  return c.b.op(OpType::ConvTranspose, {c.dy(), c.x(1)}, at);
}

// dW[m, c, k] = sum_{n, o} dy[n, m, o] x[n, g*C/G + c, o*s + k*d - p]: a grouped Conv whose
// "batch" is the C/G input channels of a group, "channels" are (group, N) and "weights" are dy.
ValueId conv_weight_grad(GraphBuilder& b, ValueId x, ValueId dy, const WindowGeometry& w) {
  int r = w.spatial_rank;
  int64_t n = w.batch, cg = w.in_channels / w.group, G = w.group;
  Shape xs = b.shape(x);
  std::vector<int64_t> split_dims{n, G, cg};
  for (int i = 0; i < r; ++i) split_dims.push_back(xs[2 + i]);
  ValueId x5 = b.reshape(x, Shape(split_dims));
  std::vector<int64_t> perm{2, 1, 0};
  for (int i = 0; i < r; ++i) perm.push_back(3 + i);
  std::vector<int64_t> merged{cg, G * n};
  for (int i = 0; i < r; ++i) merged.push_back(xs[2 + i]);
  ValueId xt = b.reshape(b.transpose(x5, perm), Shape(merged));
  std::vector<int64_t> perm01{1, 0};
  for (int i = 0; i < r; ++i) perm01.push_back(2 + i);
  ValueId gt = b.transpose(dy, perm01);  // [M, N, out...]
  std::vector<int64_t> pads = w.pad_begin;
  pads.insert(pads.end(), w.pad_end.begin(), w.pad_end.end());
  Attributes at{{"strides", w.dilations}, {"dilations", w.strides}, {"pads", pads}, {"group", G}};
  ValueId dw = b.op(OpType::Conv, {xt, gt}, at);  // [C/G, M, k'...] with k' >= k
  bool larger = false;  // taps past the kernel when the forward stride left input rows unread
  for (int i = 0; i < r; ++i) larger = larger || b.shape(dw)[2 + i] != w.kernel[i];
  if (larger) dw = b.slice(dw, std::vector<int64_t>(r, 0), w.kernel, iota(r, 2));
  return b.transpose(dw, perm01);
}

void set_bias_grad(GradContext& c, const WindowGeometry& w) {
  if (!c.needs(2)) return;
  std::vector<int64_t> axes{0};
  for (int i = 0; i < w.spatial_rank; ++i) axes.push_back(2 + i);
  c.set(2, c.b.reduce_sum(c.dy(), axes, false));
}

void conv_rule(GradContext& c) {
  if (is_channels_last(c.node())) return channels_first_grad(c, conv_rule);
  WindowGeometry w = window_geometry(c.b.graph(), c.node());
  if (c.needs(0)) c.set(0, conv_data_grad(c, w));
  if (c.needs(1)) c.set(1, conv_weight_grad(c.b, c.x(0), c.dy(), w));
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
    c.set(1, conv_weight_grad(c.b, c.dy(), c.x(0), adj));
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
