// Gradient rules of neural-network ops: softmaxes and LayerNormalization as compositions, pools
// (MaxPool as MaxPoolGrad, average pools as a depthwise ConvTranspose with a ones kernel), LRN
// through a channel-band matrix, and BatchNormalization in inference form (fixed statistics: an
// affine map per channel). Training-mode BatchNormalization, rewritten into batch-statistics ops by
// the train step, is differentiated as a whole (batch_norm_training_rule, a CompositeGradient).
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "frontend/ir/autodiff.h"
#include "frontend/ir/nn_geometry.h"
#include "frontend/ir/pool_grad.h"

namespace mimic::ir {
namespace {

int softmax_axis(GradContext& c) {
  if (c.attrs().get_int("coerce_2d", 0) != 0)
    c.unsupported("coerce_2d softmax has no gradient rule");
  return normalize_axis(c.attrs().get_int("axis", -1), c.x_shape(0).rank(), "softmax axis");
}

void softmax_rule(GradContext& c) {
  auto& b = c.b;
  int64_t axis = softmax_axis(c);
  ValueId y = c.y(), g = c.dy();
  if (c.node().op == OpType::Softmax) {  // y * (g - sum(g * y))
    c.set(0, b.mul(y, b.sub(g, b.reduce_sum(b.mul(g, y), {axis}, true))));
  } else {  // g - exp(y) * sum(g)
    c.set(0, b.sub(g, b.mul(b.op(OpType::Exp, {y}), b.reduce_sum(g, {axis}, true))));
  }
}

// y = xhat * scale + bias, xhat = (x - mean) * rstd over `axes`; scale and bias broadcast from
// `param_shape`. dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), dxhat = dy * scale.
void normalized_affine_grad(GradContext& c, const std::vector<int64_t>& axes,
                            const Shape& param_shape, double eps) {
  auto& b = c.b;
  ValueId x = c.x(0), g = c.dy();
  ValueId xc = b.sub(x, b.reduce_mean(x, axes, true));
  ValueId var = b.reduce_mean(b.mul(xc, xc), axes, true);
  ValueId rstd =
      b.op(OpType::Reciprocal, {b.op(OpType::Sqrt, {b.add(var, b.scalar_like(eps, var))})});
  ValueId xhat = b.mul(xc, rstd);
  if (c.needs(1)) c.set(1, b.reshape(b.unbroadcast(b.mul(g, xhat), param_shape), c.x_shape(1)));
  if (c.needs(2)) c.set(2, b.reshape(b.unbroadcast(g, param_shape), c.x_shape(2)));
  if (!c.needs(0)) return;
  ValueId dxhat = b.mul(g, b.reshape(c.x(1), param_shape));
  ValueId inner = b.sub(b.sub(dxhat, b.reduce_mean(dxhat, axes, true)),
                        b.mul(xhat, b.reduce_mean(b.mul(dxhat, xhat), axes, true)));
  c.set(0, b.mul(rstd, inner));
}

// LayerNormalization: over axes [axis, rank); InstanceNormalization: over the spatial axes of
// each (sample, channel), with per-channel scale and bias.
void normalization_rule(GradContext& c) {
  Shape xs = c.x_shape(0);
  double eps = c.attrs().get_float("epsilon", 1e-5);
  std::vector<int64_t> axes;
  if (c.node().op == OpType::LayerNormalization) {
    int axis = normalize_axis(c.attrs().get_int("axis", -1), xs.rank(), "LayerNormalization axis");
    for (int i = axis; i < xs.rank(); ++i) axes.push_back(i);
    normalized_affine_grad(c, axes, c.x_shape(1), eps);
    return;
  }
  std::vector<int64_t> param(xs.rank() - 1, 1);
  param[0] = xs[1];
  for (int i = 2; i < xs.rank(); ++i) axes.push_back(i);
  normalized_affine_grad(c, axes, Shape(param), eps);
}

// MaxPool: MaxPoolGrad(x, y, dy) with the pool's attributes; backends without its kernel run it
// as window ops (pool_grad.h).
void max_pool_rule(GradContext& c) {
  if (c.node().outputs.size() > 1) c.unsupported("MaxPool's indices output has no gradient rule");
  if (c.b.dtype(c.x(0)) != DType::f32) c.unsupported("MaxPool's gradient rule needs f32");
  c.set(0, c.b.op(OpType::MaxPoolGrad, {c.x(0), c.y(), c.dy()}, c.attrs()));
}

// MaxPoolGrad is linear in dY: each window reads the incoming gradient at its first maximum. X and
// Y only choose that element, so no gradient flows to them (as in PyTorch's double backward).
void max_pool_grad_rule(GradContext& c) {
  for (int i : {0, 1})
    if (c.needs(i)) c.set(i, c.b.zeros(c.b.type(c.x(i))));
  if (c.needs(2)) c.set(2, max_pool_grad_of_dy(c.b, c.node(), c.dy()));
}

// ceil_mode: a last window may reach past the padded input, where the divisor is not the kernel
// volume; it is read back from the forward op itself: count = inside / AveragePool(ones), with
// `inside` the number of the window's elements inside the input (window tensor of a ones plane).
// Each window's dy / count is then scattered over its inputs like MaxPool's.
void ceil_average_pool_grad(GradContext& c, const WindowGeometry& w) {
  auto& b = c.b;
  DType t = b.dtype(c.x(0));
  std::vector<int64_t> plane{1, 1};
  plane.insert(plane.end(), w.in_size.begin(), w.in_size.end());
  ValueId ones = b.full(TensorType{t, Shape(plane)}, 1.0);
  ValueId inside = b.reduce_sum(window_tensor(b, ones, w, 0.0), {0}, false);  // [1, 1, out...]
  ValueId frac = b.op(OpType::AveragePool, {ones}, c.attrs());
  ValueId g = b.div(b.mul(c.dy(), frac), inside);
  std::vector<int64_t> one_window{1, w.batch, w.in_channels}, windows{w.kernel_volume()};
  one_window.insert(one_window.end(), w.out_size.begin(), w.out_size.end());
  windows.insert(windows.end(), one_window.begin() + 1, one_window.end());
  c.set(0, scatter_windows(b, b.expand(b.reshape(g, Shape(one_window)), Shape(windows)), w));
}

// Scatter of each window's gradient over its inputs: ConvTranspose(dy / count, ones) per channel.
void average_pool_rule(GradContext& c) {
  auto& b = c.b;
  if (is_channels_last(c.node())) return channels_first_grad(c, average_pool_rule);
  WindowGeometry w = window_geometry(b.graph(), c.node());
  if (c.attrs().get_int("ceil_mode", 0) != 0) {
    if (b.dtype(c.x(0)) != DType::f32) c.unsupported("ceil_mode AveragePool's rule needs f32");
    return ceil_average_pool_grad(c, w);
  }
  int r = w.spatial_rank;
  bool include_pad = c.attrs().get_int("count_include_pad", 0) != 0;
  bool padded = false;
  for (int i = 0; i < r; ++i) padded = padded || w.pad_begin[i] || w.pad_end[i];
  ValueId g = c.dy();
  if (include_pad || !padded) {
    g = b.scale(g, 1.0 / static_cast<double>(w.kernel_volume()));
  } else {  // per-window count of the inputs inside the image: pool a ones plane with pads counted
    std::vector<int64_t> plane{1, 1};
    plane.insert(plane.end(), w.in_size.begin(), w.in_size.end());
    Attributes at = c.attrs();
    at.set("count_include_pad", int64_t{1});
    ValueId frac =
        b.op(OpType::AveragePool, {b.full(TensorType{b.dtype(g), Shape(plane)}, 1.0)}, at);
    g = b.div(g, b.scale(frac, static_cast<double>(w.kernel_volume())));
  }
  std::vector<int64_t> wshape{w.in_channels, 1};
  wshape.insert(wshape.end(), w.kernel.begin(), w.kernel.end());
  ValueId ones = b.full(TensorType{b.dtype(g), Shape(wshape)}, 1.0);
  std::vector<int64_t> pads = w.pad_begin, out_pad(r);
  pads.insert(pads.end(), w.pad_end.begin(), w.pad_end.end());
  for (int i = 0; i < r; ++i)
    out_pad[i] =
        w.in_size[i] - (w.strides[i] * (w.out_size[i] - 1) + (w.kernel[i] - 1) * w.dilations[i] +
                        1 - w.pad_begin[i] - w.pad_end[i]);
  Attributes at{{"strides", w.strides},
                {"dilations", w.dilations},
                {"pads", pads},
                {"group", w.in_channels},
                {"output_padding", out_pad}};
  c.set(0, b.op(OpType::ConvTranspose, {g, ones}, at));
}

void global_average_pool_rule(GradContext& c) {
  const Shape& x = c.x_shape(0);
  int64_t spatial = x.numel() / std::max<int64_t>(1, c.b.shape(c.dy()).numel());
  // Scaled before it is expanded: the same product per element, on the small tensor.
  c.set(0, c.b.expand(c.b.scale(c.dy(), 1.0 / static_cast<double>(spatial)), x));
}

// GlobalMaxPool: the whole gradient of a channel goes to the elements equal to its maximum.
void global_max_pool_rule(GradContext& c) {
  auto& b = c.b;
  Shape x = c.x_shape(0);
  ValueId hit = b.cast(b.op(OpType::Equal, {c.x(0), c.y()}), b.dtype(c.x(0)));
  c.set(0, b.mul(hit, b.expand(c.dy(), x)));
}

// A BatchNormalization's per-channel broadcast shape ([1, C, 1, ...] or [1, ..., C]) and the
// axes its statistics reduce.
struct ChannelAxes {
  Shape broadcast;
  std::vector<int64_t> reduced;
};

ChannelAxes channel_axes(const GradContext& c) {
  const Shape& xs = c.x_shape(0);
  int ch_axis = is_channels_last(c.node()) ? xs.rank() - 1 : 1;
  std::vector<int64_t> bshape(xs.rank(), 1), axes;
  bshape[ch_axis] = xs[ch_axis];
  for (int i = 0; i < xs.rank(); ++i)
    if (i != ch_axis) axes.push_back(i);
  return {Shape(bshape), axes};
}

// Inference-form BatchNormalization: y = (x - mean) * scale / sqrt(var + eps) + bias.
void batch_norm_rule(GradContext& c) {
  auto& b = c.b;
  if (c.needs(3) || c.needs(4))
    c.unsupported("gradients of the running mean/var are not supported");
  const ChannelAxes ca = channel_axes(c);
  const std::vector<int64_t>& axes = ca.reduced;
  auto per_channel = [&](int i) { return b.reshape(c.x(i), ca.broadcast); };
  double eps = c.attrs().get_float("epsilon", 1e-5);
  ValueId var = per_channel(4);
  ValueId rstd =
      b.op(OpType::Reciprocal, {b.op(OpType::Sqrt, {b.add(var, b.scalar_like(eps, var))})});
  ValueId g = c.dy();
  if (c.needs(0)) c.set(0, b.mul(g, b.mul(per_channel(1), rstd)));
  if (c.needs(1)) {
    ValueId xhat = b.mul(b.sub(c.x(0), per_channel(3)), rstd);
    c.set(1, b.reduce_sum(b.mul(g, xhat), axes, false));
  }
  if (c.needs(2)) c.set(2, b.reduce_sum(g, axes, false));
}

// LRN: y = x * s^-beta, s = bias + alpha / size * (B @ x^2) with B [C, C] the band of channels
// each window sums (ONNX: floor((size - 1) / 2) before, the rest after). Then
// dx = dy * s^-beta - 2 alpha beta / size * x * (B^T @ (dy * x * s^(-beta - 1))).
void lrn_rule(GradContext& c) {
  auto& b = c.b;
  Shape xs = c.x_shape(0);
  int64_t n = xs[0], ch = xs[1], sp = xs.numel() / std::max<int64_t>(1, n * ch);
  double alpha = c.attrs().get_float("alpha", 1e-4), beta = c.attrs().get_float("beta", 0.75);
  double bias = c.attrs().get_float("bias", 1.0);
  int64_t size = c.attrs().get_int("size", 1), before = (size - 1) / 2, after = size - 1 - before;
  if (b.dtype(c.x(0)) != DType::f32) c.unsupported("LRN's gradient rule needs f32");
  HostTensor band(DType::f32, Shape({ch, ch}));
  for (int64_t i = 0; i < ch; ++i)
    for (int64_t k = std::max<int64_t>(0, i - before); k <= std::min(ch - 1, i + after); ++k)
      band.data<float>()[i * ch + k] = 1.0f;
  ValueId bm = b.graph().add_constant("grad/lrn_band", std::move(band));
  ValueId x = b.reshape(c.x(0), Shape({n, ch, sp})), g = b.reshape(c.dy(), Shape({n, ch, sp}));
  ValueId s =
      b.add(b.scale(b.op(OpType::MatMul, {bm, b.mul(x, x)}), alpha / size), b.scalar_like(bias, x));
  ValueId direct = b.mul(g, b.op(OpType::Pow, {s, b.scalar_like(-beta, s)}));
  ValueId t = b.mul(b.mul(g, x), b.op(OpType::Pow, {s, b.scalar_like(-beta - 1, s)}));
  ValueId back = b.op(OpType::MatMul, {b.transpose(bm, {1, 0}), t});
  ValueId dx = b.sub(direct, b.scale(b.mul(x, back), 2.0 * alpha * beta / size));
  c.set(0, b.reshape(dx, xs));
}

}  // namespace

// Training mode, y = xhat * scale + bias with xhat = (x - mean) * rstd from the batch statistics:
// d(bias) = sum(dy), d(scale) = sum(dy * xhat), and
// dx = scale * rstd * (dy - d(bias) / n - xhat * d(scale) / n), n values per channel (PyTorch's
// batch_norm_backward). Differentiating the composition op by op gives the same values with four
// reductions over the activation and several more elementwise passes.
void batch_norm_training_rule(GradContext& c) {
  auto& b = c.b;
  const ChannelAxes ca = channel_axes(c);
  const Shape& bshape = ca.broadcast;
  const std::vector<int64_t>& axes = ca.reduced;
  ValueId g = c.dy(), xhat = c.x(3), rstd = c.x(4);
  ValueId dbias = c.needs(0) || c.needs(2) ? b.reduce_sum(g, axes, true) : kNoValue;
  ValueId dscale = c.needs(0) || c.needs(1) ? b.reduce_sum(b.mul(g, xhat), axes, true) : kNoValue;
  if (c.needs(1)) c.set(1, b.reshape(dscale, c.x_shape(1)));
  if (c.needs(2)) c.set(2, b.reshape(dbias, c.x_shape(2)));
  if (!c.needs(0)) return;
  double inv_n = static_cast<double>(bshape.numel()) / static_cast<double>(c.x_shape(0).numel());
  ValueId centered = b.sub(b.sub(g, b.scale(dbias, inv_n)), b.mul(xhat, b.scale(dscale, inv_n)));
  c.set(0, b.mul(b.mul(b.reshape(c.x(1), bshape), rstd), centered));
}

GradRule nn_grad_rule(OpType op) {
  switch (op) {
    case OpType::Softmax:
    case OpType::LogSoftmax:
      return softmax_rule;
    case OpType::LayerNormalization:
    case OpType::InstanceNormalization:
      return normalization_rule;
    case OpType::MaxPool:
      return max_pool_rule;
    case OpType::MaxPoolGrad:
      return max_pool_grad_rule;
    case OpType::AveragePool:
      return average_pool_rule;
    case OpType::GlobalAveragePool:
      return global_average_pool_rule;
    case OpType::BatchNormalization:
      return batch_norm_rule;
    case OpType::GlobalMaxPool:
      return global_max_pool_rule;
    case OpType::LRN:
      return lrn_rule;
    default:
      return nullptr;
  }
}

}  // namespace mimic::ir
