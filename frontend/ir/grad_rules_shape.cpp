// Gradient rules of data-movement and reduction ops: views reshape the gradient back, Transpose
// applies the inverse permutation, Concat/Split/Slice/Pad exchange slices for pads, reductions
// expand, and Gather (embedding lookup) scatter-adds through a one-hot matrix product.
#include <fmt/format.h>

#include <algorithm>

#include "frontend/ir/autodiff.h"
#include "frontend/ir/op_helpers.h"

namespace mimic::ir {
namespace {

void view_rule(GradContext& c) {
  c.set(0, c.b.reshape(c.dy(), c.x_shape(0)));
}

void transpose_rule(GradContext& c) {
  std::vector<int64_t> perm = resolve_perm(c.node(), c.x_shape(0).rank()), inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = static_cast<int64_t>(i);
  c.set(0, c.b.transpose(c.dy(), inv));
}

void expand_rule(GradContext& c) {
  c.set(0, c.b.unbroadcast(c.dy(), c.x_shape(0)));
}

void concat_rule(GradContext& c) {
  int rank = c.x_shape(0).rank();
  int axis = normalize_axis(c.attrs().get_int("axis", 0), rank, "Concat axis");
  int64_t offset = 0;
  for (int i = 0; i < c.node().num_inputs(); ++i) {
    int64_t size = c.x_shape(i)[axis];
    if (c.needs(i)) c.set(i, c.b.slice(c.dy(), {offset}, {offset + size}, {axis}));
    offset += size;
  }
}

void split_rule(GradContext& c) {
  int axis = normalize_axis(c.attrs().get_int("axis", 0), c.x_shape(0).rank(), "Split axis");
  std::vector<ValueId> parts;
  for (size_t i = 0; i < c.node().outputs.size(); ++i) parts.push_back(c.dy(static_cast<int>(i)));
  c.set(0, parts.size() == 1 ? parts[0] : c.b.op(OpType::Concat, parts, {{"axis", int64_t{axis}}}));
}

void slice_rule(GradContext& c) {
  const Shape& x = c.x_shape(0);
  SliceSpec s = resolve_slice(c.b.graph(), c.node());
  std::vector<int64_t> pads(2 * x.rank());
  for (int i = 0; i < x.rank(); ++i) {
    if (s.step[i] != 1)
      c.unsupported(fmt::format("Slice with step {} has no gradient rule", s.step[i]));
    pads[i] = s.start[i];
    pads[x.rank() + i] = x[i] - s.start[i] - s.length[i];
  }
  c.set(0, c.b.op(OpType::Pad, {c.dy(), c.b.ints(pads)}));
}

void pad_rule(GradContext& c) {
  if (c.attrs().get_string("mode", "constant") != "constant")
    c.unsupported("only constant-mode Pad has a gradient rule");
  PadSpec p = resolve_pads(c.b.graph(), c.node());
  const Shape& x = c.x_shape(0);
  std::vector<int64_t> starts, ends, axes;
  for (int i = 0; i < x.rank(); ++i) {
    if (p.before[i] < 0 || p.after[i] < 0)
      c.unsupported("Pad with negative pads has no gradient rule");
    starts.push_back(p.before[i]);
    ends.push_back(p.before[i] + x[i]);
    axes.push_back(i);
  }
  c.set(0, c.b.slice(c.dy(), starts, ends, axes));
}

// d table = onehot(ids)^T @ dy: rows of ids that repeat accumulate, as an embedding's
// scatter-add does, on the matrix unit of every backend.
void gather_rule(GradContext& c) {
  auto& b = c.b;
  if (c.needs(1)) c.unsupported("indices have no gradient");
  const Shape& data = c.x_shape(0);
  if (normalize_axis(c.attrs().get_int("axis", 0), data.rank(), "Gather axis") != 0)
    c.unsupported("only Gather along axis 0 (embedding lookup) has a gradient rule");
  int64_t vocab = data[0], rows = c.x_shape(1).numel(),
          rest = data.numel() / std::max<int64_t>(vocab, 1);
  ValueId ids = b.reshape(b.cast(c.x(1), DType::i64), Shape({rows, 1}));
  ValueId zero = b.scalar(0, DType::i64), v = b.scalar(static_cast<double>(vocab), DType::i64);
  ValueId neg = b.op(OpType::Less, {ids, zero});
  ids = b.op(OpType::Where, {neg, b.add(ids, v), ids});  // negative indices count from the end
  std::vector<int64_t> classes(vocab);
  for (int64_t i = 0; i < vocab; ++i) classes[i] = i;
  ValueId onehot =
      b.cast(b.op(OpType::Equal, {ids, b.ints(classes)}), b.dtype(c.x(0)));  // [rows, V]
  ValueId g = b.reshape(c.dy(), Shape({rows, rest}));
  ValueId dt = b.op(OpType::MatMul, {b.transpose(onehot, {1, 0}), g});
  c.set(0, b.reshape(dt, data));
}

void reduce_rule(GradContext& c) {
  auto& b = c.b;
  const Shape& x = c.x_shape(0);
  std::vector<bool> reduced = resolve_reduce_axes(b.graph(), c.node());
  std::vector<int64_t> kept = x.dims();
  int64_t count = 1;
  for (int i = 0; i < x.rank(); ++i)
    if (reduced[i]) count *= x[i], kept[i] = 1;
  ValueId g = b.expand(b.reshape(c.dy(), Shape(kept)), x);
  if (c.node().op == OpType::ReduceMean) g = b.scale(g, 1.0 / static_cast<double>(count));
  c.set(0, g);
}

// ReduceMax/ReduceMin: the gradient goes to the elements equal to the result (ties share the
// whole gradient each; PyTorch's amax/amin split it evenly between ties).
void reduce_extreme_rule(GradContext& c) {
  auto& b = c.b;
  Shape x = c.x_shape(0);
  std::vector<bool> reduced = resolve_reduce_axes(b.graph(), c.node());
  std::vector<int64_t> kept = x.dims();
  for (int i = 0; i < x.rank(); ++i)
    if (reduced[i]) kept[i] = 1;
  ValueId y = b.reshape(c.y(), Shape(kept)), g = b.reshape(c.dy(), Shape(kept));
  ValueId hit = b.cast(b.op(OpType::Equal, {c.x(0), y}), b.dtype(c.x(0)));
  c.set(0, b.mul(hit, b.expand(g, x)));
}

// Tile: the gradient of each copy is summed back (reshape to [repeat, size] pairs, reduce repeats).
void tile_rule(GradContext& c) {
  auto& b = c.b;
  Shape x = c.x_shape(0);
  std::vector<int64_t> repeats = constant_ints(b.graph(), c.node(), 1), split, axes;
  for (int i = 0; i < x.rank(); ++i) {
    split.push_back(repeats[i]);
    split.push_back(x[i]);
    axes.push_back(2 * i);
  }
  c.set(0, b.reshape(b.reduce_sum(b.reshape(c.dy(), Shape(split)), axes, false), x));
}

}  // namespace

GradRule shape_grad_rule(OpType op) {
  switch (op) {
    case OpType::Reshape:
    case OpType::Flatten:
    case OpType::Squeeze:
    case OpType::Unsqueeze:
      return view_rule;
    case OpType::Transpose:
      return transpose_rule;
    case OpType::Expand:
      return expand_rule;
    case OpType::Concat:
      return concat_rule;
    case OpType::Split:
      return split_rule;
    case OpType::Slice:
      return slice_rule;
    case OpType::Pad:
      return pad_rule;
    case OpType::Gather:
      return gather_rule;
    case OpType::ReduceSum:
    case OpType::ReduceMean:
      return reduce_rule;
    case OpType::ReduceMax:
    case OpType::ReduceMin:
      return reduce_extreme_rule;
    case OpType::Tile:
      return tile_rule;
    default:
      return nullptr;
  }
}

}  // namespace mimic::ir
