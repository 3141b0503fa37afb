// mimic::Tensor: a value on a device. Ops on tensors are recorded into a graph lazily (like
// PyTorch's lazy tensors): shapes are inferred at once, so errors surface at the call that caused
// them, and the data is computed on the tensor's device when first read (host(), to_floats()).
// mimic::trace() turns recorded ops into an ir::Graph for mimic::compile().
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "frontend/api/device.h"
#include "frontend/ir/graph.h"

namespace mimic {

class Tensor {
 public:
  enum class Role { input, constant, placeholder, op };

  Tensor() = default;
  // Data as a runtime input (a graph input when traced).
  explicit Tensor(ir::HostTensor data, Device device = Device("cpu"));
  // Data baked into the graph (weights, shape parameters): may be folded at compile time.
  static Tensor constant(ir::HostTensor data, Device device = Device("cpu"));
  // A graph input without data; its shape may hold the batch symbol ir::kBatch.
  static Tensor placeholder(const std::string& name, ir::DType dtype, ir::Shape shape,
                            Device device = Device("cpu"));
  template <typename T>
  static Tensor from(const std::vector<T>& values, ir::Shape shape, Device device = Device("cpu")) {
    return Tensor(ir::HostTensor::from(std::move(shape), values.data()), std::move(device));
  }

  bool defined() const { return node_ != nullptr; }
  ir::DType dtype() const;
  const ir::Shape& shape() const;
  ir::TensorType type() const;
  const Device& device() const;
  const std::string& name() const;
  Role role() const;
  // Same value on another device (recorded ops are recomputed there).
  Tensor to(const Device& device) const;
  // Computes the value on its device if needed and returns it in host memory.
  const ir::HostTensor& host() const;
  // host() converted to f32 values.
  std::vector<float> to_floats() const;

  struct Node;
  Tensor(std::shared_ptr<Node> node, int index) : node_(std::move(node)), index_(index) {}
  const std::shared_ptr<Node>& node() const { return node_; }
  int index() const { return index_; }

 private:
  std::shared_ptr<Node> node_;
  int index_ = 0;
};

struct Tensor::Node {
  uint64_t id = 0;  // creation order: graph inputs are ordered by it
  Role role = Role::op;
  ir::OpType op = ir::OpType::Identity;
  std::string name;
  ir::Attributes attrs;
  std::vector<Tensor> inputs;
  std::vector<ir::TensorType> types;
  Device device;
  std::vector<ir::HostTensor> values;  // leaf data, or results once computed
};

// Records one op. All tensor inputs must live on one device (the op's device).
std::vector<Tensor> apply(ir::OpType op, const std::vector<Tensor>& inputs,
                          ir::Attributes attrs = {}, int num_outputs = 1,
                          const std::string& name = "");
Tensor apply1(ir::OpType op, const std::vector<Tensor>& inputs, ir::Attributes attrs = {},
              const std::string& name = "");

// The graph computing `outputs`: placeholders and input-role leaves become graph inputs (in
// creation order), constants become constant values.
ir::Graph trace(const std::vector<Tensor>& outputs, const std::string& name = "graph");

// Names for recorded ops: ops created while a NameScope is alive are named "outer.inner"
// (nn modules push their names).
class NameScope {
 public:
  explicit NameScope(const std::string& name);
  ~NameScope();
  NameScope(const NameScope&) = delete;
  NameScope& operator=(const NameScope&) = delete;
  static std::string current();
};

}  // namespace mimic
