#include "frontend/ir/graph.h"

#include <fmt/format.h>
#include <algorithm>

#include "base/error.h"
#include "frontend/ir/nn_geometry.h"
#include "frontend/ir/recurrent.h"

namespace mimic::ir {

ValueId Graph::add_input(const std::string& name, DType dtype, Shape shape) {
  ValueId id = static_cast<ValueId>(values_.size());
  values_.push_back(
      Value{unique_name(name), TensorType{dtype, std::move(shape)}, true, nullptr, -1});
  by_name_[values_.back().name] = id;
  inputs_.push_back(id);
  return id;
}

ValueId Graph::add_constant(const std::string& name, HostTensor data) {
  ValueId id = static_cast<ValueId>(values_.size());
  TensorType type = data.type();
  values_.push_back(Value{unique_name(name), type, true,
                          std::make_shared<const HostTensor>(std::move(data)), -1});
  by_name_[values_.back().name] = id;
  return id;
}

std::vector<ValueId> Graph::add_node(OpType op, const std::string& name,
                                     std::vector<ValueId> inputs, Attributes attrs, int num_outputs,
                                     std::vector<std::string> output_names) {
  for (ValueId v : inputs)
    if (v != kNoValue && (v < 0 || v >= num_values()))
      throw ShapeError(
          fmt::format("node '{}' ({}): input value id {} does not exist", name, op_name(op), v));
  Node n{unique_node_name(name.empty() ? op_name(op) : name),
         op,
         std::move(inputs),
         {},
         std::move(attrs)};
  int index = num_nodes();
  for (int i = 0; i < num_outputs; ++i) {
    std::string out_name = i < static_cast<int>(output_names.size()) && !output_names[i].empty()
                               ? output_names[i]
                               : (num_outputs == 1 ? n.name : fmt::format("{}:{}", n.name, i));
    ValueId id = static_cast<ValueId>(values_.size());
    values_.push_back(Value{unique_name(out_name), {}, false, nullptr, index});
    by_name_[values_.back().name] = id;
    n.outputs.push_back(id);
  }
  nodes_.push_back(std::move(n));
  return nodes_.back().outputs;
}

void Graph::add_output(ValueId v) {
  if (v < 0 || v >= num_values())
    throw ShapeError(fmt::format("graph output value id {} does not exist", v));
  outputs_.push_back(v);
}

void Graph::make_constant(ValueId v, HostTensor data) {
  auto it = std::find(inputs_.begin(), inputs_.end(), v);
  if (it == inputs_.end())
    throw InvalidArgument(fmt::format("value '{}' is not a graph input", value(v).name));
  Value& val = value(v);
  if (data.dtype() != val.type.dtype || data.shape().rank() != val.type.shape.rank())
    throw InvalidArgument(fmt::format("input '{}' is {}, cannot hold a constant {}", val.name,
                                      val.type.str(), data.type().str()));
  inputs_.erase(it);
  val.type = data.type();
  val.typed = true;
  val.constant = std::make_shared<const HostTensor>(std::move(data));
}

std::string Graph::unique_name(const std::string& prefix) {
  if (!by_name_.count(prefix) && !name_counts_.count(prefix)) {
    name_counts_[prefix] = 0;
    return prefix;
  }
  int& count = name_counts_[prefix];
  std::string candidate;
  do {
    candidate = fmt::format("{}_{}", prefix, ++count);
  } while (by_name_.count(candidate));
  return candidate;
}

std::string Graph::unique_node_name(const std::string& prefix) {
  auto it = node_name_counts_.find(prefix);
  if (it == node_name_counts_.end()) {
    node_name_counts_[prefix] = 0;
    return prefix;
  }
  std::string candidate;
  do {
    candidate = fmt::format("{}_{}", prefix, ++it->second);
  } while (node_name_counts_.count(candidate));
  node_name_counts_[candidate] = 0;
  return candidate;
}

bool Graph::has_symbolic_batch() const {
  for (ValueId v : inputs_)
    if (value(v).type.shape.is_symbolic()) return true;
  return false;
}

const char* role_name(ValueRole role) {
  switch (role) {
    case ValueRole::activation:
      return "activations";
    case ValueRole::data:
      return "inputs";
    case ValueRole::weight:
      return "weights";
    case ValueRole::gradient:
      return "gradients";
    case ValueRole::optimizer_state:
      return "optimizer_state";
    case ValueRole::buffer:
      return "buffers";
  }
  return "activations";
}

const char* phase_name(StepPhase phase) {
  switch (phase) {
    case StepPhase::forward:
      return "forward";
    case StepPhase::loss:
      return "loss";
    case StepPhase::backward:
      return "backward";
    case StepPhase::update:
      return "update";
  }
  return "forward";
}

std::string describe(const Graph& g, const Node& n) {
  return fmt::format("node '{}' ({})", n.name, op_name(n.op));
}

std::vector<int64_t> constant_ints(const Graph& g, const Node& n, int input,
                                   const std::vector<int64_t>& fallback) {
  if (!n.has_input(input)) return fallback;
  const Value& v = g.value(n.inputs[input]);
  if (!v.constant)
    throw ShapeError(fmt::format(
        "{}: input {} ('{}') must be a constant known at compile time (bind the batch size if it "
        "is computed from shapes)",
        describe(g, n), input, v.name));
  const HostTensor& t = *v.constant;
  std::vector<int64_t> out(t.numel());
  if (t.dtype() == DType::i64) {
    for (int64_t i = 0; i < t.numel(); ++i) out[i] = t.data<int64_t>()[i];
  } else if (t.dtype() == DType::i32) {
    for (int64_t i = 0; i < t.numel(); ++i) out[i] = t.data<int32_t>()[i];
  } else {
    throw ShapeError(fmt::format("{}: input {} ('{}') must be i32 or i64, not {}", describe(g, n),
                                 input, v.name, dtype_name(t.dtype())));
  }
  return out;
}

std::optional<double> constant_scalar(const Graph& g, const Node& n, int input) {
  if (!n.has_input(input)) return std::nullopt;
  const Value& v = g.value(n.inputs[input]);
  if (!v.constant || v.constant->numel() != 1) return std::nullopt;
  const HostTensor& t = *v.constant;
  switch (t.dtype()) {
    case DType::f32:
      return t.data<float>()[0];
    case DType::f64:
      return t.data<double>()[0];
    case DType::i64:
      return static_cast<double>(t.data<int64_t>()[0]);
    case DType::i32:
      return t.data<int32_t>()[0];
    case DType::i8:
      return t.data<int8_t>()[0];
    default:
      return std::nullopt;
  }
}

namespace {

int64_t numel_or_zero(const Graph& g, ValueId v) {
  if (v == kNoValue || !g.value(v).typed || g.value(v).type.shape.is_symbolic()) return 0;
  return g.value(v).type.shape.numel();
}

int64_t bytes_of(const Graph& g, ValueId v) {
  return numel_or_zero(g, v) * (v == kNoValue ? 0 : dtype_size(g.value(v).type.dtype));
}

// Products of flops factors, saturating at INT64_MAX (a report figure, never an allocation).
int64_t saturating_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

int64_t matmul_flops(const Graph& g, const Node& n) {
  const Shape& a = g.value(n.inputs[0]).type.shape;
  const Shape& out = g.value(n.outputs[0]).type.shape;
  int64_t k = a.rank() == 0 ? 1 : a.dim(-1);
  return saturating_mul(2 * out.numel(), k);
}

int64_t gemm_flops(const Graph& g, const Node& n) {
  const Shape& a = g.value(n.inputs[0]).type.shape;
  int64_t k = n.attrs.get_int("transA", 0) ? a[0] : a[1];
  int64_t out = numel_or_zero(g, n.outputs[0]);
  return saturating_mul(2 * out, k) + (n.has_input(2) ? out : 0);
}

int64_t conv_flops(const Graph& g, const Node& n) {
  WindowGeometry geo = window_geometry(g, n);
  int64_t macs_per_output = saturating_mul(geo.in_channels / geo.group, geo.kernel_volume());
  if (n.op == OpType::ConvTranspose)
    return saturating_mul(saturating_mul(2 * geo.batch * geo.in_spatial(), geo.in_channels),
                          saturating_mul(geo.out_channels / geo.group, geo.kernel_volume()));
  return saturating_mul(2 * geo.batch * geo.out_spatial() * geo.out_channels, macs_per_output);
}

}  // namespace

int64_t node_flops(const Graph& g, const Node& n) {
  for (ValueId v : n.outputs)
    if (!g.value(v).typed || g.value(v).type.shape.is_symbolic()) return 0;
  int64_t out = numel_or_zero(g, n.outputs[0]);
  int64_t in = n.inputs.empty() ? 0 : numel_or_zero(g, n.inputs[0]);
  switch (n.op) {
    case OpType::MatMul:
      return matmul_flops(g, n);
    case OpType::Gemm:
      return gemm_flops(g, n);
    case OpType::Conv:
    case OpType::ConvTranspose:
      return conv_flops(g, n);
    case OpType::MaxPool:
    case OpType::AveragePool:
      return saturating_mul(out, window_geometry(g, n).kernel_volume());
    case OpType::GlobalAveragePool:
    case OpType::GlobalMaxPool:
      return in;
    case OpType::BatchNormalization:
      return 2 * out;
    case OpType::LayerNormalization:
    case OpType::InstanceNormalization:
      return 8 * out;
    case OpType::Softmax:
    case OpType::LogSoftmax:
      return 5 * out;
    case OpType::Gelu:
      return 8 * out;
    case OpType::LSTM:
    case OpType::GRU:
    case OpType::RNN:
      return recurrent_flops(g, n);
    default:
      break;
  }
  if (is_unary_elementwise(n.op) && !is_view_op(n.op) && n.op != OpType::Cast) return out;
  if (is_binary_elementwise(n.op)) return out;
  if (is_reduce(n.op)) return in;
  switch (n.op) {
    case OpType::Max:
    case OpType::Min:
    case OpType::Sum:
    case OpType::Mean:
      return out * std::max(1, n.num_inputs() - 1);
    default:
      return 0;
  }
}

int64_t node_bytes_in(const Graph& g, const Node& n) {
  int64_t total = 0;
  for (ValueId v : n.inputs) total += bytes_of(g, v);
  return total;
}

int64_t node_bytes_out(const Graph& g, const Node& n) {
  int64_t total = 0;
  for (ValueId v : n.outputs) total += bytes_of(g, v);
  return total;
}

}  // namespace mimic::ir
