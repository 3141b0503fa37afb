// The cpu backend's two kernel paths agree: every op case the oneDNN path takes (convolutions of
// every kind and layout, MatMul/Gemm, pools, Softmax, with their fused BatchNormalization, bias,
// residual Add and activations) and every zoo model run with kernels=onednn and kernels=reference,
// outputs within f32 tolerance. Each case also checks that oneDNN really ran it (the compile
// report's step count).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <strings.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "backends/cpu/threading.h"
#include "base/error.h"
#include "frontend/api/compile.h"
#include "frontend/api/random.h"
#include "frontend/api/zoo.h"
#include "frontend/ir/autodiff.h"
#include "frontend/ir/shape_inference.h"

namespace mimic {
namespace {

using ir::OpType;
using ir::Shape;

// The count before `what` in the compile report's kernels note ("... 3 transposes read in place").
int note_count(const Executable& exe, const std::string& what) {
  for (const std::string& note : exe.compile_report().notes) {
    size_t at = note.find(what);
    if (at == std::string::npos) continue;
    size_t from = note.rfind(' ', at - 1);
    return std::stoi(note.substr(from + 1, at - from - 1));
  }
  return -1;
}

int transposes_in_place(const Executable& exe) {
  return note_count(exe, " transposes read in place");
}

int weight_gradients(const Executable& exe) {
  return note_count(exe, " weight gradients as backward-weights convolutions");
}

int onednn_steps(const Executable& exe) {
  for (const std::string& note : exe.compile_report().notes)
    if (note.rfind("kernels=onednn: ", 0) == 0) return std::stoi(note.substr(16));
  return 0;
}

// Largest |a - b| over all outputs, relative to max(1, largest |b|).
double relative_gap(const RunOutput& a, const RunOutput& b) {
  double worst = 0;
  for (size_t o = 0; o < b.outputs.size(); ++o) {
    const float* x = a.outputs[o].data<float>();
    const float* y = b.outputs[o].data<float>();
    double scale = 1.0, gap = 0;
    for (int64_t i = 0; i < b.outputs[o].numel(); ++i) {
      scale = std::max(scale, static_cast<double>(std::fabs(y[i])));
      gap = std::max(gap, static_cast<double>(std::fabs(x[i] - y[i])));
      if (!std::isfinite(x[i])) return INFINITY;
    }
    worst = std::max(worst, gap / scale);
  }
  return worst;
}

// Runs `g` on both paths; expects `min_steps` oneDNN steps and outputs within `tol`.
void expect_paths_agree(const ir::Graph& g, int64_t batch, int min_steps, int64_t int_high = 100,
                        double tol = 1e-4) {
  CompileOptions fast, ref;
  fast.batch = ref.batch = batch;
  fast.options["kernels"] = "onednn";
  ref.options["kernels"] = "reference";
  Executable a = compile(g, "cpu", fast), b = compile(g, "cpu", ref);
  EXPECT_GE(onednn_steps(a), min_steps) << g.name();
  EXPECT_EQ(onednn_steps(b), 0) << g.name();
  std::vector<ir::HostTensor> inputs = random_inputs(a.graph(), 11, int_high);
  EXPECT_LE(relative_gap(a.run(inputs), b.run(inputs)), tol) << g.name();
}

ir::ValueId constant(ir::Graph& g, const Shape& s, uint64_t seed, float stddev = 0.3f) {
  Random rng(seed);
  return g.add_constant(g.unique_name("w"), rng.tensor(ir::DType::f32, s, 0, stddev));
}

ir::ValueId positive_constant(ir::Graph& g, int64_t n, uint64_t seed) {
  Random rng(seed);
  ir::HostTensor t = rng.uniform_tensor(Shape({n}), 1.0f);
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = 0.5f + std::fabs(t.data<float>()[i]);
  return g.add_constant(g.unique_name("v"), t);
}

ir::ValueId scalar(ir::Graph& g, float v) {
  return g.add_constant(g.unique_name("s"), ir::HostTensor::from(Shape({}), &v));
}

struct ConvCase {
  std::string name;
  Shape x;  // NCHW or NHWC by `layout`
  int64_t out_channels, kernel, group;
  ir::Attributes attrs;
  std::string layout = "NCHW";
  bool batch_norm = false, residual = false, bias = true;
  std::string activation;  // "", "Relu", "Clip", "SiLU" (Mul(y, Sigmoid(y)), as exported)
};

ir::Graph conv_graph(const ConvCase& c) {
  ir::Graph g(c.name);
  ir::ValueId x = g.add_input("x", ir::DType::f32, c.x);
  bool last = c.layout == "NHWC";
  int64_t in_c = last ? c.x.dim(-1) : c.x[1];
  std::vector<int64_t> w_dims{c.out_channels, in_c / c.group};
  for (int i = 2; i < c.x.rank(); ++i) w_dims.push_back(c.kernel);
  std::vector<ir::ValueId> in{x, constant(g, Shape(w_dims), 1)};
  if (c.bias) in.push_back(constant(g, Shape({c.out_channels}), 2));
  ir::Attributes attrs = c.attrs;
  attrs.set("group", c.group);
  attrs.set("layout", c.layout);
  ir::ValueId y = g.add_node(OpType::Conv, "conv", in, attrs)[0];
  if (c.batch_norm)
    y = g.add_node(
        OpType::BatchNormalization, "bn",
        {y, positive_constant(g, c.out_channels, 3), constant(g, Shape({c.out_channels}), 4),
         constant(g, Shape({c.out_channels}), 5), positive_constant(g, c.out_channels, 6)},
        {{"epsilon", 1e-5}, {"layout", c.layout}})[0];
  if (c.residual) {
    ir::infer_shapes(g);
    ir::ValueId r = g.add_input("r", ir::DType::f32, g.value(y).type.shape);
    y = g.add_node(OpType::Add, "add", {r, y})[0];
  }
  if (c.activation == "Relu") y = g.add_node(OpType::Relu, "relu", {y})[0];
  if (c.activation == "Clip")
    y = g.add_node(OpType::Clip, "clip", {y, scalar(g, 0.0f), scalar(g, 6.0f)})[0];
  if (c.activation == "SiLU")
    y = g.add_node(OpType::Mul, "silu", {y, g.add_node(OpType::Sigmoid, "sigmoid", {y})[0]})[0];
  g.add_output(y);
  return g;
}

TEST(CpuOnednn, ConvolutionsMatchTheReference) {
  ir::Attributes pad1{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  std::vector<ConvCase> cases{
      {"direct3x3", Shape({2, 8, 10, 10}), 16, 3, 1, pad1},
      {"stride2", Shape({1, 5, 11, 9}), 7, 3, 1, {{"strides", std::vector<int64_t>{2, 2}}}},
      {"dilated", Shape({1, 4, 12, 12}), 6, 3, 1, {{"dilations", std::vector<int64_t>{2, 2}}}},
      {"asymmetric", Shape({1, 4, 9, 9}), 4, 3, 1, {{"pads", std::vector<int64_t>{0, 1, 2, 1}}}},
      {"same_upper", Shape({1, 3, 8, 8}), 5, 4, 1, {{"auto_pad", std::string("SAME_UPPER")}}},
      {"grouped", Shape({2, 8, 7, 7}), 12, 3, 4, pad1},
      {"depthwise", Shape({2, 16, 9, 9}), 16, 3, 16, pad1},
      {"pointwise", Shape({2, 24, 6, 6}), 40, 1, 1, {}},
      {"conv1d", Shape({2, 6, 20}), 9, 5, 1, {}},
      {"conv3d", Shape({1, 4, 5, 6, 7}), 8, 3, 1, {}},
      {"nhwc", Shape({2, 10, 10, 8}), 16, 3, 1, pad1, "NHWC"},
      {"nhwc_depthwise", Shape({1, 9, 9, 32}), 32, 3, 32, pad1, "NHWC"},
      {"no_bias", Shape({1, 8, 6, 6}), 8, 3, 1, pad1, "NCHW", false, false, false},
      {"bn_relu", Shape({2, 8, 10, 10}), 16, 3, 1, pad1, "NCHW", true, false, true, "Relu"},
      {"bn_add_relu", Shape({2, 16, 8, 8}), 16, 3, 1, pad1, "NCHW", true, true, true, "Relu"},
      {"nhwc_bn_add_relu", Shape({2, 8, 8, 16}), 16, 1, 1, {}, "NHWC", true, true, false, "Relu"},
      {"depthwise_bn_clip", Shape({1, 24, 8, 8}), 24, 3, 24, pad1, "NCHW", true, false, false,
       "Clip"},
      {"bn_silu", Shape({2, 8, 10, 10}), 16, 3, 1, pad1, "NCHW", true, false, true, "SiLU"},
      {"nhwc_depthwise_silu", Shape({1, 9, 9, 32}), 32, 3, 32, pad1, "NHWC", false, false, true,
       "SiLU"},
  };
  for (const ConvCase& c : cases) {
    SCOPED_TRACE(c.name);
    expect_paths_agree(conv_graph(c), 0, 1);
  }
}

// SiLU after a convolution (EfficientNet's, written Mul(y, Sigmoid(y))) is oneDNN's swish post-op:
// one step, nothing left for the elementwise loops.
TEST(CpuOnednn, SiluFusesIntoTheConvolutionAsSwish) {
  ConvCase c{
      "silu", Shape({1, 16, 12, 12}), 32, 3, 1, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}};
  c.activation = "SiLU";
  ir::Graph g = conv_graph(c);
  Executable e = compile(g, "cpu");
  EXPECT_EQ(onednn_steps(e), 1);
  EXPECT_EQ(note_count(e, " loop-fused groups"), 0);
  expect_paths_agree(g, 0, 1);
}

ir::Graph matmul_graph(const std::string& name, const Shape& a, const Shape& b, bool const_b,
                       bool bias, const std::string& activation) {
  ir::Graph g(name);
  ir::ValueId x = g.add_input("a", ir::DType::f32, a);
  ir::ValueId w = const_b ? constant(g, b, 1) : g.add_input("b", ir::DType::f32, b);
  ir::ValueId y = g.add_node(OpType::MatMul, "mm", {x, w})[0];
  if (bias) y = g.add_node(OpType::Add, "bias", {y, constant(g, Shape({b.dim(-1)}), 2)})[0];
  if (activation == "Gelu") y = g.add_node(OpType::Gelu, "gelu", {y})[0];
  if (activation == "Relu") y = g.add_node(OpType::Relu, "relu", {y})[0];
  g.add_output(y);
  return g;
}

TEST(CpuOnednn, MatMulsMatchTheReference) {
  expect_paths_agree(matmul_graph("plain", Shape({7, 33}), Shape({33, 19}), true, false, ""), 0, 1);
  expect_paths_agree(matmul_graph("bias_relu", Shape({5, 64}), Shape({64, 48}), true, true, "Relu"),
                     0, 1);
  expect_paths_agree(
      matmul_graph("tokens_gelu", Shape({2, 9, 32}), Shape({32, 40}), true, true, "Gelu"), 0, 1);
  expect_paths_agree(
      matmul_graph("batched", Shape({2, 3, 8, 16}), Shape({2, 3, 16, 8}), false, false, ""), 0, 1);
  expect_paths_agree(
      matmul_graph("broadcast", Shape({2, 1, 6, 5}), Shape({1, 4, 5, 3}), false, false, ""), 0, 1);
  expect_paths_agree(matmul_graph("shared_b", Shape({3, 6, 5}), Shape({5, 7}), false, false, ""), 0,
                     1);
  // A sequence-first Linear (ViT's attention input projection): leading dims fold into the rows.
  expect_paths_agree(
      matmul_graph("rows_of_one", Shape({13, 1, 24}), Shape({24, 40}), true, true, "Gelu"), 0, 1);
  expect_paths_agree(
      matmul_graph("rows_runtime_b", Shape({2, 3, 4, 16}), Shape({16, 8}), false, false, ""), 0, 1);
}

ir::Graph gemm_graph(const std::string& name, bool ta, bool tb, const Shape& c_shape) {
  ir::Graph g(name);
  ir::ValueId a = g.add_input("a", ir::DType::f32, ta ? Shape({12, 6}) : Shape({6, 12}));
  ir::ValueId b = constant(g, tb ? Shape({10, 12}) : Shape({12, 10}), 1);
  std::vector<ir::ValueId> in{a, b};
  if (c_shape.rank() == 1 || (c_shape.rank() == 2 && c_shape[0] == 1))
    in.push_back(constant(g, c_shape, 2));
  else if (c_shape.rank() == 2)
    in.push_back(g.add_input("c", ir::DType::f32, c_shape));
  ir::ValueId y =
      g.add_node(OpType::Gemm, "gemm", in, {{"transA", int64_t{ta}}, {"transB", int64_t{tb}}})[0];
  g.add_output(y);
  return g;
}

TEST(CpuOnednn, GemmsMatchTheReference) {
  expect_paths_agree(gemm_graph("nn", false, false, Shape({})), 0, 1);
  expect_paths_agree(gemm_graph("tn_row_bias", true, false, Shape({10})), 0, 1);
  expect_paths_agree(gemm_graph("nt_row_bias", false, true, Shape({1, 10})), 0, 1);
  expect_paths_agree(gemm_graph("tt_full_c", true, true, Shape({6, 10})), 0, 1);
}

// A one-node graph on input x (pools, softmax).
ir::Graph pool_graph(const std::string& name, OpType op, const Shape& x, ir::Attributes attrs) {
  ir::Graph g(name);
  ir::ValueId in = g.add_input("x", ir::DType::f32, x);
  g.add_output(g.add_node(op, "pool", {in}, std::move(attrs))[0]);
  return g;
}

TEST(CpuOnednn, PoolsMatchTheReference) {
  ir::Attributes k3s2{{"kernel_shape", std::vector<int64_t>{3, 3}},
                      {"strides", std::vector<int64_t>{2, 2}},
                      {"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  expect_paths_agree(pool_graph("max", OpType::MaxPool, Shape({2, 8, 11, 11}), k3s2), 0, 1);
  ir::Attributes ceil = k3s2;
  ceil.set("ceil_mode", int64_t{1});
  expect_paths_agree(pool_graph("max_ceil", OpType::MaxPool, Shape({1, 4, 10, 10}), ceil), 0, 1);
  expect_paths_agree(pool_graph("avg_exclude", OpType::AveragePool, Shape({2, 8, 11, 11}), k3s2), 0,
                     1);
  ir::Attributes include = k3s2;
  include.set("count_include_pad", int64_t{1});
  expect_paths_agree(pool_graph("avg_include", OpType::AveragePool, Shape({1, 8, 9, 9}), include),
                     0, 1);
  ir::Attributes nhwc = k3s2;
  nhwc.set("layout", std::string("NHWC"));
  expect_paths_agree(pool_graph("max_nhwc", OpType::MaxPool, Shape({2, 11, 11, 8}), nhwc), 0, 1);
  expect_paths_agree(pool_graph("gap", OpType::GlobalAveragePool, Shape({2, 16, 7, 7}), {}), 0, 1);
  expect_paths_agree(pool_graph("gmp", OpType::GlobalMaxPool, Shape({2, 16, 5, 5}), {}), 0, 1);
}

TEST(CpuOnednn, SoftmaxesMatchTheReference) {
  expect_paths_agree(pool_graph("softmax_last", OpType::Softmax, Shape({2, 3, 5, 17}), {}), 0, 1);
  expect_paths_agree(
      pool_graph("softmax_axis1", OpType::Softmax, Shape({4, 9, 6}), {{"axis", int64_t{1}}}), 0, 1);
  // LogSoftmax stays on the reference kernel: no oneDNN step.
  expect_paths_agree(pool_graph("log_softmax", OpType::LogSoftmax, Shape({3, 40}), {}), 0, 0);
}

// A Transpose no MatMul reads through strides is a oneDNN reorder (exact); a Gelu no product
// absorbs (training keeps its input) is oneDNN's eltwise primitive, within float rounding.
TEST(CpuOnednn, TransposesAndGelusMatchTheReference) {
  const std::vector<std::pair<Shape, std::vector<int64_t>>> transposes = {
      {Shape({4608, 512}), {1, 0}},           {Shape({8, 64, 14, 14}), {1, 2, 3, 0}},
      {Shape({8, 64, 14, 14}), {1, 0, 2, 3}}, {Shape({9, 2, 16, 7, 7}), {1, 2, 0, 3, 4}},
      {Shape({3, 5, 7}), {2, 0, 1}},          {Shape({2, 128, 12, 64}), {0, 2, 1, 3}}};
  for (const auto& [shape, perm] : transposes) {
    ir::Attributes attrs{{"perm", perm}};
    ir::Graph g =
        pool_graph(fmt::format("transpose_{}", shape.str()), OpType::Transpose, shape, attrs);
    expect_paths_agree(g, 0, 1, 100, 0.0);
  }
  expect_paths_agree(pool_graph("gelu_erf", OpType::Gelu, Shape({8, 128, 300}), {}), 0, 1, 100,
                     1e-6);
  expect_paths_agree(pool_graph("gelu_tanh", OpType::Gelu, Shape({3, 1000}),
                                {{"approximate", std::string("tanh")}}),
                     0, 1, 100, 1e-6);
}

TEST(CpuOnednn, ZooModelsMatchTheReference) {
  std::vector<std::pair<std::string, zoo::ModelOptions>> models{
      {"mlp", {"nchw", 1, {{"layers", 2}, {"hidden", 64}, {"in_features", 30}}}},
      {"bert",
       {"nchw", 1, {{"layers", 2}, {"hidden", 64}, {"heads", 4}, {"seq", 16}, {"vocab", 100}}}},
  };
  for (const char* cnn : {"resnet18", "resnet50", "mobilenet_v2"})
    for (const char* layout : {"nchw", "nhwc"})
      models.push_back({cnn, {layout, 2, {{"image_size", 32}, {"classes", 10}}}});
  for (const auto& [name, options] : models) {
    SCOPED_TRACE(name + " " + options.layout);
    zoo::Model m = zoo::make(name, options);
    ir::Graph g = zoo::build(name, options);
    for (int64_t batch : {1, 3})
      expect_paths_agree(g, batch, 2, m.int_input_high > 0 ? m.int_input_high : 100, 1e-3);
  }
}

// Loops and steps split across threads from 16 times the work when OpenMP's workers sleep between
// regions (OMP_WAIT_POLICY=passive, as CTest's CpuOnednn.PassiveWaitPolicy runs this binary).
TEST(CpuThreading, ThresholdsFollowTheWaitPolicy) {
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  bool passive = policy && strcasecmp(policy, "passive") == 0;
  EXPECT_EQ(backends::cpu::workers_sleep(), passive);
  EXPECT_EQ(backends::cpu::parallel_threshold(65536), passive ? 1048576 : 65536);
}

TEST(CpuOnednn, RejectsUnknownKernelPaths) {
  CompileOptions o;
  o.options["kernels"] = "fast";
  try {
    compile(matmul_graph("mm", Shape({2, 3}), Shape({3, 4}), true, false, ""), "cpu", o);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("kernels='fast'"), std::string::npos) << e.what();
  }
}

// The backward pass's products of transposed operands read the Transpose's input through swapped
// strides: a plain 2-D operand, both operands of a batched product, and a square operand that a
// oneDNN convolution wrote in its blocked layout (read from its plain copy, not the blocked one).
TEST(CpuOnednn, TransposedMatMulOperandsAreReadInPlace) {
  auto check = [](ir::Graph& g, int want) {
    CompileOptions ref;
    ref.options["kernels"] = "reference";
    Executable a = compile(g, "cpu"), b = compile(g, "cpu", ref);
    EXPECT_EQ(transposes_in_place(a), want) << g.name();
    std::vector<ir::HostTensor> inputs = random_inputs(a.graph(), 3, 10);
    EXPECT_LE(relative_gap(a.run(inputs), b.run(inputs)), 1e-5) << g.name();
  };
  ir::Graph plain("plain");
  ir::ValueId x = plain.add_input("x", ir::DType::f32, Shape({4, 6}));
  ir::ValueId y = plain.add_input("y", ir::DType::f32, Shape({4, 5}));
  ir::ValueId xt = plain.add_node(OpType::Transpose, "xt", {x})[0];
  plain.add_output(plain.add_node(OpType::MatMul, "mm", {xt, y})[0]);
  check(plain, 1);

  ir::Graph batched("batched");
  ir::ValueId a = batched.add_input("a", ir::DType::f32, Shape({2, 5, 3}));
  ir::ValueId b = batched.add_input("b", ir::DType::f32, Shape({2, 4, 5}));
  ir::Attributes swap{{"perm", std::vector<int64_t>{0, 2, 1}}};
  ir::ValueId at = batched.add_node(OpType::Transpose, "at", {a}, swap)[0];
  ir::ValueId bt = batched.add_node(OpType::Transpose, "bt", {b}, swap)[0];
  batched.add_output(batched.add_node(OpType::MatMul, "mm", {at, bt})[0]);
  check(batched, 2);

  // The other operand is computed after the Transpose: the group runs at its MatMul.
  ir::Graph late("late_operand");
  ir::ValueId p = late.add_input("p", ir::DType::f32, Shape({4, 6}));
  ir::ValueId q = late.add_input("q", ir::DType::f32, Shape({4, 5}));
  ir::ValueId pt = late.add_node(OpType::Transpose, "pt", {p})[0];
  ir::ValueId r = late.add_node(OpType::Relu, "relu", {q})[0];
  late.add_output(late.add_node(OpType::MatMul, "mm", {pt, r})[0]);
  check(late, 1);

  ir::Graph square("square");
  ir::ValueId img = square.add_input("img", ir::DType::f32, Shape({1, 8, 6, 6}));
  Random rng(4);
  ir::ValueId w = square.add_constant("w", rng.tensor(ir::DType::f32, Shape({8, 8, 1, 1})));
  ir::ValueId c = square.add_node(OpType::Conv, "conv", {img, w})[0];
  ir::ValueId ct = square.add_node(OpType::Transpose, "ct", {c},
                                   {{"perm", std::vector<int64_t>{0, 1, 3, 2}}})[0];
  square.add_output(square.add_node(OpType::MatMul, "mm", {ct, c})[0]);
  check(square, 1);
}

// A training step's convolution weight gradients (the transposed convolution autodiff writes) run
// as oneDNN's backward-weights primitive, reading x and dy in their own layouts: strides that leave
// input rows unread (the gradient crops them), dilations, asymmetric pads, channels last, 1-D and
// 3-D. A grouped convolution keeps the generic path. Every case matches the reference kernels.
TEST(CpuOnednn, ConvWeightGradientsRunAsBackwardWeights) {
  struct WeightCase {
    std::string name;
    Shape x, w;
    ir::Attributes attrs;
    int want;
  };
  auto ints = [](std::vector<int64_t> v) { return v; };
  const std::vector<WeightCase> cases = {
      {"3x3_pad1", Shape({2, 8, 9, 9}), Shape({16, 8, 3, 3}), {{"pads", ints({1, 1, 1, 1})}}, 1},
      {"1x1_stride2_crop",
       Shape({2, 8, 8, 8}),
       Shape({16, 8, 1, 1}),
       {{"strides", ints({2, 2})}},
       1},
      {"3x3_stride2_asym",
       Shape({1, 4, 10, 7}),
       Shape({6, 4, 3, 3}),
       {{"strides", ints({2, 2})}, {"pads", ints({1, 0, 0, 2})}},
       1},
      {"dilation2", Shape({2, 4, 11, 11}), Shape({5, 4, 3, 3}), {{"dilations", ints({2, 2})}}, 1},
      {"nhwc_stride2",
       Shape({2, 9, 9, 8}),
       Shape({16, 8, 3, 3}),
       {{"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}, {"layout", std::string("NHWC")}},
       1},
      {"conv1d", Shape({3, 4, 17}), Shape({6, 4, 5}), {{"pads", ints({2, 2})}}, 1},
      {"conv3d",
       Shape({1, 3, 5, 6, 7}),
       Shape({4, 3, 3, 3, 3}),
       {{"pads", ints({1, 1, 1, 1, 1, 1})}},
       1},
      {"grouped", Shape({2, 8, 6, 6}), Shape({8, 4, 3, 3}), {{"group", int64_t{2}}}, 0},
  };
  for (const WeightCase& c : cases) {
    ir::Graph g(c.name);
    ir::ValueId x = g.add_input("x", ir::DType::f32, c.x);
    ir::ValueId w = g.add_input("w", ir::DType::f32, c.w);
    ir::ValueId y = g.add_node(OpType::Conv, "conv", {x, w}, c.attrs)[0];
    ir::infer_shapes(g);
    ir::GraphBuilder b(g, "loss");
    std::vector<int64_t> all(g.value(y).type.shape.rank());
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
    ir::ValueId loss = b.reduce_sum(b.mul(y, y), all, false);  // dy = 2y, not a constant
    for (ir::ValueId grad : ir::append_gradients(g, loss, {w})) g.add_output(grad);
    CompileOptions ref;
    ref.options["kernels"] = "reference";
    Executable a = compile(g, "cpu"), r = compile(g, "cpu", ref);
    EXPECT_EQ(weight_gradients(a), c.want) << c.name;
    std::vector<ir::HostTensor> inputs = random_inputs(a.graph(), 3, 10);
    EXPECT_LE(relative_gap(a.run(inputs), r.run(inputs)), 1e-5) << c.name;
  }
}

}  // namespace
}  // namespace mimic
