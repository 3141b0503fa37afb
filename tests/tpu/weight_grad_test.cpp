// A weight gradient's convolution (autodiff's conv_weight_grad: x and dy transposed, then a Conv)
// reads x and dy in place on tpu-emu, as XLA's convolution with dimension numbers does
// (GemmDesc::AView::filter): the transposes never run, the values are the cpu's for every window
// geometry, and the gradient costs about what the forward convolution costs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "frontend/ir/autodiff.h"
#include "frontend/ir/graph_builder.h"
#include "tpu_test_util.h"

namespace mimic {
namespace {

using V = std::vector<int64_t>;

struct Geometry {
  const char* name;
  ir::Shape x, w;  // x channels last unless `channels_first`
  ir::Attributes attrs;
  bool channels_first = false;
};

// loss = sum(Conv(x, w)^2 * r), so that dy is computed (a constant dy's transpose would fold);
// outputs d(loss)/dw and d(loss)/dx.
ir::Graph weight_gradient_graph(const Geometry& c) {
  ir::Graph g(c.name);
  ir::ValueId x = g.add_input("x", ir::DType::f32, c.x);
  ir::ValueId w = g.add_input("w", ir::DType::f32, c.w);
  ir::GraphBuilder b(g, "fwd");
  ir::Attributes at = c.attrs;
  if (!c.channels_first) at.set("layout", std::string("NHWC"));
  ir::ValueId y = b.op(ir::OpType::Conv, {x, w}, at);
  ir::ValueId r = g.add_constant("r", tpu_test::random_tensor(b.shape(y), 11));
  V all(b.shape(y).rank());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  ir::ValueId loss = b.reduce_sum(b.mul(b.mul(y, y), r), all, false);
  std::vector<ir::ValueId> grads = ir::append_gradients(g, loss, {w, x});
  for (ir::ValueId v : grads) g.add_output(v);
  return g;
}

std::vector<Geometry> geometries() {
  return {
      {"3x3 pad 1", ir::Shape({2, 9, 9, 5}), ir::Shape({6, 5, 3, 3}), {{"pads", V{1, 1, 1, 1}}}},
      {"3x3 stride 2 pad 1",
       ir::Shape({2, 10, 9, 4}),
       ir::Shape({3, 4, 3, 3}),
       {{"strides", V{2, 2}}, {"pads", V{1, 1, 1, 1}}}},
      {"1x1 stride 2, a row and a column no window reads (x is cropped)",
       ir::Shape({2, 7, 6, 3}),
       ir::Shape({5, 3, 1, 1}),
       {{"strides", V{2, 2}}}},
      {"7x7 stride 2 pad 3",
       ir::Shape({1, 16, 16, 3}),
       ir::Shape({8, 3, 7, 7}),
       {{"strides", V{2, 2}}, {"pads", V{3, 3, 3, 3}}}},
      {"3x3 dilation 2, uneven pads",
       ir::Shape({2, 8, 7, 3}),
       ir::Shape({4, 3, 3, 3}),
       {{"dilations", V{2, 2}}, {"pads", V{2, 1, 2, 2}}}},
      {"1-D, stride 2 pad 1",
       ir::Shape({2, 11, 4}),
       ir::Shape({3, 4, 3}),
       {{"strides", V{2}}, {"pads", V{1, 1}}}},
      // Written channels-first: layout assignment runs the convolutions channels-last, and the
      // transposes (and the crop) read the channels-last versions of x and dy.
      {"NCHW 3x3 pad 1",
       ir::Shape({2, 5, 9, 9}),
       ir::Shape({6, 5, 3, 3}),
       {{"pads", V{1, 1, 1, 1}}},
       true},
      {"NCHW 1x1 stride 2, x cropped",
       ir::Shape({2, 3, 7, 6}),
       ir::Shape({5, 3, 1, 1}),
       {{"strides", V{2, 2}}},
       true},
  };
}

void expect_close(const ir::HostTensor& got, const ir::HostTensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  float scale = 0;
  for (int64_t i = 0; i < want.numel(); ++i)
    scale = std::max(scale, std::fabs(want.data<float>()[i]));
  for (int64_t i = 0; i < want.numel(); ++i)
    ASSERT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-5f * scale + 1e-6f)
        << what << " element " << i;
}

TEST(TpuWeightGradient, ReadsXAndDyInPlaceWithTheCpuValues) {
  for (const Geometry& c : geometries()) {
    ir::Graph g = weight_gradient_graph(c);
    Executable e = compile(g, Device("tpu-emu:v4"), tpu_test::options({}, "highest"));
    EXPECT_EQ(e.compile_report().metrics.at("weight_gradients_in_place"), 1) << c.name;
    auto inputs = random_inputs(e.graph(), 3);
    auto tpu = e.run(inputs).outputs;
    auto cpu = compile(g, Device("cpu")).run(inputs).outputs;
    expect_close(tpu.at(0), cpu.at(0), std::string(c.name) + ": dW");
    expect_close(tpu.at(1), cpu.at(1), std::string(c.name) + ": dx");
  }
}

TEST(TpuWeightGradient, GroupedConvolutionsKeepTheTransposedConvolution) {
  Geometry c{"groups 2",
             ir::Shape({2, 6, 6, 4}),
             ir::Shape({6, 2, 3, 3}),
             {{"group", int64_t{2}}, {"pads", V{1, 1, 1, 1}}}};
  ir::Graph g = weight_gradient_graph(c);
  Executable e = compile(g, Device("tpu-emu:v4"), tpu_test::options({}, "highest"));
  EXPECT_EQ(e.compile_report().metrics.at("weight_gradients_in_place"), 0);
  auto inputs = random_inputs(e.graph(), 3);
  expect_close(e.run(inputs).outputs.at(0), compile(g, Device("cpu")).run(inputs).outputs.at(0),
               "groups 2: dW");
}

// The same products as the forward convolution, read from the same tensors: a ResNet-50 layer-1
// 3x3 convolution's weight gradient takes less than twice its forward time on v4 (before it read
// its operands in place it took five times as long, behind two transposes of x and dy).
TEST(TpuWeightGradient, CostsAboutWhatTheForwardConvolutionCosts) {
  Geometry c{"resnet50 layer1 conv2",
             ir::Shape({32, 56, 56, 64}),
             ir::Shape({64, 64, 3, 3}),
             {{"pads", V{1, 1, 1, 1}}}};
  auto run =
      tpu_test::run(weight_gradient_graph(c), "tpu-emu:v4", tpu_test::options({}, "default", true));
  double forward = 0, weight_grad = 0;
  for (const auto& op : run.report.ops) {
    if (op.op_type != "Conv") continue;
    (op.node.rfind("fwd/", 0) == 0 ? forward : weight_grad) += op.device_seconds;
  }
  // Only W's own small transpose remains: x and dy are not copied.
  int64_t transposed = 0;
  for (const auto& op : run.report.ops)
    if (op.op_type == "Transpose") transposed += op.bytes_in;
  EXPECT_LT(transposed, c.x.numel() * 4 / 100);
  ASSERT_GT(forward, 0);
  ASSERT_GT(weight_grad, 0);
  EXPECT_LT(weight_grad, 2 * forward)
      << "forward " << forward << " s, weight gradient " << weight_grad << " s";
}

}  // namespace
}  // namespace mimic
