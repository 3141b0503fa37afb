// Gradient rules of MatMul, Gemm, Conv and ConvTranspose, written as the same ops: MatMul with
// transposed operands; Gemm with flipped trans flags; Conv's data gradient as a ConvTranspose with
// the same weights, strides, pads, dilations and groups; Conv's weight gradient as the input's
// window tensor (im2col by strided Slices) times the output gradient, one MatMul per group;
// ConvTranspose as the adjoint of that Conv.
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

bool next_offset(std::vector<int64_t>& k, const std::vector<int64_t>& dims) {
  for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
    if (++k[d] < dims[d]) return true;
    k[d] = 0;
  }
  return false;
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

// The windows of x for every kernel offset, as [C, K, N, out...]: x moved to [C, N, in...], padded,
// then one strided Slice per offset (K = kernel volume), so that no large transpose follows.
ValueId channel_major_windows(GraphBuilder& b, ValueId x, const Shape& out,
                              const WindowGeometry& w) {
  int r = w.spatial_rank;
  Shape xs = b.shape(x);
  std::vector<int64_t> perm{1, 0}, pads(2 * (r + 2), 0), axes, steps;
  for (int i = 0; i < r; ++i) {
    perm.push_back(2 + i);
    int64_t extent = w.strides[i] * (out[2 + i] - 1) + (w.kernel[i] - 1) * w.dilations[i] + 1;
    pads[2 + i] = w.pad_begin[i];
    pads[r + 4 + i] = std::max<int64_t>(0, extent - xs[2 + i] - w.pad_begin[i]);
    axes.push_back(2 + i);
    steps.push_back(w.strides[i]);
  }
  ValueId xp = b.transpose(x, perm);
  if (std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; }))
    xp = b.op(OpType::Pad, {xp, b.ints(pads)});
  const Shape padded = b.shape(xp);
  std::vector<ValueId> parts;
  std::vector<int64_t> k(r, 0);
  do {
    std::vector<int64_t> starts, ends;
    bool whole = true;  // a 1x1 window at stride 1 reads all of xp: no Slice
    for (int i = 0; i < r; ++i) {
      starts.push_back(k[i] * w.dilations[i]);
      ends.push_back(starts.back() + w.strides[i] * (out[2 + i] - 1) + 1);
      whole = whole && starts[i] == 0 && steps[i] == 1 && ends[i] == padded[2 + i];
    }
    ValueId s = whole ? xp
                      : b.op(OpType::Slice,
                             {xp, b.ints(starts), b.ints(ends), b.ints(axes), b.ints(steps)});
    parts.push_back(b.op(OpType::Unsqueeze, {s, b.ints({1})}));
  } while (next_offset(k, w.kernel));
  return parts.size() == 1 ? parts[0] : b.op(OpType::Concat, parts, {{"axis", int64_t{1}}});
}

// dW[g, m, c, k] = sum over (n, o) of dy[n, g, m, o] * x[n, g, c, o * s + k * d - p], one GEMM
// per group: windows [G, C/G * K, N * out] times dy as [G, N * out, M/G] (im2col, the weight
// gradient's usual lowering), then the small [G, C/G * K, M/G] result transposed to W's layout.
ValueId conv_weight_grad(GraphBuilder& b, ValueId x, ValueId dy, const WindowGeometry& w) {
  int r = w.spatial_rank;
  Shape xs = b.shape(x), ys = b.shape(dy);
  int64_t G = w.group, cg = xs[1] / G, mg = ys[1] / G, kv = w.kernel_volume();
  int64_t positions = ys.numel() / (ys[0] * ys[1]), rows = ys[0] * positions;
  ValueId cols = b.reshape(channel_major_windows(b, x, ys, w), Shape({G, cg * kv, rows}));
  std::vector<int64_t> split{ys[0], G, mg}, perm{1, 0};
  for (int i = 0; i < r; ++i) {
    split.push_back(ys[2 + i]);
    perm.push_back(3 + i);
  }
  perm.push_back(2);
  ValueId g = b.reshape(b.transpose(b.reshape(dy, Shape(split)), perm), Shape({G, rows, mg}));
  ValueId dw = b.transpose(b.op(OpType::MatMul, {cols, g}), {0, 2, 1});  // [G, M/G, C/G * K]
  std::vector<int64_t> wshape{G * mg, cg};
  wshape.insert(wshape.end(), w.kernel.begin(), w.kernel.end());
  return b.reshape(dw, Shape(wshape));
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
