#include "tests/onnx/model_builder.h"

#include <filesystem>
#include <fstream>
#include <random>

namespace mimic::testing {

ModelBuilder::ModelBuilder(int64_t opset, std::string name) {
  model_.set_ir_version(7);
  model_.set_producer_name("mimic-tests");
  auto* o = model_.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  model_.mutable_graph()->set_name(std::move(name));
}

void ModelBuilder::input(const std::string& name, int32_t elem_type, const std::vector<Dim>& dims) {
  auto* v = graph().add_input();
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem_type);
  auto* shape = t->mutable_shape();
  for (const Dim& d : dims) {
    auto* dim = shape->add_dim();
    if (std::holds_alternative<int64_t>(d))
      dim->set_dim_value(std::get<int64_t>(d));
    else
      dim->set_dim_param(std::get<std::string>(d));
  }
}

void ModelBuilder::output(const std::string& name, int32_t elem_type) {
  auto* v = graph().add_output();
  v->set_name(name);
  v->mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
}

onnx::TensorProto float_tensor(const std::vector<int64_t>& dims, const std::vector<float>& values,
                               const std::string& name) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  for (float v : values) t.add_float_data(v);
  return t;
}

onnx::TensorProto& ModelBuilder::initializer(const std::string& name,
                                             const std::vector<int64_t>& dims,
                                             const std::vector<float>& values) {
  auto* t = graph().add_initializer();
  *t = float_tensor(dims, values, name);
  return *t;
}

onnx::TensorProto& ModelBuilder::initializer_i64(const std::string& name,
                                                 const std::vector<int64_t>& dims,
                                                 const std::vector<int64_t>& values) {
  auto* t = graph().add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims) t->add_dims(d);
  for (int64_t v : values) t->add_int64_data(v);
  return *t;
}

onnx::NodeProto& ModelBuilder::node(const std::string& op, const std::vector<std::string>& inputs,
                                    const std::vector<std::string>& outputs,
                                    const std::string& name) {
  auto* n = graph().add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return *n;
}

std::string ModelBuilder::bytes() const {
  return model_.SerializeAsString();
}

std::string ModelBuilder::save(const std::string& path) const {
  std::ofstream out(path, std::ios::binary);
  out << bytes();
  return path;
}

namespace {
onnx::AttributeProto& add_attr(onnx::NodeProto& n, const std::string& name,
                               onnx::AttributeProto::AttributeType t) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(t);
  return *a;
}
}  // namespace

void attr_int(onnx::NodeProto& n, const std::string& name, int64_t v) {
  add_attr(n, name, onnx::AttributeProto::INT).set_i(v);
}
void attr_float(onnx::NodeProto& n, const std::string& name, float v) {
  add_attr(n, name, onnx::AttributeProto::FLOAT).set_f(v);
}
void attr_ints(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  auto& a = add_attr(n, name, onnx::AttributeProto::INTS);
  for (int64_t x : v) a.add_ints(x);
}
void attr_floats(onnx::NodeProto& n, const std::string& name, const std::vector<float>& v) {
  auto& a = add_attr(n, name, onnx::AttributeProto::FLOATS);
  for (float x : v) a.add_floats(x);
}
void attr_string(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  add_attr(n, name, onnx::AttributeProto::STRING).set_s(v);
}
void attr_tensor(onnx::NodeProto& n, const std::string& name, const onnx::TensorProto& t) {
  *add_attr(n, name, onnx::AttributeProto::TENSOR).mutable_t() = t;
}

std::string temp_dir(const std::string& tag) {
  std::random_device rd;
  auto dir = std::filesystem::temp_directory_path() / ("mimic_" + tag + "_" + std::to_string(rd()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace mimic::testing
