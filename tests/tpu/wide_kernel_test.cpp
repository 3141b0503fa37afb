// A convolution whose kernel is wider than its output (a weight gradient's convolution: dy as the
// kernel over the whole input) splits its kernel rows across the reduction on tpu-emu
// (matmul_tiler.h): the values are the cpu's, and the same layer with a smaller kernel needs no
// split. A product with a long reduction (a dense layer's weight gradient, K = batch x sequence)
// splits K the same way and keeps the matrix units busy.
#include <gtest/gtest.h>

#include <cmath>

#include "tpu_test_util.h"

namespace mimic {
namespace {

// x [2, 72, 72, 8] NHWC by a [16, 8, k, k] kernel, dilation 2: every output row reads nearly the
// whole input, whose channels-minor rows (8 channels padded to 128 lanes) overflow v4's VMEM half.
ir::Graph wide_kernel_conv(int64_t k) {
  ir::Graph g("wide_kernel");
  auto x = g.add_input("x", ir::DType::f32, ir::Shape({2, 72, 72, 8}));
  auto w = g.add_constant(
      "w", tpu_test::random_tensor(ir::Shape({16, 8, k, k}), 5, 1.0f / static_cast<float>(k * 3)));
  g.add_output(
      g.add_node(ir::OpType::Conv, "conv", {x, w},
                 {{"dilations", std::vector<int64_t>{2, 2}}, {"layout", std::string("NHWC")}})[0]);
  return g;
}

TEST(TpuWideKernel, SplitsKernelRowsAndKeepsTheCpuValues) {
  ir::Graph g = wide_kernel_conv(34);  // output 4 x 4 per image
  auto cpu = tpu_test::run(g, "cpu").outputs.at(0);
  auto tpu = tpu_test::run(g, "tpu-emu:v4", tpu_test::options({}, "highest"));
  ASSERT_EQ(tpu.outputs.at(0).shape(), cpu.shape());
  for (int64_t i = 0; i < cpu.numel(); ++i)
    EXPECT_NEAR(tpu.outputs[0].data<float>()[i], cpu.data<float>()[i], 1e-4f) << i;
  Executable e = compile(g, Device("tpu-emu:v4"), tpu_test::options({}, "highest", true));
  EXPECT_EQ(e.compile_report().metrics.at("kernel_row_splits"), 1);
}

TEST(TpuWideKernel, WholeKernelTilesWhenItFits) {
  ir::Graph g = wide_kernel_conv(3);
  Executable e = compile(g, Device("tpu-emu:v4"), tpu_test::options({}, "highest", true));
  EXPECT_EQ(e.compile_report().metrics.at("kernel_row_splits"), 0);
  auto cpu = tpu_test::run(g, "cpu").outputs.at(0);
  auto tpu = tpu_test::run(g, "tpu-emu:v4", tpu_test::options({}, "highest")).outputs.at(0);
  for (int64_t i = 0; i < cpu.numel(); ++i)
    EXPECT_NEAR(tpu.data<float>()[i], cpu.data<float>()[i], 1e-4f) << i;
}

// x^T dy of a dense layer at 16,384 tokens: [768, 16384] x [16384, 768], both runtime values.
ir::Graph long_reduction_product(int64_t m, int64_t k, int64_t n) {
  ir::Graph g("weight_gradient");
  auto xt = g.add_input("xt", ir::DType::f32, ir::Shape({m, k}));
  auto dy = g.add_input("dy", ir::DType::f32, ir::Shape({k, n}));
  g.add_output(g.add_node(ir::OpType::MatMul, "dw", {xt, dy})[0]);
  return g;
}

TEST(TpuWideKernel, LongReductionsSplitAndKeepTheMatrixUnitsBusy) {
  // Before the split, row tiles of a few rows left v4's MXUs loading weights most of the time:
  // 6% utilization (34% now). The run's time includes the inputs' upload; the op's is the
  // product's.
  auto big = tpu_test::run(long_reduction_product(768, 16384, 768), "tpu-emu:v4",
                           tpu_test::options({}, "default", true));
  ASSERT_EQ(big.report.ops.size(), 1u);
  EXPECT_GT(big.report.ops[0].utilization, 0.25);
  ir::Graph g = long_reduction_product(256, 12288, 128);
  auto cpu = tpu_test::run(g, "cpu").outputs.at(0);
  auto tpu = tpu_test::run(g, "tpu-emu:v4", tpu_test::options({}, "highest")).outputs.at(0);
  for (int64_t i = 0; i < cpu.numel(); ++i)
    EXPECT_NEAR(tpu.data<float>()[i], cpu.data<float>()[i], 2e-3f) << i;
}

}  // namespace
}  // namespace mimic
