// Op families lowered to the TPU (not the cpu fallback): each graph runs on tpu-emu:v4 and on the
// cpu backend with the same inputs; every op must run on the chip (ops[].fallback false) and the
// outputs must match (exactly for masks and indices; fp32 tolerance at precision highest).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "base/error.h"
#include "tpu_test_util.h"

namespace mimic {
namespace {

using ir::DType;
using ir::OpType;
using ir::Shape;

double value(const ir::HostTensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::f32:
      return t.data<float>()[i];
    case DType::boolean:
      return t.data<bool>()[i] ? 1 : 0;
    case DType::i32:
      return t.data<int32_t>()[i];
    case DType::i64:
      return static_cast<double>(t.data<int64_t>()[i]);
    default:
      ADD_FAILURE() << "unexpected dtype " << ir::dtype_name(t.dtype());
      return 0;
  }
}

// Runs `g` on the chip and on cpu; checks no fallback and outputs within `tol` (0: exact).
void expect_on_chip(const ir::Graph& g, double tol, std::vector<ir::HostTensor> inputs = {},
                    const std::string& precision = "highest") {
  Executable tpu = compile(g, Device("tpu-emu:v4"), tpu_test::options({}, precision));
  Executable cpu = compile(g, Device("cpu"));
  EXPECT_TRUE(tpu.compile_report().fallback_nodes.empty())
      << g.name() << ": " << tpu.compile_report().fallback_nodes.front();
  if (inputs.empty()) inputs = random_inputs(tpu.graph(), 11);
  RunOutput a = tpu.run(inputs), b = cpu.run(inputs);
  EXPECT_EQ(a.report.fallback_count(), 0) << g.name();
  for (const auto& op : a.report.ops) EXPECT_FALSE(op.fallback) << g.name() << ": " << op.node;
  EXPECT_EQ(a.outputs.size(), b.outputs.size());
  for (size_t o = 0; o < a.outputs.size() && o < b.outputs.size(); ++o) {
    ASSERT_EQ(a.outputs[o].type(), b.outputs[o].type()) << g.name();
    for (int64_t i = 0; i < a.outputs[o].numel(); ++i) {
      double x = value(a.outputs[o], i), y = value(b.outputs[o], i);
      if (std::isnan(x) && std::isnan(y)) continue;
      ASSERT_NEAR(x, y, tol * std::max(1.0, std::fabs(y)))
          << g.name() << " output " << o << "[" << i << "]";
    }
  }
}

ir::ValueId f32_input(ir::Graph& g, const std::string& name, Shape s) {
  return g.add_input(name, DType::f32, std::move(s));
}

TEST(TpuCoverage, GemmVariantsRunOnTheMatrixUnits) {
  struct Case {
    const char* name;
    bool ta, tb;
    float alpha, beta;
    Shape c;
  };
  for (const Case& k : {Case{"scalar_c", false, false, 0.5f, 2.0f, Shape({})},
                        Case{"column_c", true, false, 1.0f, 0.25f, Shape({5, 1})},
                        Case{"full_c_beta", false, true, 1.5f, -1.0f, Shape({5, 7})},
                        Case{"row_c", true, true, 1.0f, 1.0f, Shape({7})}}) {
    ir::Graph g(k.name);
    auto a = f32_input(g, "a", k.ta ? Shape({6, 5}) : Shape({5, 6}));
    auto b = f32_input(g, "b", k.tb ? Shape({7, 6}) : Shape({6, 7}));
    auto c = f32_input(g, "c", k.c);
    ir::Attributes at{{"transA", int64_t{k.ta}},
                      {"transB", int64_t{k.tb}},
                      {"alpha", double{k.alpha}},
                      {"beta", double{k.beta}}};
    g.add_output(g.add_node(OpType::Gemm, "gemm", {a, b, c}, at)[0]);
    expect_on_chip(g, 1e-5);
  }
}

TEST(TpuCoverage, GemmWithRuntimeCMatchesCpuAtDefaultPrecisionWithinBf16) {
  ir::Graph g("gemm_default");
  auto a = f32_input(g, "a", Shape({16, 64}));
  auto b = f32_input(g, "b", Shape({64, 32}));
  auto c = f32_input(g, "c", Shape({16, 1}));
  g.add_output(g.add_node(OpType::Gemm, "gemm", {a, b, c}, {{"beta", 0.5}})[0]);
  expect_on_chip(g, 0.05, {}, "default");  // bf16 operands (8 bits of mantissa), K = 64
}

TEST(TpuCoverage, LayerNormalizationOnAnyAxisWithMeanAndInvStdDev) {
  for (int64_t axis : {0, 1, 2, -1}) {
    ir::Graph g("layer_norm_axis" + std::to_string(axis));
    auto x = f32_input(g, "x", Shape({3, 4, 5}));
    Shape norm = axis == 0 ? Shape({3, 4, 5}) : axis == 1 ? Shape({4, 5}) : Shape({5});
    auto s = f32_input(g, "scale", norm);
    auto b = f32_input(g, "bias", norm);
    auto outs = g.add_node(OpType::LayerNormalization, "ln", {x, s, b}, {{"axis", axis}}, 3);
    for (auto v : outs) g.add_output(v);
    expect_on_chip(g, 1e-5);
  }
}

TEST(TpuCoverage, ComparisonsLogicAndWhereGiveExactMasks) {
  ir::Graph g("masks");
  auto x = f32_input(g, "x", Shape({4, 8}));
  auto y = f32_input(g, "y", Shape({8}));
  auto lt = g.add_node(OpType::Less, "lt", {x, y})[0];
  auto ge = g.add_node(OpType::GreaterOrEqual, "ge", {x, y})[0];
  auto both = g.add_node(OpType::And, "and", {lt, ge})[0];
  auto neither = g.add_node(OpType::Not, "not", {both})[0];
  auto sel = g.add_node(OpType::Where, "where", {lt, x, y})[0];
  auto eq = g.add_node(OpType::Equal, "eq", {sel, x})[0];
  auto xr = g.add_node(OpType::Xor, "xor", {eq, neither})[0];
  g.add_output(xr);
  g.add_output(sel);
  expect_on_chip(g, 0);
}

TEST(TpuCoverage, VariadicSumMeanMaxMinAndRuntimeClip) {
  ir::Graph g("variadic");
  auto a = f32_input(g, "a", Shape({3, 4}));
  auto b = f32_input(g, "b", Shape({4}));
  auto c = f32_input(g, "c", Shape({3, 1}));
  g.add_output(g.add_node(OpType::Sum, "sum", {a, b, c})[0]);
  g.add_output(g.add_node(OpType::Mean, "mean", {a, b, c})[0]);
  g.add_output(g.add_node(OpType::Max, "max", {a, b, c})[0]);
  g.add_output(g.add_node(OpType::Min, "min", {a})[0]);
  auto lo = f32_input(g, "lo", Shape({}));
  auto hi = f32_input(g, "hi", Shape({}));
  g.add_output(g.add_node(OpType::Clip, "clip", {a, lo, hi})[0]);
  g.add_output(g.add_node(OpType::Clip, "clip_lo", {a, lo})[0]);
  g.add_output(g.add_node(OpType::Pow, "pow", {g.add_node(OpType::Abs, "abs", {a})[0], b})[0]);
  expect_on_chip(g, 1e-6);
}

TEST(TpuCoverage, CastsBetweenChipDtypes) {
  ir::Graph g("casts");
  auto x = f32_input(g, "x", Shape({2, 9}));
  auto to_bf16 = g.add_node(OpType::Cast, "to_bf16", {x}, {{"to", std::string("bf16")}})[0];
  g.add_output(g.add_node(OpType::Cast, "back", {to_bf16}, {{"to", std::string("f32")}})[0]);
  g.add_output(g.add_node(OpType::Cast, "to_i32", {x}, {{"to", std::string("i32")}})[0]);
  auto mask = g.add_node(OpType::Cast, "to_bool", {x}, {{"to", std::string("bool")}})[0];
  g.add_output(g.add_node(OpType::Cast, "to_i64", {mask}, {{"to", std::string("i64")}})[0]);
  ir::HostTensor in(DType::f32, Shape({2, 9}));
  const float v[18] = {0,           -0.0f, 1.5f,  -1.5f,  2.7f,   -2.7f,   1e6f,     -3e7f, 0.4f,
                       1.00390625f, 3.0f,  -7.9f, 100.5f, 0.001f, -0.999f, 65535.9f, 8,     -8};
  std::copy(v, v + 18, in.data<float>());
  expect_on_chip(g, 0, {in});
}

TEST(TpuCoverage, ArgMaxArgMinWithLastIndex) {
  ir::Graph g("arg");
  auto x = f32_input(g, "x", Shape({3, 5, 4}));
  g.add_output(g.add_node(OpType::ArgMax, "amax", {x}, {{"axis", int64_t{1}}})[0]);
  g.add_output(g.add_node(
      OpType::ArgMin, "amin", {x},
      {{"axis", int64_t{-1}}, {"keepdims", int64_t{0}}, {"select_last_index", int64_t{1}}})[0]);
  ir::HostTensor in = tpu_test::random_tensor(Shape({3, 5, 4}), 9);
  for (int64_t i = 0; i < in.numel(); i += 3) in.data<float>()[i] = std::round(in.data<float>()[i]);
  expect_on_chip(g, 0, {in});
}

TEST(TpuCoverage, GatherIsADmaOnTheChip) {
  ir::Graph g("embed");
  auto ids = g.add_input("ids", DType::i64, Shape({4, 6}));
  auto table = g.add_constant("table", tpu_test::random_tensor(Shape({50, 32}), 3));
  auto e = g.add_node(OpType::Gather, "lookup", {table, ids})[0];
  auto w = g.add_constant("w", tpu_test::random_tensor(Shape({32, 16}), 4));
  g.add_output(g.add_node(OpType::MatMul, "proj", {e, w})[0]);
  Executable tpu = compile(g, Device("tpu-emu:v4"), tpu_test::options({}, "highest"));
  std::vector<ir::HostTensor> inputs = random_inputs(tpu.graph(), 5, 50);
  inputs[0].data<int64_t>()[3] = -1;  // counts from the end
  expect_on_chip(g, 1e-5, inputs);
  // Axis 1 of a runtime table, i32 indices.
  ir::Graph g2("gather_axis1");
  auto data = f32_input(g2, "data", Shape({3, 7, 2}));
  auto idx = g2.add_input("idx", DType::i32, Shape({5}));
  g2.add_output(g2.add_node(OpType::Gather, "pick", {data, idx}, {{"axis", int64_t{1}}})[0]);
  ir::HostTensor d = tpu_test::random_tensor(Shape({3, 7, 2}), 4);
  ir::HostTensor i(DType::i32, Shape({5}));
  const int32_t picks[5] = {0, 6, -7, 3, 3};
  std::copy(picks, picks + 5, i.data<int32_t>());
  expect_on_chip(g2, 0, {d, i});
}

// An embedding's gradient: update rows added into a table at repeated and negative indices, on
// the chip; a BERT-sized table (30,522 x 768, 4,096 token rows) tiles in v4's VMEM.
TEST(TpuCoverage, ScatterNDAddsRowsOnTheChip) {
  auto scatter_graph = [](int64_t rows, int64_t width, int64_t count) {
    ir::Graph g("embedding_grad");
    auto data = f32_input(g, "data", Shape({rows, width}));
    auto idx = g.add_input("idx", DType::i64, Shape({count, 1}));
    auto upd = f32_input(g, "upd", Shape({count, width}));
    g.add_output(g.add_node(OpType::ScatterND, "scatter", {data, idx, upd},
                            {{"reduction", std::string("add")}})[0]);
    return g;
  };
  ir::Graph g = scatter_graph(9, 5, 7);
  ir::HostTensor i(DType::i64, Shape({7, 1}));
  const int64_t picks[7] = {3, 0, 3, -1, 8, 3, 1};
  std::copy(picks, picks + 7, i.data<int64_t>());
  expect_on_chip(
      g, 0,
      {tpu_test::random_tensor(Shape({9, 5}), 1), i, tpu_test::random_tensor(Shape({7, 5}), 2)});
  // An index past the table is the run's one-line error, naming the node and the index.
  i.data<int64_t>()[4] = 9;
  Executable bad = compile(g, Device("tpu-emu:v4"));
  try {
    bad.run(
        {tpu_test::random_tensor(Shape({9, 5}), 1), i, tpu_test::random_tensor(Shape({7, 5}), 2)});
    ADD_FAILURE() << "no error for index 9 of 9 rows";
  } catch (const mimic::Error& e) {
    EXPECT_NE(std::string(e.what()).find("scatter index 9 is outside [-9, 9)"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("'scatter'"), std::string::npos) << e.what();
  }
  Executable big = compile(scatter_graph(30522, 768, 4096), Device("tpu-emu:v4"),
                           tpu_test::options({}, "default", true));
  RunOutput out = big.run(random_inputs(big.graph(), 3, 30522));
  EXPECT_EQ(out.report.ops.size(), 1u);
  EXPECT_FALSE(out.report.ops.at(0).fallback);
}

TEST(TpuCoverage, OneDimensionalConvolutionsAndPoolsRunAsTwoDimensionalOnes) {
  ir::Graph g("conv1d");
  auto x = f32_input(g, "x", Shape({2, 4, 17}));
  auto w = g.add_constant("w", tpu_test::random_tensor(Shape({6, 2, 3}), 5, 0.5f));
  auto b = g.add_constant("b", tpu_test::random_tensor(Shape({6}), 6));
  auto y = g.add_node(OpType::Conv, "conv", {x, w, b},
                      {{"group", int64_t{2}},
                       {"pads", std::vector<int64_t>{1, 2}},
                       {"strides", std::vector<int64_t>{2}},
                       {"dilations", std::vector<int64_t>{2}}})[0];
  g.add_output(y);
  g.add_output(g.add_node(OpType::MaxPool, "maxpool", {x},
                          {{"kernel_shape", std::vector<int64_t>{3}},
                           {"strides", std::vector<int64_t>{2}},
                           {"pads", std::vector<int64_t>{1, 1}}})[0]);
  g.add_output(g.add_node(OpType::AveragePool, "avgpool", {x},
                          {{"kernel_shape", std::vector<int64_t>{4}},
                           {"count_include_pad", int64_t{1}},
                           {"pads", std::vector<int64_t>{1, 1}}})[0]);
  expect_on_chip(g, 1e-5);
  // A long sequence tiles by output positions (one row per position, not one per sequence).
  ir::Graph big("maxpool1d_long");
  auto s = f32_input(big, "x", Shape({1, 16, 200000}));
  big.add_output(big.add_node(
      OpType::MaxPool, "pool", {s},
      {{"kernel_shape", std::vector<int64_t>{3}}, {"strides", std::vector<int64_t>{2}}})[0]);
  expect_on_chip(big, 0);
}

// ConvTranspose as a stride-1 Conv over the stride-dilated input (XLA's lhs_dilation): strided
// (materialized zeros), unit-stride (window padding), cropping (pad > dilation * (k - 1)),
// output_padding, output_shape, groups, dilations, 1-D, and a fused bias + Relu.
ir::Graph conv_transpose_graph() {
  ir::Graph g("conv_transpose");
  auto x = f32_input(g, "x", Shape({2, 4, 5, 6}));
  using V = std::vector<int64_t>;
  auto add = [&](const std::string& name, Shape w_shape, ir::Attributes at, ir::ValueId in,
                 bool bias, uint64_t seed) {
    std::vector<ir::ValueId> ins{
        in, g.add_constant(name + ".w", tpu_test::random_tensor(w_shape, seed, 0.4f))};
    if (bias)
      ins.push_back(g.add_constant(
          name + ".b",
          tpu_test::random_tensor(Shape({w_shape[1] * at.get_int("group", 1)}), seed + 1)));
    return g.add_node(OpType::ConvTranspose, name, ins, at)[0];
  };
  auto y = add("strided", Shape({4, 3, 3, 3}),
               {{"strides", V{2, 3}}, {"pads", V{1, 0, 0, 2}}, {"output_padding", V{1, 2}}}, x,
               true, 20);
  g.add_output(g.add_node(OpType::Relu, "relu", {y})[0]);
  g.add_output(add("grouped_dilated", Shape({4, 2, 2, 3}),
                   {{"group", int64_t{2}}, {"dilations", V{2, 1}}, {"pads", V{1, 1, 1, 1}}}, x,
                   true, 22));
  g.add_output(add("cropping", Shape({4, 3, 3, 3}), {{"strides", V{1, 2}}, {"pads", V{3, 1, 2, 4}}},
                   x, false, 24));
  g.add_output(add(
      "shaped", Shape({4, 2, 3, 2}),
      {{"strides", V{2, 2}}, {"output_shape", V{10, 11}}, {"auto_pad", std::string("SAME_LOWER")}},
      x, false, 26));
  auto s = f32_input(g, "s", Shape({2, 3, 9}));
  g.add_output(add("one_d", Shape({3, 4, 4}),
                   {{"strides", V{3}}, {"pads", V{2, 1}}, {"dilations", V{2}}}, s, true, 28));
  return g;
}

TEST(TpuCoverage, ConvTransposeRunsAsAConvolutionOverTheDilatedInput) {
  expect_on_chip(conv_transpose_graph(), 1e-5);
  expect_on_chip(conv_transpose_graph(), 0.05, {}, "default");  // bf16 operands, K <= 36
}

TEST(TpuCoverage, ConvTransposeStridesCostTheZerosOfTheDilatedInput) {
  // The matrix units see the implicit GEMM of the stride-1 conv over the dilated input: the
  // strided transposed conv does about s^2 times the matrix work of the unit-stride one on the same
  // input (the zeros are streamed), though both produce the same number of useful products.
  auto graph = [](int64_t stride) {
    ir::Graph g("convt_s" + std::to_string(stride));
    auto x = f32_input(g, "x", Shape({1, 64, 16, 16}));
    auto w = g.add_constant("w", tpu_test::random_tensor(Shape({64, 64, 3, 3}), 3, 0.1f));
    g.add_output(g.add_node(OpType::ConvTranspose, "convt", {x, w},
                            {{"strides", std::vector<int64_t>{stride, stride}}})[0]);
    return g;
  };
  RunOutput s1 = tpu_test::run(graph(1), "tpu-emu:v4"), s2 = tpu_test::run(graph(2), "tpu-emu:v4");
  ASSERT_EQ(s1.report.fallback_count(), 0);
  ASSERT_EQ(s2.report.fallback_count(), 0);
  EXPECT_GT(s2.report.cycles, 2 * s1.report.cycles);
}

// Strided ConvTransposes (a strided convolution's data gradient) by sub-pixel phases: stride-1
// GEMMs over the input as it is, their images placed into the output. A 3x3 filter shared with a
// Conv (each gathers it its own way) with pads and output_padding, grouped; a 4x4 one at stride 2
// (every phase 2x2 taps); a 1x1 one with uneven strides and crops (one phase; the rest zeroed); a
// constant-weight one; and a channels-last one with a fused residual Add, the residual dying there
// (the phases are added onto it in place).
ir::Graph strided_transpose_graph(int64_t channels, int64_t side, int64_t stride) {
  ir::Graph g("strided_transpose");
  using V = std::vector<int64_t>;
  auto x = f32_input(g, "x", Shape({2, channels, side, side + 2}));
  auto w = f32_input(g, "w", Shape({channels, channels / 2, 3, 3}));
  g.add_output(g.add_node(OpType::Conv, "conv", {x, w},
                          {{"group", int64_t{2}}, {"pads", V{1, 1, 1, 1}}})[0]);
  g.add_output(g.add_node(OpType::ConvTranspose, "shared", {x, w},
                          {{"group", int64_t{2}},
                           {"strides", V{stride, stride}},
                           {"pads", V{1, 1, 1, 1}},
                           {"output_padding", V{1, 1}}})[0]);
  auto w4 = f32_input(g, "w4", Shape({channels, 4, 4, 4}));
  g.add_output(g.add_node(OpType::ConvTranspose, "four", {x, w4},
                          {{"strides", V{stride, stride}}, {"pads", V{1, 1, 1, 1}}})[0]);
  auto w1 = f32_input(g, "w1", Shape({channels, channels / 2, 1, 1}));
  g.add_output(g.add_node(OpType::ConvTranspose, "pointwise", {x, w1},
                          {{"group", int64_t{2}},
                           {"strides", V{stride, stride + 1}},
                           {"pads", V{1, 0, 0, 2}},
                           {"output_padding", V{1, 1}}})[0]);
  auto wc = g.add_constant("wc", tpu_test::random_tensor(Shape({channels, 8, 3, 2}), 60, 0.3f));
  g.add_output(
      g.add_node(OpType::ConvTranspose, "constant", {x, wc}, {{"strides", V{stride, stride}}})[0]);
  auto xl = f32_input(g, "x_nhwc", Shape({2, side, side + 2, channels}));
  auto ws = f32_input(g, "ws", Shape({channels, 4, 3, 3}));
  auto summed = g.add_node(OpType::ConvTranspose, "summed", {xl, ws},
                           {{"strides", V{stride, stride}}, {"layout", std::string("NHWC")}})[0];
  auto r0 = f32_input(g, "r", Shape({2, (side - 1) * stride + 3, (side + 1) * stride + 3, 4}));
  auto r = g.add_node(OpType::Relu, "r_relu", {r0})[0];  // dies at the Add: updated in place
  g.add_output(g.add_node(OpType::Add, "residual", {summed, r})[0]);
  return g;
}

TEST(TpuCoverage, StridedConvTransposeRunsBySubPixelPhases) {
  Executable tpu = compile(strided_transpose_graph(6, 5, 2), Device("tpu-emu:v4"));
  EXPECT_EQ(tpu.compile_report().metrics.at("fused_nodes"), 1);  // the residual Add
  EXPECT_EQ(tpu.compile_report().metrics.at("residuals_updated_in_place"), 1);
  expect_on_chip(strided_transpose_graph(6, 5, 2), 1e-5);
  expect_on_chip(strided_transpose_graph(6, 5, 2), 0.1, {}, "default");  // bf16 operands, K <= 54
  expect_on_chip(strided_transpose_graph(6, 4, 3), 1e-5);
  // Matrix work: the strided graph's GEMMs are those of the unit-stride one (the same taps over
  // the same input rows), not about s^2 = 4 times as many over a dilated input.
  auto mxu_busy = [](const RunOutput& r) {
    uint64_t busy = 0;
    for (const auto& u : r.report.units)
      if (u.name.find("mxu") != std::string::npos) busy += u.busy_cycles;
    return busy;
  };
  CompileOptions timing;
  timing.timing_only = true;
  RunOutput s1 = tpu_test::run(strided_transpose_graph(256, 32, 1), "tpu-emu:v4", timing);
  RunOutput s2 = tpu_test::run(strided_transpose_graph(256, 32, 2), "tpu-emu:v4", timing);
  EXPECT_LT(static_cast<double>(mxu_busy(s2)), 1.5 * static_cast<double>(mxu_busy(s1)));
}

// 3-D convolutions as one 2-D GEMM over the depth-unfolded input: depth strides, padding and
// dilation, groups (depthwise included), a fused BatchNormalization + Relu, and a residual Add
// that stays a separate op (the GEMM's rows are output slices, not NCDHW).
ir::Graph conv_3d_graph() {
  ir::Graph g("conv_3d");
  using V = std::vector<int64_t>;
  auto x = f32_input(g, "x", Shape({2, 4, 6, 7, 5}));
  auto conv = [&](const std::string& name, Shape w, ir::Attributes at, uint64_t seed) {
    auto wv = g.add_constant(name + ".w", tpu_test::random_tensor(w, seed, 0.3f));
    auto b = g.add_constant(name + ".b", tpu_test::random_tensor(Shape({w[0]}), seed + 1));
    return g.add_node(OpType::Conv, name, {x, wv, b}, at)[0];
  };
  auto y =
      conv("strided", Shape({6, 4, 3, 3, 2}),
           {{"strides", V{2, 1, 2}}, {"pads", V{1, 1, 0, 2, 1, 1}}, {"dilations", V{2, 1, 1}}}, 30);
  auto stat = [&](const std::string& name, float lo, uint64_t seed) {
    ir::HostTensor t = tpu_test::random_tensor(Shape({6}), seed, 0.5f);
    for (int64_t i = 0; i < 6; ++i) t.data<float>()[i] += lo;
    return g.add_constant(name, std::move(t));
  };
  auto bn = g.add_node(
      OpType::BatchNormalization, "bn",
      {y, stat("gamma", 1, 40), stat("beta", 0, 41), stat("mean", 0, 42), stat("var", 1, 43)})[0];
  g.add_output(g.add_node(OpType::Relu, "relu", {bn})[0]);
  auto grouped = conv("grouped", Shape({6, 2, 2, 2, 2}), {{"group", int64_t{2}}}, 32);
  auto plain = conv("plain", Shape({6, 4, 2, 2, 2}), {}, 34);
  g.add_output(g.add_node(OpType::Add, "residual", {grouped, plain})[0]);
  g.add_output(conv("depthwise", Shape({8, 1, 2, 3, 3}), {{"group", int64_t{4}}}, 36));
  return g;
}

TEST(TpuCoverage, ThreeDimensionalConvolutionsRunOnTheMatrixUnits) {
  expect_on_chip(conv_3d_graph(), 1e-5);
  expect_on_chip(conv_3d_graph(), 0.05, {}, "default");  // bf16 operands, K <= 108
}

// Runtime weights (graph inputs), grouped: a 2-D Conv's (with a BatchNormalization that cannot
// fold into them) and a ConvTranspose's (flipped, channels swapped) are read in place, a 3-D
// Conv's relaid as the GEMM's matrices by a copy kernel every run.
ir::Graph runtime_weights_graph() {
  ir::Graph g("runtime_weights");
  using V = std::vector<int64_t>;
  auto x = f32_input(g, "x", Shape({2, 4, 6, 5}));
  auto bias = [&](int64_t n, uint64_t seed) {
    return g.add_constant("b" + std::to_string(seed), tpu_test::random_tensor(Shape({n}), seed));
  };
  auto w = f32_input(g, "w", Shape({6, 2, 3, 2}));
  auto y = g.add_node(OpType::Conv, "conv", {x, w, bias(6, 50)},
                      {{"group", int64_t{2}}, {"pads", V{1, 0, 1, 1}}, {"strides", V{1, 2}}})[0];
  auto stat = [&](const std::string& name, float lo, uint64_t seed) {
    ir::HostTensor t = tpu_test::random_tensor(Shape({6}), seed, 0.5f);
    for (int64_t i = 0; i < 6; ++i) t.data<float>()[i] += lo;
    return g.add_constant(name, std::move(t));
  };
  g.add_output(g.add_node(
      OpType::BatchNormalization, "bn",
      {y, stat("gamma", 1, 51), stat("beta", 0, 52), stat("mean", 0, 53), stat("var", 1, 54)})[0]);
  auto wt = f32_input(g, "wt", Shape({4, 3, 3, 2}));
  g.add_output(
      g.add_node(OpType::ConvTranspose, "convt", {x, wt, bias(6, 55)},
                 {{"group", int64_t{2}}, {"strides", V{2, 2}}, {"pads", V{1, 0, 0, 1}}})[0]);
  auto x3 = f32_input(g, "x3", Shape({1, 4, 5, 4, 6}));
  auto w3 = f32_input(g, "w3", Shape({4, 2, 2, 3, 2}));
  g.add_output(g.add_node(OpType::Conv, "conv3d", {x3, w3},
                          {{"group", int64_t{2}}, {"pads", V{1, 1, 0, 0, 1, 1}}})[0]);
  return g;
}

TEST(TpuCoverage, ConvolutionsWithRuntimeWeightsReadTwoDimensionalFiltersInPlace) {
  Executable tpu = compile(runtime_weights_graph(), Device("tpu-emu:v4"));
  EXPECT_EQ(tpu.compile_report().metrics.at("filters_read_in_place"), 2);
  expect_on_chip(runtime_weights_graph(), 1e-5);
  expect_on_chip(runtime_weights_graph(), 0.05, {}, "default");
}

// A training step's convolutions take their bias as a runtime input, like their weights: the
// GEMM's epilogue reads it, and followers that would fold into a constant bias (BatchNormalization
// with constant statistics, an Add of a constant) run after it instead; an activation still fuses.
// A depthwise convolution's runtime weights are the vector unit's taps, read where they are.
ir::Graph runtime_bias_graph() {
  ir::Graph g("runtime_bias");
  using V = std::vector<int64_t>;
  auto x = f32_input(g, "x", Shape({2, 4, 6, 5}));
  auto w = f32_input(g, "w", Shape({6, 2, 3, 2}));
  auto b = f32_input(g, "b", Shape({6}));
  auto y = g.add_node(OpType::Conv, "conv", {x, w, b},
                      {{"group", int64_t{2}}, {"pads", V{1, 0, 1, 1}}, {"strides", V{1, 2}}})[0];
  auto shift = g.add_constant("shift", tpu_test::random_tensor(Shape({6, 1, 1}), 60));
  auto shifted = g.add_node(OpType::Add, "shift", {y, shift})[0];
  g.add_output(g.add_node(OpType::Relu, "relu", {shifted})[0]);
  auto x3 = f32_input(g, "x3", Shape({1, 4, 5, 4, 6}));
  auto w3 = f32_input(g, "w3", Shape({4, 2, 2, 3, 2}));
  auto b3 = f32_input(g, "b3", Shape({4}));
  g.add_output(g.add_node(OpType::Conv, "conv3d", {x3, w3, b3},
                          {{"group", int64_t{2}}, {"pads", V{1, 1, 0, 0, 1, 1}}})[0]);
  auto wd = f32_input(g, "wd", Shape({4, 1, 3, 3}));
  auto bd = g.add_constant("bd", tpu_test::random_tensor(Shape({4}), 61));
  auto dw = g.add_node(OpType::Conv, "depthwise", {x, wd, bd},
                       {{"group", int64_t{4}}, {"pads", V{1, 1, 1, 1}}, {"strides", V{2, 1}}})[0];
  g.add_output(g.add_node(OpType::Relu, "depthwise_relu", {dw})[0]);
  return g;
}

TEST(TpuCoverage, ConvolutionsWithRuntimeBiasOrDepthwiseWeightsRunOnTheChip) {
  expect_on_chip(runtime_bias_graph(), 1e-5);
  expect_on_chip(runtime_bias_graph(), 0.05, {}, "default");
}

// 3-D pools as an (H, W) pass then a depth pass: strides, pads, dilations, ceil_mode and both
// count_include_pad settings.
ir::Graph pool_3d_graph() {
  ir::Graph g("pool_3d");
  using V = std::vector<int64_t>;
  auto x = f32_input(g, "x", Shape({2, 3, 7, 8, 9}));
  g.add_output(g.add_node(OpType::MaxPool, "max", {x},
                          {{"kernel_shape", V{3, 2, 3}},
                           {"strides", V{2, 1, 2}},
                           {"pads", V{1, 0, 1, 1, 1, 0}},
                           {"dilations", V{1, 2, 1}},
                           {"ceil_mode", int64_t{1}}})[0]);
  g.add_output(g.add_node(OpType::AveragePool, "avg_exclude", {x},
                          {{"kernel_shape", V{2, 3, 3}},
                           {"strides", V{2, 2, 2}},
                           {"pads", V{1, 1, 1, 1, 1, 1}},
                           {"ceil_mode", int64_t{1}}})[0]);
  g.add_output(g.add_node(OpType::AveragePool, "avg_include", {x},
                          {{"kernel_shape", V{3, 3, 2}},
                           {"strides", V{1, 2, 2}},
                           {"pads", V{1, 1, 0, 1, 0, 1}},
                           {"count_include_pad", int64_t{1}}})[0]);
  return g;
}

TEST(TpuCoverage, ThreeDimensionalPoolsRunOnTheVectorUnit) {
  expect_on_chip(pool_3d_graph(), 1e-5);
  expect_on_chip(pool_3d_graph(), 0.01, {}, "default");  // outputs stored in f32 or bf16
}

TEST(TpuCoverage, ModIsNanIsInfAndTan) {
  ir::Graph g("misc");
  auto x = f32_input(g, "x", Shape({12}));
  auto y = f32_input(g, "y", Shape({12}));
  g.add_output(g.add_node(OpType::Mod, "fmod", {x, y}, {{"fmod", int64_t{1}}})[0]);
  g.add_output(g.add_node(OpType::Tan, "tan", {x})[0]);
  auto r = g.add_node(OpType::Div, "div", {x, y})[0];
  g.add_output(g.add_node(OpType::IsInf, "isinf", {r}, {{"detect_negative", int64_t{0}}})[0]);
  g.add_output(g.add_node(OpType::IsNaN, "isnan", {r})[0]);
  ir::HostTensor a(DType::f32, Shape({12})), b(DType::f32, Shape({12}));
  const float av[12] = {5, -5, 5, -5, 0, 1, -1, 0.5f, 7.25f, -7.25f, 3, 2};
  const float bv[12] = {3, 3, -3, -3, 0, 0, 0, 2, 2, -2, 1.5f, 0.5f};
  std::copy(av, av + 12, a.data<float>());
  std::copy(bv, bv + 12, b.data<float>());
  expect_on_chip(g, 1e-6, {a, b});
}

TEST(TpuCoverage, TrigonometricAndShrinkFunctionsRunOnTheVectorUnit) {
  ir::Graph g("trig");
  auto x = f32_input(g, "x", Shape({3, 40}));  // in (-1, 1)
  auto y = f32_input(g, "y", Shape({3, 40}));  // >= 1
  for (OpType op : {OpType::Asin, OpType::Acos, OpType::Atan, OpType::Sinh, OpType::Cosh,
                    OpType::Asinh, OpType::Atanh, OpType::Tan})
    g.add_output(g.add_node(op, ir::op_name(op), {x})[0]);
  g.add_output(g.add_node(OpType::Acosh, "acosh", {y})[0]);
  g.add_output(g.add_node(OpType::ThresholdedRelu, "trelu", {x}, {{"alpha", 0.25}})[0]);
  g.add_output(g.add_node(OpType::Celu, "celu", {x}, {{"alpha", 2.0}})[0]);
  g.add_output(g.add_node(OpType::Shrink, "shrink", {x}, {{"bias", 0.1}, {"lambd", 0.3}})[0]);
  ir::HostTensor a(DType::f32, Shape({3, 40})), b(DType::f32, Shape({3, 40}));
  for (int64_t i = 0; i < 120; ++i) {
    a.data<float>()[i] = -0.95f + 1.9f * static_cast<float>(i) / 119.0f;
    b.data<float>()[i] = 1.0f + 0.25f * static_cast<float>(i);
  }
  expect_on_chip(g, 1e-6, {a, b});
}

}  // namespace
}  // namespace mimic
