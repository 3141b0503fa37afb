// Vector kernels whose operands exceed on-chip memory are tiled, whatever their shapes: the
// SiLU and squeeze-and-excitation multiplies of EfficientNet-B0 (a large activation times its
// sigmoid, or times a broadcast per-channel scale) once stopped the compiler with an `internal:`
// error (chunks sized without the slots' 512-byte granules) or an out-of-memory error (a
// [1, C, 1, 1] scale loaded whole, each 1 x 1 plane padded to an (8, 128) tile).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "base/error.h"
#include "tpu_test_util.h"

namespace mimic {
namespace {

using tpu_test::options;

// y = x * sigmoid(x) on [n, c, h, w] (SiLU as exported at opset 13).
ir::Graph silu_graph(int64_t n, int64_t c, int64_t h, int64_t w) {
  ir::Graph g("silu");
  auto x = g.add_input("x", ir::DType::f32, ir::Shape({n, c, h, w}));
  auto s = g.add_node(ir::OpType::Sigmoid, "sigmoid", {x})[0];
  g.add_output(g.add_node(ir::OpType::Mul, "silu", {x, s})[0]);
  return g;
}

// Squeeze-and-excitation: y = x * sigmoid(mean_hw(x)) with the scale broadcast per channel.
ir::Graph se_graph(int64_t n, int64_t c, int64_t h, int64_t w) {
  ir::Graph g("se");
  auto x = g.add_input("x", ir::DType::f32, ir::Shape({n, c, h, w}));
  auto m = g.add_node(ir::OpType::GlobalAveragePool, "squeeze", {x})[0];
  auto s = g.add_node(ir::OpType::Sigmoid, "excite", {m})[0];
  g.add_output(g.add_node(ir::OpType::Mul, "scale", {x, s})[0]);
  return g;
}

// Layout assignment compiles window ops channels-last; layout=as_given keeps the graph's
// channels-first tiling, the one these regressions were found in. Both are checked.
constexpr const char* kLayouts[] = {"auto", "as_given"};

CompileOptions with_layout(CompileOptions o, const char* layout) {
  o.options["layout"] = layout;
  return o;
}

double max_difference_vs_cpu(const ir::Graph& g, const std::string& device,
                             const CompileOptions& o) {
  RunOutput dev = tpu_test::run(g, device, o), cpu = tpu_test::run(g, "cpu");
  const ir::HostTensor &a = dev.outputs.at(0), &b = cpu.outputs.at(0);
  EXPECT_EQ(a.shape(), b.shape());
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    worst = std::max(worst, std::fabs(double(a.data<float>()[i]) - b.data<float>()[i]));
  return worst;
}

TEST(TpuVectorTiling, EfficientNetB0SiluAndSqueezeExcitationCompileAndMatchCpu) {
  // features.2.0: the expand conv's SiLU at 112 x 112 x 96 (kernel of 8389632 bytes of slots on
  // v4's 8388608-byte half before the fix), and its SE scale at 56 x 56.
  for (const char* layout : kLayouts) {
    SCOPED_TRACE(layout);
    CompileOptions o = with_layout(options({}, "highest"), layout);
    EXPECT_LT(max_difference_vs_cpu(silu_graph(1, 96, 112, 112), "tpu-emu:v4", o), 1e-6);
    EXPECT_LT(max_difference_vs_cpu(se_graph(1, 96, 56, 56), "tpu-emu:v4", o), 1e-6);
  }
}

TEST(TpuVectorTiling, WideBroadcastScaleStreamsInsteadOfOverflowing) {
  // [1, 2048, 1, 1] pads to 2048 (8, 128) tiles: 8 MiB, all of v4's half for one kernel.
  for (const char* layout : kLayouts)
    EXPECT_LT(max_difference_vs_cpu(se_graph(1, 2048, 7, 7), "tpu-emu:v4",
                                    with_layout(options({}, "highest"), layout)),
              1e-6)
        << layout;
}

TEST(TpuVectorTiling, AnyOnChipSizeTilesOrNamesTheLayer) {
  // Capacities that leave odd remainders after the chunk estimate: each either compiles or is a
  // user-facing out-of-memory error naming the layer, never an internal one. At 40 KiB the
  // pool's smallest tile (one 20 x 20 plane, 16 KiB tiled, double-buffered) does not fit.
  int compiled = 0;
  for (int64_t kib : {40, 64, 97, 130, 257, 513, 1000, 2049}) {
    for (const ir::Graph& g : {silu_graph(1, 24, 40, 40), se_graph(2, 40, 20, 20)}) {
      CompileOptions o = options({{"onchip.bytes", std::to_string(kib * 1024 + 200)}}, "default",
                                 /*timing_only=*/true);
      o.options["layout"] = "as_given";  // the count below is the channels-first tiling's
      try {
        compile(g, Device("tpu-emu:v4"), o);
        ++compiled;
      } catch (const OutOfMemoryError& e) {
        EXPECT_NE(std::string(e.what()).find("cannot be tiled"), std::string::npos) << e.what();
      } catch (const Error& e) {
        ADD_FAILURE() << kib << " KiB, " << g.name() << ": " << e.what();
      }
    }
  }
  EXPECT_EQ(compiled, 15);
}

// 5 x 5 depthwise convolution (pads 2) of [1, c, hw, hw], NCHW, then a 3 x 3 max pool.
ir::Graph depthwise_pool_graph(int64_t c, int64_t hw) {
  ir::Graph g("depthwise");
  auto x = g.add_input("x", ir::DType::f32, ir::Shape({1, c, hw, hw}));
  auto w = g.add_constant("w", tpu_test::random_tensor(ir::Shape({c, 1, 5, 5}), 11, 0.2f));
  ir::Attributes a{{"pads", std::vector<int64_t>{2, 2, 2, 2}}, {"group", c}};
  auto y = g.add_node(ir::OpType::Conv, "dw", {x, w}, a)[0];
  ir::Attributes p{{"kernel_shape", std::vector<int64_t>{3, 3}},
                   {"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  g.add_output(g.add_node(ir::OpType::MaxPool, "pool", {y}, p)[0]);
  return g;
}

TEST(TpuVectorTiling, WindowOpsOverManySmallPlanesTileByChannel) {
  // EfficientNet-B0 at 64 x 64, features.6.1: 1152 channels of 2 x 2, each plane padded to an
  // (8, 128) tile: one output row of every channel needs 2 x 4.7 MB, more than v4's half.
  for (const char* layout : kLayouts)
    EXPECT_LT(max_difference_vs_cpu(depthwise_pool_graph(1152, 2), "tpu-emu:v4",
                                    with_layout(options({}, "highest"), layout)),
              1e-5)
        << layout;
}

// A depthwise convolution's fused activation runs once per output element, not once per tap:
// adding a ReLU to a 3x3 depthwise layer on edge (64 lanes, one ALU) costs one vector cycle per
// 64 outputs, not nine.
TEST(TpuVectorTiling, DepthwiseActivationIsChargedOncePerOutput) {
  const int64_t c = 64, hw = 28;
  auto graph = [&](bool relu) {
    ir::Graph g("dw");
    auto x = g.add_input("x", ir::DType::f32, ir::Shape({1, c, hw, hw}));
    auto w = g.add_constant("w", tpu_test::random_tensor(ir::Shape({c, 1, 3, 3}), 5));
    auto y = g.add_node(ir::OpType::Conv, "dw", {x, w},
                        {{"group", c}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}})[0];
    if (relu) y = g.add_node(ir::OpType::Relu, "relu", {y})[0];
    g.add_output(y);
    return g;
  };
  auto vpu_cycles = [&](bool relu) {
    RunOutput r = tpu_test::run(graph(relu), "tpu-emu:edge", options({}, "default", true));
    const backends::UnitReport* u = tpu_test::unit(r.report, "core0_vpu");
    EXPECT_NE(u, nullptr);
    return u ? static_cast<double>(u->busy_cycles) : 0.0;
  };
  const double plain = vpu_cycles(false), with_relu = vpu_cycles(true);
  const double per_output = static_cast<double>(hw * hw * c) / 64;  // one ReLU op per output
  EXPECT_GT(with_relu - plain, 0.5 * per_output);
  EXPECT_LT(with_relu - plain, 2.0 * per_output);
}

// On bf16 chips a depthwise tap is the precision's products of bf16 parts: highest (6 passes)
// costs about six times default's vector cycles.
TEST(TpuVectorTiling, DepthwiseVectorCyclesScaleWithPrecisionPasses) {
  ir::Graph g("dw");
  auto x = g.add_input("x", ir::DType::f32, ir::Shape({1, 128, 28, 28}));
  auto w = g.add_constant("w", tpu_test::random_tensor(ir::Shape({128, 1, 3, 3}), 5));
  g.add_output(
      g.add_node(ir::OpType::Conv, "dw", {x, w},
                 {{"group", int64_t{128}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}})[0]);
  auto vpu_cycles = [&](const char* precision) {
    RunOutput r = tpu_test::run(g, "tpu-emu:v4", options({}, precision, true));
    const backends::UnitReport* u = tpu_test::unit(r.report, "core0_vpu");
    EXPECT_NE(u, nullptr);
    return u ? static_cast<double>(u->busy_cycles) : 0.0;
  };
  const double ratio = vpu_cycles("highest") / vpu_cycles("default");
  EXPECT_GT(ratio, 4.0);
  EXPECT_LT(ratio, 6.5);
}

}  // namespace
}  // namespace mimic

namespace mimic {
namespace {

// A reduction over more than a kernel's share of on-chip memory in one row (an MSE loss's mean
// over a whole [batch, seq, hidden] activation: 8 M floats, 32 MiB) runs as two passes (partials
// of the trailing dimensions, then their reduction) and matches the cpu backend.
TEST(TpuVectorTiling, ReductionLongerThanOnChipMemoryRunsInTwoPasses) {
  for (ir::OpType op : {ir::OpType::ReduceMean, ir::OpType::ReduceSum, ir::OpType::ReduceMax,
                        ir::OpType::ReduceSumSquare}) {
    SCOPED_TRACE(ir::op_name(op));
    ir::Graph g("long_reduce");
    auto x = g.add_input("x", ir::DType::f32, ir::Shape({64, 128, 1024}));
    g.add_output(g.add_node(op, "reduce", {x}, {{"keepdims", int64_t{0}}})[0]);
    RunOutput dev = tpu_test::run(g, "tpu-emu:v4", options({}, "highest"));
    RunOutput cpu = tpu_test::run(g, "cpu");
    ASSERT_EQ(dev.outputs.at(0).numel(), 1);
    const double a = dev.outputs[0].data<float>()[0], b = cpu.outputs[0].data<float>()[0];
    EXPECT_NEAR(a, b, 1e-4 * std::max(1.0, std::fabs(b)));
  }
}

}  // namespace
}  // namespace mimic
