// Helpers for the tpu-emu tests: small graphs, compile-and-run on a device, report lookups.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "frontend/api/compile.h"
#include "frontend/ir/graph.h"

namespace mimic::tpu_test {

inline ir::HostTensor random_tensor(ir::Shape shape, uint64_t seed, float scale = 1.0f) {
  ir::HostTensor t(ir::DType::f32, shape);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

// Y[M, N] = X[M, K] x W[K, N] with W constant.
inline ir::Graph matmul_graph(int64_t m, int64_t k, int64_t n, uint64_t seed = 1) {
  ir::Graph g("matmul");
  auto x = g.add_input("x", ir::DType::f32, ir::Shape({m, k}));
  auto w = g.add_constant(
      "w", random_tensor(ir::Shape({k, n}), seed, 1.0f / std::sqrt(static_cast<float>(k))));
  g.add_output(g.add_node(ir::OpType::MatMul, "mm", {x, w})[0]);
  return g;
}

// `layers` fully connected layers of width `width` with ReLU, batch `batch`.
inline ir::Graph mlp_graph(int64_t batch, int64_t width, int layers, uint64_t seed = 2) {
  ir::Graph g("mlp");
  auto x = g.add_input("x", ir::DType::f32, ir::Shape({batch, width}));
  for (int l = 0; l < layers; ++l) {
    auto w = g.add_constant("w" + std::to_string(l),
                            random_tensor(ir::Shape({width, width}), seed + l,
                                          1.0f / std::sqrt(static_cast<float>(width))));
    x = g.add_node(ir::OpType::MatMul, "fc" + std::to_string(l), {x, w})[0];
    x = g.add_node(ir::OpType::Relu, "relu" + std::to_string(l), {x})[0];
  }
  g.add_output(x);
  return g;
}

// 3x3 same-padded convolution, NCHW or NHWC.
inline ir::Graph conv_graph(int64_t n, int64_t c, int64_t hw, int64_t m, bool nhwc = false,
                            uint64_t seed = 3) {
  ir::Graph g("conv");
  ir::Shape xs = nhwc ? ir::Shape({n, hw, hw, c}) : ir::Shape({n, c, hw, hw});
  auto x = g.add_input("x", ir::DType::f32, xs);
  auto w =
      g.add_constant("w", random_tensor(ir::Shape({m, c, 3, 3}), seed, 1.0f / std::sqrt(9.0f * c)));
  ir::Attributes a{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  if (nhwc) a.set("layout", std::string("NHWC"));
  g.add_output(g.add_node(ir::OpType::Conv, "conv", {x, w}, a)[0]);
  return g;
}

inline CompileOptions options(std::map<std::string, std::string> overrides = {},
                              std::string precision = "default", bool timing_only = false) {
  CompileOptions o;
  o.overrides = std::move(overrides);
  o.precision = std::move(precision);
  o.timing_only = timing_only;
  return o;
}

inline RunOutput run(const ir::Graph& g, const std::string& device, const CompileOptions& o = {},
                     uint64_t seed = 7) {
  Executable e = compile(g, Device(device), o);
  return e.run(random_inputs(e.graph(), seed));
}

inline const backends::UnitReport* unit(const backends::RunReport& r, const std::string& name) {
  for (const auto& u : r.units)
    if (u.name == name) return &u;
  return nullptr;
}

inline double flops_per_s(const backends::RunReport& r) {
  return r.device_seconds > 0 ? static_cast<double>(r.total_flops()) / r.device_seconds : 0;
}

}  // namespace mimic::tpu_test
