// Internal to the importer: what an op converter sees of one ONNX node (its inputs as IR values,
// its attributes, the op version in effect) and the helpers it uses to emit IR nodes and constants.
// Converters turn older attribute forms into the IR's constant inputs (opset-18 style).
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "frontend/ir/graph.h"

namespace mimic::onnx_import {

// The graph being built: ONNX value names -> IR values.
struct ImportState {
  ir::Graph graph;
  std::map<std::string, ir::ValueId> values;
  std::string base_dir;          // external data files
  int64_t max_tensor_bytes = 0;  // 0: ir::max_tensor_bytes()
  int64_t opset = 0;             // of the default domain
  std::set<std::string> read;    // names some node or the graph's outputs read
};

class NodeConverter {
 public:
  NodeConverter(ImportState& state, const onnx::NodeProto& node, int version);

  const onnx::NodeProto& proto() const { return node_; }
  const std::string& op_type() const { return node_.op_type(); }
  // The version of the op's schema in effect at the model's opset (e.g. 11 for Softmax at opset
  // 12).
  int version() const { return version_; }
  // "node 'conv1' (Conv)" for messages; unnamed nodes are named after their first output.
  std::string describe() const;
  const std::string& name() const { return name_; }

  int num_inputs() const { return node_.input_size(); }
  // IR value of input i, or kNoValue when absent or given as "".
  ir::ValueId input(int i) const;
  int num_outputs() const { return node_.output_size(); }
  bool has_output(int i) const { return i < num_outputs() && !node_.output(i).empty(); }
  // Whether a node or the graph's outputs read output i.
  bool output_read(int i) const { return has_output(i) && state_.read.count(node_.output(i)); }

  bool has_attr(const std::string& name) const;
  const onnx::AttributeProto* attr(const std::string& name) const;
  int64_t attr_int(const std::string& name, int64_t fallback) const;
  double attr_float(const std::string& name, double fallback) const;
  std::vector<int64_t> attr_ints(const std::string& name) const;
  // Every attribute of the node as IR attributes, except `skip`.
  ir::Attributes attributes(std::initializer_list<const char*> skip = {}) const;

  // Shape and dtype of a value when best-effort inference during import could tell.
  std::optional<ir::TensorType> type_of(ir::ValueId v) const;
  std::optional<int> rank_of(ir::ValueId v) const;
  // The value's data when it is a constant (initializer, Constant output, folded), else nullptr.
  const ir::HostTensor* constant_of(ir::ValueId v) const;

  // New constant values named after this node.
  ir::ValueId constant(const std::string& suffix, ir::HostTensor t);
  ir::ValueId constant_ints(const std::string& suffix, const std::vector<int64_t>& values);
  // A rank-0 tensor of `dtype` holding `value`.
  ir::ValueId constant_scalar(const std::string& suffix, ir::DType dtype, double value);

  // Appends an IR node whose outputs are this node's ONNX outputs [first, first + count).
  void emit(ir::OpType op, std::vector<ir::ValueId> inputs, ir::Attributes attrs,
            int first_output = 0, int count = -1);
  // Appends an internal IR node (outputs not visible to ONNX names); returns its outputs.
  std::vector<ir::ValueId> emit_internal(ir::OpType op, const std::string& suffix,
                                         std::vector<ir::ValueId> inputs, ir::Attributes attrs = {},
                                         int num_outputs = 1);
  // Makes ONNX output i an alias of an existing value.
  void bind_output(int i, ir::ValueId v);
  // Makes ONNX output i a constant value of that name (Constant nodes).
  void constant_output(int i, ir::HostTensor t);
  // Whether `v` is one of the model's initializers (a parameter when the model is trained).
  bool is_initializer(ir::ValueId v) const;
  // Makes ONNX output i an initializer of that name holding `t` (its own parameter).
  void initializer_output(int i, ir::HostTensor t);

  // Throws UnsupportedOpError naming this node and op version.
  [[noreturn]] void unsupported(const std::string& what) const;
  // Throws IoError for a malformed node (missing required attribute, wrong attribute type).
  [[noreturn]] void malformed(const std::string& what) const;

 private:
  void infer_last();

  ImportState& state_;
  const onnx::NodeProto& node_;
  int version_;
  std::string name_;
};

using Converter = std::function<void(NodeConverter&)>;
// Op type (default domain) -> converter; every op mimic can import.
const std::map<std::string, Converter>& converters();

// Registration of the converter families (import_ops_*.cpp).
void add_elementwise_converters(std::map<std::string, Converter>& table);
void add_nn_converters(std::map<std::string, Converter>& table);
void add_shape_converters(std::map<std::string, Converter>& table);
void add_einsum_converter(std::map<std::string, Converter>& table);

// Converter that maps the ONNX op 1:1 to an IR op, attributes passed through.
Converter direct(ir::OpType op, std::initializer_list<const char*> drop_attrs = {});

}  // namespace mimic::onnx_import
