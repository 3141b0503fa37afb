// Architectures follow torchvision (resnet18/50: He et al. 2016, v1.5 strides; mobilenet_v2:
// Sandler et al. 2018) and BERT-base (Devlin et al. 2019) without the pooler. Weights are random
// (He-normal), with the last BatchNorm of each residual branch scaled down so that activations stay
// in a realistic range through deep stacks.
#include "frontend/api/zoo.h"

#include <fmt/format.h>

#include "base/error.h"

namespace mimic::zoo {
namespace {

using nn::Init;
using nn::ModulePtr;

struct Params {
  std::string model;
  std::map<std::string, int64_t> values;
  int64_t get(const std::string& key) const { return values.at(key); }
};

const std::map<std::string, std::map<std::string, int64_t>>& defaults() {
  static const std::map<std::string, std::map<std::string, int64_t>> d{
      {"mlp", {{"layers", 3}, {"hidden", 1024}, {"in_features", 784}, {"classes", 10}}},
      {"resnet18", {{"image_size", 224}, {"classes", 1000}}},
      {"resnet50", {{"image_size", 224}, {"classes", 1000}}},
      {"mobilenet_v2", {{"image_size", 224}, {"classes", 1000}}},
      {"bert",
       {{"layers", 12},
        {"hidden", 768},
        {"heads", 12},
        {"seq", 128},
        {"vocab", 30522},
        {"ffn", 0}}},
  };
  return d;
}

Params resolve(const std::string& name, const ModelOptions& o) {
  auto it = defaults().find(name);
  if (it == defaults().end())
    throw InvalidArgument(
        fmt::format("unknown model '{}': the zoo has {}", name, fmt::join(names(), ", ")));
  Params p{name, it->second};
  for (const auto& [k, v] : o.params) {
    if (!p.values.count(k))
      throw InvalidArgument(fmt::format("model '{}' has no parameter '{}' (it takes {})", name, k,
                                        params_help(name)));
    if (v <= 0)
      throw InvalidArgument(
          fmt::format("model '{}': parameter {}={} must be positive", name, k, v));
    p.values[k] = v;
  }
  if (o.layout != "nchw" && o.layout != "nhwc")
    throw InvalidArgument(fmt::format("unknown layout '{}' (use nchw or nhwc)", o.layout));
  return p;
}

std::string layout_attr(const ModelOptions& o) {
  return o.layout == "nhwc" ? "NHWC" : "NCHW";
}

// conv -> batchnorm (-> relu)
ModulePtr conv_bn(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t groups,
                  const std::string& layout, uint64_t seed, bool relu, float gamma = 1.0f,
                  bool relu6 = false) {
  auto s = std::make_shared<nn::Sequential>();
  s->push_back("conv", std::make_shared<nn::Conv2d>(in, out, k, stride, k / 2, groups, false,
                                                    layout, 1, Init{seed}));
  s->push_back("bn", std::make_shared<nn::BatchNorm2d>(out, 1e-5f, layout, Init{seed + 1}, gamma));
  if (relu6)
    s->push_back("relu6", std::make_shared<nn::ReLU6>());
  else if (relu)
    s->push_back("relu", std::make_shared<nn::ReLU>());
  return s;
}

// Residual block: relu(branch(x) + shortcut(x)). The branch's layers are named directly under
// the block ("layer1.0.conv1"), as in torchvision.
class Residual : public nn::Module {
 public:
  Residual(ModulePtr branch, ModulePtr shortcut, bool relu_after) : relu_after_(relu_after) {
    branch_ = register_module("", std::move(branch));
    if (shortcut) shortcut_ = register_module("downsample", std::move(shortcut));
  }
  Tensor forward(const Tensor& x) override {
    Tensor y = apply1(ir::OpType::Add, {(*branch_)(x), shortcut_ ? (*shortcut_)(x) : x}, {}, "add");
    return relu_after_ ? apply1(ir::OpType::Relu, {y}, {}, "relu") : y;
  }

 private:
  ModulePtr branch_, shortcut_;
  bool relu_after_;
};

ModulePtr resnet_block(bool bottleneck, int64_t in, int64_t width, int64_t stride,
                       const std::string& layout, uint64_t seed) {
  int64_t out = bottleneck ? width * 4 : width;
  auto branch = std::make_shared<nn::Sequential>();
  if (bottleneck) {
    branch->push_back("conv1", conv_bn(in, width, 1, 1, 1, layout, seed, true));
    branch->push_back("conv2", conv_bn(width, width, 3, stride, 1, layout, seed + 2, true));
    branch->push_back("conv3", conv_bn(width, out, 1, 1, 1, layout, seed + 4, false, 0.2f));
  } else {
    branch->push_back("conv1", conv_bn(in, width, 3, stride, 1, layout, seed, true));
    branch->push_back("conv2", conv_bn(width, out, 3, 1, 1, layout, seed + 2, false, 0.2f));
  }
  ModulePtr shortcut = (stride != 1 || in != out)
                           ? conv_bn(in, out, 1, stride, 1, layout, seed + 6, false)
                           : nullptr;
  return std::make_shared<Residual>(branch, shortcut, true);
}

ModulePtr resnet(const Params& p, const ModelOptions& o) {
  bool bottleneck = p.model == "resnet50";
  std::vector<int> blocks =
      bottleneck ? std::vector<int>{3, 4, 6, 3} : std::vector<int>{2, 2, 2, 2};
  std::string layout = layout_attr(o);
  auto net = std::make_shared<nn::Sequential>();
  net->push_back("conv1", conv_bn(3, 64, 7, 2, 1, layout, o.seed, true));
  net->push_back("maxpool", std::make_shared<nn::MaxPool2d>(3, 2, 1, layout));
  int64_t in = 64;
  uint64_t seed = o.seed + 100;
  for (int stage = 0; stage < 4; ++stage) {
    auto layer = std::make_shared<nn::Sequential>();
    int64_t width = 64 << stage;
    for (int b = 0; b < blocks[stage]; ++b) {
      layer->push_back(
          resnet_block(bottleneck, in, width, (b == 0 && stage > 0) ? 2 : 1, layout, seed));
      in = bottleneck ? width * 4 : width;
      seed += 10;
    }
    net->push_back("layer" + std::to_string(stage + 1), layer);
  }
  net->push_back("avgpool", std::make_shared<nn::GlobalAvgPool>(layout));
  net->push_back("flatten", std::make_shared<nn::Flatten>(1));
  net->push_back("fc", std::make_shared<nn::Linear>(in, p.get("classes"), true, Init{seed}));
  return net;
}

ModulePtr mobilenet_v2(const Params& p, const ModelOptions& o) {
  std::string layout = layout_attr(o);
  // (expansion t, channels c, repeats n, stride s) from Sandler et al., Table 2.
  const int64_t spec[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                              {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  auto net = std::make_shared<nn::Sequential>();
  net->push_back("stem", conv_bn(3, 32, 3, 2, 1, layout, o.seed, false, 1.0f, true));
  int64_t in = 32;
  uint64_t seed = o.seed + 100;
  for (const auto& row : spec) {
    for (int64_t i = 0; i < row[2]; ++i) {
      int64_t stride = i == 0 ? row[3] : 1, hidden = in * row[0], out = row[1];
      auto branch = std::make_shared<nn::Sequential>();
      if (row[0] != 1)
        branch->push_back("expand", conv_bn(in, hidden, 1, 1, 1, layout, seed, false, 1.0f, true));
      branch->push_back("depthwise", conv_bn(hidden, hidden, 3, stride, hidden, layout, seed + 2,
                                             false, 1.0f, true));
      branch->push_back("project", conv_bn(hidden, out, 1, 1, 1, layout, seed + 4, false, 0.5f));
      std::string block = "block" + std::to_string(net->size());
      if (stride == 1 && in == out)
        net->push_back(block, std::make_shared<Residual>(branch, nullptr, false));
      else
        net->push_back(block, branch);
      in = out;
      seed += 10;
    }
  }
  net->push_back("head", conv_bn(in, 1280, 1, 1, 1, layout, seed, false, 1.0f, true));
  net->push_back("avgpool", std::make_shared<nn::GlobalAvgPool>(layout));
  net->push_back("flatten", std::make_shared<nn::Flatten>(1));
  net->push_back("classifier",
                 std::make_shared<nn::Linear>(1280, p.get("classes"), true, Init{seed + 5}));
  return net;
}

ModulePtr mlp(const Params& p, const ModelOptions& o) {
  auto net = std::make_shared<nn::Sequential>();
  int64_t in = p.get("in_features");
  for (int64_t i = 0; i + 1 < p.get("layers"); ++i) {
    net->push_back("fc" + std::to_string(i + 1),
                   std::make_shared<nn::Linear>(in, p.get("hidden"), true, Init{o.seed + 10 * i}));
    net->push_back("relu" + std::to_string(i + 1), std::make_shared<nn::ReLU>());
    in = p.get("hidden");
  }
  net->push_back("fc" + std::to_string(p.get("layers")),
                 std::make_shared<nn::Linear>(in, p.get("classes"), true, Init{o.seed + 999}));
  return net;
}

// Token ids [N, S] -> embeddings (+ learned positions) -> LayerNorm -> encoder layers.
class Bert : public nn::Module {
 public:
  Bert(const Params& p, uint64_t seed) {
    int64_t hidden = p.get("hidden"), ffn = p.get("ffn") ? p.get("ffn") : 4 * hidden;
    tokens_ = register_module("embeddings",
                              std::make_shared<nn::Embedding>(p.get("vocab"), hidden, Init{seed}));
    positions_ = register_parameter("position_embeddings",
                                    nn::Embedding(p.get("seq"), hidden, Init{seed + 1}).table);
    norm_ = register_module("embeddings_norm", std::make_shared<nn::LayerNorm>(hidden));
    layers_ = register_module("encoder", std::make_shared<nn::Sequential>());
    for (int64_t i = 0; i < p.get("layers"); ++i)
      layers_->push_back(std::make_shared<nn::TransformerEncoderLayer>(hidden, p.get("heads"), ffn,
                                                                       Init{seed + 100 * (i + 1)}));
  }
  Tensor forward(const Tensor& ids) override {
    Tensor x = add((*tokens_)(ids), positions_);
    return (*layers_)((*norm_)(x));
  }

 private:
  std::shared_ptr<nn::Embedding> tokens_;
  Tensor positions_;
  std::shared_ptr<nn::LayerNorm> norm_;
  std::shared_ptr<nn::Sequential> layers_;
};

}  // namespace

std::vector<std::string> names() {
  std::vector<std::string> out;
  for (const auto& [k, v] : defaults()) out.push_back(k);
  return out;
}

std::string params_help(const std::string& name) {
  auto it = defaults().find(name);
  if (it == defaults().end()) return "";
  std::string out;
  for (const auto& [k, v] : it->second) out += fmt::format("{}{}={}", out.empty() ? "" : " ", k, v);
  return out;
}

Model make(const std::string& name, const ModelOptions& o) {
  Params p = resolve(name, o);
  if (name == "mlp")
    return {mlp(p, o), "input", {ir::DType::f32, ir::Shape({ir::kBatch, p.get("in_features")})}, 0};
  if (name == "bert")
    return {std::make_shared<Bert>(p, o.seed),
            "input_ids",
            {ir::DType::i64, ir::Shape({ir::kBatch, p.get("seq")})},
            p.get("vocab")};
  int64_t s = p.get("image_size");
  ir::Shape image =
      o.layout == "nhwc" ? ir::Shape({ir::kBatch, s, s, 3}) : ir::Shape({ir::kBatch, 3, s, s});
  ModulePtr m = name == "mobilenet_v2" ? mobilenet_v2(p, o) : resnet(p, o);
  return {m, "input", {ir::DType::f32, image}, 0};
}

ir::Graph build(const std::string& name, const ModelOptions& options) {
  Model m = make(name, options);
  return nn::trace_module(*m.module, m.input_name, m.input_type.dtype, m.input_type.shape, name);
}

}  // namespace mimic::zoo
