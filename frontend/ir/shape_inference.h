// Shape and dtype inference, validation and batch binding.
//
// Inference runs node by node in order. A node whose inputs are all constant is folded when an
// evaluator is supplied (the api layer passes the cpu backend's), so chains such as
// Shape -> Gather -> Concat -> Reshape resolve once the batch is bound. Folded nodes keep their
// place in the graph; backends skip nodes whose outputs are all constant.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "frontend/ir/graph.h"

namespace mimic::ir {

class ConstantEvaluator {
 public:
  virtual ~ConstantEvaluator() = default;
  virtual std::vector<HostTensor> evaluate(const Graph& g, const Node& n,
                                           const std::vector<HostTensor>& inputs) = 0;
};

struct InferOptions {
  ConstantEvaluator* evaluator = nullptr;
  int64_t max_fold_elements = int64_t{1} << 26;
  // Largest value (bytes) a node may produce; 0: ir::max_tensor_bytes() (memory_limit.h).
  int64_t max_tensor_bytes = 0;
};

// Infers one node's outputs (its inputs must be typed). Throws ShapeError naming the node.
void infer_node(Graph& g, int node_index, const InferOptions& options = {});
void infer_shapes(Graph& g, const InferOptions& options = {});
// Copy of `g` with the batch symbol replaced by `batch` in every input and all types re-inferred.
Graph bind_batch(const Graph& g, int64_t batch, const InferOptions& options = {});
// Checks a graph end to end: a symbolic graph is checked with the batch bound to 1.
void validate(const Graph& g, const InferOptions& options = {});

// Everything an op's inference function sees.
class InferContext {
 public:
  InferContext(const Graph& g, const Node& n, int64_t max_bytes = 0)
      : g_(g), n_(n), max_bytes_(max_bytes) {}

  const Graph& graph() const { return g_; }
  const Node& node() const { return n_; }
  const Attributes& attrs() const { return n_.attrs; }
  int num_inputs() const { return n_.num_inputs(); }
  bool has_input(int i) const { return n_.has_input(i); }
  const TensorType& in(int i) const;
  const Shape& shape(int i) const { return in(i).shape; }
  DType dtype(int i) const { return in(i).dtype; }
  const HostTensor* constant(int i) const;
  std::vector<int64_t> ints(int i, const std::vector<int64_t>& fallback = {}) const {
    return constant_ints(g_, n_, i, fallback);
  }

  void set_output(int i, DType dtype, Shape shape);
  const std::vector<TensorType>& outputs() const { return outputs_; }

  // Throws ShapeError: "node 'x' (Op): <message>; inputs f32[N,3,224,224], f32[64,3,7,7]".
  [[noreturn]] void fail(const std::string& message) const;
  // Fails unless input i has one of the given dtypes.
  void expect_dtype(int i, std::initializer_list<DType> allowed) const;
  void expect_same_dtype(int a, int b) const;
  void expect_rank_at_least(int i, int rank) const;
  // Fails unless input i's rank is in [lo, hi].
  void expect_rank_between(int i, int lo, int hi) const;
  // Fails unless input i (when present) is a scalar: rank 0, or rank 1 with one element.
  void expect_scalar(int i) const;
  // Fails unless input i is a 1-D tensor of `size` values with input 0's dtype ("one per channel").
  void expect_per_channel(int i, int64_t size) const;
  // Float attribute `name` (or `fallback`), failing unless it is finite and in [lo, hi].
  double float_attr(const std::string& name, double fallback, double lo, double hi) const;
  // Int attribute `name` (or `fallback`), failing unless it is in [lo, hi].
  int64_t int_attr(const std::string& name, int64_t fallback, int64_t lo, int64_t hi) const;
  // String attribute `name` (or `fallback`), failing unless it is one of `allowed`.
  std::string string_attr(const std::string& name, const std::string& fallback,
                          std::initializer_list<const char*> allowed) const;

 private:
  const Graph& g_;
  const Node& n_;
  int64_t max_bytes_;
  std::vector<TensorType> outputs_;
};

using InferFn = void (*)(InferContext&);

struct OpSchema {
  int min_inputs, max_inputs, min_outputs, max_outputs;
  InferFn infer;
};

const OpSchema& op_schema(OpType op);

// Inference functions, grouped by family (defined in infer_*.cpp).
namespace infer {
void unary(InferContext& c);
void binary(InferContext& c);
void variadic(InferContext& c);
void where(InferContext& c);
void softmax(InferContext& c);
void batch_norm(InferContext& c);
void layer_norm(InferContext& c);
void instance_norm(InferContext& c);
void lrn(InferContext& c);
void trilu(InferContext& c);
void cumsum(InferContext& c);
void same_as_input(InferContext& c);
void matmul(InferContext& c);
void gemm(InferContext& c);
void conv(InferContext& c);
void conv_transpose(InferContext& c);
void pool(InferContext& c);
void max_pool_grad(InferContext& c);
void global_pool(InferContext& c);
void reduce(InferContext& c);
void arg_reduce(InferContext& c);
void reshape(InferContext& c);
void flatten(InferContext& c);
void transpose(InferContext& c);
void concat(InferContext& c);
void split(InferContext& c);
void slice(InferContext& c);
void gather(InferContext& c);
void gather_elements(InferContext& c);
void scatter_nd(InferContext& c);
void squeeze(InferContext& c);
void unsqueeze(InferContext& c);
void pad(InferContext& c);
void tile(InferContext& c);
void expand(InferContext& c);
void shape(InferContext& c);
void size(InferContext& c);
void constant_of_shape(InferContext& c);
void constant(InferContext& c);
void range(InferContext& c);
void depth_to_space(InferContext& c);
void resize(InferContext& c);
void space_to_depth(InferContext& c);
void eye_like(InferContext& c);
void recurrent(InferContext& c);
}  // namespace infer

}  // namespace mimic::ir
