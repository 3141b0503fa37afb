#include "frontend/api/tensor.h"

#include <fmt/format.h>
#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "base/error.h"
#include "frontend/api/compile.h"
#include "frontend/ir/shape_inference.h"

namespace mimic {
namespace {

std::atomic<uint64_t> next_id{1};

std::vector<std::string>& scope_stack() {
  thread_local std::vector<std::string> stack;
  return stack;
}

std::shared_ptr<Tensor::Node> make_leaf(Tensor::Role role, ir::HostTensor data, Device device,
                                        const std::string& name, ir::TensorType type) {
  auto n = std::make_shared<Tensor::Node>();
  n->id = next_id++;
  n->role = role;
  n->name = name;
  n->types = {std::move(type)};
  n->device = std::move(device);
  if (data.defined() && role != Tensor::Role::placeholder) n->values = {std::move(data)};
  return n;
}

}  // namespace

Tensor::Tensor(ir::HostTensor data, Device device) {
  ir::TensorType type = data.type();
  node_ = make_leaf(Role::input, std::move(data), std::move(device), "input", type);
}

Tensor Tensor::constant(ir::HostTensor data, Device device) {
  ir::TensorType type = data.type();
  return Tensor(make_leaf(Role::constant, std::move(data), std::move(device), "const", type), 0);
}

Tensor Tensor::placeholder(const std::string& name, ir::DType dtype, ir::Shape shape,
                           Device device) {
  return Tensor(
      make_leaf(Role::placeholder, {}, std::move(device), name, {dtype, std::move(shape)}), 0);
}

ir::DType Tensor::dtype() const {
  return type().dtype;
}
const ir::Shape& Tensor::shape() const {
  return node_->types.at(index_).shape;
}
ir::TensorType Tensor::type() const {
  if (!node_) throw InvalidArgument("use of an undefined tensor");
  return node_->types.at(index_);
}
const Device& Tensor::device() const {
  return node_->device;
}
const std::string& Tensor::name() const {
  return node_->name;
}
Tensor::Role Tensor::role() const {
  return node_->role;
}

Tensor Tensor::to(const Device& device) const {
  if (!node_) throw InvalidArgument("use of an undefined tensor");
  if (node_->role == Role::op) {
    std::vector<Tensor> moved;
    for (const Tensor& t : node_->inputs) moved.push_back(t.to(device));
    return apply(node_->op, moved, node_->attrs, static_cast<int>(node_->types.size()),
                 node_->name)[index_];
  }
  auto n = std::make_shared<Node>(*node_);
  n->device = device;
  return Tensor(n, index_);
}

const ir::HostTensor& Tensor::host() const {
  if (!node_) throw InvalidArgument("use of an undefined tensor");
  if (!node_->values.empty()) return node_->values.at(index_);
  if (node_->role == Role::placeholder)
    throw InvalidArgument(fmt::format(
        "placeholder '{}' has no data: trace and compile the graph instead", node_->name));
  std::vector<Tensor> outputs;
  for (int i = 0; i < static_cast<int>(node_->types.size()); ++i) outputs.emplace_back(node_, i);
  ir::Graph g = trace(outputs, node_->name);
  std::vector<ir::HostTensor> inputs;
  // trace() orders graph inputs by creation id: collect the same leaves in the same order.
  std::map<uint64_t, ir::HostTensor> leaves;
  std::function<void(const Tensor&)> collect = [&](const Tensor& t) {
    const auto& n = t.node();
    if (n->role == Role::input) leaves[n->id] = n->values.at(0);
    if (n->role == Role::placeholder)
      throw InvalidArgument(
          fmt::format("tensor '{}' depends on placeholder '{}': compile the traced graph",
                      node_->name, n->name));
    if (n->role == Role::op && n->values.empty())
      for (const Tensor& in : n->inputs) collect(in);
  };
  for (const Tensor& in : node_->inputs) collect(in);
  for (auto& [id, data] : leaves) inputs.push_back(data);
  Executable exe = compile(g, node_->device);
  node_->values = exe.run(inputs).outputs;
  return node_->values.at(index_);
}

std::vector<float> Tensor::to_floats() const {
  const ir::HostTensor& t = host();
  std::vector<float> out(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) out[i] = static_cast<float>(ir::element_as_double(t, i));
  return out;
}

std::vector<Tensor> apply(ir::OpType op, const std::vector<Tensor>& inputs, ir::Attributes attrs,
                          int num_outputs, const std::string& name) {
  Device device = Device("cpu");
  bool have_device = false;
  for (const Tensor& t : inputs) {
    if (!t.defined()) continue;
    if (have_device && t.device() != device)
      throw InvalidArgument(
          fmt::format("{}: inputs are on different devices ({} and {}); move them with .to()",
                      ir::op_name(op), device.str(), t.device().str()));
    device = t.device();
    have_device = true;
  }
  std::string scope = NameScope::current();
  std::string node_name = !name.empty() ? (scope.empty() ? name : scope + "." + name)
                                        : (scope.empty() ? std::string(ir::op_name(op)) : scope);
  // Infer the output types on a one-node graph: leaves with data are constants (so shape
  // parameters are known), everything else is a typed input.
  ir::Graph g;
  std::vector<ir::ValueId> ids;
  for (const Tensor& t : inputs) {
    if (!t.defined()) {
      ids.push_back(ir::kNoValue);
    } else if (t.role() == Tensor::Role::constant) {
      ids.push_back(g.add_constant("in", t.node()->values.at(0)));
    } else {
      ids.push_back(g.add_input("in", t.dtype(), t.shape()));
    }
  }
  g.add_node(op, node_name, ids, attrs, num_outputs);
  ir::infer_node(g, 0);
  auto n = std::make_shared<Tensor::Node>();
  n->id = next_id++;
  n->role = Tensor::Role::op;
  n->op = op;
  n->name = node_name;
  n->attrs = std::move(attrs);
  n->inputs = inputs;
  n->device = device;
  for (ir::ValueId v : g.node(0).outputs) n->types.push_back(g.value(v).type);
  std::vector<Tensor> out;
  for (int i = 0; i < num_outputs; ++i) out.emplace_back(n, i);
  return out;
}

Tensor apply1(ir::OpType op, const std::vector<Tensor>& inputs, ir::Attributes attrs,
              const std::string& name) {
  return apply(op, inputs, std::move(attrs), 1, name)[0];
}

ir::Graph trace(const std::vector<Tensor>& outputs, const std::string& name) {
  // Post-order walk; a computed op is kept as an op (its cached values are not reused here).
  std::vector<std::shared_ptr<Tensor::Node>> order;
  std::unordered_set<const Tensor::Node*> seen;
  std::function<void(const std::shared_ptr<Tensor::Node>&)> visit =
      [&](const std::shared_ptr<Tensor::Node>& n) {
        if (!seen.insert(n.get()).second) return;
        for (const Tensor& in : n->inputs)
          if (in.defined()) visit(in.node());
        order.push_back(n);
      };
  for (const Tensor& t : outputs) {
    if (!t.defined()) throw InvalidArgument("trace: an output tensor is undefined");
    visit(t.node());
  }
  ir::Graph g(name);
  std::unordered_map<const Tensor::Node*, std::vector<ir::ValueId>> values;
  std::vector<std::shared_ptr<Tensor::Node>> leaves;
  for (const auto& n : order)
    if (n->role == Tensor::Role::input || n->role == Tensor::Role::placeholder) leaves.push_back(n);
  std::sort(leaves.begin(), leaves.end(),
            [](const auto& a, const auto& b) { return a->id < b->id; });
  for (const auto& n : leaves)
    values[n.get()] = {g.add_input(n->name, n->types[0].dtype, n->types[0].shape)};
  for (const auto& n : order) {
    if (n->role == Tensor::Role::constant)
      values[n.get()] = {g.add_constant(n->name, n->values.at(0))};
    if (n->role != Tensor::Role::op) continue;
    std::vector<ir::ValueId> ids;
    for (const Tensor& in : n->inputs)
      ids.push_back(in.defined() ? values.at(in.node().get()).at(in.index()) : ir::kNoValue);
    values[n.get()] = g.add_node(n->op, n->name, ids, n->attrs, static_cast<int>(n->types.size()));
  }
  for (const Tensor& t : outputs) g.add_output(values.at(t.node().get()).at(t.index()));
  ir::infer_shapes(g);
  return g;
}

NameScope::NameScope(const std::string& name) {
  scope_stack().push_back(name);
}
NameScope::~NameScope() {
  scope_stack().pop_back();
}

std::string NameScope::current() {
  std::string out;
  for (const auto& s : scope_stack()) {
    if (s.empty()) continue;
    out += (out.empty() ? "" : ".") + s;
  }
  return out;
}

}  // namespace mimic
