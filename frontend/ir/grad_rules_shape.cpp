// Gradient rules of data-movement ops: views reshape the gradient back, Transpose applies the
// inverse permutation, Concat/Split/Slice/Pad exchange slices for pads (a strided Slice spreads
// the gradient with zeros between), Gather is a ScatterND that adds, and GatherElements adds
// through one-hot products.
#include <algorithm>
#include <cstdint>

#include "frontend/ir/autodiff.h"
#include "frontend/ir/op_helpers.h"
#include "frontend/ir/resize.h"

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

// Places `g` (length `len` on `axis`) at indices first, first + step, ... of an axis of length
// `n`: a negative step reverses g first; a step k > 1 interleaves k - 1 zeros after each element
// (Unsqueeze, Pad, Reshape); constant Pad puts the zeros before and after.
ValueId unslice_axis(GraphBuilder& b, ValueId g, int axis, int64_t n, int64_t first, int64_t step,
                     int64_t len) {
  Shape gs = b.shape(g);
  int rank = gs.rank();
  if (len == 1) step = 1;
  if (step < 0) {
    g = b.op(OpType::Slice, {g, b.ints({-1}), b.ints({INT64_MIN}), b.ints({axis}), b.ints({-1})});
    first += (len - 1) * step;
    step = -step;
  }
  int64_t span = (len - 1) * step + 1;
  if (step > 1) {
    std::vector<int64_t> wide = gs.dims(), pads(2 * (rank + 1), 0);
    wide.insert(wide.begin() + axis + 1, 1);
    pads[rank + 1 + axis + 1] = step - 1;
    ValueId spread = b.op(OpType::Pad, {b.reshape(g, Shape(wide)), b.ints(pads)});
    std::vector<int64_t> merged = gs.dims();
    merged[axis] = len * step;
    g = b.slice(b.reshape(spread, Shape(merged)), {0}, {span}, {axis});
  }
  if (first == 0 && span == n) return g;
  std::vector<int64_t> pads(2 * rank, 0);
  pads[axis] = first;
  pads[rank + axis] = n - first - span;
  return b.op(OpType::Pad, {g, b.ints(pads)});
}

void slice_rule(GradContext& c) {
  const Shape& x = c.x_shape(0);
  SliceSpec s = resolve_slice(c.b.graph(), c.node());
  for (int i = 0; i < x.rank(); ++i)
    if (s.length[i] == 0) return c.set(0, c.b.zeros(c.b.type(c.x(0))));
  ValueId g = c.dy();
  for (int i = 0; i < x.rank(); ++i)
    g = unslice_axis(c.b, g, i, x[i], s.start[i], s.step[i], s.length[i]);
  c.set(0, g);
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

// [rows, n] f32 one-hot matrix of integer `ids` (any shape, negative ids counting from the end).
ValueId one_hot(GraphBuilder& b, ValueId ids, int64_t n, DType dtype) {
  int64_t rows = b.shape(ids).numel();
  ids = b.reshape(b.cast(ids, DType::i64), Shape({rows, 1}));
  ValueId zero = b.scalar(0, DType::i64), size = b.scalar(static_cast<double>(n), DType::i64);
  ids = b.op(OpType::Where, {b.op(OpType::Less, {ids, zero}), b.add(ids, size), ids});
  std::vector<int64_t> classes(n);
  for (int64_t i = 0; i < n; ++i) classes[i] = i;
  return b.cast(b.op(OpType::Equal, {ids, b.ints(classes)}), dtype);
}

// Gather on axis a of data [pre, n, post] with `rows` indices gives dy [pre, rows, post]: the
// gradient is zeros with each dy row added at its index (ScatterND, reduction add: repeated ids
// accumulate, as an embedding's gradient does in PyTorch's embedding_dense_backward and ONNX
// Runtime's GatherGrad). The axis is moved first for the scatter and back after.
void gather_rule(GradContext& c) {
  auto& b = c.b;
  if (c.needs(1)) c.unsupported("indices have no gradient");
  const Shape& data = c.x_shape(0);
  int axis = normalize_axis(c.attrs().get_int("axis", 0), data.rank(), "Gather axis");
  int64_t n = data[axis], rows = c.x_shape(1).numel(), pre = data.product(0, axis),
          post = data.product(axis + 1, data.rank());
  ValueId ids = b.reshape(b.cast(c.x(1), DType::i64), Shape({rows, 1}));
  ValueId g = b.reshape(c.dy(), Shape({pre, rows, post}));
  if (pre > 1) g = b.transpose(g, {1, 0, 2});
  ValueId zeros = b.expand(b.scalar_like(0.0, c.x(0)), Shape({n, pre, post}));
  ValueId dt = b.op(OpType::ScatterND, {zeros, ids, b.reshape(g, Shape({rows, pre, post}))},
                    {{"reduction", std::string("add")}});  // [n, pre, post]
  if (pre > 1) dt = b.transpose(dt, {1, 0, 2});
  c.set(0, b.reshape(dt, data));
}

// GatherElements: y[..., i, ...] = x[..., ids[..., i, ...], ...] along `axis`; indices may be
// shorter than the data on the other axes. Each output element's gradient goes to the one-hot
// position of its index (ids + [n] one-hot axis), summed over the indexed axis, moved back to
// it and zero-padded to the data's shape.
void gather_elements_rule(GradContext& c) {
  auto& b = c.b;
  if (c.needs(1)) c.unsupported("indices have no gradient");
  const Shape& data = c.x_shape(0);
  Shape is = c.x_shape(1);
  int rank = data.rank();
  int axis = normalize_axis(c.attrs().get_int("axis", 0), rank, "GatherElements axis");
  int64_t n = data[axis];
  std::vector<int64_t> wide = is.dims();
  wide.push_back(n);
  ValueId onehot = b.reshape(one_hot(b, c.x(1), n, b.dtype(c.x(0))), Shape(wide));
  std::vector<int64_t> gw = is.dims();
  gw.push_back(1);
  ValueId contrib = b.mul(onehot, b.reshape(c.dy(), Shape(gw)));  // ids shape + [n]
  ValueId summed = b.reduce_sum(contrib, {axis}, true);           // axis kept as 1
  std::vector<int64_t> perm;
  for (int i = 0; i < rank; ++i) perm.push_back(i == axis ? rank : i);
  perm.push_back(axis);
  std::vector<int64_t> out = is.dims(), pads(2 * rank, 0);
  out[axis] = n;
  ValueId g = b.reshape(b.transpose(summed, perm), Shape(out));  // [..., n, ...] (size-1 axis last)
  bool padded = false;
  for (int i = 0; i < rank; ++i) {
    pads[rank + i] = data[i] - out[i];
    padded = padded || pads[rank + i] != 0;
  }
  c.set(0, padded ? b.op(OpType::Pad, {g, b.ints(pads)}) : g);
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

// Resize is a linear map along each resized axis: its gradient applies the transposed maps.
void resize_rule(GradContext& c) {
  c.set(0, expand_resize(c.b, c.dy(), resize_spec(c.b.graph(), c.node()), true));
}

// DepthToSpace in DCR mode and SpaceToDepth are each other's inverse. CRD mode,
// y[n, c, h*b + i, w*b + j] = x[n, c*b*b + i*b + j, h, w], is undone by a reshape, a transpose
// and a reshape.
void depth_space_rule(GradContext& c) {
  auto& b = c.b;
  int64_t block = c.attrs().require_int("blocksize");
  Attributes attrs{{"blocksize", block}};
  if (c.node().op == OpType::SpaceToDepth) {
    attrs.set("mode", std::string("DCR"));
    c.set(0, b.op(OpType::DepthToSpace, {c.dy()}, attrs));
  } else if (c.attrs().get_string("mode", "DCR") == "DCR") {
    c.set(0, b.op(OpType::SpaceToDepth, {c.dy()}, attrs));
  } else {
    Shape x = c.x_shape(0);
    int64_t n = x[0], ch = x[1] / (block * block), h = x[2], w = x[3];
    ValueId blocks = b.reshape(c.dy(), Shape({n, ch, h, block, w, block}));
    c.set(0, b.reshape(b.transpose(blocks, {0, 1, 3, 5, 2, 4}), x));
  }
}

// ScatterND: data's gradient is dy with the written slices cleared (reduction none) or dy itself
// (add); the updates' gradient is dy read at each index tuple (PyTorch's index_put rule), gathered
// from dy flattened to [rows, slice...] at the tuple's row-major row number.
void scatter_nd_rule(GradContext& c) {
  auto& b = c.b;
  std::string reduction = c.attrs().get_string("reduction", "none");
  if (reduction == "mul") c.unsupported("no gradient rule for ScatterND with reduction 'mul'");
  if (c.needs(0))
    c.set(0, reduction == "add"
                 ? c.dy()
                 : b.op(OpType::ScatterND, {c.dy(), c.x(1), b.zeros(b.type(c.x(2)))}));
  if (!c.needs(2)) return;
  Shape data = c.x_shape(0), idx = c.x_shape(1);
  int k = static_cast<int>(idx[idx.rank() - 1]);
  std::vector<int64_t> dims(data.dims().begin(), data.dims().begin() + k), strides(k);
  std::vector<int64_t> table{1};
  for (int d = k - 1; d >= 0; --d) {
    strides[d] = table[0];
    table[0] *= data[d];
  }
  for (int d = k; d < data.rank(); ++d) table.push_back(data[d]);
  ValueId i = c.x(1);
  ValueId negative = b.cast(b.op(OpType::Less, {i, b.scalar(0, DType::i64)}), DType::i64);
  i = b.add(i, b.mul(negative, b.ints(dims)));  // -1 is the last row, as in the kernels
  ValueId rows = b.reduce_sum(b.mul(i, b.ints(strides)), {idx.rank() - 1}, false);
  c.set(2, b.op(OpType::Gather, {b.reshape(c.dy(), Shape(table)), rows}, {{"axis", int64_t{0}}}));
}

// Trilu keeps a triangle: its gradient keeps the same triangle of dy.
void trilu_rule(GradContext& c) {
  std::vector<ValueId> inputs{c.dy()};
  if (c.node().has_input(1)) inputs.push_back(c.x(1));
  c.set(0, c.b.op(OpType::Trilu, inputs, c.attrs()));
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
    case OpType::GatherElements:
      return gather_elements_rule;
    case OpType::Tile:
      return tile_rule;
    case OpType::DepthToSpace:
    case OpType::SpaceToDepth:
      return depth_space_rule;
    case OpType::Resize:
      return resize_rule;
    case OpType::Trilu:
      return trilu_rule;
    case OpType::ScatterND:
      return scatter_nd_rule;
    default:
      return nullptr;
  }
}

}  // namespace mimic::ir
