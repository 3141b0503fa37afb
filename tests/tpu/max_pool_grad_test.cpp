// MaxPoolGrad on tpu-emu is one SelectAndScatter pass on the vector unit, as XLA lowers a max
// pool's gradient: in fp32 at every precision, so its values equal the cpu kernel's bit for bit
// (ties to the first maximum included), the matrix units stay idle, and nothing is unrolled. (A 3-D
// one falls back to cpu: tests/conformance/op_cases_fallbacks.cpp.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "frontend/ir/shape_inference.h"
#include "tpu_test_util.h"

namespace mimic {
namespace {

using ir::OpType;
using Ints = std::vector<int64_t>;

// dX = MaxPoolGrad(x, MaxPool(x), dy) for x [2, 6, 11, 11] (or NHWC): 3x3 windows, stride 2,
// padding 1, optionally with dilation 2 and ceil_mode.
ir::Graph pool_grad_graph(bool nhwc, bool dilated) {
  ir::Graph g(nhwc ? "pool_grad_nhwc" : "pool_grad_nchw");
  const int64_t n = 2, c = 6, hw = 11;
  ir::Attributes a{
      {"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}};
  if (dilated) {
    a.set("dilations", Ints{2, 2});
    a.set("ceil_mode", int64_t{1});
  }
  if (nhwc) a.set("layout", std::string("NHWC"));
  auto x = g.add_input("x", ir::DType::f32,
                       nhwc ? ir::Shape({n, hw, hw, c}) : ir::Shape({n, c, hw, hw}));
  auto y = g.add_node(OpType::MaxPool, "pool", {x}, a)[0];
  ir::infer_shapes(g);
  auto dy = g.add_input("dy", ir::DType::f32, g.value(y).type.shape);
  g.add_output(g.add_node(OpType::MaxPoolGrad, "pool_grad", {x, y, dy}, a)[0]);
  return g;
}

// x with integer values in [0, 3] (windows with tied maxima), dy random.
std::vector<ir::HostTensor> inputs(const Executable& e) {
  std::vector<ir::HostTensor> in = random_inputs(e.graph(), 11);
  float* x = in[0].data<float>();
  for (int64_t i = 0; i < in[0].numel(); ++i) x[i] = std::floor(std::fabs(x[i]) * 4.0f);
  return in;
}

TEST(TpuMaxPoolGrad, SelectAndScatterOnTheVectorUnitEqualsTheCpuKernel) {
  for (bool nhwc : {false, true})
    for (bool dilated : {false, true}) {
      SCOPED_TRACE(testing::Message() << "nhwc " << nhwc << " dilated " << dilated);
      ir::Graph g = pool_grad_graph(nhwc, dilated);
      Executable cpu = compile(g, Device("cpu"));
      Executable tpu = compile(g, Device("tpu-emu:v4"), tpu_test::options({}, "default"));
      std::vector<ir::HostTensor> in = inputs(cpu);
      ir::HostTensor want = cpu.run(in).outputs.at(0);
      RunOutput got = tpu.run(in);
      ASSERT_EQ(got.outputs.at(0).shape(), want.shape());
      EXPECT_EQ(std::memcmp(got.outputs.at(0).raw(), want.raw(), want.numel() * sizeof(float)), 0);
      for (const char* mxu : {"core0_mxu0", "core1_mxu0"}) {
        const auto* u = tpu_test::unit(got.report, mxu);
        ASSERT_NE(u, nullptr) << mxu;
        EXPECT_EQ(u->busy_cycles, 0u) << mxu;
      }
      for (const std::string& note : tpu.compile_report().notes)
        EXPECT_EQ(note.find("as window ops"), std::string::npos) << note;
    }
}

}  // namespace
}  // namespace mimic
