// Copies of a graph in which chosen nodes are replaced by other ops: the unrolling of recurrent
// layers (recurrent_expand.h), MaxPoolGrad's window ops (pool_grad.h) and training-mode
// BatchNormalization's batch statistics (batch_norm_train.h) are written with it.
#pragma once

#include <functional>
#include <vector>

#include "frontend/ir/graph.h"

namespace mimic::ir {

// What an expansion sees of the copy being built: the copy, the source graph and the map from the
// source's values to the copy's. The node's inputs are mapped already; the expansion maps its
// outputs (map[n.outputs[k]] = the value that replaces output k).
struct NodeRewrite {
  Graph& out;
  const Graph& source;
  std::vector<ValueId>& map;
  // Carries a source value's train-step memory role and initializer flag over to its copy.
  void keep_role(ValueId from, ValueId to) const;
};

// Expands source node `n`; `inputs` are its inputs as values of the copy.
using NodeExpansion =
    std::function<void(NodeRewrite& r, const Node& n, const std::vector<ValueId>& inputs)>;

// A copy of `g` (inferred) where every node i with `pick[i]` is replaced by `expand`'s ops;
// values computed by folded nodes become constants; every new node keeps its source node's step
// phase. Graph inputs and outputs keep their order, names and types. With `value_map`, also
// returns where each of g's values went in the copy (kNoValue for values nothing used).
Graph rewrite_nodes(const Graph& g, const std::vector<bool>& pick, const NodeExpansion& expand,
                    std::vector<ValueId>* value_map = nullptr);

}  // namespace mimic::ir
