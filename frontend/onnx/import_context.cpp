#include "frontend/onnx/import_context.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <limits>

#include "base/error.h"
#include "frontend/ir/shape_inference.h"
#include "frontend/onnx/onnx_tensor.h"

namespace mimic::onnx_import {
namespace {

using onnx::AttributeProto;

// Old models leave AttributeProto.type unset; the field that is filled tells the type.
AttributeProto::AttributeType type_of_attr(const AttributeProto& a) {
  if (a.type() != AttributeProto::UNDEFINED) return a.type();
  if (a.has_f()) return AttributeProto::FLOAT;
  if (a.has_i()) return AttributeProto::INT;
  if (a.has_s()) return AttributeProto::STRING;
  if (a.has_t()) return AttributeProto::TENSOR;
  if (a.has_g()) return AttributeProto::GRAPH;
  if (a.floats_size()) return AttributeProto::FLOATS;
  if (a.ints_size()) return AttributeProto::INTS;
  if (a.strings_size()) return AttributeProto::STRINGS;
  return AttributeProto::UNDEFINED;
}

// Converts a double to an integer type, clamping to its range (NaN -> 0).
template <typename T>
T saturate(double v) {
  if (!(v == v)) return 0;
  if (v <= static_cast<double>(std::numeric_limits<T>::lowest()))
    return std::numeric_limits<T>::lowest();
  if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

}  // namespace

NodeConverter::NodeConverter(ImportState& state, const onnx::NodeProto& node, int version)
    : state_(state), node_(node), version_(version) {
  if (!node.name().empty())
    name_ = node.name();
  else if (node.output_size() > 0 && !node.output(0).empty())
    name_ = node.op_type() + "_" + node.output(0);
  else
    name_ = node.op_type();
  if (node.output_size() == 0) malformed("the node has no outputs (every ONNX operator has one)");
}

std::string NodeConverter::describe() const {
  return fmt::format("node '{}' ({})", name_, op_type());
}

ir::ValueId NodeConverter::input(int i) const {
  if (i >= num_inputs() || node_.input(i).empty()) return ir::kNoValue;
  auto it = state_.values.find(node_.input(i));
  if (it == state_.values.end())
    malformed(fmt::format("input {} '{}' is not defined by any earlier node, input or initializer",
                          i, node_.input(i)));
  return it->second;
}

const AttributeProto* NodeConverter::attr(const std::string& name) const {
  for (const auto& a : node_.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

bool NodeConverter::has_attr(const std::string& name) const {
  return attr(name) != nullptr;
}

int64_t NodeConverter::attr_int(const std::string& name, int64_t fallback) const {
  const AttributeProto* a = attr(name);
  if (!a) return fallback;
  if (type_of_attr(*a) != AttributeProto::INT)
    malformed(fmt::format("attribute '{}' must be an int", name));
  return a->i();
}

double NodeConverter::attr_float(const std::string& name, double fallback) const {
  const AttributeProto* a = attr(name);
  if (!a) return fallback;
  auto type = type_of_attr(*a);
  if (type == AttributeProto::INT) return static_cast<double>(a->i());
  if (type != AttributeProto::FLOAT) malformed(fmt::format("attribute '{}' must be a float", name));
  return a->f();
}

std::vector<int64_t> NodeConverter::attr_ints(const std::string& name) const {
  const AttributeProto* a = attr(name);
  if (!a) return {};
  auto type = type_of_attr(*a);
  if (type == AttributeProto::INT) return {a->i()};
  if (type != AttributeProto::INTS && type != AttributeProto::UNDEFINED)
    malformed(fmt::format("attribute '{}' must be a list of ints", name));
  return {a->ints().begin(), a->ints().end()};
}

ir::Attributes NodeConverter::attributes(std::initializer_list<const char*> skip) const {
  ir::Attributes out;
  for (const auto& a : node_.attribute()) {
    bool skipped = false;
    for (const char* s : skip) skipped = skipped || a.name() == s;
    if (skipped) continue;
    switch (type_of_attr(a)) {
      case AttributeProto::FLOAT:
        out.set(a.name(), static_cast<double>(a.f()));
        break;
      case AttributeProto::INT:
        out.set(a.name(), static_cast<int64_t>(a.i()));
        break;
      case AttributeProto::STRING:
        out.set(a.name(), a.s());
        break;
      case AttributeProto::FLOATS:
        out.set(a.name(), std::vector<double>(a.floats().begin(), a.floats().end()));
        break;
      case AttributeProto::INTS:
        out.set(a.name(), std::vector<int64_t>(a.ints().begin(), a.ints().end()));
        break;
      case AttributeProto::STRINGS:
        out.set(a.name(), std::vector<std::string>(a.strings().begin(), a.strings().end()));
        break;
      case AttributeProto::TENSOR:
        out.set(a.name(),
                tensor_from_proto(a.t(), fmt::format("{} attribute '{}'", describe(), a.name()),
                                  state_.base_dir, state_.max_tensor_bytes));
        break;
      case AttributeProto::UNDEFINED:
        out.set(a.name(), std::vector<int64_t>{});
        break;
      default:
        unsupported(fmt::format("attribute '{}' holds a graph, sparse tensor or type", a.name()));
    }
  }
  return out;
}

std::optional<ir::TensorType> NodeConverter::type_of(ir::ValueId v) const {
  if (v == ir::kNoValue || !state_.graph.value(v).typed) return std::nullopt;
  return state_.graph.value(v).type;
}

// Where import-time inference could not type a value (its shape depends on values computed at run
// time), its rank often still follows from the ops that made it: a Reshape to a constant shape, a
// Transpose, elementwise ops. Looked up through the producers, a few levels deep.
std::optional<int> NodeConverter::rank_of(ir::ValueId v) const {
  std::function<std::optional<int>(ir::ValueId, int)> rank = [&](ir::ValueId u,
                                                                 int depth) -> std::optional<int> {
    if (auto t = type_of(u)) return t->shape.rank();
    const ir::Graph& g = state_.graph;
    if (u == ir::kNoValue || depth == 0 || g.value(u).producer < 0) return std::nullopt;
    const ir::Node& n = g.node(g.value(u).producer);
    if (n.op == ir::OpType::Reshape && n.has_input(1) && constant_of(n.inputs[1]))
      return static_cast<int>(constant_of(n.inputs[1])->numel());
    if (n.op == ir::OpType::Transpose && n.attrs.has("perm"))
      return static_cast<int>(n.attrs.get_ints("perm").size());
    bool same_rank = ir::is_unary_elementwise(n.op) || n.op == ir::OpType::Transpose ||
                     n.op == ir::OpType::Slice || n.op == ir::OpType::Softmax;
    if (same_rank && n.has_input(0)) return rank(n.inputs[0], depth - 1);
    if (n.op == ir::OpType::MatMul) {  // numpy matmul: a vector operand loses its axis
      std::optional<int> a = rank(n.inputs[0], depth - 1), b = rank(n.inputs[1], depth - 1);
      if (!a || !b) return std::nullopt;
      if (*a == 1 || *b == 1) return *a + *b - 2;
      return std::max(*a, *b);
    }
    if (ir::is_binary_elementwise(n.op) || n.op == ir::OpType::Where) {
      int r = 0;
      for (ir::ValueId in : n.inputs) {
        std::optional<int> k = rank(in, depth - 1);
        if (!k) return std::nullopt;
        r = std::max(r, *k);
      }
      return r;
    }
    return std::nullopt;
  };
  return rank(v, 8);
}

const ir::HostTensor* NodeConverter::constant_of(ir::ValueId v) const {
  if (v == ir::kNoValue) return nullptr;
  return state_.graph.value(v).constant.get();
}

ir::ValueId NodeConverter::constant(const std::string& suffix, ir::HostTensor t) {
  return state_.graph.add_constant(name_ + "/" + suffix, std::move(t));
}

ir::ValueId NodeConverter::constant_ints(const std::string& suffix,
                                         const std::vector<int64_t>& values) {
  return constant(suffix, ir::HostTensor::from(ir::Shape({static_cast<int64_t>(values.size())}),
                                               values.data()));
}

ir::ValueId NodeConverter::constant_scalar(const std::string& suffix, ir::DType dtype,
                                           double value) {
  ir::HostTensor out(dtype, ir::Shape());
  switch (dtype) {
    case ir::DType::f64:
      out.data<double>()[0] = value;
      break;
    case ir::DType::f32:
      out.data<float>()[0] = static_cast<float>(value);
      break;
    case ir::DType::i8:
      out.data<int8_t>()[0] = saturate<int8_t>(value);
      break;
    case ir::DType::i32:
      out.data<int32_t>()[0] = saturate<int32_t>(value);
      break;
    case ir::DType::i64:
      out.data<int64_t>()[0] = saturate<int64_t>(value);
      break;
    case ir::DType::boolean:
      out.data<bool>()[0] = value != 0;
      break;
    default:
      unsupported(fmt::format("a {} constant", ir::dtype_name(dtype)));
  }
  return constant(suffix, out);
}

void NodeConverter::emit(ir::OpType op, std::vector<ir::ValueId> inputs, ir::Attributes attrs,
                         int first_output, int count) {
  if (count < 0) {
    count = num_outputs() - first_output;
    while (count > 1 && !has_output(first_output + count - 1)) --count;
  }
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i)
    names.push_back(has_output(first_output + i) ? node_.output(first_output + i) : "");
  auto outs = state_.graph.add_node(op, name_, std::move(inputs), std::move(attrs), count, names);
  infer_last();
  for (int i = 0; i < count; ++i)
    if (has_output(first_output + i)) bind_output(first_output + i, outs[i]);
}

std::vector<ir::ValueId> NodeConverter::emit_internal(ir::OpType op, const std::string& suffix,
                                                      std::vector<ir::ValueId> inputs,
                                                      ir::Attributes attrs, int num_outputs) {
  auto outs = state_.graph.add_node(op, name_ + "/" + suffix, std::move(inputs), std::move(attrs),
                                    num_outputs);
  infer_last();
  return outs;
}

void NodeConverter::bind_output(int i, ir::ValueId v) {
  if (i >= num_outputs())
    malformed(fmt::format("output {} is missing: the node lists {}", i, num_outputs()));
  const std::string& name = node_.output(i);
  if (name.empty()) return;  // an omitted optional output
  if (!state_.values.emplace(name, v).second)
    malformed(fmt::format("output '{}' is already defined elsewhere in the graph", name));
  // A value this node computed with internal ops (an Einsum's final reshape) takes the ONNX name,
  // so that a graph output keeps its name; an input passed through keeps its own.
  ir::Value& value = state_.graph.value(v);
  if (value.producer >= 0 && state_.graph.node(value.producer).name.rfind(name_ + "/", 0) == 0)
    value.name = name;
}

void NodeConverter::constant_output(int i, ir::HostTensor t) {
  bind_output(i, state_.graph.add_constant(node_.output(i), std::move(t)));
}

bool NodeConverter::is_initializer(ir::ValueId v) const {
  return v != ir::kNoValue && state_.graph.value(v).initializer;
}

void NodeConverter::initializer_output(int i, ir::HostTensor t) {
  ir::ValueId v = state_.graph.add_constant(node_.output(i), std::move(t));
  state_.graph.value(v).initializer = true;
  bind_output(i, v);
}

void NodeConverter::unsupported(const std::string& what) const {
  throw UnsupportedOpError(
      fmt::format("{} (op version {}): {} is not supported", describe(), version_, what),
      {fmt::format("{} ({})", op_type(), what)});
}

void NodeConverter::malformed(const std::string& what) const {
  throw IoError(fmt::format("{}: {}", describe(), what));
}

// Best-effort shape inference while importing, so converters of legacy forms can read ranks and
// dtypes. Nodes that cannot be inferred yet (e.g. shapes computed from the unbound batch) stay
// untyped; compile() infers the whole graph again.
void NodeConverter::infer_last() {
  try {
    ir::infer_node(state_.graph, state_.graph.num_nodes() - 1);
  } catch (const std::exception&) {
  }
}

Converter direct(ir::OpType op, std::initializer_list<const char*> drop_attrs) {
  std::vector<std::string> drop(drop_attrs.begin(), drop_attrs.end());
  return [op, drop](NodeConverter& c) {
    std::vector<ir::ValueId> inputs;
    for (int i = 0; i < c.num_inputs(); ++i) inputs.push_back(c.input(i));
    while (!inputs.empty() && inputs.back() == ir::kNoValue) inputs.pop_back();
    ir::Attributes attrs = c.attributes();
    for (const auto& d : drop) attrs.erase(d);
    c.emit(op, std::move(inputs), std::move(attrs));
  };
}

const std::map<std::string, Converter>& converters() {
  static const std::map<std::string, Converter> table = [] {
    std::map<std::string, Converter> t;
    add_elementwise_converters(t);
    add_nn_converters(t);
    add_shape_converters(t);
    add_einsum_converter(t);
    return t;
  }();
  return table;
}

}  // namespace mimic::onnx_import
