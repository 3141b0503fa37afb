#include "frontend/ir/autodiff.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "base/error.h"

namespace mimic::ir {

ValueId GradContext::dy(int i) {
  ValueId d = dy_.at(i);
  if (d == kNoValue) dy_[i] = d = b.zeros(b.type(y(i)));
  return d;
}

void GradContext::set(int i, ValueId grad) {
  if (!needs(i)) return;
  if (b.shape(grad) != x_shape(i))
    throw ShapeError(
        fmt::format("autodiff: {}: gradient of input {} has shape {}, input has {} (rule bug)",
                    describe(b.graph(), node_), i, b.shape(grad).str(), x_shape(i).str()));
  dx_[i] = grad;
}

void GradContext::unsupported(const std::string& what) const {
  throw UnsupportedOpError(fmt::format("autodiff: {}: {}", describe(b.graph(), node_), what),
                           {op_name(node_.op)});
}

void channels_first_grad(GradContext& c, GradRule rule) {
  GraphBuilder& b = c.b;
  int rank = c.x_shape(0).rank();
  std::vector<int64_t> to_first{0, rank - 1}, to_last{0};
  for (int i = 1; i < rank - 1; ++i) to_first.push_back(i);
  for (int i = 2; i < rank; ++i) to_last.push_back(i);
  to_last.push_back(1);
  Node n = c.node();
  n.attrs.erase("layout");
  n.inputs[0] = b.transpose(c.x(0), to_first);
  n.outputs[0] = b.transpose(c.y(), to_first);
  std::vector<bool> needed;
  for (int i = 0; i < n.num_inputs(); ++i) needed.push_back(c.needs(i));
  GradContext inner(b, n, {b.transpose(c.dy(), to_first)}, needed);
  rule(inner);
  for (int i = 0; i < n.num_inputs(); ++i) {
    ValueId g = inner.input_grads()[i];
    if (c.needs(i) && g != kNoValue) c.set(i, i == 0 ? b.transpose(g, to_last) : g);
  }
}

GradRule find_grad_rule(OpType op) {
  for (auto family :
       {elementwise_grad_rule, linear_grad_rule, shape_grad_rule, nn_grad_rule, reduce_grad_rule})
    if (GradRule r = family(op)) return r;
  return nullptr;
}

namespace {

// Values that depend on any of `wrt` through floating-point values.
std::vector<bool> depends_on(const Graph& g, const std::vector<ValueId>& wrt) {
  std::vector<bool> dep(g.num_values(), false);
  for (ValueId v : wrt) dep[v] = true;
  for (const Node& n : g.nodes()) {
    bool any = false;
    for (ValueId v : n.inputs) any = any || (v != kNoValue && dep[v]);
    if (!any) continue;
    for (ValueId v : n.outputs) dep[v] = !g.value(v).constant && is_floating(g.value(v).type.dtype);
  }
  return dep;
}

void check_loss(const Graph& g, ValueId loss) {
  const Value& v = g.value(loss);
  if (!v.typed || !is_floating(v.type.dtype) || v.type.shape.is_symbolic() ||
      v.type.shape.numel() != 1)
    throw InvalidArgument(fmt::format(
        "autodiff: loss '{}' must be a floating-point scalar, it is {}", v.name, v.type.str()));
}

// The rule of node `n` as the op table's gradient column says, or nullptr when no gradient flows
// through it; an op whose rule is not registered is refused by name.
GradRule rule_for(const Node& n, const Graph& g) {
  switch (op_gradient(n.op)) {
    case OpGradient::zero:
      return nullptr;
    case OpGradient::unrolled:
      throw UnsupportedOpError(
          fmt::format("autodiff: op {} ({}) is differentiated through its unrolling: unroll it "
                      "first (unroll_recurrent)",
                      op_name(n.op), describe(g, n)),
          {op_name(n.op)});
    case OpGradient::rule:
      if (GradRule rule = find_grad_rule(n.op)) return rule;
      break;
  }
  throw UnsupportedOpError(
      fmt::format("autodiff: no gradient rule for op {} ({})", op_name(n.op), describe(g, n)),
      {op_name(n.op)});
}

class Backward {
 public:
  Backward(Graph& g, const std::vector<ValueId>& wrt,
           const std::vector<CompositeGradient>& composites)
      : g_(g), b_(g, "grad"), dep_(depends_on(g, wrt)), composites_(composites) {
    for (size_t i = 0; i < composites_.size(); ++i)
      composite_of_[composites_[i].node.outputs.at(0)] = static_cast<int>(i);
  }

  void accumulate(ValueId v, ValueId grad) {
    auto it = grads_.find(v);
    if (it == grads_.end())
      grads_[v] = grad;
    else
      it->second = b_.add(it->second, grad);
  }

  void run_node(int index) {
    Node n = g_.node(index);
    GradRule rule = nullptr;
    int differentiable = n.num_inputs();
    if (n.outputs.size() == 1 && composite_of_.count(n.outputs[0])) {
      const CompositeGradient& composite = composites_[composite_of_.at(n.outputs[0])];
      n = composite.node;
      rule = composite.rule;
      differentiable = composite.differentiable;
    }
    std::vector<ValueId> dy;
    bool any_dy = false;
    for (ValueId v : n.outputs) {
      auto it = grads_.find(v);
      dy.push_back(it == grads_.end() ? kNoValue : it->second);
      any_dy = any_dy || it != grads_.end();
    }
    std::vector<bool> needed;
    bool any_needed = false;
    for (int i = 0; i < n.num_inputs(); ++i) {
      ValueId v = n.inputs[i];
      needed.push_back(i < differentiable && v != kNoValue && dep_[v]);
      any_needed = any_needed || needed.back();
    }
    if (!any_dy || !any_needed) return;
    if (!rule) rule = rule_for(n, g_);
    if (!rule) return;
    b_.set_prefix("grad/" + n.name);
    GradContext c(b_, n, std::move(dy), std::move(needed));
    rule(c);
    for (int i = 0; i < n.num_inputs(); ++i) {
      if (!c.needs(i)) continue;
      if (c.input_grads()[i] == kNoValue)
        c.unsupported(fmt::format("the rule gave no gradient for input {} (rule bug)", i));
      accumulate(n.inputs[i], c.input_grads()[i]);
    }
  }

  ValueId grad_of(ValueId v) {
    auto it = grads_.find(v);
    if (it != grads_.end()) return it->second;
    b_.set_prefix("grad");
    return b_.zeros(g_.value(v).type);
  }

  GraphBuilder& builder() { return b_; }

 private:
  Graph& g_;
  GraphBuilder b_;
  std::vector<bool> dep_;
  const std::vector<CompositeGradient>& composites_;
  std::unordered_map<ValueId, int> composite_of_;  // a composite's output -> its index
  std::unordered_map<ValueId, ValueId> grads_;
};

}  // namespace

std::vector<ValueId> append_gradients(Graph& g, ValueId loss, const std::vector<ValueId>& wrt,
                                      const std::vector<CompositeGradient>& composites) {
  check_loss(g, loss);
  for (ValueId v : wrt)
    if (!is_floating(g.value(v).type.dtype))
      throw InvalidArgument(
          fmt::format("autodiff: cannot differentiate with respect to '{}' of dtype {}",
                      g.value(v).name, dtype_name(g.value(v).type.dtype)));
  int forward_nodes = g.num_nodes();
  int loss_node = g.value(loss).producer;
  Backward bw(g, wrt, composites);
  bw.builder().set_prefix("grad");
  bw.accumulate(loss, bw.builder().full(g.value(loss).type, 1.0));
  for (int i = std::min(loss_node, forward_nodes - 1); i >= 0; --i) bw.run_node(i);
  std::vector<ValueId> out;
  for (ValueId v : wrt) out.push_back(bw.grad_of(v));
  return out;
}

}  // namespace mimic::ir
