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

}  // namespace mimic::ir
