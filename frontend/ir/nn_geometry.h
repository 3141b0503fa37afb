// Window geometry of convolutions and pools (ONNX semantics): kernel, strides, dilations and the
// resolved begin/end padding of every spatial dimension, including auto_pad SAME_UPPER/SAME_LOWER/
// VALID and pooling's ceil_mode. Shared by shape inference and every backend so that they agree.
#pragma once

#include <cstdint>
#include <vector>

#include "frontend/ir/graph.h"

namespace mimic::ir {

struct WindowGeometry {
  int spatial_rank = 0;
  bool channels_last = false;  // layout "NHWC"
  int64_t batch = 0, in_channels = 0, out_channels = 0, group = 1;
  std::vector<int64_t> in_size, out_size, kernel, strides, dilations, pad_begin, pad_end;

  int64_t in_spatial() const;
  int64_t out_spatial() const;
  int64_t kernel_volume() const;
  bool is_pointwise() const;  // 1x1 kernel, stride 1, no padding
};

enum class WindowKind { conv, conv_transpose, pool };

// Computes the geometry of Conv, ConvTranspose, MaxPool or AveragePool node `n` from its input
// shapes (weights for convolutions). Throws ShapeError naming the node on any inconsistency.
WindowGeometry window_geometry(const Graph& g, const Node& n);
WindowGeometry window_geometry(const Node& n, const Shape& x, const Shape* w, WindowKind kind);

// True when the node's `layout` attribute asks for channels last (NHWC, NWC, NDHWC, ...).
bool is_channels_last(const Node& n);

}  // namespace mimic::ir
