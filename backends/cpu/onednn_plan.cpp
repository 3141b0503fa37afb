#include "backends/cpu/onednn_plan.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "backends/common.h"
#include "frontend/ir/nn_geometry.h"
#include "frontend/ir/op_helpers.h"

namespace mimic::backends::cpu::onednn {
namespace {

using ir::DType;
using ir::OpType;

bool is_f32(const ir::Graph& g, ir::ValueId v) {
  return v != ir::kNoValue && g.value(v).typed && g.value(v).type.dtype == DType::f32;
}

bool is_const(const ir::Graph& g, ir::ValueId v) {
  return v != ir::kNoValue && g.value(v).constant != nullptr;
}

bool all_f32(const ir::Graph& g, const ir::Node& n) {
  for (ir::ValueId v : n.inputs)
    if (v != ir::kNoValue && !is_f32(g, v)) return false;
  for (ir::ValueId v : n.outputs)
    if (!is_f32(g, v)) return false;
  return true;
}

int spatial_rank(const ir::Graph& g, const ir::Node& n) {
  return g.value(n.inputs[0]).type.shape.rank() - 2;
}

bool window_ok(const ir::Graph& g, const ir::Node& n) {
  int sr = spatial_rank(g, n);
  if (sr < 1 || sr > 3) return false;
  for (int64_t d : n.attrs.get_ints("dilations", {}))
    if (d != 1 && n.op != OpType::Conv) return false;
  return true;
}

bool gemm_ok(const ir::Graph& g, const ir::Node& n) {
  if (n.attrs.get_float("alpha", 1.0) != 1.0) return false;
  if (!n.has_input(2)) return true;
  if (n.attrs.get_float("beta", 1.0) != 1.0) return false;
  const ir::Shape& c = g.value(n.inputs[2]).type.shape;
  const ir::Shape& y = g.value(n.outputs[0]).type.shape;
  bool row = c.rank() == 1 ? c[0] == y[1] : (c.rank() == 2 && c[0] == 1 && c[1] == y[1]);
  return row ? is_const(g, n.inputs[2]) : c == y;
}

bool pool_ok(const ir::Graph& g, const ir::Node& n) {
  if (n.outputs.size() != 1 || !window_ok(g, n)) return false;
  if (n.op == OpType::MaxPool) return n.attrs.get_int("storage_order", 0) == 0;
  // ONNX excludes ceil_mode's extra window cells from the average even with count_include_pad.
  return n.attrs.get_int("ceil_mode", 0) == 0;
}

// A tensor with a zero dimension (a batch of 0): oneDNN's matmul with post-ops divides by zero
// creating such a primitive, and the reference kernels handle every empty tensor.
bool touches_empty_tensor(const ir::Graph& g, const ir::Node& n) {
  auto empty = [&](ir::ValueId v) {
    const std::vector<int64_t>& d = g.value(v).type.shape.dims();
    return std::find(d.begin(), d.end(), 0) != d.end();
  };
  return std::any_of(n.inputs.begin(), n.inputs.end(),
                     [&](ir::ValueId v) { return v != ir::kNoValue && empty(v); }) ||
         std::any_of(n.outputs.begin(), n.outputs.end(), empty);
}

}  // namespace

bool supports_head(const ir::Graph& g, const ir::Node& n) {
  if (is_folded(g, n) || !all_f32(g, n) || touches_empty_tensor(g, n)) return false;
  switch (n.op) {
    case OpType::Conv:  // weights and bias constant (reordered once) or graph values (training)
    case OpType::ConvTranspose:
      return window_ok(g, n);
    case OpType::MatMul:
      return g.value(n.inputs[0]).type.shape.rank() >= 2 &&
             g.value(n.inputs[1]).type.shape.rank() >= 2;
    case OpType::Gemm:
      return gemm_ok(g, n);
    case OpType::MaxPool:
    case OpType::AveragePool:
      return pool_ok(g, n);
    case OpType::GlobalAveragePool:
    case OpType::GlobalMaxPool:
      return window_ok(g, n);
    // LogSoftmax stays on the reference kernel: oneDNN's differs by ~2e-7 and 100 training steps
    // of cross entropy (tests/python/test_train.py, against PyTorch) grow that to 1e-3.
    case OpType::Softmax:
      return n.attrs.get_int("coerce_2d", 0) == 0 && g.value(n.inputs[0]).type.shape.rank() >= 1;
    case OpType::Gelu:
      return true;
    case OpType::Transpose:
      return g.value(n.inputs[0]).type.shape.rank() >= 2 &&
             g.value(n.inputs[0]).type.shape.numel() > 0;
    default:
      return false;
  }
}

namespace {

class Planner {
 public:
  explicit Planner(const ir::Graph& g) : g_(g), uses_(g.num_values(), 0) {
    for (const ir::Node& n : g.nodes())
      for (ir::ValueId v : n.inputs)
        if (v != ir::kNoValue) ++uses_[v];
    for (ir::ValueId v : g.outputs()) uses_[v] += 2;  // never fuse away a graph output
  }

  // Grows the group of `head`; `taken` marks nodes already in earlier groups.
  Group grow(int head, const std::vector<bool>& taken) {
    taken_ = &taken;
    Group grp;
    grp.head = head;
    grp.nodes.push_back(head);
    grp.output = g_.node(head).outputs[0];
    OpType op = g_.node(head).op;
    if (op != OpType::Conv && op != OpType::MatMul && op != OpType::Gemm) return grp;
    if (op == OpType::Conv && try_weight_gradient(grp)) return grp;
    if (op == OpType::Conv) try_batch_norm(grp);
    if (op == OpType::MatMul || (op == OpType::Gemm && !g_.node(head).has_input(2))) try_bias(grp);
    bool gemm_sum = op == OpType::Gemm && g_.node(head).has_input(2) &&
                    g_.value(g_.node(head).inputs[2]).type.shape == g_.value(grp.output).type.shape;
    if (!gemm_sum) try_residual(grp);
    try_activation(grp);
    if (grp.activation == Activation::none) try_swish(grp);
    if (op == OpType::MatMul) try_transposed_operands(grp);
    return grp;
  }

 private:
  // The single consumer of the group's output, when the output is no graph output.
  const ir::Node* sole_consumer(const Group& grp, int* index) const {
    if (uses_[grp.output] != 1) return nullptr;
    for (int i = grp.last() + 1; i < g_.num_nodes(); ++i)
      for (ir::ValueId v : g_.node(i).inputs)
        if (v == grp.output) {
          *index = i;
          return (*taken_)[i] ? nullptr : &g_.node(i);
        }
    return nullptr;
  }

  void append(Group& grp, int index) {
    grp.nodes.push_back(index);
    grp.output = g_.node(index).outputs[0];
  }

  // The Add operand that is not the group's output, or kNoValue.
  ir::ValueId other_operand(const Group& grp, const ir::Node& add) const {
    if (add.op != OpType::Add || add.inputs.size() != 2 || !all_f32(g_, add)) return ir::kNoValue;
    if (add.inputs[0] == add.inputs[1]) return ir::kNoValue;
    return add.inputs[0] == grp.output ? add.inputs[1] : add.inputs[0];
  }

  void try_batch_norm(Group& grp) {
    const ir::Node& conv = g_.node(grp.head);
    if (!is_const(g_, conv.inputs[1]) || (conv.has_input(2) && !is_const(g_, conv.inputs[2])))
      return;  // folding rewrites the weights: only constant ones
    int i = -1;
    const ir::Node* bn = sole_consumer(grp, &i);
    if (!bn || bn->op != OpType::BatchNormalization || bn->outputs.size() != 1 || !all_f32(g_, *bn))
      return;
    if (bn->inputs[0] != grp.output ||
        ir::is_channels_last(*bn) != ir::is_channels_last(g_.node(grp.head)))
      return;
    for (int k = 1; k <= 4; ++k)
      if (!is_const(g_, bn->inputs[k])) return;
    grp.batch_norm = i;
    append(grp, i);
  }

  void try_bias(Group& grp) {
    int i = -1;
    const ir::Node* add = sole_consumer(grp, &i);
    if (!add) return;
    ir::ValueId b = other_operand(grp, *add);
    if (b == ir::kNoValue || !is_const(g_, b)) return;
    const ir::Shape& bs = g_.value(b).type.shape;
    const ir::Shape& ys = g_.value(grp.output).type.shape;
    if (bs.rank() < 1 || bs.rank() > ys.rank() || bs.dim(-1) != ys.dim(-1) ||
        bs.numel() != bs.dim(-1))
      return;
    if (g_.value(add->outputs[0]).type.shape != ys) return;
    grp.bias_add = b;
    append(grp, i);
  }

  void try_residual(Group& grp) {
    int i = -1;
    const ir::Node* add = sole_consumer(grp, &i);
    if (!add) return;
    ir::ValueId r = other_operand(grp, *add);
    if (r == ir::kNoValue || g_.value(r).type.shape != g_.value(grp.output).type.shape) return;
    grp.residual = r;
    append(grp, i);
  }

  void try_activation(Group& grp) {
    int i = -1;
    const ir::Node* n = sole_consumer(grp, &i);
    if (!n || !all_f32(g_, *n) || n->inputs[0] != grp.output) return;
    if (!ir::is_epilogue_activation(n->op)) return;
    if (n->op == OpType::Relu) {
      grp.activation = Activation::relu;
    } else if (n->op == OpType::Gelu) {
      std::string approx = n->attrs.get_string("approximate", "none");
      grp.activation = approx == "tanh" ? Activation::gelu_tanh : Activation::gelu_erf;
    } else if (n->op == OpType::Clip && clip_bounds(*n, grp)) {
      grp.activation = Activation::clip;
    } else {
      return;
    }
    append(grp, i);
  }

  // SiLU as exported models write it, Mul(y, Sigmoid(y)) of the group's output y read by those
  // two nodes alone: oneDNN's swish post-op (EfficientNet, MobileNetV3's SE blocks, YOLO...).
  void try_swish(Group& grp) {
    const ir::ValueId y = grp.output;
    if (uses_[y] != 2) return;
    int s = -1, m = -1;
    for (int i = grp.last() + 1; i < g_.num_nodes() && (s < 0 || m < 0); ++i) {
      const ir::Node& n = g_.node(i);
      if (n.op == OpType::Sigmoid && n.inputs[0] == y) s = i;
      if (n.op == OpType::Mul && s >= 0 && n.inputs.size() == 2) {
        const ir::ValueId sig = g_.node(s).outputs[0];
        if ((n.inputs[0] == y && n.inputs[1] == sig) || (n.inputs[0] == sig && n.inputs[1] == y))
          m = i;
      }
    }
    if (s < 0 || m < 0 || (*taken_)[s] || (*taken_)[m] || uses_[g_.node(s).outputs[0]] != 1 ||
        !all_f32(g_, g_.node(s)) || !all_f32(g_, g_.node(m)))
      return;
    grp.activation = Activation::swish;
    append(grp, s);
    append(grp, m);
  }

  // Operands made by a Transpose that swaps the last two axes only, read by this MatMul alone.
  void try_transposed_operands(Group& grp) {
    const ir::Node& mm = g_.node(grp.head);
    for (int k = 0; k < 2; ++k) {
      ir::ValueId v = mm.inputs[k];
      int t = g_.value(v).producer;
      if (t < 0 || (*taken_)[t] || uses_[v] != 1 || g_.node(t).op != OpType::Transpose) continue;
      const ir::Node& tr = g_.node(t);
      int rank = g_.value(v).type.shape.rank();
      std::vector<int64_t> perm = ir::resolve_perm(tr, rank);
      bool swap_last = rank >= 2 && perm[rank - 1] == rank - 2 && perm[rank - 2] == rank - 1;
      for (int d = 0; d + 2 < rank; ++d) swap_last = swap_last && perm[d] == d;
      if (!swap_last || !all_f32(g_, tr) || is_const(g_, tr.inputs[0])) continue;
      grp.transposed[k] = t;
      grp.nodes.insert(grp.nodes.begin() + 1, t);
    }
  }

  // The sole consumer of `v` when it is a node of kind `op` not yet taken, else -1.
  int sole(ir::ValueId v, OpType op) const {
    if (uses_[v] != 1) return -1;
    for (int i = g_.value(v).producer + 1; i < g_.num_nodes(); ++i)
      for (ir::ValueId in : g_.node(i).inputs)
        if (in == v) return (*taken_)[i] || g_.node(i).op != op ? -1 : i;
    return -1;
  }

  // A Conv as conv_weight_grad (grad_rules_linear.cpp) writes it for one group: x transposed to
  // [C, spatial..., N] and dy to [M, N, out...] (from channels-first or channels-last layouts), its
  // [C, k..., M] result reshaped to [C*K, M], transposed and reshaped to W's [M, C, k...]. It runs
  // as oneDNN's backward-weights convolution of x by dy, straight into W's layout, as XLA's GPU
  // backend turns such a convolution into cuDNN's backward-filter call.
  bool try_weight_gradient(Group& grp) {
    const ir::Node& conv = g_.node(grp.head);
    ir::WeightGradientConv m;
    if (!ir::match_weight_gradient_conv(g_, conv, &m)) return false;
    const int tx = m.x_transpose, tdy = m.dy_transpose, rank = g_.value(m.x).type.shape.rank();
    for (int t : {tx, tdy})
      if ((*taken_)[t] || !all_f32(g_, g_.node(t))) return false;
    const int r1 = sole(grp.output, OpType::Reshape);
    const int t = r1 < 0 ? -1 : sole(g_.node(r1).outputs[0], OpType::Transpose);
    const int r2 = t < 0 ? -1 : sole(g_.node(t).outputs[0], OpType::Reshape);
    if (r2 < 0 || ir::resolve_perm(g_.node(t), 2) != std::vector<int64_t>{1, 0}) return false;
    const ir::Shape &y = g_.value(grp.output).type.shape,
                    &w = g_.value(g_.node(r2).outputs[0]).type.shape;
    if (w.rank() != rank || w[0] != y.dim(-1) || w[1] != y[0]) return false;
    for (int i = 0; i + 2 < rank; ++i)
      if (w[2 + i] != y[1 + i]) return false;
    grp.wgrad_src = m.x;
    grp.wgrad_diff_dst = m.dy;
    grp.wgrad_channels_last = m.channels_last;
    for (int k : {tx, tdy})
      if (uses_[g_.node(k).outputs[0]] == 1) grp.nodes.insert(grp.nodes.begin() + 1, k);
    for (int k : {r1, t, r2}) append(grp, k);
    return true;
  }

  bool clip_bounds(const ir::Node& n, Group& grp) const {
    float lo = -FLT_MAX, hi = FLT_MAX;
    for (int k = 1; k <= 2; ++k) {
      if (!n.has_input(k)) continue;
      if (!is_const(g_, n.inputs[k]) || g_.value(n.inputs[k]).type.shape.numel() != 1) return false;
      float v = g_.value(n.inputs[k]).constant->data<float>()[0];
      (k == 1 ? lo : hi) = v;
    }
    grp.act_alpha = lo;
    grp.act_beta = hi;
    return true;
  }

  const ir::Graph& g_;
  std::vector<int> uses_;
  const std::vector<bool>* taken_ = nullptr;
};

}  // namespace

std::vector<Group> plan_groups(const ir::Graph& g) {
  Planner planner(g);
  std::vector<Group> groups;
  std::vector<bool> taken(g.num_nodes(), false);
  // Transposes last: a MatMul reads a transposed operand through strides when it can.
  for (bool transposes : {false, true})
    for (int i = 0; i < g.num_nodes(); ++i) {
      if (taken[i] || (g.node(i).op == OpType::Transpose) != transposes ||
          !supports_head(g, g.node(i)))
        continue;
      groups.push_back(planner.grow(i, taken));
      for (int k : groups.back().nodes) taken[k] = true;
    }
  std::sort(groups.begin(), groups.end(),
            [](const Group& a, const Group& b) { return a.head < b.head; });
  return groups;
}

void fold_batch_norm(const ir::Graph& g, const ir::Node& bn, ir::HostTensor& weights,
                     ir::HostTensor& bias) {
  const float* scale = g.value(bn.inputs[1]).constant->data<float>();
  const float* shift = g.value(bn.inputs[2]).constant->data<float>();
  const float* mean = g.value(bn.inputs[3]).constant->data<float>();
  const float* var = g.value(bn.inputs[4]).constant->data<float>();
  double eps = bn.attrs.get_float("epsilon", 1e-5);
  int64_t m = weights.shape()[0], per = weights.numel() / m;
  if (!bias.defined()) bias = ir::HostTensor(DType::f32, ir::Shape({m}));
  float* w = weights.data<float>();
  float* b = bias.data<float>();
  for (int64_t c = 0; c < m; ++c) {
    // The same per-channel factors as the reference BatchNormalization kernel.
    float mul = static_cast<float>(scale[c] / std::sqrt(static_cast<double>(var[c]) + eps));
    for (int64_t k = 0; k < per; ++k) w[c * per + k] *= mul;
    b[c] = (b[c] - mean[c]) * mul + shift[c];
  }
}

}  // namespace mimic::backends::cpu::onednn
