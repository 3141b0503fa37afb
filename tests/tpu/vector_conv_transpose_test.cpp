// A ConvTranspose whose groups each have one output channel (a max-pool gradient's scatter of
// window gradients with one-hot kernels) runs on tpu-emu's vector unit (fusion.h,
// is_vector_conv_transpose): the matrix units stay idle, the values are the cpu's at highest
// precision and within bf16 rounding at default precision (a convolution's numerics), in both
// layouts, with stride, padding, dilation and a bias.
#include <gtest/gtest.h>

#include <cmath>

#include "tpu_test_util.h"

namespace mimic {
namespace {

using ir::OpType;

// [2, C * 3, 5, 6] scattered by 3 taps per group into [2, C, ...]: stride 2, pads, dilation.
ir::Graph grouped_scatter(bool nhwc, bool bias) {
  const int64_t c = 4, cg = 3;
  ir::Graph g(nhwc ? "scatter_nhwc" : "scatter_nchw");
  auto x = g.add_input("x", ir::DType::f32,
                       nhwc ? ir::Shape({2, 5, 6, c * cg}) : ir::Shape({2, c * cg, 5, 6}));
  std::vector<ir::ValueId> in{
      x, g.add_constant("w", tpu_test::random_tensor(ir::Shape({c * cg, 1, 3, 2}), 3))};
  if (bias) in.push_back(g.add_constant("b", tpu_test::random_tensor(ir::Shape({c}), 4)));
  ir::Attributes a{{"strides", std::vector<int64_t>{2, 2}},
                   {"pads", std::vector<int64_t>{1, 0, 0, 1}},
                   {"dilations", std::vector<int64_t>{1, 2}},
                   {"group", c}};
  if (nhwc) a.set("layout", std::string("NHWC"));
  g.add_output(g.add_node(OpType::ConvTranspose, "scatter", in, a)[0]);
  return g;
}

void expect_close(const ir::HostTensor& got, const ir::HostTensor& want, float rel) {
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < want.numel(); ++i) {
    const float w = want.data<float>()[i];
    EXPECT_NEAR(got.data<float>()[i], w, rel * (1.0f + std::fabs(w))) << i;
  }
}

TEST(TpuVectorConvTranspose, RunsOnTheVectorUnitWithTheCpuValues) {
  for (bool nhwc : {false, true})
    for (bool bias : {false, true}) {
      SCOPED_TRACE(testing::Message() << "nhwc " << nhwc << " bias " << bias);
      ir::Graph g = grouped_scatter(nhwc, bias);
      auto cpu = tpu_test::run(g, "cpu").outputs.at(0);
      auto highest = tpu_test::run(g, "tpu-emu:v4", tpu_test::options({}, "highest"));
      expect_close(highest.outputs.at(0), cpu, 1e-5f);
      auto fast = tpu_test::run(g, "tpu-emu:v4", tpu_test::options({}, "default"));
      expect_close(fast.outputs.at(0), cpu, 2e-2f);
      for (const char* mxu : {"core0_mxu0", "core1_mxu0"}) {
        const auto* u = tpu_test::unit(fast.report, mxu);
        ASSERT_NE(u, nullptr) << mxu;
        EXPECT_EQ(u->busy_cycles, 0u) << mxu;
      }
    }
}

// With two output channels per group it stays a matrix-unit convolution.
TEST(TpuVectorConvTranspose, TwoOutputsPerGroupStayOnTheMatrixUnits) {
  ir::Graph g("two_per_group");
  auto x = g.add_input("x", ir::DType::f32, ir::Shape({1, 4, 5, 5}));
  auto w = g.add_constant("w", tpu_test::random_tensor(ir::Shape({4, 2, 3, 3}), 6));
  g.add_output(g.add_node(OpType::ConvTranspose, "t", {x, w}, {{"group", int64_t{2}}})[0]);
  auto r = tpu_test::run(g, "tpu-emu:v4", tpu_test::options({}, "highest")).report;
  uint64_t busy = 0;
  for (const auto& u : r.units)
    if (u.kind == "matrix") busy += u.busy_cycles;
  EXPECT_GT(busy, 0u);
}

}  // namespace
}  // namespace mimic
