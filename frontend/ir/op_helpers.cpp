#include "frontend/ir/op_helpers.h"

#include <fmt/format.h>
#include <algorithm>

#include "base/error.h"

namespace mimic::ir {

SliceSpec resolve_slice(const Shape& shape, const std::vector<int64_t>& starts,
                        const std::vector<int64_t>& ends, const std::vector<int64_t>& axes_in,
                        const std::vector<int64_t>& steps, const std::string& what) {
  int rank = shape.rank();
  if (starts.size() != ends.size())
    throw ShapeError(
        fmt::format("{}: starts has {} values, ends has {}", what, starts.size(), ends.size()));
  std::vector<int64_t> axes = axes_in;
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (axes.size() != starts.size() || (!steps.empty() && steps.size() != starts.size()))
    throw ShapeError(
        fmt::format("{}: starts, ends, axes and steps must have the same length", what));
  SliceSpec spec;
  spec.start.assign(rank, 0);
  spec.step.assign(rank, 1);
  spec.length.assign(shape.dims().begin(), shape.dims().end());
  for (size_t i = 0; i < axes.size(); ++i) {
    int axis = normalize_axis(axes[i], rank, what + " axes");
    int64_t dim = shape[axis], step = steps.empty() ? 1 : steps[i];
    if (step == 0) throw ShapeError(fmt::format("{}: step 0 on axis {}", what, axis));
    if (dim == kBatch) {
      if (starts[i] == 0 && step == 1 && ends[i] >= (int64_t{1} << 30)) continue;
      throw ShapeError(
          fmt::format("{}: slicing the symbolic batch axis needs a bound batch", what));
    }
    // A step longer than the axis selects one element either way; clamping keeps arithmetic in
    // range.
    int64_t longest = std::max<int64_t>(dim, 1);
    step = std::clamp<int64_t>(step, -longest, longest);
    if (dim == 0) {
      spec.length[axis] = 0;
      continue;
    }
    int64_t s = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t e = ends[i] < 0 ? ends[i] + dim : ends[i];
    int64_t len;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      len = e > s ? (e - s + step - 1) / step : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      len = s > e ? (s - e + (-step) - 1) / (-step) : 0;
    }
    spec.start[axis] = s;
    spec.step[axis] = step;
    spec.length[axis] = len;
  }
  return spec;
}

SliceSpec resolve_slice(const Graph& g, const Node& n) {
  const Shape& shape = g.value(n.inputs[0]).type.shape;
  return resolve_slice(shape, constant_ints(g, n, 1), constant_ints(g, n, 2),
                       constant_ints(g, n, 3), constant_ints(g, n, 4), describe(g, n));
}

PadSpec resolve_pads(const Graph& g, const Node& n) {
  const Shape& shape = g.value(n.inputs[0]).type.shape;
  int rank = shape.rank();
  std::vector<int64_t> pads = constant_ints(g, n, 1);
  std::vector<int64_t> axes = constant_ints(g, n, 3);
  if (axes.empty())
    for (int i = 0; i < rank; ++i) axes.push_back(i);
  if (pads.size() != 2 * axes.size())
    throw ShapeError(fmt::format("{}: pads has {} values, expected {} for input {}", describe(g, n),
                                 pads.size(), 2 * axes.size(), shape.str()));
  PadSpec spec{std::vector<int64_t>(rank, 0), std::vector<int64_t>(rank, 0)};
  for (size_t i = 0; i < axes.size(); ++i) {
    int axis = normalize_axis(axes[i], rank, describe(g, n) + " axes");
    spec.before[axis] = pads[i];
    spec.after[axis] = pads[axes.size() + i];
  }
  return spec;
}

std::vector<int64_t> resolve_split(const Graph& g, const Node& n) {
  const Shape& shape = g.value(n.inputs[0]).type.shape;
  int axis = normalize_axis(n.attrs.get_int("axis", 0), shape.rank(), describe(g, n) + " axis");
  int64_t dim = shape[axis];
  int64_t parts = static_cast<int64_t>(n.outputs.size());
  std::vector<int64_t> sizes = constant_ints(g, n, 1);
  if (dim == kBatch)
    throw ShapeError(fmt::format("{}: cannot split the symbolic batch axis", describe(g, n)));
  if (sizes.empty()) {
    int64_t chunk = (dim + parts - 1) / parts;
    for (int64_t i = 0; i < parts; ++i)
      sizes.push_back(std::max<int64_t>(0, std::min(chunk, dim - i * chunk)));
  }
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) throw ShapeError(fmt::format("{}: split size {} is negative", describe(g, n), s));
    total = checked_add(total, s, describe(g, n) + " split sizes");
  }
  if (static_cast<int64_t>(sizes.size()) != parts || total != dim)
    throw ShapeError(fmt::format("{}: split sizes [{}] do not cover axis {} of size {} in {} parts",
                                 describe(g, n), fmt::join(sizes, ","), axis, dim, parts));
  return sizes;
}

std::vector<int64_t> resolve_perm(const Node& n, int rank) {
  std::vector<int64_t> perm = n.attrs.get_ints("perm");
  if (perm.empty())
    for (int i = rank - 1; i >= 0; --i) perm.push_back(i);
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < static_cast<int>(sorted.size()); ++i)
    if (sorted[i] != i || static_cast<int>(perm.size()) != rank)
      throw ShapeError(
          fmt::format("node '{}' (Transpose): perm [{}] is not a permutation of {} axes", n.name,
                      fmt::join(perm, ","), rank));
  return perm;
}

std::vector<bool> resolve_reduce_axes(const Graph& g, const Node& n) {
  int rank = g.value(n.inputs[0]).type.shape.rank();
  std::vector<int64_t> axes = constant_ints(g, n, 1);
  bool noop = axes.empty() && n.attrs.get_int("noop_with_empty_axes", 0) != 0;
  std::vector<bool> reduced(rank, axes.empty() && !noop);
  for (int64_t a : axes) reduced[normalize_axis(a, rank, describe(g, n) + " axes")] = true;
  return reduced;
}

std::vector<int64_t> resolve_squeeze_axes(const Graph& g, const Node& n) {
  const Shape& shape = g.value(n.inputs[0]).type.shape;
  std::vector<int64_t> axes = constant_ints(g, n, 1);
  int rank =
      n.op == OpType::Unsqueeze ? shape.rank() + static_cast<int>(axes.size()) : shape.rank();
  for (int64_t& a : axes) a = normalize_axis(a, rank, describe(g, n) + " axes");
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    throw ShapeError(
        fmt::format("{}: repeated axis in [{}]", describe(g, n), fmt::join(axes, ",")));
  return axes;
}

bool needs_constant_input(OpType op, int input) {
  if (is_reduce(op)) return input == 1;  // axes
  switch (op) {
    case OpType::Reshape:
    case OpType::Split:
    case OpType::Squeeze:
    case OpType::Unsqueeze:
    case OpType::Tile:
    case OpType::Expand:
    case OpType::CumSum:
    case OpType::Trilu:
      return input == 1;
    case OpType::Slice:
      return input >= 1;
    case OpType::Resize:
      return input >= 2;  // scales, sizes
    case OpType::Pad:
      return input == 1 || input == 3;
    case OpType::ConstantOfShape:
      return input == 0;
    case OpType::Range:
      return true;
    default:
      return false;
  }
}

std::vector<int> shape_defining_inputs(const Graph& g) {
  std::vector<bool> needed(g.num_values(), false);
  // Nodes are topological: walking backwards, a needed node output makes all its inputs needed.
  for (int i = g.num_nodes() - 1; i >= 0; --i) {
    const Node& n = g.node(i);
    bool outputs_needed = false;
    for (ValueId v : n.outputs) outputs_needed = outputs_needed || needed[v];
    // These read only their input's shape, which is known without its values.
    if (n.op == OpType::Shape || n.op == OpType::Size || n.op == OpType::EyeLike)
      outputs_needed = false;
    for (int k = 0; k < n.num_inputs(); ++k)
      if (n.has_input(k) && (outputs_needed || needs_constant_input(n.op, k)))
        needed[n.inputs[k]] = true;
  }
  std::vector<int> out;
  for (size_t i = 0; i < g.inputs().size(); ++i)
    if (needed[g.inputs()[i]]) out.push_back(static_cast<int>(i));
  return out;
}

}  // namespace mimic::ir
