// The chip's numerics: bf16 passes (jax#9973 under default and highest, error bounds of default and
// high against highest), int8 on v1, timing-only runs, and the vector-unit ops against the cpu
// backend.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "base/error.h"
#include "tpu_test_util.h"

namespace mimic {
namespace {

using tpu_test::options;

std::vector<float> floats(const ir::HostTensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

// x @ y with both operands as graph inputs (as in the issue: two f32 arrays).
std::vector<float> run_9973(const std::string& precision) {
  ir::Graph g("jax9973");
  auto x = g.add_input("x", ir::DType::f32, ir::Shape({2, 2}));
  auto y = g.add_input("y", ir::DType::f32, ir::Shape({2, 2}));
  g.add_output(g.add_node(ir::OpType::MatMul, "dot", {x, y})[0]);
  const float xv[] = {0.3744f, 0.1656f, 0.4707f, 0.1663f},
              yv[] = {0.3946f, 0.1186f, 0.1569f, 0.3145f};
  Executable e = compile(g, Device("tpu-emu:v4"), options({}, precision));
  RunOutput out = e.run(
      {ir::HostTensor::from(ir::Shape({2, 2}), xv), ir::HostTensor::from(ir::Shape({2, 2}), yv)});
  return floats(out.outputs[0]);
}

TEST(TpuNumerics, Jax9973DefaultReproducesTheTpu) {
  // Printed by `jnp.dot` on a TPU in google/jax#9973 (bf16 operands, fp32 accumulation).
  const double tpu[] = {0.17405128, 0.09669876, 0.21180916, 0.10805416};
  std::vector<float> got = run_9973("default");
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(got[i], tpu[i], 5e-9) << i;
}

TEST(TpuNumerics, Jax9973HighestIsExactFloat32) {
  const float xv[] = {0.3744f, 0.1656f, 0.4707f, 0.1663f},
              yv[] = {0.3946f, 0.1186f, 0.1569f, 0.3145f};
  const double f64[] = {0.17372088, 0.09648504, 0.21183069,
                        0.10812637};  // NumPy float64 in the issue
  std::vector<float> got = run_9973("highest");
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      float f32 = xv[i * 2] * yv[j] + xv[i * 2 + 1] * yv[2 + j];
      EXPECT_LE(std::fabs(got[i * 2 + j] - f32), std::fabs(f32) * 1.2e-7f)
          << i << j;  // within 1 ulp of fp32
      EXPECT_NEAR(got[i * 2 + j], f64[i * 2 + j], 1e-7);
    }
  std::vector<float> def = run_9973("default");
  EXPECT_GT(std::fabs(def[0] - got[0]), 1e-4);  // the discrepancy: 3.3e-4
}

// |x_default - x_highest| <= 2u (u = 2^-8, bf16 unit roundoff) times sum_k |a_k w_k|, and the
// 3-pass result is within about u^2 of it; neither is trivially equal.
TEST(TpuNumerics, PrecisionPassesMeetTheirErrorBounds) {
  const int64_t m = 16, k = 256, n = 32;
  ir::Graph g = tpu_test::matmul_graph(m, k, n, 11);
  ir::HostTensor x = tpu_test::random_tensor(ir::Shape({m, k}), 12);
  auto run = [&](const std::string& p) {
    Executable e = compile(g, Device("tpu-emu:v4"), options({}, p));
    return floats(e.run({x}).outputs[0]);
  };
  std::vector<float> lo = run("default"), mid = run("high"), hi = run("highest");
  const float* w = g.value(1).constant->data<float>();
  double worst_default = 0, worst_high = 0, mean_default = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double mag = 0;
      for (int64_t t = 0; t < k; ++t)
        mag += std::fabs(static_cast<double>(x.data<float>()[i * k + t]) * w[t * n + j]);
      double e_lo = std::fabs(lo[i * n + j] - hi[i * n + j]) / mag,
             e_mid = std::fabs(mid[i * n + j] - hi[i * n + j]) / mag;
      worst_default = std::max(worst_default, e_lo);
      worst_high = std::max(worst_high, e_mid);
      mean_default += e_lo / (m * n);
    }
  EXPECT_LE(worst_default, 2.0 / 256 + 1e-6);
  EXPECT_GT(mean_default, 1.0 / 65536);  // bf16 rounding really happened
  EXPECT_LE(worst_high, 4.0 / 65536);
  EXPECT_LT(worst_high, worst_default / 16);
}

TEST(TpuNumerics, TimingOnlyGivesTheSameCyclesAndNoValues) {
  ir::Graph g = tpu_test::mlp_graph(64, 256, 3);
  auto full = tpu_test::run(g, "tpu-emu:v4");
  auto timing = tpu_test::run(g, "tpu-emu:v4", options({}, "default", true));
  EXPECT_EQ(full.report.cycles, timing.report.cycles);
  ASSERT_EQ(full.report.units.size(), timing.report.units.size());
  for (size_t i = 0; i < full.report.units.size(); ++i)
    EXPECT_EQ(full.report.units[i].busy_cycles, timing.report.units[i].busy_cycles);
  for (float v : floats(timing.outputs[0])) ASSERT_EQ(v, 0.0f);
  double sum = 0;
  for (float v : floats(full.outputs[0])) sum += std::fabs(v);
  EXPECT_GT(sum, 0);
}

TEST(TpuNumerics, Int8ChipsQuantizeToAnInt8Grid) {
  ir::Graph g = tpu_test::mlp_graph(32, 128, 2);
  auto v1 = tpu_test::run(g, "tpu-emu:v1");
  auto cpu = tpu_test::run(g, "cpu");
  std::vector<float> a = floats(v1.outputs[0]), b = floats(cpu.outputs[0]);
  double peak = 0, worst = 0;
  std::set<float> levels;
  for (size_t i = 0; i < a.size(); ++i) {
    peak = std::max(peak, std::fabs(static_cast<double>(b[i])));
    worst = std::max(worst, std::fabs(static_cast<double>(a[i] - b[i])));
    levels.insert(std::fabs(a[i]));
  }
  EXPECT_LE(worst, 0.05 * peak);   // two int8 layers: a few quantization steps of the output range
  EXPECT_LE(levels.size(), 128u);  // requantized activations: at most 128 magnitudes
  EXPECT_GT(levels.size(), 16u);
}

// Vector-unit ops and data movement against the cpu backend (fp32 on the vector unit; matrix ops
// under precision=highest so that only summation order differs).
TEST(TpuNumerics, VectorAndCopyOpsMatchCpu) {
  auto check = [](ir::Graph g, const char* what, double tol) {
    Executable tpu = compile(g, Device("tpu-emu:v4"), options({}, "highest"));
    Executable cpu = compile(g, Device("cpu"));
    auto inputs = random_inputs(tpu.graph(), 21);
    RunOutput a = tpu.run(inputs), b = cpu.run(inputs);
    EXPECT_EQ(a.report.fallback_count(), 0) << what;
    for (size_t o = 0; o < a.outputs.size(); ++o) {
      std::vector<float> x = floats(a.outputs[o]), y = floats(b.outputs[o]);
      ASSERT_EQ(x.size(), y.size()) << what;
      for (size_t i = 0; i < x.size(); ++i)
        ASSERT_NEAR(x[i], y[i], tol * (1 + std::fabs(y[i]))) << what << " at " << i;
    }
  };
  using ir::OpType;
  auto graph = [](ir::Shape in, auto build) {
    ir::Graph g("op");
    auto x = g.add_input("x", ir::DType::f32, in);
    g.add_output(build(g, x));
    return g;
  };
  auto ints = [](ir::Graph& g, std::vector<int64_t> v) {
    return g.add_constant(
        "c" + std::to_string(g.num_values()),
        ir::HostTensor::from(ir::Shape({static_cast<int64_t>(v.size())}), v.data()));
  };
  check(graph(ir::Shape({2, 6, 9, 9}),
              [](ir::Graph& g, ir::ValueId x) {
                auto w = g.add_constant("w", tpu_test::random_tensor(ir::Shape({8, 3, 3, 3}), 5));
                return g.add_node(OpType::Conv, "grouped", {x, w},
                                  {{"group", int64_t{2}},
                                   {"strides", std::vector<int64_t>{2, 2}},
                                   {"pads", std::vector<int64_t>{1, 0, 1, 0}}})[0];
              }),
        "grouped conv", 1e-5);
  check(graph(ir::Shape({2, 7, 7, 8}),
              [](ir::Graph& g, ir::ValueId x) {
                auto w = g.add_constant("w", tpu_test::random_tensor(ir::Shape({8, 1, 3, 3}), 6));
                auto b = g.add_constant("b", tpu_test::random_tensor(ir::Shape({8}), 7));
                return g.add_node(OpType::Conv, "dw", {x, w, b},
                                  {{"group", int64_t{8}},
                                   {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                                   {"layout", std::string("NHWC")}})[0];
              }),
        "depthwise conv", 1e-5);
  check(graph(ir::Shape({2, 3, 11, 11}),
              [](ir::Graph& g, ir::ValueId x) {
                auto p = g.add_node(OpType::MaxPool, "mp", {x},
                                    {{"kernel_shape", std::vector<int64_t>{3, 3}},
                                     {"strides", std::vector<int64_t>{2, 2}},
                                     {"pads", std::vector<int64_t>{1, 1, 1, 1}}})[0];
                return g.add_node(OpType::AveragePool, "ap", {p},
                                  {{"kernel_shape", std::vector<int64_t>{2, 2}},
                                   {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                                   {"count_include_pad", int64_t{1}}})[0];
              }),
        "pools", 1e-6);
  check(graph(ir::Shape({4, 10, 32}),
              [&](ir::Graph& g, ir::ValueId x) {
                auto s = g.add_constant("s", tpu_test::random_tensor(ir::Shape({32}), 8));
                auto b = g.add_constant("b", tpu_test::random_tensor(ir::Shape({32}), 9));
                auto ln =
                    g.add_node(OpType::LayerNormalization, "ln", {x, s, b}, {{"epsilon", 1e-5}})[0];
                auto ge = g.add_node(OpType::Gelu, "gelu", {ln})[0];
                auto sm = g.add_node(OpType::Softmax, "sm", {ge}, {{"axis", int64_t{1}}})[0];
                auto tr = g.add_node(OpType::Transpose, "tr", {sm},
                                     {{"perm", std::vector<int64_t>{2, 0, 1}}})[0];
                auto sl = g.add_node(OpType::Slice, "sl",
                                     {tr, ints(g, {1, 0}), ints(g, {30, 3}), ints(g, {0, 1})})[0];
                auto cat = g.add_node(OpType::Concat, "cat", {sl, sl}, {{"axis", int64_t{2}}})[0];
                auto pad = g.add_node(OpType::Pad, "pad", {cat, ints(g, {0, 1, 0, 0, 2, 1})})[0];
                return g.add_node(OpType::ReduceMean, "rm", {pad, ints(g, {1, 2})},
                                  {{"keepdims", int64_t{0}}})[0];
              }),
        "norm, activation, softmax, copies, reduce", 1e-5);
  check(
      graph(
          ir::Shape({2, 16, 5, 5}),
          [&](ir::Graph& g, ir::ValueId x) {
            auto c = [&](uint64_t seed, bool positive) {
              ir::HostTensor t = tpu_test::random_tensor(ir::Shape({16}), seed);
              if (positive)
                for (int i = 0; i < 16; ++i)
                  t.data<float>()[i] = 0.5f + std::fabs(t.data<float>()[i]);
              return g.add_constant("bn" + std::to_string(seed), t);
            };
            auto bn = g.add_node(OpType::BatchNormalization, "bn",
                                 {x, c(1, true), c(2, false), c(3, false), c(4, true)})[0];
            auto bias = g.add_constant("bias", tpu_test::random_tensor(ir::Shape({16, 1, 1}), 30));
            auto add = g.add_node(OpType::Add, "add", {bn, bias})[0];
            auto gp = g.add_node(OpType::GlobalAveragePool, "gap", {add})[0];
            auto fl = g.add_node(OpType::Flatten, "flat", {gp})[0];
            auto w = g.add_constant("w", tpu_test::random_tensor(ir::Shape({10, 16}), 31));
            auto b = g.add_constant("b", tpu_test::random_tensor(ir::Shape({10}), 32));
            return g.add_node(OpType::Gemm, "fc", {fl, w, b},
                              {{"transB", int64_t{1}}, {"alpha", 0.5}})[0];
          }),
      "batch norm, broadcast add, global pool, gemm", 1e-5);
  check(graph(ir::Shape({2, 3, 8, 16}),
              [&](ir::Graph& g, ir::ValueId x) {
                auto t = g.add_node(OpType::Transpose, "kt", {x},
                                    {{"perm", std::vector<int64_t>{0, 1, 3, 2}}})[0];
                return g.add_node(OpType::MatMul, "scores",
                                  {x, t})[0];  // batched, both operands activations
              }),
        "batched matmul", 1e-5);
}

}  // namespace
}  // namespace mimic
