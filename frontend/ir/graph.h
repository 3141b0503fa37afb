// The graph IR: values (typed tensors, some constant) and nodes in topological order.
// Parameters that fix an output's shape (Reshape's shape, Slice's starts, reduce axes, ...) are
// inputs as in ONNX opset 18; shape inference needs them constant, either given or folded.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "frontend/ir/attributes.h"
#include "frontend/ir/host_tensor.h"
#include "frontend/ir/op_type.h"

namespace mimic::ir {

using ValueId = int32_t;
inline constexpr ValueId kNoValue = -1;

// What a value holds in a training step, for the emulators' memory plans (HBM and tile budgets
// broken down by category). build_train_graph() sets it; in any other graph every value is an
// activation (constants are weights by their `constant` field).
enum class ValueRole : uint8_t {
  activation,       // computed by a node (forward, loss or backward intermediate)
  data,             // a graph input fed each step: batch, target, lr, step, dropout mask, ...
  weight,           // a trainable parameter (graph input of the step)
  gradient,         // a parameter's gradient, as the optimizer reads it
  optimizer_state,  // momentum, Adam moments, ...
  buffer            // BatchNormalization running statistics
};
const char* role_name(ValueRole role);

// Which part of a training step a node belongs to; every node of an inference graph is forward.
enum class StepPhase : uint8_t { forward, loss, backward, update };
const char* phase_name(StepPhase phase);

struct Value {
  std::string name;
  TensorType type;
  bool typed = false;                          // set by shape inference or for inputs/constants
  std::shared_ptr<const HostTensor> constant;  // initializers, Constant outputs, folded values
  int producer = -1;                           // node index, -1 for inputs and initializers
  bool initializer = false;  // a model file's initializer: training treats it as a parameter
  ValueRole role = ValueRole::activation;
};

struct Node {
  std::string name;
  OpType op;
  std::vector<ValueId> inputs;  // kNoValue marks an omitted optional input
  std::vector<ValueId> outputs;
  Attributes attrs;
  StepPhase phase = StepPhase::forward;

  int num_inputs() const { return static_cast<int>(inputs.size()); }
  bool has_input(int i) const { return i < num_inputs() && inputs[i] != kNoValue; }
};

class Graph {
 public:
  explicit Graph(std::string name = "graph") : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }

  ValueId add_input(const std::string& name, DType dtype, Shape shape);
  ValueId add_constant(const std::string& name, HostTensor data);
  // Appends a node; outputs are new untyped values named "<node>:<i>" unless names are given.
  std::vector<ValueId> add_node(OpType op, const std::string& name, std::vector<ValueId> inputs,
                                Attributes attrs = {}, int num_outputs = 1,
                                std::vector<std::string> output_names = {});
  void add_output(ValueId v);
  // Turns graph input `v` into a constant holding `data` (which fixes its shape): it leaves
  // inputs().
  void make_constant(ValueId v, HostTensor data);

  const Value& value(ValueId id) const { return values_.at(id); }
  Value& value(ValueId id) { return values_.at(id); }
  const Node& node(int index) const { return nodes_.at(index); }
  Node& node(int index) { return nodes_.at(index); }
  int num_values() const { return static_cast<int>(values_.size()); }
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<ValueId>& inputs() const { return inputs_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }
  std::optional<ValueId> find_value(const std::string& name) const;

  // Unique value name with the given prefix ("conv" -> "conv", "conv_1", ...).
  std::string unique_name(const std::string& prefix);
  // Unique node name (nodes and values have separate name spaces).
  std::string unique_node_name(const std::string& prefix);
  // True when any graph input has the batch symbol.
  bool has_symbolic_batch() const;
  // Types of the graph's inputs/outputs (after inference).
  TensorType input_type(int i) const { return value(inputs_.at(i)).type; }
  TensorType output_type(int i) const { return value(outputs_.at(i)).type; }

 private:
  std::string name_;
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<ValueId> inputs_, outputs_;
  std::unordered_map<std::string, ValueId> by_name_;
  std::unordered_map<std::string, int> name_counts_, node_name_counts_;
};

// "node 'layer1.0.conv1' (Conv)".
std::string describe(const Graph& g, const Node& n);
// Reads a constant integer input (i32 or i64) as int64s; throws ShapeError naming the node when
// the input is absent (returns `fallback`) or not constant.
std::vector<int64_t> constant_ints(const Graph& g, const Node& n, int input,
                                   const std::vector<int64_t>& fallback = {});
std::optional<double> constant_scalar(const Graph& g, const Node& n, int input);
// Floating-point operations of one node (2 per multiply-add), for reports and rooflines.
int64_t node_flops(const Graph& g, const Node& n);
// Bytes read (inputs, constants included) and written by one node.
int64_t node_bytes_in(const Graph& g, const Node& n);
int64_t node_bytes_out(const Graph& g, const Node& n);

}  // namespace mimic::ir
