// ONNX Resize (opsets 10-17; Upsample 7-9 imports as its opset-10 form) as what it is once the
// shapes are known: along each resized axis, a fixed linear map of that axis (each output
// coordinate a weighted sum of at most 4 input coordinates: nearest 1, linear 2, cubic 4), the
// weights following the ONNX reference (onnx/reference/ops/op_resize.py: coordinate
// transformation, nearest rounding, cubic coefficient A, exclude_outside, edge clamping).
//
// The cpu kernel applies the maps with their taps; tpu-emu, ipu-emu and cuda run Resize expanded
// into one MatMul per resized axis by the map's matrix (recurrent_expand.h's runs_expanded), as
// XLA's TPU lowering of image resizes is a dot with a precomputed kernel; the gradient is the
// transposed maps in reverse order. Not modeled: tf_crop_and_resize (its ROI and extrapolation
// value make the map affine, not linear), opset 18's antialias and axes.
#pragma once

#include <string>
#include <vector>

#include "frontend/ir/graph.h"
#include "frontend/ir/graph_builder.h"

namespace mimic::ir {

// One output coordinate's input coordinates and weights.
struct ResizeTap {
  std::vector<int64_t> index;
  std::vector<double> weight;
};

struct ResizeSpec {
  Shape input, output;
  std::vector<double> scales;  // per axis: given, or output / input when sizes are given
  std::string mode = "nearest";
  std::string coordinate_mode = "half_pixel";
  std::string nearest_mode = "round_prefer_floor";  // "simple": opset 10 and Upsample
  double cubic_a = -0.75;
  bool exclude_outside = false;
};

// The spec of Resize node `n` of inferred graph `g` (scales or sizes constant).
ResizeSpec resize_spec(const Graph& g, const Node& n);

// The output shape from the input shape and the node's constant scales or sizes (for shape
// inference); throws ShapeError naming the node for bad scales, sizes or attributes.
Shape resize_output_shape(const Graph& g, const Node& n, const Shape& input);

// The map of `axis`: one tap list per output coordinate.
std::vector<ResizeTap> resize_taps(const ResizeSpec& s, int axis);

// Whether the map of `axis` is the identity (same length, each output reads its own input).
bool resize_axis_is_identity(const ResizeSpec& s, int axis);

// Why expand_resize should not write `s` ("" when it may): a map's matrix over 2^24 elements
// (64 MB of f32 constants for one axis; such a resize runs on the cpu fallback instead).
std::string resize_expansion_limit(const ResizeSpec& s);

// x (shaped s.input; f32, f16 or bf16) resized: one MatMul per non-identity axis by the map's
// matrix. With `transposed`, the transposed maps in reverse order (shaped s.output -> s.input): the
// gradient.
ValueId expand_resize(GraphBuilder& b, ValueId x, const ResizeSpec& s, bool transposed = false);

}  // namespace mimic::ir
