// The model zoo: mlp, resnet18, resnet50, mobilenet_v2 and bert (a BERT-base-like encoder), with
// seeded random weights, any batch (the graphs have a symbolic batch), NCHW or NHWC for CNNs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "frontend/api/nn.h"
#include "frontend/ir/graph.h"

namespace mimic::zoo {

struct ModelOptions {
  std::string layout = "nchw";  // CNNs: "nchw" | "nhwc"
  uint64_t seed = 0;
  // Model parameters, e.g. {"layers", 2}, {"hidden", 256}; see params_help().
  std::map<std::string, int64_t> params;
};

std::vector<std::string> names();
// "layers=3 hidden=1024 in_features=784 classes=10" for one model.
std::string params_help(const std::string& name);
// The module (for inspection or eager use) and its example input type (batch = ir::kBatch).
struct Model {
  std::shared_ptr<nn::Module> module;
  std::string input_name;
  ir::TensorType input_type;
  int64_t int_input_high = 0;  // > 0 for token-id inputs: valid ids are [0, int_input_high)
};
Model make(const std::string& name, const ModelOptions& options = {});
// make() then trace_module(): a graph with a symbolic batch.
ir::Graph build(const std::string& name, const ModelOptions& options = {});

}  // namespace mimic::zoo
