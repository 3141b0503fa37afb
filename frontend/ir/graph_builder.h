// Appends ops to a typed graph one at a time, inferring each new node's output types at once so
// the next step can read them. Gradient rules, losses and optimizer updates are written with it.
#pragma once

#include <string>
#include <vector>

#include "frontend/ir/graph.h"

namespace mimic::ir {

class GraphBuilder {
 public:
  // New nodes are named "<prefix>/<Op>" (made unique).
  GraphBuilder(Graph& g, std::string prefix) : g_(g), prefix_(std::move(prefix)) {}

  Graph& graph() { return g_; }
  void set_prefix(std::string prefix) { prefix_ = std::move(prefix); }
  // By value: appending nodes may move the graph's value table.
  TensorType type(ValueId v) const { return g_.value(v).type; }
  Shape shape(ValueId v) const { return g_.value(v).type.shape; }
  DType dtype(ValueId v) const { return g_.value(v).type.dtype; }

  // One node; returns its outputs (already typed).
  std::vector<ValueId> ops(OpType op, std::vector<ValueId> inputs, Attributes attrs,
                           int num_outputs);
  ValueId op(OpType op, std::vector<ValueId> inputs, Attributes attrs = {});

  // Constants.
  ValueId ints(const std::vector<int64_t>& values);  // i64 [n]
  ValueId scalar(double value, DType dtype);         // rank 0
  ValueId scalar_like(double value, ValueId like) { return scalar(value, dtype(like)); }
  ValueId zeros(const TensorType& type);
  ValueId full(const TensorType& type, double value);

  // Shorthands for common ops.
  ValueId add(ValueId a, ValueId b) { return op(OpType::Add, {a, b}); }
  ValueId sub(ValueId a, ValueId b) { return op(OpType::Sub, {a, b}); }
  ValueId mul(ValueId a, ValueId b) { return op(OpType::Mul, {a, b}); }
  ValueId div(ValueId a, ValueId b) { return op(OpType::Div, {a, b}); }
  ValueId neg(ValueId a) { return op(OpType::Neg, {a}); }
  ValueId scale(ValueId a, double s) { return mul(a, scalar_like(s, a)); }
  ValueId cast(ValueId a, DType to);
  ValueId reshape(ValueId a, const Shape& shape) {
    return op(OpType::Reshape, {a, ints(shape.dims())});
  }
  ValueId transpose(ValueId a, const std::vector<int64_t>& perm);
  ValueId expand(ValueId a, const Shape& shape) {
    return op(OpType::Expand, {a, ints(shape.dims())});
  }
  ValueId reduce_sum(ValueId a, const std::vector<int64_t>& axes, bool keepdims);
  ValueId reduce_mean(ValueId a, const std::vector<int64_t>& axes, bool keepdims);
  ValueId slice(ValueId a, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                const std::vector<int64_t>& axes);
  // Sums `grad` (shaped like a broadcast result) over the axes that broadcasting added or
  // stretched so that it has `target`'s shape.
  ValueId unbroadcast(ValueId grad, const Shape& target);

 private:
  Graph& g_;
  std::string prefix_;
};

}  // namespace mimic::ir
