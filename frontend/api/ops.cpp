#include "frontend/api/ops.h"

#include <fmt/format.h>

#include "base/error.h"

namespace mimic {

using ir::OpType;

Tensor int64_constant(const std::vector<int64_t>& values, const Device& device) {
  return Tensor::constant(
      ir::HostTensor::from(ir::Shape({static_cast<int64_t>(values.size())}), values.data()),
      device);
}

namespace {

Tensor float_scalar(float v, const Device& device) {
  return Tensor::constant(ir::HostTensor::from(ir::Shape(), &v), device);
}

Tensor reduce(OpType op, const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  return apply1(op, {x, int64_constant(axes, x.device())}, {{"keepdims", int64_t{keepdims}}});
}

ir::Attributes pool_attrs(const Pool2dOptions& o) {
  return {{"kernel_shape", o.kernel},
          {"strides", o.stride},
          {"pads", std::vector<int64_t>{o.padding[0], o.padding[1], o.padding[0], o.padding[1]}},
          {"ceil_mode", int64_t{o.ceil_mode}},
          {"layout", o.layout}};
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  return apply1(OpType::Add, {a, b});
}
Tensor sub(const Tensor& a, const Tensor& b) {
  return apply1(OpType::Sub, {a, b});
}
Tensor mul(const Tensor& a, const Tensor& b) {
  return apply1(OpType::Mul, {a, b});
}
Tensor div(const Tensor& a, const Tensor& b) {
  return apply1(OpType::Div, {a, b});
}
Tensor pow(const Tensor& a, const Tensor& b) {
  return apply1(OpType::Pow, {a, b});
}
Tensor operator+(const Tensor& a, const Tensor& b) {
  return add(a, b);
}
Tensor operator-(const Tensor& a, const Tensor& b) {
  return sub(a, b);
}
Tensor operator*(const Tensor& a, const Tensor& b) {
  return mul(a, b);
}
Tensor operator/(const Tensor& a, const Tensor& b) {
  return div(a, b);
}
Tensor relu(const Tensor& x) {
  return apply1(OpType::Relu, {x});
}
Tensor relu6(const Tensor& x) {
  return clip(x, 0.0f, 6.0f);
}
Tensor clip(const Tensor& x, float lo, float hi) {
  if (x.dtype() != ir::DType::f32)
    throw InvalidArgument(
        fmt::format("clip: scalar bounds need an f32 tensor, got {}", ir::dtype_name(x.dtype())));
  return apply1(OpType::Clip, {x, float_scalar(lo, x.device()), float_scalar(hi, x.device())});
}
Tensor gelu(const Tensor& x, bool tanh_approximation) {
  return apply1(OpType::Gelu, {x},
                {{"approximate", std::string(tanh_approximation ? "tanh" : "none")}});
}
Tensor sigmoid(const Tensor& x) {
  return apply1(OpType::Sigmoid, {x});
}
Tensor tanh(const Tensor& x) {
  return apply1(OpType::Tanh, {x});
}
Tensor exp(const Tensor& x) {
  return apply1(OpType::Exp, {x});
}
Tensor log(const Tensor& x) {
  return apply1(OpType::Log, {x});
}
Tensor sqrt(const Tensor& x) {
  return apply1(OpType::Sqrt, {x});
}
Tensor erf(const Tensor& x) {
  return apply1(OpType::Erf, {x});
}
Tensor cast(const Tensor& x, ir::DType dtype) {
  return apply1(OpType::Cast, {x}, {{"to", std::string(ir::dtype_name(dtype))}});
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  return apply1(OpType::MatMul, {a, b});
}
Tensor softmax(const Tensor& x, int64_t axis) {
  return apply1(OpType::Softmax, {x}, {{"axis", axis}});
}
Tensor log_softmax(const Tensor& x, int64_t axis) {
  return apply1(OpType::LogSoftmax, {x}, {{"axis", axis}});
}
Tensor layer_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, int64_t axis,
                  float epsilon) {
  return apply1(OpType::LayerNormalization, {x, scale, bias},
                {{"axis", axis}, {"epsilon", static_cast<double>(epsilon)}});
}

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dOptions& o) {
  ir::Attributes attrs{
      {"strides", o.stride}, {"dilations", o.dilation}, {"group", o.groups}, {"layout", o.layout}};
  if (o.same_padding)
    attrs.set("auto_pad", std::string("SAME_UPPER"));
  else
    attrs.set("pads", std::vector<int64_t>{o.padding[0], o.padding[1], o.padding[0], o.padding[1]});
  std::vector<Tensor> inputs{x, weight};
  if (bias.defined()) inputs.push_back(bias);
  return apply1(OpType::Conv, inputs, attrs);
}

Tensor batch_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& mean,
                  const Tensor& var, float epsilon, const std::string& layout) {
  return apply1(OpType::BatchNormalization, {x, scale, bias, mean, var},
                {{"epsilon", static_cast<double>(epsilon)}, {"layout", layout}});
}

Tensor max_pool2d(const Tensor& x, const Pool2dOptions& o) {
  return apply1(OpType::MaxPool, {x}, pool_attrs(o));
}
Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& o) {
  return apply1(OpType::AveragePool, {x}, pool_attrs(o));
}
Tensor global_avg_pool(const Tensor& x, const std::string& layout) {
  return apply1(OpType::GlobalAveragePool, {x}, {{"layout", layout}});
}

Tensor reshape(const Tensor& x, const std::vector<int64_t>& shape) {
  return apply1(OpType::Reshape, {x, int64_constant(shape, x.device())});
}
Tensor flatten(const Tensor& x, int64_t axis) {
  return apply1(OpType::Flatten, {x}, {{"axis", axis}});
}
Tensor transpose(const Tensor& x, const std::vector<int64_t>& perm) {
  return apply1(OpType::Transpose, {x}, {{"perm", perm}});
}
Tensor concat(const std::vector<Tensor>& xs, int64_t axis) {
  return apply1(OpType::Concat, xs, {{"axis", axis}});
}
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t axis) {
  return apply(OpType::Split, {x, int64_constant(sizes, x.device())}, {{"axis", axis}},
               static_cast<int>(sizes.size()));
}
Tensor slice(const Tensor& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
             const std::vector<int64_t>& axes, const std::vector<int64_t>& steps) {
  std::vector<Tensor> in{x, int64_constant(starts, x.device()), int64_constant(ends, x.device())};
  if (!axes.empty() || !steps.empty())
    in.push_back(axes.empty() ? Tensor() : int64_constant(axes, x.device()));
  if (!steps.empty()) in.push_back(int64_constant(steps, x.device()));
  return apply1(OpType::Slice, in);
}
Tensor gather(const Tensor& x, const Tensor& indices, int64_t axis) {
  return apply1(OpType::Gather, {x, indices}, {{"axis", axis}});
}
Tensor reduce_sum(const Tensor& x, const std::vector<int64_t>& axes, bool k) {
  return reduce(OpType::ReduceSum, x, axes, k);
}
Tensor reduce_mean(const Tensor& x, const std::vector<int64_t>& axes, bool k) {
  return reduce(OpType::ReduceMean, x, axes, k);
}
Tensor reduce_max(const Tensor& x, const std::vector<int64_t>& axes, bool k) {
  return reduce(OpType::ReduceMax, x, axes, k);
}

}  // namespace mimic
