// Layout assignment in the TPU compiler: a channels-first graph compiles to channels-last
// convolutions with transposes only at its boundaries, computes the same values, and costs what
// the same graph written channels-last costs; layout=as_given prices the graph's own layout.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/tpu_emu/layout_assignment.h"
#include "base/error.h"
#include "frontend/ir/shape_inference.h"
#include "tpu_test_util.h"

namespace mimic {
namespace {

using ir::OpType;
using tpu_test::options;
using tpu_test::random_tensor;

// conv -> relu -> conv (+ residual) -> relu -> squeeze-excite -> max pool -> global pool -> gemm,
// every window op channels-first or channels-last.
ir::Graph small_cnn(bool nhwc, int64_t batch = 2, int64_t c = 32, int64_t hw = 16) {
  ir::Graph g(nhwc ? "cnn_nhwc" : "cnn_nchw");
  ir::Shape xs = nhwc ? ir::Shape({batch, hw, hw, c}) : ir::Shape({batch, c, hw, hw});
  auto x = g.add_input("x", ir::DType::f32, xs);
  auto layout = [&](ir::Attributes a) {
    if (nhwc) a.set("layout", std::string("NHWC"));
    return a;
  };
  auto conv = [&](ir::ValueId in, int64_t cin, int64_t cout, int64_t k, const std::string& name) {
    auto w = g.add_constant(name + ".w", random_tensor(ir::Shape({cout, cin, k, k}), cout + k,
                                                       1.0f / std::sqrt(float(cin * k * k))));
    int64_t p = k / 2;
    return g.add_node(OpType::Conv, name, {in, w},
                      layout({{"pads", std::vector<int64_t>{p, p, p, p}}}))[0];
  };
  auto y = g.add_node(OpType::Relu, "relu1", {conv(x, c, c, 3, "conv1")})[0];
  y = g.add_node(OpType::Add, "residual", {conv(y, c, c, 3, "conv2"), x})[0];
  y = g.add_node(OpType::Relu, "relu2", {y})[0];
  auto squeeze = g.add_node(OpType::GlobalAveragePool, "se.pool", {y}, layout({}))[0];
  auto scale = g.add_node(OpType::Sigmoid, "se.gate", {conv(squeeze, c, c, 1, "se.fc")})[0];
  y = g.add_node(OpType::Mul, "se.scale", {y, scale})[0];
  y = g.add_node(OpType::MaxPool, "pool", {y},
                 layout({{"kernel_shape", std::vector<int64_t>{2, 2}},
                         {"strides", std::vector<int64_t>{2, 2}}}))[0];
  y = g.add_node(OpType::GlobalAveragePool, "gap", {y}, layout({}))[0];
  y = g.add_node(OpType::Flatten, "flat", {y}, {{"axis", int64_t{1}}})[0];
  auto w = g.add_constant("fc.w", random_tensor(ir::Shape({c, 10}), 9, 0.2f));
  g.add_output(g.add_node(OpType::MatMul, "fc", {y, w})[0]);
  ir::infer_shapes(g);
  return g;
}

CompileOptions with_layout(const std::string& layout, const std::string& precision = "highest") {
  CompileOptions o = options({}, precision);
  o.options["layout"] = layout;
  return o;
}

// Every output of g on tpu-emu:v4 with layout assignment within 1e-4 of the cpu's.
void expect_outputs_match_cpu(const ir::Graph& g) {
  auto cpu = tpu_test::run(g, "cpu").outputs;
  auto tpu = tpu_test::run(g, "tpu-emu:v4", with_layout("auto")).outputs;
  ASSERT_EQ(tpu.size(), cpu.size());
  for (size_t o = 0; o < cpu.size(); ++o) {
    ASSERT_EQ(tpu[o].shape(), cpu[o].shape());
    for (int64_t i = 0; i < cpu[o].numel(); ++i)
      EXPECT_NEAR(tpu[o].data<float>()[i], cpu[o].data<float>()[i], 1e-4f) << o << " " << i;
  }
}

TEST(TpuLayoutAssignment, MovesEveryWindowOpChannelsLastWithoutTransposesOnTheDevice) {
  auto a = backends::tpu_emu::assign_channels_last(small_cnn(false));
  EXPECT_EQ(a.channels_last, 6);  // conv1, conv2, se.pool, se.fc, pool, gap
  // x is read only channels-last (conv1 and the residual): it arrives channels-last from the
  // host. gap's [N,1,1,C] result leaves for Flatten through a Reshape (only size-1 dims move).
  // The elementwise ops, the SE gate and its broadcast multiply follow channels-last.
  EXPECT_EQ(a.transposes, 0);
  EXPECT_EQ(a.inputs_channels_last, std::vector<bool>{true});
  EXPECT_EQ(a.outputs_channels_last, std::vector<bool>{false});
  EXPECT_EQ(a.graph.input_type(0).shape, ir::Shape({2, 16, 16, 32}));
  int transposes = 0, reshapes = 0;
  for (const ir::Node& n : a.graph.nodes()) {
    transposes += n.op == OpType::Transpose;
    reshapes += n.op == OpType::Reshape;
  }
  EXPECT_EQ(transposes, 0);
  EXPECT_EQ(reshapes, 1);
  EXPECT_EQ(a.graph.output_type(0), small_cnn(false).output_type(0));
}

// conv -> relu, with a channels-first consumer (Softmax over channels) of the conv as a 2nd output.
ir::Graph conv_with_channels_first_reader() {
  ir::Graph g("mixed");
  auto x = g.add_input("x", ir::DType::f32, ir::Shape({2, 8, 6, 6}));
  auto w = g.add_constant("w", random_tensor(ir::Shape({8, 8, 3, 3}), 4, 0.1f));
  auto y =
      g.add_node(OpType::Conv, "conv", {x, w}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})[0];
  g.add_output(g.add_node(OpType::Relu, "relu", {y})[0]);
  g.add_output(g.add_node(OpType::Softmax, "softmax", {y}, {{"axis", int64_t{1}}})[0]);
  ir::infer_shapes(g);
  return g;
}

TEST(TpuLayoutAssignment, TransposesWhereAChannelsFirstReaderNeedsTheValue) {
  auto a = backends::tpu_emu::assign_channels_last(conv_with_channels_first_reader());
  EXPECT_EQ(a.channels_last, 1);
  EXPECT_EQ(a.transposes, 1);  // conv's result for the softmax; x arrives channels-last
  EXPECT_EQ(a.outputs_channels_last, (std::vector<bool>{true, false}));
  expect_outputs_match_cpu(conv_with_channels_first_reader());
}

// A train step's BatchNorm written with primitive ops after a conv: reductions over constant
// axes, the centred value, a broadcast of the statistics and a Where all follow channels-last; the
// per-sample sums without keepdims ([N, C], the same tensor in either layout) need no transpose.
ir::Graph conv_then_primitive_statistics() {
  ir::Graph g("statistics");
  auto x = g.add_input("x", ir::DType::f32, ir::Shape({2, 8, 6, 6}));
  auto w = g.add_constant("w", random_tensor(ir::Shape({8, 8, 3, 3}), 4, 0.1f));
  auto c =
      g.add_node(OpType::Conv, "conv", {x, w}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})[0];
  auto ints = [&](const std::string& name, std::vector<int64_t> v) {
    ir::HostTensor t(ir::DType::i64, ir::Shape({static_cast<int64_t>(v.size())}));
    for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
    return g.add_constant(name, t);
  };
  auto mean = g.add_node(OpType::ReduceMean, "mean", {c, ints("axes", {0, 2, 3})},
                         {{"keepdims", int64_t{1}}})[0];
  auto d = g.add_node(OpType::Sub, "d", {c, mean})[0];
  auto e = g.add_node(OpType::Expand, "broadcast", {mean, ints("shape", {2, 8, 6, 6})})[0];
  auto positive = g.add_node(OpType::Greater, "positive", {d, e})[0];
  auto picked = g.add_node(OpType::Where, "picked", {positive, d, e})[0];
  g.add_output(g.add_node(OpType::ReduceSum, "sums", {picked, ints("hw", {2, 3})},
                          {{"keepdims", int64_t{0}}})[0]);
  g.add_output(g.add_node(
      OpType::MaxPool, "pool", {picked},
      {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}})[0]);
  ir::infer_shapes(g);
  return g;
}

TEST(TpuLayoutAssignment, ReductionsBroadcastsAndWhereFollowChannelsLast) {
  auto a = backends::tpu_emu::assign_channels_last(conv_then_primitive_statistics());
  EXPECT_EQ(a.channels_last, 2);  // conv, pool
  EXPECT_EQ(a.transposes, 0);
  EXPECT_EQ(a.outputs_channels_last, (std::vector<bool>{false, true}));
  expect_outputs_match_cpu(conv_then_primitive_statistics());
}

TEST(TpuLayoutAssignment, LeavesChannelsLastGraphsAlone) {
  auto a = backends::tpu_emu::assign_channels_last(small_cnn(true));
  EXPECT_EQ(a.channels_last, 0);
  EXPECT_EQ(a.transposes, 0);
}

TEST(TpuLayoutAssignment, ComputesTheCpuValuesAndCostsWhatChannelsLastCosts) {
  ir::Graph nchw = small_cnn(false);
  auto cpu = tpu_test::run(nchw, "cpu").outputs[0];
  auto tpu = tpu_test::run(nchw, "tpu-emu:v4", with_layout("auto"));
  for (int64_t i = 0; i < cpu.numel(); ++i)
    EXPECT_NEAR(tpu.outputs[0].data<float>()[i], cpu.data<float>()[i], 1e-4f) << i;

  auto timing = [](const ir::Graph& g, const std::string& layout) {
    CompileOptions o = with_layout(layout, "default");
    o.timing_only = true;
    return tpu_test::run(g, "tpu-emu:v4", o).report.cycles;
  };
  uint64_t assigned = timing(nchw, "auto"), given = timing(nchw, "as_given");
  uint64_t native = timing(small_cnn(true), "as_given");
  EXPECT_LT(assigned, given);
  // Same device program up to the Reshape before Flatten.
  EXPECT_LT(static_cast<double>(assigned), 1.05 * static_cast<double>(native));
}

TEST(TpuLayoutAssignment, CompileReportSaysWhatItDid) {
  Executable e = compile(small_cnn(false), Device("tpu-emu:v4"), with_layout("auto"));
  std::string notes;
  for (const auto& n : e.compile_report().notes) notes += n + "\n";
  EXPECT_NE(notes.find("layout assignment: 6 op(s) run channels-last, 0 transpose(s)"),
            std::string::npos)
      << notes;
}

TEST(TpuLayoutAssignment, UnknownLayoutOptionIsAOneLineError) {
  try {
    compile(small_cnn(false), Device("tpu-emu:v4"), with_layout("sideways"));
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("layout=sideways (expected auto or as_given)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace mimic
