// Unrolling of LSTM, GRU and RNN nodes into the IR's primitive ops, for backends that have matrix
// and vector units but no recurrent kernel. Per direction: the input projection of all time steps
// is one MatMul ([seq*batch, input] x W^T, biases added once), then each step is one MatMul of
// the state by R^T followed by the gate arithmetic (Split, Add, Mul, activations, Clip).
// sequence_lens (constant) becomes constant Where masks and, for a backward direction, constant
// Gather tables that walk each row from its last valid step. The unrolled graph computes exactly
// the ONNX equations of recurrent.h; it has seq * (about 15) nodes per direction.
// The same functions expand MaxPoolGrad into window ops (pool_grad.h) and Resize into matrix
// products (resize.h) for backends without their kernels: `runs_expanded` names the ops they
// expand.
#pragma once

#include <functional>
#include <string>

#include "frontend/ir/graph.h"
#include "frontend/ir/recurrent.h"

namespace mimic::ir {

// Ops that backends without a kernel of their own run expanded: LSTM, GRU, RNN, MaxPoolGrad,
// Resize.
inline bool runs_expanded(OpType op) {
  return is_recurrent(op) || op == OpType::MaxPoolGrad || op == OpType::Resize;
}
// Those, and the ops a backend may choose to run expanded (primitive_expansions.h):
// InstanceNormalization, DepthToSpace, SpaceToDepth.
inline bool can_expand(OpType op) {
  return runs_expanded(op) || op == OpType::InstanceNormalization || op == OpType::DepthToSpace ||
         op == OpType::SpaceToDepth;
}

// Whether node `n` (LSTM, GRU or RNN, inferred) can be unrolled: f32 data, sequence_lens absent
// or constant, initial states runtime values or constant zeros, and at least one time step. Else
// `why` says which condition failed. Constant weights are rearranged at compile time, runtime
// ones by Slice and Transpose ops.
bool can_unroll_recurrent(const Graph& g, const Node& n, std::string* why = nullptr);

// A copy of `g` (inferred, batch bound) where every recurrent or MaxPoolGrad node for which
// `unroll(node)` is true is replaced by its unrolled primitive ops (named "<node>/..."); values
// computed by folded nodes become constants. Graph inputs and outputs keep their order, names and
// types.
template <typename Pred>
Graph unroll_recurrent(const Graph& g, Pred unroll);
// With `value_map`, also returns where each of g's values went in the copy (kNoValue for values
// nothing used), for callers that keep building on the copy.
Graph unroll_recurrent_nodes(const Graph& g, const std::vector<bool>& unroll_node,
                             std::vector<ValueId>* value_map = nullptr);

// For compile reports: "recurrent layers unrolled: LSTM 'lstm1' (5 steps x 2 directions); 3 nodes
// became 311".
std::string unroll_note(const Graph& g, const Graph& unrolled);

// The unrolling of node `n` alone, as a graph whose inputs are n's runtime inputs (for a backend
// to check that it supports every op of it).
Graph unrolled_node(const Graph& g, const Node& n);

// Why a backend cannot run recurrent node `n` unrolled, "" when it can: the unrolling's own
// conditions (can_unroll_recurrent), then `op_reason(graph, node)` ("" when the backend runs that
// op) for every op of the unrolling; the first refusal is named.
std::string unrolled_unsupported_reason(
    const Graph& g, const Node& n,
    const std::function<std::string(const Graph&, const Node&)>& op_reason);

template <typename Pred>
Graph unroll_recurrent(const Graph& g, Pred unroll) {
  std::vector<bool> pick(g.num_nodes(), false);
  for (int i = 0; i < g.num_nodes(); ++i) pick[i] = unroll(g.node(i));
  return unroll_recurrent_nodes(g, pick);
}

}  // namespace mimic::ir
