// Internal to lowering: the state shared by the per-family lowering files (lower_*.cpp).
#pragma once

#include <string>
#include <vector>

#include "backends/cuda/cuda_options.h"
#include "backends/cuda/program.h"
#include "backends/cuda/tensor_layout.h"
#include "frontend/ir/graph.h"

namespace mimic::backends::cuda {

class Lowerer {
 public:
  Lowerer(const ir::Graph& g, const CudaOptions& options);
  Program finish();
  void lower_node(int index);

  const ir::Graph& graph() const { return g_; }
  const CudaOptions& options() const { return options_; }
  const ir::TensorType& type(ir::ValueId v) const { return g_.value(v).type; }
  const ir::TensorType& in_type(const ir::Node& n, int i) const { return type(n.inputs.at(i)); }
  const ir::TensorType& out_type(const ir::Node& n, int i) const { return type(n.outputs.at(i)); }
  // The host data of input i when it is a constant, else nullptr.
  const ir::HostTensor* constant(const ir::Node& n, int i) const;

  // Device buffer of input i (a constant is uploaded on first use); marks it used by this step.
  BufRef in(const ir::Node& n, int i);
  // A new arena buffer for output i, alive from this step.
  BufRef out(const ir::Node& n, int i);
  // Output `out_index` shares the storage of input `in_index` (reshape-like views).
  void alias(const ir::Node& n, int out_index, int in_index);
  // Output i is a value computed now on the host, uploaded as a constant.
  void set_constant_output(const ir::Node& n, int i, ir::HostTensor data);
  // Arena bytes alive during this step only.
  BufRef scratch(int64_t bytes, const std::string& what);
  // A constant computed at compile time (folded parameters, reordered weights).
  BufRef upload(ir::HostTensor data, const std::string& what);

  void emit(Instr instr);
  void note(std::string text) { program_.notes.push_back(std::move(text)); }
  void matrix_mode(ir::DType dtype);
  void mark_host_computed() { program_.steps.back().host_computed = true; }

 private:
  BufRef value_buffer(ir::ValueId v);
  void touch(const BufRef& ref);

  const ir::Graph& g_;
  CudaOptions options_;
  Program program_;
  std::vector<BufRef> values_;  // per value id
  int step_ = -1;
};

// Per-family lowering (lower_*.cpp). check_* return "" when supported.
std::string check_elementwise(const ir::Graph& g, const ir::Node& n);
void lower_elementwise(Lowerer& l, const ir::Node& n);
std::string check_linear(const ir::Graph& g, const ir::Node& n);
void lower_linear(Lowerer& l, const ir::Node& n);
std::string check_nn(const ir::Graph& g, const ir::Node& n);
void lower_nn(Lowerer& l, const ir::Node& n);
std::string check_data(const ir::Graph& g, const ir::Node& n);
void lower_data(Lowerer& l, const ir::Node& n);

enum class Family { elementwise, linear, nn, data, none };
Family family_of(ir::OpType op);

// Helpers shared by the lowering files.
bool is_float_type(ir::DType t);
std::string dtype_reason(const ir::Node& n, ir::DType t);  // "Relu on bool"
// Widens a floating tensor (f32/f16/bf16) to f32 on the host.
ir::HostTensor to_f32(const ir::HostTensor& t);
// `t` broadcast to `shape` and widened to f32, on the host.
ir::HostTensor expand_f32(const ir::HostTensor& t, const ir::Shape& shape);

}  // namespace mimic::backends::cuda
