// Lowering of pools, normalizations, the softmax family, reductions and CumSum.
#include <fmt/format.h>
#include <cmath>

#include "backends/cuda/lowerer.h"
#include "base/error.h"
#include "frontend/ir/nn_geometry.h"
#include "frontend/ir/op_helpers.h"

namespace mimic::backends::cuda {
namespace {

using ir::DType;
using ir::OpType;

// Integer reductions the cpu backend defines (the others fall back to it).
bool integer_reduce_ok(OpType op) {
  return op == OpType::ReduceSum || op == OpType::ReduceMean || op == OpType::ReduceMax ||
         op == OpType::ReduceMin || op == OpType::ReduceProd || op == OpType::ReduceL1 ||
         op == OpType::ReduceSumSquare;
}

void lower_pool(Lowerer& l, const ir::Node& n) {
  ir::WindowGeometry g = ir::window_geometry(l.graph(), n);
  PoolParams p{};
  p.dt = to_dt(l.in_type(n, 0).dtype);
  p.is_max = n.op == OpType::MaxPool;
  p.include_pad = n.attrs.get_int("count_include_pad", 0) != 0;
  p.channels_last = g.channels_last;
  p.batch = g.batch;
  p.channels = g.in_channels;
  p.n = l.out_type(n, 0).shape.numel();
  p.w = make_window(g);
  BufRef x = l.in(n, 0);
  l.emit(PoolInstr{p, x, l.out(n, 0)});
}

void lower_global_pool(Lowerer& l, const ir::Node& n) {
  const ir::Shape& s = l.in_type(n, 0).shape;
  bool last = ir::is_channels_last(n);
  int64_t batch = s[0], c = last ? s.dim(-1) : s[1],
          sp = s.numel() / std::max<int64_t>(1, batch * c);
  ReduceParams p{};
  p.op = n.op == OpType::GlobalMaxPool ? OpType::ReduceMax : OpType::ReduceMean;
  p.in_dt = p.out_dt = to_dt(l.in_type(n, 0).dtype);
  p.outer = last ? batch : batch * c;
  p.extent = sp;
  p.inner = last ? c : 1;
  BufRef x = l.in(n, 0);
  l.emit(ReduceInstr{p, x, l.out(n, 0)});
}

void lower_batch_norm(Lowerer& l, const ir::Node& n) {
  const ir::Shape& s = l.in_type(n, 0).shape;
  bool last = ir::is_channels_last(n);
  int64_t batch = s[0], c = last ? s.dim(-1) : s[1],
          sp = s.numel() / std::max<int64_t>(1, batch * c);
  double eps = n.attrs.get_float("epsilon", 1e-5);
  BufRef mul, add;
  bool constant = true;
  for (int i = 1; i < 5; ++i) constant = constant && l.constant(n, i);
  if (constant) {
    // Folded on the host exactly as the cpu kernel folds them.
    ir::HostTensor scale = to_f32(*l.constant(n, 1)), bias = to_f32(*l.constant(n, 2));
    ir::HostTensor mean = to_f32(*l.constant(n, 3)), var = to_f32(*l.constant(n, 4));
    ir::HostTensor m(DType::f32, ir::Shape({c})), a(DType::f32, ir::Shape({c}));
    for (int64_t ch = 0; ch < c; ++ch) {
      float mv = static_cast<float>(scale.data<float>()[ch] /
                                    std::sqrt(static_cast<double>(var.data<float>()[ch]) + eps));
      m.data<float>()[ch] = mv;
      a.data<float>()[ch] = bias.data<float>()[ch] - mean.data<float>()[ch] * mv;
    }
    mul = l.upload(m, fmt::format("batch-norm scale of '{}'", n.name));
    add = l.upload(a, fmt::format("batch-norm shift of '{}'", n.name));
  } else {
    BnPrepParams q{};
    q.scale_dt = to_dt(l.in_type(n, 1).dtype);
    q.bias_dt = to_dt(l.in_type(n, 2).dtype);
    q.mean_dt = to_dt(l.in_type(n, 3).dtype);
    q.var_dt = to_dt(l.in_type(n, 4).dtype);
    q.channels = c;
    q.epsilon = eps;
    mul = l.scratch(c * 4, fmt::format("batch-norm scale of '{}'", n.name));
    add = l.scratch(c * 4, fmt::format("batch-norm shift of '{}'", n.name));
    BufRef sc = l.in(n, 1), bi = l.in(n, 2), me = l.in(n, 3), va = l.in(n, 4);
    l.emit(BnPrepInstr{q, sc, bi, me, va, mul, add});
  }
  BatchNormParams p{};
  p.dt = to_dt(l.in_type(n, 0).dtype);
  p.channels_last = last;
  p.n = s.numel();
  p.channels = c;
  p.spatial = sp;
  BufRef x = l.in(n, 0);
  l.emit(BatchNormInstr{p, x, mul, add, l.out(n, 0)});
}

// LayerNorm's scale/bias broadcast to the normalized shape: folded on the host when constant,
// else expanded on the device into scratch.
BufRef layer_norm_param(Lowerer& l, const ir::Node& n, int i, const ir::Shape& norm_shape, DT& dt) {
  if (!n.has_input(i)) return BufRef{};
  const ir::TensorType& t = l.in_type(n, i);
  if (const ir::HostTensor* c = l.constant(n, i)) {
    dt = DT::f32;
    return l.upload(expand_f32(*c, norm_shape),
                    fmt::format("layer-norm parameter {} of '{}'", i, n.name));
  }
  dt = to_dt(t.dtype);
  BufRef src = l.in(n, i);
  if (t.shape == norm_shape) return src;
  BufRef dst = l.scratch(norm_shape.numel() * esize_of(t.dtype),
                         fmt::format("layer-norm parameter {} of '{}'", i, n.name));
  l.emit(CopyInstr{
      copy_params(norm_shape.dims(), broadcast_strides(t.shape, norm_shape), 0, esize_of(t.dtype)),
      src, dst});
  return dst;
}

void lower_layer_norm(Lowerer& l, const ir::Node& n) {
  const ir::Shape& s = l.in_type(n, 0).shape;
  int axis = ir::normalize_axis(n.attrs.get_int("axis", -1), s.rank(), "axis");
  ir::Shape norm_shape(std::vector<int64_t>(s.dims().begin() + axis, s.dims().end()));
  RowNormParams p{};
  p.dt = to_dt(l.in_type(n, 0).dtype);
  p.rows = s.product(0, axis);
  p.length = s.product(axis, s.rank());
  p.epsilon = n.attrs.get_float("epsilon", 1e-5);
  BufRef scale = layer_norm_param(l, n, 1, norm_shape, p.scale_dt);
  BufRef bias = layer_norm_param(l, n, 2, norm_shape, p.bias_dt);
  p.has_scale = scale.valid();
  p.has_bias = bias.valid();
  BufRef x = l.in(n, 0);
  BufRef y = l.out(n, 0);
  BufRef mean = n.outputs.size() > 1 ? l.out(n, 1) : BufRef{};
  BufRef inv = n.outputs.size() > 2 ? l.out(n, 2) : BufRef{};
  p.write_mean = mean.valid();
  p.write_inv_std = inv.valid();
  l.emit(RowNormInstr{p, x, scale, bias, y, mean, inv});
}

void lower_instance_norm(Lowerer& l, const ir::Node& n) {
  const ir::Shape& s = l.in_type(n, 0).shape;
  RowNormParams p{};
  p.dt = to_dt(l.in_type(n, 0).dtype);
  p.scale_dt = to_dt(l.in_type(n, 1).dtype);
  p.bias_dt = to_dt(l.in_type(n, 2).dtype);
  p.per_channel = 1;
  p.has_scale = p.has_bias = 1;
  p.channels = s[1];
  p.rows = s[0] * s[1];
  p.length = s.numel() / std::max<int64_t>(1, p.rows);
  p.epsilon = n.attrs.get_float("epsilon", 1e-5);
  BufRef x = l.in(n, 0), scale = l.in(n, 1), bias = l.in(n, 2);
  l.emit(RowNormInstr{p, x, scale, bias, l.out(n, 0), BufRef{}, BufRef{}});
}

void lower_lrn(Lowerer& l, const ir::Node& n) {
  const ir::Shape& s = l.in_type(n, 0).shape;
  LrnParams p{};
  p.dt = to_dt(l.in_type(n, 0).dtype);
  p.n = s.numel();
  p.channels = s[1];
  p.spatial = s.numel() / std::max<int64_t>(1, s[0] * s[1]);
  p.size = n.attrs.require_int("size");
  p.alpha = n.attrs.get_float("alpha", 1e-4);
  p.beta = n.attrs.get_float("beta", 0.75);
  p.bias = n.attrs.get_float("bias", 1.0);
  BufRef x = l.in(n, 0);
  l.emit(LrnInstr{p, x, l.out(n, 0)});
}

void lower_softmax(Lowerer& l, const ir::Node& n) {
  const ir::Shape& s = l.in_type(n, 0).shape;
  int axis = ir::normalize_axis(n.attrs.get_int("axis", -1), s.rank(), "axis");
  bool coerce = n.attrs.get_int("coerce_2d", 0) != 0;
  SoftmaxParams p{};
  p.op = n.op;
  p.dt = to_dt(l.in_type(n, 0).dtype);
  p.outer = s.product(0, axis);
  p.dim = coerce ? s.product(axis, s.rank()) : s[axis];
  p.inner = coerce ? 1 : s.product(axis + 1, s.rank());
  BufRef x = l.in(n, 0);
  l.emit(SoftmaxInstr{p, x, l.out(n, 0)});
}

void lower_reduce(Lowerer& l, const ir::Node& n) {
  const ir::TensorType& t = l.in_type(n, 0);
  const ir::Shape& s = t.shape;
  std::vector<bool> reduced = ir::resolve_reduce_axes(l.graph(), n);
  std::vector<int> axes;
  for (int d = 0; d < s.rank(); ++d)
    if (reduced[d]) axes.push_back(d);
  ReduceParams p{};
  p.op = n.op;
  p.in_dt = p.out_dt = to_dt(t.dtype);
  BufRef x = l.in(n, 0);
  bool block = axes.empty() || axes.back() - axes.front() + 1 == static_cast<int>(axes.size());
  if (axes.empty()) {
    p.outer = s.numel();
    p.extent = p.inner = 1;
  } else if (block) {
    p.outer = s.product(0, axes.front());
    p.extent = s.product(axes.front(), axes.back() + 1);
    p.inner = s.product(axes.back() + 1, s.rank());
  } else {
    // Reduced axes moved last with one copy.
    std::vector<int64_t> perm;
    for (int pass = 0; pass < 2; ++pass)
      for (int d = 0; d < s.rank(); ++d)
        if (reduced[d] == (pass == 1)) perm.push_back(d);
    BufRef moved = l.scratch(s.numel() * esize_of(t.dtype),
                             fmt::format("'{}' input with reduced axes last", n.name));
    l.emit(CopyInstr{permute_params(s.dims(), perm, esize_of(t.dtype)), x, moved});
    x = moved;
    p.outer = 1;
    p.extent = 1;
    for (int d = 0; d < s.rank(); ++d) (reduced[d] ? p.extent : p.outer) *= s[d];
    p.inner = 1;
  }
  l.emit(ReduceInstr{p, x, l.out(n, 0)});
}

void lower_arg_reduce(Lowerer& l, const ir::Node& n) {
  const ir::Shape& s = l.in_type(n, 0).shape;
  int axis = ir::normalize_axis(n.attrs.get_int("axis", 0), s.rank(), "axis");
  ArgReduceParams p{};
  p.dt = to_dt(l.in_type(n, 0).dtype);
  p.is_max = n.op == OpType::ArgMax;
  p.select_last = n.attrs.get_int("select_last_index", 0) != 0;
  p.outer = s.product(0, axis);
  p.extent = s[axis];
  p.inner = s.product(axis + 1, s.rank());
  BufRef x = l.in(n, 0);
  l.emit(ArgReduceInstr{p, x, l.out(n, 0)});
}

void lower_cumsum(Lowerer& l, const ir::Node& n) {
  const ir::Shape& s = l.in_type(n, 0).shape;
  std::vector<int64_t> axis_values = ir::constant_ints(l.graph(), n, 1);
  int axis = ir::normalize_axis(axis_values.at(0), s.rank(), "CumSum axis");
  CumSumParams p{};
  p.dt = to_dt(l.in_type(n, 0).dtype);
  p.exclusive = n.attrs.get_int("exclusive", 0) != 0;
  p.reverse = n.attrs.get_int("reverse", 0) != 0;
  p.outer = s.product(0, axis);
  p.dim = s[axis];
  p.inner = s.product(axis + 1, s.rank());
  BufRef x = l.in(n, 0);
  l.emit(CumSumInstr{p, x, l.out(n, 0)});
}

}  // namespace

std::string check_nn(const ir::Graph& g, const ir::Node& n) {
  const ir::TensorType& t = g.value(n.inputs[0]).type;
  OpType op = n.op;
  if (ir::is_reduce(op)) {
    if (is_float_type(t.dtype)) return "";
    if ((t.dtype == DType::i32 || t.dtype == DType::i64) && integer_reduce_ok(op)) return "";
    return dtype_reason(n, t.dtype);
  }
  if (op == OpType::ArgMax || op == OpType::ArgMin)
    return t.dtype == DType::boolean ? dtype_reason(n, t.dtype) : "";
  if (op == OpType::CumSum) {
    if (!is_float_type(t.dtype) && t.dtype != DType::i32 && t.dtype != DType::i64)
      return dtype_reason(n, t.dtype);
    if (ir::constant_ints(g, n, 1).size() != 1) return "CumSum axis must be one constant value";
    return "";
  }
  if (!is_float_type(t.dtype)) return dtype_reason(n, t.dtype);
  if (op == OpType::MaxPool || op == OpType::AveragePool) {
    if (n.outputs.size() > 1) return "MaxPool's Indices output";
    ir::WindowGeometry geo = ir::window_geometry(g, n);
    if (geo.spatial_rank > kMaxSpatial)
      return fmt::format("{} spatial dims (kernels take 1 to {})", geo.spatial_rank, kMaxSpatial);
    return "";
  }
  if (op == OpType::BatchNormalization && n.outputs.size() > 1)
    return "BatchNormalization training outputs";
  if ((op == OpType::InstanceNormalization || op == OpType::LRN) && t.shape.rank() < 2)
    return fmt::format("{} needs rank >= 2", ir::op_name(op));
  return "";
}

void lower_nn(Lowerer& l, const ir::Node& n) {
  switch (n.op) {
    case OpType::MaxPool:
    case OpType::AveragePool:
      return lower_pool(l, n);
    case OpType::GlobalAveragePool:
    case OpType::GlobalMaxPool:
      return lower_global_pool(l, n);
    case OpType::BatchNormalization:
      return lower_batch_norm(l, n);
    case OpType::LayerNormalization:
      return lower_layer_norm(l, n);
    case OpType::InstanceNormalization:
      return lower_instance_norm(l, n);
    case OpType::LRN:
      return lower_lrn(l, n);
    case OpType::Softmax:
    case OpType::LogSoftmax:
    case OpType::Hardmax:
      return lower_softmax(l, n);
    case OpType::ArgMax:
    case OpType::ArgMin:
      return lower_arg_reduce(l, n);
    case OpType::CumSum:
      return lower_cumsum(l, n);
    default:
      return lower_reduce(l, n);
  }
}

}  // namespace mimic::backends::cuda
