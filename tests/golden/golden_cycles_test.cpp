// Golden cycle counts: a fixed set of GEMMs, convolutions and zoo models at small sizes, compiled
// timing-only for each emulated preset, must take exactly the cycles recorded in
// tests/golden/<preset>.json. A timing change is then a reviewed diff of those files instead of a
// drift inside a tolerance window. To accept a change, regenerate the files and review the diff:
//   scripts/update_golden.sh        (= MIMIC_UPDATE_GOLDEN=1 ctest --test-dir build -R Golden)
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "frontend/api/compile.h"
#include "frontend/api/zoo.h"
#include "frontend/ir/graph.h"

namespace mimic::testing {
namespace {

using ir::DType;
using ir::OpType;
using ir::Shape;

struct Workload {
  std::string name;
  std::function<ir::Graph()> graph;
  int64_t batch = 0;  // binds a zoo model's symbolic batch
};

ir::Graph gemm(int64_t m, int64_t k, int64_t n) {
  ir::Graph g(fmt::format("gemm_{}x{}x{}", m, k, n));
  ir::ValueId a = g.add_input("a", DType::f32, Shape({m, k}));
  ir::ValueId b = g.add_input("b", DType::f32, Shape({k, n}));
  g.add_output(g.add_node(OpType::MatMul, "matmul", {a, b})[0]);
  return g;
}

// An NCHW convolution of an input [1, c, hw, hw] with `f` filters of size k x k.
ir::Graph conv(int64_t c, int64_t hw, int64_t f, int64_t k, int64_t stride, int64_t groups) {
  ir::Graph g("conv");
  ir::ValueId x = g.add_input("x", DType::f32, Shape({1, c, hw, hw}));
  ir::ValueId w = g.add_constant("w", ir::HostTensor(DType::f32, Shape({f, c / groups, k, k})));
  ir::Attributes a = {{"strides", std::vector<int64_t>{stride, stride}},
                      {"pads", std::vector<int64_t>{k / 2, k / 2, k / 2, k / 2}},
                      {"group", groups}};
  g.add_output(g.add_node(OpType::Conv, "conv", {x, w}, a)[0]);
  return g;
}

Workload zoo_model(const std::string& name, std::map<std::string, int64_t> params, int64_t batch) {
  return {fmt::format("{}_b{}", name, batch),
          [=] {
            return zoo::build(name, zoo::ModelOptions{"nchw", 0, params});
          },
          batch};
}

const std::vector<Workload>& workloads() {
  static const std::vector<Workload> list = [] {
    std::map<std::string, int64_t> image{{"image_size", 32}, {"classes", 10}};
    return std::vector<Workload>{
        {"gemm_128x256x512", [] { return gemm(128, 256, 512); }},
        {"gemm_8x1024x1024", [] { return gemm(8, 1024, 1024); }},
        {"gemm_512x64x2048", [] { return gemm(512, 64, 2048); }},
        {"conv_3x3_64c_56hw", [] { return conv(64, 56, 64, 3, 1, 1); }},
        {"conv_1x1_256c_14hw_to_1024", [] { return conv(256, 14, 1024, 1, 1, 1); }},
        {"conv_7x7_s2_3c_112hw", [] { return conv(3, 112, 64, 7, 2, 1); }},
        {"conv_depthwise_3x3_96c_28hw", [] { return conv(96, 28, 96, 3, 1, 96); }},
        zoo_model("mlp", {{"layers", 2}, {"hidden", 256}, {"in_features", 784}}, 2),
        zoo_model("resnet18", image, 1),
        zoo_model("mobilenet_v2", image, 2),
        zoo_model("bert",
                  {{"layers", 2}, {"hidden", 128}, {"heads", 4}, {"seq", 32}, {"vocab", 1000}}, 1),
    };
  }();
  return list;
}

const std::vector<std::string>& presets() {
  static const std::vector<std::string> list = {"tpu-emu:v1", "tpu-emu:v4", "tpu-emu:edge",
                                                "ipu-emu:gc2", "ipu-emu:gc200"};
  return list;
}

std::string file_for(const std::string& device) {
  std::string name = device;
  for (char& ch : name)
    if (ch == ':') ch = '_';
  return std::string(MIMIC_GOLDEN_DIR) + "/" + name + ".json";
}

// Cycles and cpu-fallback op count of one timing-only run.
nlohmann::json measure(const std::string& device, const Workload& w) {
  CompileOptions o;
  o.timing_only = true;
  o.batch = w.batch;
  Executable exe = compile(w.graph(), Device(device), o);
  std::vector<ir::HostTensor> inputs;
  for (ir::ValueId v : exe.graph().inputs())
    inputs.emplace_back(exe.graph().value(v).type.dtype, exe.graph().value(v).type.shape);
  RunOutput out = exe.run(inputs);
  return {{"cycles", out.report.cycles}, {"fallback_ops", out.report.fallback_count()}};
}

class GoldenCycles : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenCycles, MatchExactly) {
  const std::string& device = GetParam();
  nlohmann::json got = nlohmann::json::object();
  for (const Workload& w : workloads()) got[w.name] = measure(device, w);
  std::string path = file_for(device);
  const char* update = std::getenv("MIMIC_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::ofstream(path) << nlohmann::json{{"device", device}, {"workloads", got}}.dump(2) << "\n";
    std::cout << "wrote " << path << "\n";
    return;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << path << " is missing: run scripts/update_golden.sh";
  nlohmann::json want = nlohmann::json::parse(in)["workloads"];
  for (const auto& [name, value] : got.items()) {
    if (!want.contains(name)) {
      ADD_FAILURE() << name << " has no golden entry in " << path;
      continue;
    }
    uint64_t was = want[name]["cycles"], now = value["cycles"];
    EXPECT_EQ(now, was) << device << " " << name << ": " << now << " cycles, golden " << was << " ("
                        << fmt::format("{:+.2f}%",
                                       100.0 * (double(now) - double(was)) / double(was))
                        << "); if intended, run scripts/update_golden.sh and commit the diff";
    EXPECT_EQ(value["fallback_ops"], want[name]["fallback_ops"]) << device << " " << name;
  }
  for (const auto& [name, value] : want.items())
    EXPECT_TRUE(got.contains(name)) << path << " lists " << name << ", which is no workload";
}

std::string preset_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Golden, GoldenCycles, ::testing::ValuesIn(presets()), preset_name);

}  // namespace
}  // namespace mimic::testing
