// Parameter resolution shared by shape inference and kernels, so every backend reads Slice, Pad,
// Split, Transpose and reductions exactly as shape inference did.
#pragma once

#include <cstdint>
#include <vector>

#include "frontend/ir/graph.h"

namespace mimic::ir {

// Per-axis slice of an input of `shape`: start index, step and output length (ONNX clamping).
struct SliceSpec {
  std::vector<int64_t> start, step, length;
};
SliceSpec resolve_slice(const Shape& shape, const std::vector<int64_t>& starts,
                        const std::vector<int64_t>& ends, const std::vector<int64_t>& axes,
                        const std::vector<int64_t>& steps, const std::string& what);
SliceSpec resolve_slice(const Graph& g, const Node& n);

// Pad amounts before and after each axis (negative values crop).
struct PadSpec {
  std::vector<int64_t> before, after;
};
PadSpec resolve_pads(const Graph& g, const Node& n);

// Sizes of Split's outputs along its axis.
std::vector<int64_t> resolve_split(const Graph& g, const Node& n);
// Transpose permutation (default: reversed axes).
std::vector<int64_t> resolve_perm(const Node& n, int rank);
// Which axes a Reduce* node reduces (opset-18 axes input, or all).
std::vector<bool> resolve_reduce_axes(const Graph& g, const Node& n);
// Axes of Squeeze/Unsqueeze, normalized against the rank they refer to.
std::vector<int64_t> resolve_squeeze_axes(const Graph& g, const Node& n);

// True when shape inference needs input `input` of `op` to be a constant (Reshape's shape,
// Slice's starts/ends/axes/steps, reduce axes, Range's bounds, ...).
bool needs_constant_input(OpType op, int input);
// Graph inputs (indices into g.inputs()) whose values shape inference needs: they feed such an
// input directly or through other nodes. A caller that knows their values can make them
// constants (Graph::make_constant) so the graph compiles with static shapes.
std::vector<int> shape_defining_inputs(const Graph& g);

}  // namespace mimic::ir
