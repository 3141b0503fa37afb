#include "frontend/api/nn.h"

#include <fmt/format.h>
#include <cmath>

#include "base/error.h"
#include "frontend/api/random.h"

namespace mimic::nn {
namespace {

// Weights drawn uniformly with standard deviation `stddev` (bound sqrt(3) x stddev), as PyTorch's
// kaiming_uniform initialization does; uniform draws cost one 64-bit random number each, so even
// ResNet-50's 25M weights build in a fraction of a second.
Tensor random_parameter(ir::Shape shape, float stddev, uint64_t seed) {
  Random rng(seed);
  return Tensor::constant(rng.uniform_tensor(shape, std::sqrt(3.0f) * stddev));
}

Tensor filled_parameter(ir::Shape shape, float value) {
  ir::HostTensor t(ir::DType::f32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = value;
  return Tensor::constant(std::move(t));
}

uint64_t mix(uint64_t seed, uint64_t salt) {
  return seed * 0x9e3779b97f4a7c15ull + salt;
}

}  // namespace

Tensor Module::operator()(const Tensor& x) {
  NameScope scope(name_);
  return forward(x);
}

Module& Module::to(const Device& device) {
  device_ = device;
  // Parameters are leaf constants shared with the members (weight, bias): move them in place,
  // as PyTorch's Module.to() does.
  for (auto& [name, t] : parameters_) t.node()->device = device;
  for (auto& [name, child] : children_) child->to(device);
  return *this;
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Tensor>> out = parameters_;
  for (const auto& [name, child] : children_)
    for (auto& [pname, t] : child->named_parameters()) out.emplace_back(name + "." + pname, t);
  return out;
}

int64_t Module::parameter_count() const {
  int64_t n = 0;
  for (const auto& [name, t] : named_parameters()) n += t.shape().numel();
  return n;
}

Tensor& Module::register_parameter(const std::string& name, Tensor t) {
  parameters_.emplace_back(name, std::move(t));
  return parameters_.back().second;
}

Sequential::Sequential(std::initializer_list<ModulePtr> modules) {
  for (const auto& m : modules) push_back(m);
}

void Sequential::push_back(ModulePtr m) {
  push_back(std::to_string(modules_.size()), std::move(m));
}

void Sequential::push_back(const std::string& name, ModulePtr m) {
  register_module(name, m);
  modules_.push_back(std::move(m));
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x;
  for (auto& m : modules_) y = (*m)(y);
  return y;
}

Linear::Linear(int64_t in, int64_t out, bool with_bias, Init init) {
  if (in <= 0 || out <= 0)
    throw InvalidArgument(fmt::format("Linear({}, {}): sizes must be positive", in, out));
  weight = random_parameter(ir::Shape({in, out}), std::sqrt(2.0f / in), mix(init.seed, 1));
  register_parameter("weight", weight);
  if (with_bias) {
    bias = random_parameter(ir::Shape({out}), 0.01f, mix(init.seed, 2));
    register_parameter("bias", bias);
  }
}

Tensor Linear::forward(const Tensor& x) {
  Tensor y = apply1(ir::OpType::MatMul, {x, weight}, {}, "matmul");
  if (bias.defined()) y = apply1(ir::OpType::Add, {y, bias}, {}, "bias");
  return y;
}

Conv2d::Conv2d(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding,
               int64_t groups, bool with_bias, std::string layout, int64_t dilation, Init init) {
  if (in <= 0 || out <= 0 || kernel <= 0 || groups <= 0 || in % groups || out % groups)
    throw InvalidArgument(fmt::format("Conv2d(in={}, out={}, kernel={}, groups={}): invalid sizes",
                                      in, out, kernel, groups));
  float fan_in = static_cast<float>(in / groups * kernel * kernel);
  weight = random_parameter(ir::Shape({out, in / groups, kernel, kernel}), std::sqrt(2.0f / fan_in),
                            mix(init.seed, 3));
  register_parameter("weight", weight);
  if (with_bias) {
    bias = random_parameter(ir::Shape({out}), 0.01f, mix(init.seed, 4));
    register_parameter("bias", bias);
  }
  options.stride = {stride, stride};
  options.padding = {padding, padding};
  options.dilation = {dilation, dilation};
  options.groups = groups;
  options.layout = std::move(layout);
}

Tensor Conv2d::forward(const Tensor& x) {
  return conv2d(x, weight, bias, options);
}

BatchNorm2d::BatchNorm2d(int64_t channels, float eps, std::string layout_name, Init init,
                         float gamma)
    : epsilon(eps), layout(std::move(layout_name)) {
  scale = filled_parameter(ir::Shape({channels}), gamma);
  bias = random_parameter(ir::Shape({channels}), 0.01f, mix(init.seed, 5));
  running_mean = random_parameter(ir::Shape({channels}), 0.01f, mix(init.seed, 6));
  running_var = filled_parameter(ir::Shape({channels}), 1.0f);
  register_parameter("weight", scale);
  register_parameter("bias", bias);
  register_parameter("running_mean", running_mean);
  register_parameter("running_var", running_var);
}

Tensor BatchNorm2d::forward(const Tensor& x) {
  return batch_norm(x, scale, bias, running_mean, running_var, epsilon, layout);
}

LayerNorm::LayerNorm(int64_t features, float eps) : epsilon(eps) {
  scale = filled_parameter(ir::Shape({features}), 1.0f);
  bias = filled_parameter(ir::Shape({features}), 0.0f);
  register_parameter("weight", scale);
  register_parameter("bias", bias);
}

Tensor LayerNorm::forward(const Tensor& x) {
  return layer_norm(x, scale, bias, -1, epsilon);
}

MaxPool2d::MaxPool2d(int64_t kernel, int64_t stride, int64_t padding, std::string layout) {
  options = Pool2dOptions{
      {kernel, kernel}, {stride, stride}, {padding, padding}, false, std::move(layout)};
}
Tensor MaxPool2d::forward(const Tensor& x) {
  return max_pool2d(x, options);
}

AvgPool2d::AvgPool2d(int64_t kernel, int64_t stride, int64_t padding, std::string layout) {
  options = Pool2dOptions{
      {kernel, kernel}, {stride, stride}, {padding, padding}, false, std::move(layout)};
}
Tensor AvgPool2d::forward(const Tensor& x) {
  return avg_pool2d(x, options);
}

Embedding::Embedding(int64_t vocab, int64_t dim, Init init) {
  table = random_parameter(ir::Shape({vocab, dim}), 0.02f, mix(init.seed, 7));
  register_parameter("weight", table);
}

Tensor Embedding::forward(const Tensor& ids) {
  return gather(table, ids, 0);
}

MultiheadAttention::MultiheadAttention(int64_t hidden, int64_t heads, Init init)
    : hidden_(hidden), heads_(heads) {
  if (heads <= 0 || hidden % heads)
    throw InvalidArgument(
        fmt::format("MultiheadAttention: {} heads do not divide hidden size {}", heads, hidden));
  query_ = register_module(
      "query", std::make_shared<Linear>(hidden, hidden, true, Init{mix(init.seed, 10)}));
  key_ = register_module("key",
                         std::make_shared<Linear>(hidden, hidden, true, Init{mix(init.seed, 11)}));
  value_ = register_module(
      "value", std::make_shared<Linear>(hidden, hidden, true, Init{mix(init.seed, 12)}));
  output_ = register_module(
      "output", std::make_shared<Linear>(hidden, hidden, true, Init{mix(init.seed, 13)}));
}

Tensor MultiheadAttention::forward(const Tensor& x) {
  int64_t head_dim = hidden_ / heads_;
  // [N, S, H] -> [N, heads, S, head_dim]
  auto split_heads = [&](const Tensor& t) {
    return transpose(reshape(t, {0, 0, heads_, head_dim}), {0, 2, 1, 3});
  };
  Tensor q = split_heads((*query_)(x)), k = split_heads((*key_)(x)), v = split_heads((*value_)(x));
  Tensor scores = matmul(q, transpose(k, {0, 1, 3, 2}));
  float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  scores = mul(scores, Tensor::constant(ir::HostTensor::from(ir::Shape(), &scale), x.device()));
  Tensor context = matmul(softmax(scores, -1), v);
  context = reshape(transpose(context, {0, 2, 1, 3}), {0, 0, hidden_});
  return (*output_)(context);
}

TransformerEncoderLayer::TransformerEncoderLayer(int64_t hidden, int64_t heads, int64_t ffn,
                                                 Init init) {
  attention_ = register_module(
      "attention", std::make_shared<MultiheadAttention>(hidden, heads, Init{mix(init.seed, 20)}));
  norm1_ = register_module("norm1", std::make_shared<LayerNorm>(hidden));
  ffn_in_ = register_module("ffn_in",
                            std::make_shared<Linear>(hidden, ffn, true, Init{mix(init.seed, 21)}));
  ffn_out_ = register_module("ffn_out",
                             std::make_shared<Linear>(ffn, hidden, true, Init{mix(init.seed, 22)}));
  norm2_ = register_module("norm2", std::make_shared<LayerNorm>(hidden));
}

Tensor TransformerEncoderLayer::forward(const Tensor& x) {
  Tensor h = (*norm1_)(add(x, (*attention_)(x)));
  Tensor f = (*ffn_out_)(gelu((*ffn_in_)(h)));
  return (*norm2_)(add(h, f));
}

ir::Graph trace_module(Module& module, const std::string& input_name, ir::DType dtype,
                       ir::Shape shape, const std::string& graph_name) {
  Tensor x = Tensor::placeholder(input_name, dtype, std::move(shape), module.device());
  return trace({module(x)}, graph_name);
}

}  // namespace mimic::nn
