#include "frontend/ir/nn_geometry.h"

#include <fmt/format.h>
#include <algorithm>

#include "base/error.h"
#include "frontend/ir/op_helpers.h"

namespace mimic::ir {
namespace {

// Saturates at INT64_MAX: pool kernels come from attributes and may be absurd.
int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v)
    if (__builtin_mul_overflow(p, x, &p)) return INT64_MAX;
  return p;
}

std::vector<int64_t> ints_or(const Node& n, const char* name, int rank, int64_t fill) {
  std::vector<int64_t> v = n.attrs.get_ints(name);
  return v.empty() ? std::vector<int64_t>(rank, fill) : v;
}

[[noreturn]] void fail(const Node& n, const Shape& x, const std::string& msg) {
  throw ShapeError(
      fmt::format("node '{}' ({}): {}; input {}", n.name, op_name(n.op), msg, x.str()));
}

// Output size and padding of one spatial dimension for conv and pool windows.
void resolve_forward_dim(WindowGeometry& g, int i, const std::string& auto_pad, bool ceil_mode,
                         const Node& n, const Shape& x) {
  int64_t in = g.in_size[i], s = g.strides[i];
  int64_t extent = (g.kernel[i] - 1) * g.dilations[i] + 1;
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    int64_t out = (in + s - 1) / s;
    int64_t total = std::max<int64_t>(0, (out - 1) * s + extent - in);
    int64_t small = total / 2, large = total - small;
    g.pad_begin[i] = auto_pad == "SAME_UPPER" ? small : large;
    g.pad_end[i] = auto_pad == "SAME_UPPER" ? large : small;
    g.out_size[i] = out;
    return;
  }
  if (auto_pad == "VALID") g.pad_begin[i] = g.pad_end[i] = 0;
  int64_t span = in + g.pad_begin[i] + g.pad_end[i] - extent;
  if (span < 0)
    fail(n, x,
         fmt::format("window of extent {} is larger than the padded input {} in spatial dim {}",
                     extent, in + g.pad_begin[i] + g.pad_end[i], i));
  int64_t out = ceil_mode ? (span + s - 1) / s + 1 : span / s + 1;
  // A window must start inside the input or its begin padding (PyTorch and ONNX reference).
  if (ceil_mode && (out - 1) * s >= in + g.pad_begin[i]) --out;
  g.out_size[i] = out;
}

void resolve_transpose_dim(WindowGeometry& g, int i, const std::string& auto_pad,
                           const std::vector<int64_t>& output_padding,
                           const std::vector<int64_t>& output_shape) {
  int64_t in = g.in_size[i], s = g.strides[i];
  int64_t extent = (g.kernel[i] - 1) * g.dilations[i] + 1;
  int64_t out_pad = output_padding.empty() ? 0 : output_padding[i];
  int64_t full = s * (in - 1) + out_pad + extent;
  bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (output_shape.empty() && !same) {
    g.out_size[i] = full - g.pad_begin[i] - g.pad_end[i];
    return;
  }
  // ONNX ConvTranspose: padding derived from the requested output size.
  int64_t target =
      output_shape.empty() ? in * s : output_shape[output_shape.size() - g.spatial_rank + i];
  int64_t total = std::max<int64_t>(0, full - target);
  g.pad_begin[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
  g.pad_end[i] = total - g.pad_begin[i];
  g.out_size[i] = target;
}

}  // namespace

int64_t WindowGeometry::in_spatial() const {
  return product(in_size);
}
int64_t WindowGeometry::out_spatial() const {
  return product(out_size);
}
int64_t WindowGeometry::kernel_volume() const {
  return product(kernel);
}

bool WindowGeometry::is_pointwise() const {
  for (int i = 0; i < spatial_rank; ++i)
    if (kernel[i] != 1 || strides[i] != 1 || pad_begin[i] != 0 || pad_end[i] != 0) return false;
  return true;
}

bool is_channels_last(const Node& n) {
  std::string layout = n.attrs.get_string("layout", "NCHW");
  return layout.size() >= 2 && layout.back() == 'C';
}

WindowGeometry window_geometry(const Graph& g, const Node& n) {
  const Shape& x = g.value(n.inputs.at(0)).type.shape;
  WindowKind kind = n.op == OpType::Conv            ? WindowKind::conv
                    : n.op == OpType::ConvTranspose ? WindowKind::conv_transpose
                                                    : WindowKind::pool;
  const Shape* w = kind == WindowKind::pool ? nullptr : &g.value(n.inputs.at(1)).type.shape;
  return window_geometry(n, x, w, kind);
}

namespace {

// Bounds on strides, dilations and pads keep the window arithmetic (extents, padded sizes) far
// from int64 overflow.
constexpr int64_t kMaxStep = int64_t{1} << 20;

// Kernel size and channels from the weight of a Conv or ConvTranspose, checked against the input.
void weight_channels(WindowGeometry& g, const Node& n, const Shape& x, const Shape* w,
                     WindowKind kind) {
  const int sr = g.spatial_rank;
  if (!w || w->rank() != sr + 2)
    fail(n, x, fmt::format("weight shape {} must have rank {}", w ? w->str() : "[]", sr + 2));
  g.kernel.assign(w->dims().begin() + 2, w->dims().end());
  if (g.group <= 0 || g.in_channels % g.group != 0)
    fail(n, x, fmt::format("group {} does not divide {} input channels", g.group, g.in_channels));
  if (kind == WindowKind::conv) {
    g.out_channels = (*w)[0];
    if ((*w)[1] * g.group != g.in_channels)
      fail(n, x,
           fmt::format("weight {} expects {} input channels per group, input has {} in {} "
                       "group(s)",
                       w->str(), (*w)[1], g.in_channels, g.group));
    if (g.out_channels % g.group != 0)
      fail(n, x,
           fmt::format("group {} does not divide {} output channels", g.group, g.out_channels));
  } else {
    if ((*w)[0] != g.in_channels)
      fail(n, x,
           fmt::format("weight {} expects {} input channels, input has {}", w->str(), (*w)[0],
                       g.in_channels));
    g.out_channels = (*w)[1] * g.group;
  }
  std::vector<int64_t> ks = n.attrs.get_ints("kernel_shape");
  if (!ks.empty() && ks != g.kernel)
    fail(n, x, fmt::format("kernel_shape attribute disagrees with weight {}", w->str()));
}

// Strides, dilations and pads, checked and bounded.
void window_steps(WindowGeometry& g, const Node& n, const Shape& x, int first_spatial) {
  const int sr = g.spatial_rank;
  g.strides = ints_or(n, "strides", sr, 1);
  g.dilations = ints_or(n, "dilations", sr, 1);
  std::vector<int64_t> pads = ints_or(n, "pads", 2 * sr, 0);
  if (static_cast<int>(g.strides.size()) != sr || static_cast<int>(g.dilations.size()) != sr ||
      static_cast<int>(pads.size()) != 2 * sr)
    fail(n, x, "strides, dilations and pads must match the spatial rank");
  for (int i = 0; i < sr; ++i) {
    if (g.kernel[i] <= 0 || g.strides[i] <= 0 || g.dilations[i] <= 0 || pads[i] < 0 ||
        pads[sr + i] < 0)
      fail(n, x, "kernel, strides and dilations must be positive and pads non-negative");
    if (g.kernel[i] > kMaxElements || g.strides[i] > kMaxStep || g.dilations[i] > kMaxStep ||
        pads[i] > kMaxStep || pads[sr + i] > kMaxStep || x[first_spatial + i] == kBatch)
      fail(n, x,
           "kernel, strides, dilations or pads are out of range (strides, dilations and pads up to "
           "2^20)");
  }
  g.pad_begin.assign(pads.begin(), pads.begin() + sr);
  g.pad_end.assign(pads.begin() + sr, pads.end());
  g.out_size.assign(sr, 0);
}

// auto_pad, then each spatial output size (ConvTranspose from output_padding or output_shape).
void output_sizes(WindowGeometry& g, const Node& n, const Shape& x, WindowKind kind) {
  const int sr = g.spatial_rank;
  std::string auto_pad = n.attrs.get_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" &&
      auto_pad != "VALID")
    fail(n, x,
         fmt::format("auto_pad '{}' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID", auto_pad));
  if (g.in_channels == kBatch) fail(n, x, "the channel dimension cannot be the symbolic batch");
  if (kind == WindowKind::conv_transpose) {
    std::vector<int64_t> output_padding = n.attrs.get_ints("output_padding");
    std::vector<int64_t> output_shape = n.attrs.get_ints("output_shape");
    if (!output_padding.empty() && static_cast<int>(output_padding.size()) != sr)
      fail(n, x,
           fmt::format("output_padding has {} values for {} spatial dims", output_padding.size(),
                       sr));
    if (!output_shape.empty() && static_cast<int>(output_shape.size()) < sr)
      fail(n, x,
           fmt::format("output_shape has {} values for {} spatial dims", output_shape.size(), sr));
    for (int64_t v : output_padding)
      if (v < 0 || v > kMaxStep) fail(n, x, fmt::format("output_padding {} is out of range", v));
    for (int64_t v : output_shape)
      if (v <= 0 || v > kMaxElements) fail(n, x, fmt::format("output_shape {} is out of range", v));
    for (int i = 0; i < sr; ++i)
      resolve_transpose_dim(g, i, auto_pad, output_padding, output_shape);
  } else {
    bool ceil_mode = n.attrs.get_int("ceil_mode", 0) != 0;
    for (int i = 0; i < sr; ++i) resolve_forward_dim(g, i, auto_pad, ceil_mode, n, x);
  }
  for (int i = 0; i < sr; ++i)
    if (g.out_size[i] <= 0)
      fail(n, x, fmt::format("output spatial dim {} would be {}", i, g.out_size[i]));
}

}  // namespace

WindowGeometry window_geometry(const Node& n, const Shape& x, const Shape* w, WindowKind kind) {
  WindowGeometry g;
  if (x.rank() < 3) fail(n, x, "input needs rank >= 3 (batch, channels, spatial...)");
  int sr = x.rank() - 2;
  g.spatial_rank = sr;
  g.channels_last = is_channels_last(n);
  g.batch = x[0];
  g.in_channels = g.channels_last ? x[x.rank() - 1] : x[1];
  int first_spatial = g.channels_last ? 1 : 2;
  for (int i = 0; i < sr; ++i) g.in_size.push_back(x[first_spatial + i]);

  g.group = n.attrs.get_int("group", 1);
  if (kind == WindowKind::pool) {
    g.kernel = n.attrs.get_ints("kernel_shape");
    g.out_channels = g.in_channels;
  } else {
    weight_channels(g, n, x, w, kind);
  }
  if (static_cast<int>(g.kernel.size()) != sr)
    fail(n, x,
         fmt::format("kernel_shape has {} dims, input has {} spatial dims", g.kernel.size(), sr));
  window_steps(g, n, x, first_spatial);
  output_sizes(g, n, x, kind);
  return g;
}

namespace {

// The Transpose node that makes `v` (its permutation in `perm`), or -1.
int transpose_making(const Graph& g, ValueId v, std::vector<int64_t>* perm) {
  const int t = g.value(v).producer;
  if (t < 0 || g.node(t).op != OpType::Transpose) return -1;
  *perm = resolve_perm(g.node(t), g.value(v).type.shape.rank());
  return t;
}

// Finds the Slice that crops x's spatial ends (starts 0, steps 1, batch and channels whole).
void find_crop(const Graph& g, WeightGradientConv& m) {
  m.x_full = m.x;
  const int s = g.value(m.x).producer;
  if (s < 0 || g.node(s).op != OpType::Slice) return;
  const SliceSpec spec = resolve_slice(g, g.node(s));
  const Shape &full = g.value(g.node(s).inputs[0]).type.shape, &x = g.value(m.x).type.shape;
  const int channel_axis = m.channels_last ? x.rank() - 1 : 1;
  for (int a = 0; a < x.rank(); ++a) {
    const bool spatial = a != 0 && a != channel_axis;
    if (spec.start[a] != 0 || spec.step[a] != 1 || (!spatial && full[a] != x[a])) return;
  }
  m.crop = s;
  m.x_full = g.node(s).inputs[0];
}

// The forward's geometry from the weight gradient's: x2 = [C, in..., N] convolved by
// dy2 = [M, N, out...] into [C, k..., M] with the forward's strides and dilations swapped.
WindowGeometry forward_geometry(const Graph& g, const Node& conv, const WeightGradientConv& m) {
  const WindowGeometry w = window_geometry(g, conv);
  const Shape& x = g.value(m.x_full).type.shape;
  WindowGeometry f;
  f.spatial_rank = w.spatial_rank;
  f.channels_last = m.channels_last;
  f.batch = w.in_channels;
  f.in_channels = w.batch;
  f.out_channels = w.out_channels;
  f.out_size = w.kernel;
  f.kernel = w.out_size;
  f.strides = w.dilations;
  f.dilations = w.strides;
  f.pad_begin = w.pad_begin;
  for (int i = 0; i < f.spatial_rank; ++i) {
    f.in_size.push_back(x[m.channels_last ? 1 + i : 2 + i]);
    const int64_t reach =
        (f.out_size[i] - 1) * f.strides[i] + f.dilations[i] * (f.kernel[i] - 1) + 1;
    f.pad_end.push_back(std::max<int64_t>(0, reach - f.in_size[i] - f.pad_begin[i]));
  }
  return f;
}

}  // namespace

bool match_weight_gradient_conv(const Graph& g, const Node& conv, WeightGradientConv* out) {
  if (conv.op != OpType::Conv || conv.num_inputs() != 2 || !is_channels_last(conv) ||
      conv.attrs.get_int("group", 1) != 1)
    return false;
  const int rank = g.value(conv.inputs[0]).type.shape.rank(), r = rank - 2;
  std::vector<int64_t> first_x{1}, first_dy{1, 0}, last_x{r + 1}, last_dy{r + 1, 0};
  for (int i = 0; i < r; ++i) {
    first_x.push_back(2 + i);
    first_dy.push_back(2 + i);
    last_x.push_back(1 + i);
    last_dy.push_back(1 + i);
  }
  first_x.push_back(0);
  last_x.push_back(0);
  WeightGradientConv m;
  std::vector<int64_t> px, pdy;
  m.x_transpose = transpose_making(g, conv.inputs[0], &px);
  m.dy_transpose = transpose_making(g, conv.inputs[1], &pdy);
  const bool first = px == first_x && pdy == first_dy, last = px == last_x && pdy == last_dy;
  if (m.x_transpose < 0 || m.dy_transpose < 0 || !(first || last)) return false;
  m.x = g.node(m.x_transpose).inputs[0];
  m.dy = g.node(m.dy_transpose).inputs[0];
  m.channels_last = last;
  find_crop(g, m);
  m.forward = forward_geometry(g, conv, m);
  *out = std::move(m);
  return true;
}

}  // namespace mimic::ir
