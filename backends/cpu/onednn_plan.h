// Which nodes of a graph the cpu backend's oneDNN path runs, and which followers fuse into them.
//
// A group is a head (Conv, MatMul, Gemm, MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool,
// Softmax; alone, a Gelu no product absorbed and a Transpose no MatMul reads through strides) plus
// the nodes that fold into it as oneDNN attributes or strides: for MatMul a Transpose of an
// operand's last two axes (the backward pass's transposed products), for Conv a BatchNormalization
// with constant parameters (folded into the weights and bias), for MatMul/Gemm an Add of a constant
// [N] bias, then for both an Add of a same-shaped tensor (the "sum" post-op) and a Relu, Clip or
// Gelu ("eltwise" post-op); a Conv that computes a weight gradient takes the transposes and
// reshapes around it instead (see Group::wgrad_src). A follower fuses only when the value it reads
// has no other consumer and is no graph output. Everything here is IR-only: the primitives are
// built from a group in onednn_ops.cpp.
#pragma once

#include <algorithm>
#include <vector>

#include "frontend/ir/graph.h"

namespace mimic::backends::cpu::onednn {

// swish: SiLU, x * sigmoid(x), which ONNX writes as Mul(x, Sigmoid(x)).
enum class Activation { none, relu, clip, gelu_erf, gelu_tanh, swish };

struct Group {
  int head = -1;
  std::vector<int> nodes;               // head first, then followers in graph order
  int batch_norm = -1;                  // Conv only: folded BatchNormalization node
  ir::ValueId bias_add = ir::kNoValue;  // MatMul/Gemm only: constant bias of a fused Add
  ir::ValueId residual = ir::kNoValue;  // the other operand of a fused residual Add
  Activation activation = Activation::none;
  float act_alpha = 0.0f, act_beta = 0.0f;  // Clip's min and max
  ir::ValueId output = ir::kNoValue;        // the last member's output
  // MatMul only: per operand, a Transpose of the last two axes that feeds only this MatMul and is
  // read through swapped strides instead of being copied (a member, after the head), or -1.
  int transposed[2] = {-1, -1};
  // Conv only: the head is the weight gradient conv_weight_grad (grad_rules_linear.cpp) writes,
  // run as oneDNN's backward-weights convolution of `wgrad_src` (the forward's input) by
  // `wgrad_diff_dst` (its output gradient), channels last when `wgrad_channels_last`, straight
  // into the weights' layout: the operands' Transposes and the Reshape, Transpose, Reshape after
  // the head are members.
  ir::ValueId wgrad_src = ir::kNoValue, wgrad_diff_dst = ir::kNoValue;
  bool wgrad_channels_last = false;
  // The member that comes last in the graph, where the group runs: a transposed operand sits
  // right after the head in `nodes` but before it in the graph.
  int last() const { return *std::max_element(nodes.begin(), nodes.end()); }
};

// True when oneDNN can run node `n` as a group head (f32, windows oneDNN supports, ...).
bool supports_head(const ir::Graph& g, const ir::Node& n);

// Groups in graph order; nodes in no group run on the reference kernels.
std::vector<Group> plan_groups(const ir::Graph& g);

// Conv weights and bias with a fused BatchNormalization folded in (bias may start undefined).
void fold_batch_norm(const ir::Graph& g, const ir::Node& bn, ir::HostTensor& weights,
                     ir::HostTensor& bias);

}  // namespace mimic::backends::cpu::onednn
