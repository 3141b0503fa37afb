#include "frontend/ir/graph_builder.h"

#include <fmt/format.h>

#include "base/error.h"
#include "frontend/ir/shape_inference.h"

namespace mimic::ir {

std::vector<ValueId> GraphBuilder::ops(OpType op, std::vector<ValueId> inputs, Attributes attrs,
                                       int num_outputs) {
  std::string name = g_.unique_node_name(prefix_ + "/" + op_name(op));
  std::vector<ValueId> out =
      g_.add_node(op, name, std::move(inputs), std::move(attrs), num_outputs);
  infer_node(g_, g_.num_nodes() - 1);
  return out;
}

ValueId GraphBuilder::op(OpType op, std::vector<ValueId> inputs, Attributes attrs) {
  return ops(op, std::move(inputs), std::move(attrs), 1).at(0);
}

ValueId GraphBuilder::ints(const std::vector<int64_t>& values) {
  return g_.add_constant(
      prefix_ + "/ints",
      HostTensor::from(Shape({static_cast<int64_t>(values.size())}), values.data()));
}

ValueId GraphBuilder::scalar(double value, DType dtype) {
  return full(TensorType{dtype, Shape()}, value);
}

ValueId GraphBuilder::zeros(const TensorType& type) {
  return full(type, 0.0);
}

ValueId GraphBuilder::full(const TensorType& type, double value) {
  HostTensor t(type.dtype, type.shape);
  int64_t n = t.numel();
  switch (type.dtype) {
    case DType::f32:
      for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = static_cast<float>(value);
      break;
    case DType::f64:
      for (int64_t i = 0; i < n; ++i) t.data<double>()[i] = value;
      break;
    case DType::i64:
      for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = static_cast<int64_t>(value);
      break;
    case DType::i32:
      for (int64_t i = 0; i < n; ++i) t.data<int32_t>()[i] = static_cast<int32_t>(value);
      break;
    default:
      throw UnsupportedOpError(
          fmt::format("{}: constants of dtype {} are not supported (training runs in "
                      "f32 or f64)",
                      prefix_, dtype_name(type.dtype)));
  }
  return g_.add_constant(prefix_ + "/const", std::move(t));
}

ValueId GraphBuilder::cast(ValueId a, DType to) {
  if (dtype(a) == to) return a;
  return op(OpType::Cast, {a}, {{"to", std::string(dtype_name(to))}});
}

ValueId GraphBuilder::transpose(ValueId a, const std::vector<int64_t>& perm) {
  return op(OpType::Transpose, {a}, {{"perm", perm}});
}

ValueId GraphBuilder::reduce_sum(ValueId a, const std::vector<int64_t>& axes, bool keepdims) {
  return op(OpType::ReduceSum, {a, ints(axes)}, {{"keepdims", int64_t{keepdims}}});
}

ValueId GraphBuilder::reduce_mean(ValueId a, const std::vector<int64_t>& axes, bool keepdims) {
  return op(OpType::ReduceMean, {a, ints(axes)}, {{"keepdims", int64_t{keepdims}}});
}

ValueId GraphBuilder::slice(ValueId a, const std::vector<int64_t>& starts,
                            const std::vector<int64_t>& ends, const std::vector<int64_t>& axes) {
  return op(OpType::Slice, {a, ints(starts), ints(ends), ints(axes)});
}

ValueId GraphBuilder::unbroadcast(ValueId grad, const Shape& target) {
  Shape s = shape(grad);
  if (s == target) return grad;
  int lead = s.rank() - target.rank();
  std::vector<int64_t> axes;
  for (int i = 0; i < s.rank(); ++i)
    if (i < lead || (target[i - lead] == 1 && s[i] != 1)) axes.push_back(i);
  ValueId r = axes.empty() ? grad : reduce_sum(grad, axes, true);
  return shape(r) == target ? r : reshape(r, target);
}

}  // namespace mimic::ir
