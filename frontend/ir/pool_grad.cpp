#include "frontend/ir/pool_grad.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "base/error.h"

namespace mimic::ir {
namespace {

bool next_offset(std::vector<int64_t>& k, const std::vector<int64_t>& dims) {
  for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
    if (++k[d] < dims[d]) return true;
    k[d] = 0;
  }
  return false;
}

// Channels-last [N, spatial..., C] to channels-first [N, C, spatial...] and back.
ValueId to_channels_first(GraphBuilder& b, ValueId v) {
  int rank = b.shape(v).rank();
  std::vector<int64_t> perm{0, rank - 1};
  for (int i = 1; i < rank - 1; ++i) perm.push_back(i);
  return b.transpose(v, perm);
}

ValueId to_channels_last(GraphBuilder& b, ValueId v) {
  int rank = b.shape(v).rank();
  std::vector<int64_t> perm{0};
  for (int i = 2; i < rank; ++i) perm.push_back(i);
  perm.push_back(1);
  return b.transpose(v, perm);
}

// The windows of channels-first x and y's first-maximum mask, [K, outputs] each: the first
// window element equal to the output, found as the equality mask weighted by K minus the window
// position peaking at the first 1; the mask times (weighted == its max over the window) is that
// element alone (a window with no equal element, a NaN's, gets none). Small integers in f32
// throughout, exact, and every op runs on the chips (a CumSum ran on tpu-emu's host; an ArgMax
// would give int64, which the IPU lacks). The window axis leads so that the output and its
// gradient broadcast over it, on [K, outputs] matrices: one long minor dimension instead of the
// pool's small spatial ones.
struct FirstMaximum {
  WindowGeometry geometry;
  Shape windows;  // [K, N, C, out...]
  ValueId mask;   // [K, outputs], 1 at each window's first maximum
};

FirstMaximum first_maximum(GraphBuilder& b, const Node& n, ValueId x, ValueId y) {
  if (b.dtype(x) != DType::f32)
    throw UnsupportedOpError(fmt::format("{}: MaxPool's gradient needs f32, X is {}",
                                         describe(b.graph(), n), dtype_name(b.dtype(x))),
                             {op_name(n.op)});
  Node pool = n;
  pool.attrs.erase("layout");
  pool.inputs = {x};
  FirstMaximum f{window_geometry(pool, b.shape(x), nullptr, WindowKind::pool), {}, kNoValue};
  ValueId xw = window_tensor(b, x, f.geometry, -std::numeric_limits<float>::infinity());
  f.windows = b.shape(xw);
  int64_t k = f.windows[0], m = b.shape(y).numel();
  ValueId eq = b.cast(b.op(OpType::Equal, {b.reshape(xw, Shape({k, m})), b.reshape(y, Shape({m}))}),
                      DType::f32);
  HostTensor rank_weights(DType::f32, Shape({k, 1}));
  for (int64_t i = 0; i < k; ++i) rank_weights.data<float>()[i] = static_cast<float>(k - i);
  ValueId ranked = b.mul(eq, b.graph().add_constant("grad/window_rank", std::move(rank_weights)));
  ValueId best = b.op(OpType::ReduceMax, {ranked, b.ints({0})}, {{"keepdims", int64_t{1}}});
  f.mask = b.mul(eq, b.cast(b.op(OpType::Equal, {ranked, best}), DType::f32));
  return f;
}

}  // namespace

// For each output position, the K inputs of its window (padding reads `pad_value`), gathered
// with one strided Slice per kernel offset into [K, N, C, out...].
ValueId window_tensor(GraphBuilder& b, ValueId x, const WindowGeometry& w, double pad_value) {
  int r = w.spatial_rank;
  std::vector<int64_t> pads(2 * (r + 2), 0), axes, steps;
  for (int i = 0; i < r; ++i) {
    int64_t extent = w.strides[i] * (w.out_size[i] - 1) + (w.kernel[i] - 1) * w.dilations[i] + 1;
    pads[2 + i] = w.pad_begin[i];
    pads[r + 4 + i] = std::max<int64_t>(0, extent - w.in_size[i] - w.pad_begin[i]);
    axes.push_back(2 + i);
    steps.push_back(w.strides[i]);
  }
  ValueId xp = b.op(OpType::Pad, {x, b.ints(pads), b.scalar_like(pad_value, x)});
  std::vector<ValueId> parts;
  std::vector<int64_t> k(r, 0);
  do {
    std::vector<int64_t> starts, ends;
    for (int i = 0; i < r; ++i) {
      starts.push_back(k[i] * w.dilations[i]);
      ends.push_back(starts.back() + w.strides[i] * (w.out_size[i] - 1) + 1);
    }
    ValueId s =
        b.op(OpType::Slice, {xp, b.ints(starts), b.ints(ends), b.ints(axes), b.ints(steps)});
    parts.push_back(b.op(OpType::Unsqueeze, {s, b.ints({0})}));
  } while (next_offset(k, w.kernel));
  return parts.size() == 1 ? parts[0] : b.op(OpType::Concat, parts, {{"axis", int64_t{0}}});
}

// A ConvTranspose whose one-hot kernels put window element j of channel c back at its input
// position: the transpose of window_tensor(), summing where windows overlap.
ValueId scatter_windows(GraphBuilder& b, ValueId windows, const WindowGeometry& w) {
  int r = w.spatial_rank;
  int64_t c = w.in_channels, kv = w.kernel_volume();
  std::vector<int64_t> perm{1, 2, 0};
  for (int i = 0; i < r; ++i) perm.push_back(3 + i);
  std::vector<int64_t> merged{w.batch, c * kv};
  merged.insert(merged.end(), w.out_size.begin(), w.out_size.end());
  ValueId cols = b.reshape(b.transpose(windows, perm), Shape(merged));
  std::vector<int64_t> wshape{c * kv, 1};
  wshape.insert(wshape.end(), w.kernel.begin(), w.kernel.end());
  HostTensor onehot(b.dtype(windows), Shape(wshape));
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t j = 0; j < kv; ++j) onehot.data<float>()[(ch * kv + j) * kv + j] = 1.0f;
  ValueId kernel = b.graph().add_constant("grad/onehot", std::move(onehot));
  std::vector<int64_t> pad_end(r), out_pad(r);
  for (int i = 0; i < r; ++i) {
    int64_t extent = w.strides[i] * (w.out_size[i] - 1) + (w.kernel[i] - 1) * w.dilations[i] + 1;
    int64_t rest = w.in_size[i] + w.pad_begin[i] - extent;  // input rows after the last window
    pad_end[i] = std::max<int64_t>(0, -rest);
    out_pad[i] = std::max<int64_t>(0, rest);
  }
  std::vector<int64_t> pads = w.pad_begin;
  pads.insert(pads.end(), pad_end.begin(), pad_end.end());
  Attributes at{{"strides", w.strides},
                {"dilations", w.dilations},
                {"pads", pads},
                {"group", c},
                {"output_padding", out_pad}};
  return b.op(OpType::ConvTranspose, {cols, kernel}, at);
}

ValueId expand_max_pool_grad(GraphBuilder& b, const Node& n) {
  const bool last = is_channels_last(n);
  auto first = [&](ValueId v) { return last ? to_channels_first(b, v) : v; };
  ValueId y = first(n.inputs.at(1)), dy = first(n.inputs.at(2));
  FirstMaximum f = first_maximum(b, n, first(n.inputs.at(0)), y);
  ValueId contrib = b.mul(f.mask, b.reshape(dy, Shape({b.shape(dy).numel()})));
  ValueId dx = scatter_windows(b, b.reshape(contrib, f.windows), f.geometry);
  return last ? to_channels_last(b, dx) : dx;
}

ValueId max_pool_grad_of_dy(GraphBuilder& b, const Node& n, ValueId g) {
  const bool last = is_channels_last(n);
  auto first = [&](ValueId v) { return last ? to_channels_first(b, v) : v; };
  ValueId y = first(n.inputs.at(1));
  FirstMaximum f = first_maximum(b, n, first(n.inputs.at(0)), y);
  int64_t k = f.windows[0], m = b.shape(y).numel();
  ValueId gw = b.reshape(window_tensor(b, first(g), f.geometry, 0.0), Shape({k, m}));
  ValueId picked = b.reshape(b.reduce_sum(b.mul(f.mask, gw), {0}, false), b.shape(y));
  return last ? to_channels_last(b, picked) : picked;
}

}  // namespace mimic::ir
