#include "backends/tpu_emu/fusion.h"

#include <cmath>
#include <map>

#include "backends/common.h"
#include "frontend/ir/nn_geometry.h"
#include "frontend/ir/unary_math.h"

namespace mimic::backends::tpu_emu {

using ir::OpType;
using models::tpu::VectorFunc;

bool is_depthwise(const ir::Graph& g, const ir::Node& n) {
  if (n.op != OpType::Conv) return false;
  if (g.value(n.inputs[0]).type.shape.rank() == 5) return false;  // grouped 3-D GEMMs instead
  int64_t group = n.attrs.get_int("group", 1);
  const ir::Shape& x = g.value(n.inputs[0]).type.shape;
  int64_t c = ir::is_channels_last(n) ? x.dim(-1) : x[1];
  return group > 1 && group == c;
}

bool is_vector_conv_transpose(const ir::Graph& g, const ir::Node& n) {
  if (n.op != OpType::ConvTranspose || !g.value(n.inputs[1]).constant) return false;
  const ir::Shape& x = g.value(n.inputs[0]).type.shape;
  const ir::Shape& w = g.value(n.inputs[1]).type.shape;
  const int64_t group = n.attrs.get_int("group", 1);
  return x.rank() == 4 && group > 1 && w[1] == 1 &&
         (!n.has_input(2) || g.value(n.inputs[2]).constant) && !n.attrs.has("output_shape");
}

bool is_fusion_head(const ir::Graph& g, const ir::Node& n) {
  if (n.op == OpType::ConvTranspose) return !is_vector_conv_transpose(g, n);
  if (n.op == OpType::MatMul || n.op == OpType::Gemm) return true;
  return n.op == OpType::Conv && !is_depthwise(g, n);
}

bool heads_group(const ir::Graph& g, const ir::Node& n) {
  return is_fusion_head(g, n) || is_depthwise(g, n);
}

namespace {

// Clip's bounds, when they are f32 scalar constants (the vector unit takes them as parameters).
bool clip_bounds(const ir::Graph& g, const ir::Node& n, VectorFunc* f, float* p0, float* p1) {
  *f = VectorFunc::clip;
  *p0 = -INFINITY;
  *p1 = INFINITY;
  for (int i : {1, 2}) {
    if (!n.has_input(i)) continue;
    const ir::Value& v = g.value(n.inputs[i]);
    if (!v.constant || v.constant->dtype() != ir::DType::f32 || v.constant->numel() != 1)
      return false;
    (i == 1 ? *p0 : *p1) = v.constant->data<float>()[0];
  }
  return true;
}

// The vector-unit function of each unary op, and the attributes that become its parameters.
struct UnaryLowering {
  VectorFunc func;
  float ir::UnaryAttrs::*p0;
  float ir::UnaryAttrs::*p1;
};

// clang-format off
const std::map<OpType, UnaryLowering>& unary_lowerings() {
  static const std::map<OpType, UnaryLowering> table{
      {OpType::Relu, {VectorFunc::relu, nullptr, nullptr}},
      {OpType::Sigmoid, {VectorFunc::sigmoid, nullptr, nullptr}},
      {OpType::Tanh, {VectorFunc::tanh, nullptr, nullptr}},
      {OpType::Exp, {VectorFunc::exp, nullptr, nullptr}},
      {OpType::Log, {VectorFunc::log, nullptr, nullptr}},
      {OpType::Sqrt, {VectorFunc::sqrt, nullptr, nullptr}},
      {OpType::Reciprocal, {VectorFunc::reciprocal, nullptr, nullptr}},
      {OpType::Abs, {VectorFunc::abs, nullptr, nullptr}},
      {OpType::Neg, {VectorFunc::neg, nullptr, nullptr}},
      {OpType::Erf, {VectorFunc::erf, nullptr, nullptr}},
      {OpType::Softplus, {VectorFunc::softplus, nullptr, nullptr}},
      {OpType::Softsign, {VectorFunc::softsign, nullptr, nullptr}},
      {OpType::Floor, {VectorFunc::floor, nullptr, nullptr}},
      {OpType::Ceil, {VectorFunc::ceil, nullptr, nullptr}},
      {OpType::Round, {VectorFunc::round, nullptr, nullptr}},
      {OpType::Sign, {VectorFunc::sign, nullptr, nullptr}},
      {OpType::Sin, {VectorFunc::sin, nullptr, nullptr}},
      {OpType::Cos, {VectorFunc::cos, nullptr, nullptr}},
      {OpType::Identity, {VectorFunc::identity, nullptr, nullptr}},
      {OpType::Dropout, {VectorFunc::identity, nullptr, nullptr}},
      {OpType::HardSwish, {VectorFunc::hard_swish, nullptr, nullptr}},
      {OpType::Tan, {VectorFunc::tan, nullptr, nullptr}},
      {OpType::Asin, {VectorFunc::asin, nullptr, nullptr}},
      {OpType::Acos, {VectorFunc::acos, nullptr, nullptr}},
      {OpType::Atan, {VectorFunc::atan, nullptr, nullptr}},
      {OpType::Sinh, {VectorFunc::sinh, nullptr, nullptr}},
      {OpType::Cosh, {VectorFunc::cosh, nullptr, nullptr}},
      {OpType::Asinh, {VectorFunc::asinh, nullptr, nullptr}},
      {OpType::Acosh, {VectorFunc::acosh, nullptr, nullptr}},
      {OpType::Atanh, {VectorFunc::atanh, nullptr, nullptr}},
      {OpType::ThresholdedRelu, {VectorFunc::thresholded_relu, &ir::UnaryAttrs::alpha, nullptr}},
      {OpType::Celu, {VectorFunc::celu, &ir::UnaryAttrs::alpha, nullptr}},
      {OpType::Shrink, {VectorFunc::shrink, &ir::UnaryAttrs::bias, &ir::UnaryAttrs::lambd}},
      {OpType::LeakyRelu, {VectorFunc::leaky_relu, &ir::UnaryAttrs::alpha, nullptr}},
      {OpType::Elu, {VectorFunc::elu, &ir::UnaryAttrs::alpha, nullptr}},
      {OpType::Selu, {VectorFunc::selu, &ir::UnaryAttrs::alpha, &ir::UnaryAttrs::gamma}},
      {OpType::HardSigmoid, {VectorFunc::hard_sigmoid, &ir::UnaryAttrs::alpha, &ir::UnaryAttrs::beta}},
  };
  return table;
}
// clang-format on

}  // namespace

bool unary_func(const ir::Graph& g, const ir::Node& n, VectorFunc* f, float* p0, float* p1) {
  const ir::UnaryAttrs u = ir::unary_attrs(n);
  *p0 = 0;
  *p1 = 0;
  if (n.op == OpType::Gelu) {
    *f = u.gelu_tanh ? VectorFunc::gelu_tanh : VectorFunc::gelu;
    return true;
  }
  if (n.op == OpType::Clip) return clip_bounds(g, n, f, p0, p1);
  auto it = unary_lowerings().find(n.op);
  if (it == unary_lowerings().end()) return false;
  *f = it->second.func;
  if (it->second.p0) *p0 = u.*(it->second.p0);
  if (it->second.p1) *p1 = u.*(it->second.p1);
  return true;
}

bool binary_func(OpType op, VectorFunc* f) {
  switch (op) {
    case OpType::Add:
      *f = VectorFunc::add;
      return true;
    case OpType::Sub:
      *f = VectorFunc::sub;
      return true;
    case OpType::Mul:
      *f = VectorFunc::mul;
      return true;
    case OpType::Div:
      *f = VectorFunc::div;
      return true;
    case OpType::Pow:
      *f = VectorFunc::pow;
      return true;
    case OpType::PRelu:
      *f = VectorFunc::prelu;
      return true;
    case OpType::Max:
      *f = VectorFunc::max;
      return true;
    case OpType::Min:
      *f = VectorFunc::min;
      return true;
    default:
      return false;
  }
}

namespace {

bool all_constant_inputs(const ir::Graph& g, const ir::Node& n, int from) {
  for (int i = from; i < n.num_inputs(); ++i)
    if (n.has_input(i) && !g.value(n.inputs[i]).constant) return false;
  return true;
}

// A constant that broadcasts along one axis of `out` only (a per-channel or per-column bias).
bool is_bias_for(const ir::Graph& g, ir::ValueId bias, const ir::Shape& out, int axis) {
  const ir::Value& b = g.value(bias);
  if (!b.constant || b.type.dtype != ir::DType::f32) return false;
  const ir::Shape& s = b.type.shape;
  if (s.rank() > out.rank()) return false;
  for (int i = 0; i < s.rank(); ++i) {
    int o = out.rank() - s.rank() + i;
    if (s[i] != 1 && !(o == axis && s[i] == out[o])) return false;
  }
  return true;
}

// An activation of the op table's epilogue column that the vector unit computes (Clip with
// constant bounds).
bool is_activation(const ir::Graph& g, const ir::Node& n) {
  VectorFunc f;
  float p0, p1;
  return ir::is_epilogue_activation(n.op) && unary_func(g, n, &f, &p0, &p1);
}

// Plans Conv node i as a weight gradient read in place when its operands' Transposes (and x's
// crop) feed nothing else: they are then emitted with it and never run.
void plan_weight_grad(const ir::Graph& g, int i, const std::vector<int>& consumers,
                      FusionPlan& plan) {
  ir::WeightGradientConv m;
  if (!ir::match_weight_gradient_conv(g, g.node(i), &m) || !m.channels_last ||
      m.forward.spatial_rank > 2)
    return;
  std::vector<int> absorbed{m.x_transpose, m.dy_transpose};
  if (m.crop >= 0) absorbed.push_back(m.crop);
  for (int t : absorbed)
    if (consumers[g.node(t).outputs[0]] != 1 || plan.group_of[t] >= 0) return;
  for (int t : absorbed) plan.emit_at[t] = i;
  plan.weight_grad_in_place[i] = true;
}

}  // namespace

FusionPlan plan_fusion(const ir::Graph& g, bool in_place_weight_grads) {
  FusionPlan plan;
  const int nn = g.num_nodes();
  plan.group_of.assign(nn, -1);
  plan.weight_grad_in_place.assign(nn, false);
  plan.emit_at.resize(nn);
  for (int i = 0; i < nn; ++i) plan.emit_at[i] = i;
  std::vector<int> consumers(g.num_values(), 0), consumer(g.num_values(), -1);
  for (int i = 0; i < nn; ++i) {
    if (is_folded(g, g.node(i))) continue;
    for (ir::ValueId v : g.node(i).inputs)
      if (v != ir::kNoValue) {
        consumers[v]++;
        consumer[v] = i;
      }
  }
  for (ir::ValueId v : g.outputs()) consumers[v] += 2;  // never fuse away a graph output
  auto next = [&](ir::ValueId v) { return consumers[v] == 1 ? consumer[v] : -1; };
  for (int i = 0; i < nn; ++i) {
    const ir::Node& head = g.node(i);
    if (plan.group_of[i] >= 0 || is_folded(g, head) || !heads_group(g, head)) continue;
    const bool depthwise = is_depthwise(g, head);
    if (in_place_weight_grads && head.op == OpType::Conv) plan_weight_grad(g, i, consumers, plan);
    std::vector<int> group{i};
    ir::ValueId cur = head.outputs[0];
    const ir::Shape& out = g.value(cur).type.shape;
    const bool conv = head.op == OpType::Conv || head.op == OpType::ConvTranspose;
    // 3-D convs compute output slices in [N*OD, M, OH, OW] order: no residual in their epilogue.
    const bool slices = head.op == OpType::Conv && out.rank() == 5;
    int channel_axis = conv ? (ir::is_channels_last(head) ? out.rank() - 1 : 1) : out.rank() - 1;
    int stage = 0;  // 0: head, 1: after BN, 2: after bias, 3: after residual, 4: after activation
    // A runtime bias (a training step's parameter) takes the epilogue's bias: nothing folds into
    // it.
    if (conv && head.has_input(2) && !g.value(head.inputs[2]).constant) stage = 2;
    for (int j; stage < 4 && (j = next(cur)) >= 0 && plan.group_of[j] < 0;) {
      const ir::Node& n = g.node(j);
      // A training step's phases do not fuse: a weight gradient's product is all-reduced
      // before the optimizer reads it, and fused into the update it would be emitted (and its
      // operands kept in HBM) at the end of the step.
      if (n.phase != head.phase) break;
      int other = n.op == OpType::Add ? (n.inputs[0] == cur ? 1 : 0) : -1;
      if (stage < 1 && conv && g.value(head.inputs[1]).constant &&  // folds into constant weights
          n.op == OpType::BatchNormalization && n.inputs[0] == cur &&
          all_constant_inputs(g, n, 1) && ir::is_channels_last(n) == ir::is_channels_last(head) &&
          n.outputs.size() == 1) {
        stage = 1;
      } else if (stage < 2 && other >= 0 && is_bias_for(g, n.inputs[other], out, channel_axis)) {
        stage = 2;
      } else if (stage < 3 && !depthwise && !slices && other >= 0 &&
                 !g.value(n.inputs[other]).constant &&
                 !(head.op == OpType::Gemm && head.has_input(2)) &&  // C may be the residual
                 g.value(n.inputs[other]).type == g.value(cur).type && n.inputs[0] != n.inputs[1]) {
        stage = 3;
      } else if (is_activation(g, n)) {
        stage = 4;
      } else {
        break;
      }
      group.push_back(j);
      cur = n.outputs[0];
    }
    int id = static_cast<int>(plan.groups.size());
    for (int n : group) {
      plan.group_of[n] = id;
      plan.emit_at[n] = group.back();
    }
    plan.fused_nodes += static_cast<int>(group.size()) - 1;
    plan.groups.push_back(std::move(group));
  }
  return plan;
}

}  // namespace mimic::backends::tpu_emu
