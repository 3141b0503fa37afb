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

// A Conv as conv_weight_grad (grad_rules_linear.cpp) writes a one-group weight gradient: x (the
// forward's input, possibly cropped of rows no window reads by a Slice) transposed to
// [C, spatial..., N], dy (the forward's output gradient) transposed to [M, N, out...], both from
// the forward's layout; the Conv's channels-last result is [C, k..., M]. Backends read x and dy
// in place instead, as XLA's convolution dimension numbers and cuDNN's backward-filter call do.
struct WeightGradientConv {
  int x_transpose = -1, dy_transpose = -1;  // node indices of the operands' Transposes
  ValueId x = kNoValue;                     // the Transpose's input (cropped when `crop` >= 0)
  ValueId x_full = kNoValue;                // x before the crop (x itself without one)
  int crop = -1;                            // the Slice node that crops x, or -1
  ValueId dy = kNoValue;
  bool channels_last = false;  // the forward's layout, of x and dy
  WindowGeometry forward;      // the forward convolution's geometry over x_full
};

// The match for Conv node `conv`, or false. Only the pattern is checked (and the forward's
// geometry recovered): whether the transposes have other readers is the caller's business.
bool match_weight_gradient_conv(const Graph& g, const Node& conv, WeightGradientConv* out);

}  // namespace mimic::ir
