// Eager ops on mimic::Tensor, named as PyTorch/JAX users expect. Each records one IR op (see
// tensor.h); shapes are checked at the call.
#pragma once

#include <string>
#include <vector>

#include "frontend/api/tensor.h"

namespace mimic {

// Elementwise (numpy broadcasting).
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor relu(const Tensor& x);
Tensor relu6(const Tensor& x);
Tensor clip(const Tensor& x, float lo, float hi);
Tensor gelu(const Tensor& x, bool tanh_approximation = false);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor erf(const Tensor& x);
Tensor cast(const Tensor& x, ir::DType dtype);

// Linear algebra and neural-network ops.
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor softmax(const Tensor& x, int64_t axis = -1);
Tensor log_softmax(const Tensor& x, int64_t axis = -1);
Tensor layer_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, int64_t axis = -1,
                  float epsilon = 1e-5f);

struct Conv2dOptions {
  std::vector<int64_t> stride{1, 1}, dilation{1, 1};
  std::vector<int64_t> padding{0, 0};  // per spatial dim, same before and after
  bool same_padding = false;           // auto_pad SAME_UPPER instead of `padding`
  int64_t groups = 1;
  std::string layout = "NCHW";  // or "NHWC"
};
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {},
              const Conv2dOptions& o = {});
Tensor batch_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& mean,
                  const Tensor& var, float epsilon = 1e-5f, const std::string& layout = "NCHW");

struct Pool2dOptions {
  std::vector<int64_t> kernel{2, 2}, stride{2, 2}, padding{0, 0};
  bool ceil_mode = false;
  std::string layout = "NCHW";
};
Tensor max_pool2d(const Tensor& x, const Pool2dOptions& o);
Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& o);
Tensor global_avg_pool(const Tensor& x, const std::string& layout = "NCHW");

// Shapes.
Tensor reshape(const Tensor& x, const std::vector<int64_t>& shape);
Tensor flatten(const Tensor& x, int64_t axis = 1);
Tensor transpose(const Tensor& x, const std::vector<int64_t>& perm);
Tensor concat(const std::vector<Tensor>& xs, int64_t axis);
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t axis);
Tensor slice(const Tensor& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
             const std::vector<int64_t>& axes = {}, const std::vector<int64_t>& steps = {});
Tensor gather(const Tensor& x, const Tensor& indices, int64_t axis = 0);
Tensor reduce_sum(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims = true);
Tensor reduce_mean(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims = true);
Tensor reduce_max(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims = true);

// A constant i64 vector (shape parameters).
Tensor int64_constant(const std::vector<int64_t>& values, const Device& device);

}  // namespace mimic
