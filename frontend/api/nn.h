// mimic::nn: modules in the PyTorch idiom. model(x) records ops on x's device; parameters are
// constants (seeded random initialization) that .to(device) moves with the module. Node names
// follow the module tree ("layer1.0.conv1"), so reports and traces read like the model's code.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "frontend/api/ops.h"
#include "frontend/api/tensor.h"

namespace mimic::nn {

class Module {
 public:
  virtual ~Module() = default;
  // Runs forward() inside this module's name scope.
  Tensor operator()(const Tensor& x);
  virtual Tensor forward(const Tensor& x) = 0;

  // Moves every parameter (recursively) to `device`; returns *this for chaining.
  Module& to(const Device& device);
  const Device& device() const { return device_; }
  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  int64_t parameter_count() const;
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

 protected:
  Tensor& register_parameter(const std::string& name, Tensor t);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> m) {
    m->set_name(name);
    children_.emplace_back(name, m);
    return m;
  }

 private:
  std::string name_;
  Device device_ = Device("cpu");
  std::vector<std::pair<std::string, Tensor>> parameters_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

using ModulePtr = std::shared_ptr<Module>;

class Sequential : public Module {
 public:
  Sequential() = default;
  Sequential(std::initializer_list<ModulePtr> modules);
  void push_back(ModulePtr m);  // named by its index
  void push_back(const std::string& name, ModulePtr m);
  Tensor forward(const Tensor& x) override;
  size_t size() const { return modules_.size(); }

 private:
  std::vector<ModulePtr> modules_;
};

// Weight initialization: He-normal for layers followed by ReLU-like activations, from `seed`.
struct Init {
  uint64_t seed = 0;
};

class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true, Init init = {});
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;  // weight [in, out] (so forward is x @ weight), bias [out]
};

class Conv2d : public Module {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel, int64_t stride = 1,
         int64_t padding = 0, int64_t groups = 1, bool bias = true, std::string layout = "NCHW",
         int64_t dilation = 1, Init init = {});
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;  // weight [out, in/groups, k, k]
  Conv2dOptions options;
};

class BatchNorm2d : public Module {
 public:
  BatchNorm2d(int64_t channels, float epsilon = 1e-5f, std::string layout = "NCHW", Init init = {},
              float gamma = 1.0f);
  Tensor forward(const Tensor& x) override;
  Tensor scale, bias, running_mean, running_var;
  float epsilon;
  std::string layout;
};

class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t features, float epsilon = 1e-5f);
  Tensor forward(const Tensor& x) override;
  Tensor scale, bias;
  float epsilon;
};

class MaxPool2d : public Module {
 public:
  MaxPool2d(int64_t kernel, int64_t stride, int64_t padding = 0, std::string layout = "NCHW");
  Tensor forward(const Tensor& x) override;
  Pool2dOptions options;
};

class AvgPool2d : public Module {
 public:
  AvgPool2d(int64_t kernel, int64_t stride, int64_t padding = 0, std::string layout = "NCHW");
  Tensor forward(const Tensor& x) override;
  Pool2dOptions options;
};

class GlobalAvgPool : public Module {
 public:
  explicit GlobalAvgPool(std::string layout = "NCHW") : layout_(std::move(layout)) {}
  Tensor forward(const Tensor& x) override { return global_avg_pool(x, layout_); }

 private:
  std::string layout_;
};

class Flatten : public Module {
 public:
  explicit Flatten(int64_t axis = 1) : axis_(axis) {}
  Tensor forward(const Tensor& x) override { return flatten(x, axis_); }

 private:
  int64_t axis_;
};

class ReLU : public Module {
 public:
  Tensor forward(const Tensor& x) override { return relu(x); }
};
class ReLU6 : public Module {
 public:
  Tensor forward(const Tensor& x) override { return relu6(x); }
};
class GELU : public Module {
 public:
  explicit GELU(bool tanh_approximation = false) : tanh_(tanh_approximation) {}
  Tensor forward(const Tensor& x) override { return gelu(x, tanh_); }

 private:
  bool tanh_;
};
class Sigmoid : public Module {
 public:
  Tensor forward(const Tensor& x) override { return sigmoid(x); }
};
class Tanh : public Module {
 public:
  Tensor forward(const Tensor& x) override { return tanh(x); }
};
class Softmax : public Module {
 public:
  explicit Softmax(int64_t axis = -1) : axis_(axis) {}
  Tensor forward(const Tensor& x) override { return softmax(x, axis_); }

 private:
  int64_t axis_;
};
class Identity : public Module {
 public:
  Tensor forward(const Tensor& x) override { return x; }
};

// Token embedding: int64 ids [N, S] -> [N, S, dim].
class Embedding : public Module {
 public:
  Embedding(int64_t vocab, int64_t dim, Init init = {});
  Tensor forward(const Tensor& ids) override;
  Tensor table;
};

// Multi-head self-attention on [N, S, hidden] (BERT style: fused QKV projections are separate
// Linear layers, scaled dot product, softmax over keys, output projection).
class MultiheadAttention : public Module {
 public:
  MultiheadAttention(int64_t hidden, int64_t heads, Init init = {});
  Tensor forward(const Tensor& x) override;

 private:
  int64_t hidden_, heads_;
  std::shared_ptr<Linear> query_, key_, value_, output_;
};

// One post-norm transformer encoder layer (BERT): x + attn -> LayerNorm -> x + FFN(GELU) ->
// LayerNorm.
class TransformerEncoderLayer : public Module {
 public:
  TransformerEncoderLayer(int64_t hidden, int64_t heads, int64_t ffn, Init init = {});
  Tensor forward(const Tensor& x) override;

 private:
  std::shared_ptr<MultiheadAttention> attention_;
  std::shared_ptr<LayerNorm> norm1_, norm2_;
  std::shared_ptr<Linear> ffn_in_, ffn_out_;
};

// Traces `module` on a placeholder input named `input_name` (its shape may hold ir::kBatch).
ir::Graph trace_module(Module& module, const std::string& input_name, ir::DType dtype,
                       ir::Shape shape, const std::string& graph_name);

}  // namespace mimic::nn
