// Builds small ONNX models in memory (with the ONNX protobuf classes) for the importer tests.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace mimic::testing {

// A dimension: a size, or a symbolic name (dim_param).
using Dim = std::variant<int64_t, std::string>;

class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 13, std::string name = "test_model");

  void input(const std::string& name, int32_t elem_type, const std::vector<Dim>& dims);
  void output(const std::string& name, int32_t elem_type = onnx::TensorProto::FLOAT);
  onnx::TensorProto& initializer(const std::string& name, const std::vector<int64_t>& dims,
                                 const std::vector<float>& values);
  onnx::TensorProto& initializer_i64(const std::string& name, const std::vector<int64_t>& dims,
                                     const std::vector<int64_t>& values);
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "");

  onnx::ModelProto& model() { return model_; }
  onnx::GraphProto& graph() { return *model_.mutable_graph(); }
  std::string bytes() const;
  // Writes the model to `path`; returns the path.
  std::string save(const std::string& path) const;

 private:
  onnx::ModelProto model_;
};

// Attribute helpers.
void attr_int(onnx::NodeProto& n, const std::string& name, int64_t v);
void attr_float(onnx::NodeProto& n, const std::string& name, float v);
void attr_ints(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v);
void attr_floats(onnx::NodeProto& n, const std::string& name, const std::vector<float>& v);
void attr_string(onnx::NodeProto& n, const std::string& name, const std::string& v);
void attr_tensor(onnx::NodeProto& n, const std::string& name, const onnx::TensorProto& t);

onnx::TensorProto float_tensor(const std::vector<int64_t>& dims, const std::vector<float>& values,
                               const std::string& name = "");

// A fresh empty folder under the system temp dir.
std::string temp_dir(const std::string& tag);

}  // namespace mimic::testing
