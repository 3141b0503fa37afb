// Reverse-mode automatic differentiation over the IR. append_gradients() adds to a typed graph the
// nodes computing d(loss)/d(value) for the requested values, written with existing forward ops
// (Mul, MatMul, Transpose, ConvTranspose, ReduceSum, ...) wherever a composition exists, so every
// backend runs the backward pass through its usual lowerings. Each op's rule lives in one registry
// (grad_rules_*.cpp); an op without a rule is a one-line UnsupportedOpError naming op and node.
#pragma once

#include <string>
#include <vector>

#include "frontend/ir/graph.h"
#include "frontend/ir/graph_builder.h"

namespace mimic::ir {

class GradContext;
using GradRule = void (*)(GradContext&);

// A composition of nodes differentiated as a whole, as JAX's custom_vjp or a PyTorch
// autograd.Function: `node` stands for it, with the composition's result as its one output, the
// values it is computed from as its first `differentiable` inputs, and after them forward values
// the rule reads (saved statistics). When the backward pass reaches the output, `rule` gives the
// gradients of those first inputs, and the nodes of the composition get no gradient through it.
struct CompositeGradient {
  Node node;
  int differentiable = 0;
  GradRule rule = nullptr;
};

// `g` must be fully typed with concrete shapes (batch bound). `loss` must be a floating scalar
// (rank 0 or one element). Returns one gradient value per `wrt` entry, shaped like it; a value
// the loss does not depend on gets a zero constant.
std::vector<ValueId> append_gradients(Graph& g, ValueId loss, const std::vector<ValueId>& wrt,
                                      const std::vector<CompositeGradient>& composites = {});

// What a gradient rule sees: the forward node, the gradients of its outputs, which inputs need a
// gradient, and a builder that appends nodes to the graph.
class GradContext {
 public:
  GradContext(GraphBuilder& b, Node node, std::vector<ValueId> dy, std::vector<bool> needed)
      : b(b),
        node_(std::move(node)),
        dy_(std::move(dy)),
        needed_(std::move(needed)),
        dx_(node_.inputs.size(), kNoValue) {}

  GraphBuilder& b;
  const Node& node() const { return node_; }
  const Attributes& attrs() const { return node_.attrs; }
  ValueId x(int i) const { return node_.inputs.at(i); }
  ValueId y(int i = 0) const { return node_.outputs.at(i); }
  Shape x_shape(int i) const { return b.shape(x(i)); }
  // Gradient of output i (a zero constant when nothing downstream used it).
  ValueId dy(int i = 0);
  bool needs(int i) const { return i < static_cast<int>(needed_.size()) && needed_[i]; }
  void set(int i, ValueId grad);
  const std::vector<ValueId>& input_grads() const { return dx_; }
  // Throws UnsupportedOpError "autodiff: node 'n' (Op): <what>".
  [[noreturn]] void unsupported(const std::string& what) const;

 private:
  Node node_;
  std::vector<ValueId> dy_;
  std::vector<bool> needed_;
  std::vector<ValueId> dx_;
};

// Runs `rule` (written for channels-first layouts) on a channels-last window op (layout "NHWC",
// ...): activations, output and output gradient are transposed to channels first, and the input
// gradient back.
void channels_first_grad(GradContext& c, GradRule rule);

// nullptr when the op has no rule. Rules are grouped by family (grad_rules_*.cpp).
GradRule find_grad_rule(OpType op);
GradRule elementwise_grad_rule(OpType op);
GradRule linear_grad_rule(OpType op);
GradRule shape_grad_rule(OpType op);
GradRule nn_grad_rule(OpType op);
GradRule reduce_grad_rule(OpType op);

// Training-mode BatchNormalization as a CompositeGradient (inputs x, scale, bias, then the saved
// normalized x and 1 / sqrt(var + eps)): PyTorch's closed form, two reductions and one pass for dx.
void batch_norm_training_rule(GradContext& c);

}  // namespace mimic::ir
