// The ONNX importer: op mapping (older attribute forms -> the IR's constant inputs), constants,
// initializers, external data, the symbolic batch, dtypes, opsets, and the one-error listing of
// everything unsupported.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "tests/onnx/test_util.h"

namespace mimic::testing {
namespace {

using onnx::TensorProto;

const ir::Node& only_node(const ir::Graph& g, ir::OpType op) {
  for (const ir::Node& n : g.nodes())
    if (n.op == op) return n;
  throw std::runtime_error(std::string("no node ") + ir::op_name(op));
}

TEST(OnnxImport, AddWithInitializerRunsOnCpu) {
  ModelBuilder b(13);
  b.input("x", TensorProto::FLOAT, {int64_t{2}, int64_t{3}});
  b.initializer("b", {3}, {10, 20, 30});
  b.node("Add", {"x", "b"}, {"y"}, "add");
  b.output("y");
  ir::Graph g = import(b);
  ASSERT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(g.value(g.inputs()[0]).name, "x");
  EXPECT_EQ(g.input_type(0).str(), "f32[2,3]");
  ASSERT_EQ(g.num_nodes(), 1);
  EXPECT_EQ(g.node(0).name, "add");
  auto out = run_cpu(g, {f32({2, 3}, {1, 2, 3, 4, 5, 6})});
  EXPECT_EQ(values(out[0]), (std::vector<float>{11, 22, 33, 14, 25, 36}));
}

TEST(OnnxImport, InitializerListedAsInputIsAConstant) {
  ModelBuilder b(9);
  b.input("x", TensorProto::FLOAT, {int64_t{1}, int64_t{2}});
  b.input("w", TensorProto::FLOAT, {int64_t{2}});
  b.initializer("w", {2}, {2, 3});
  b.node("Mul", {"x", "w"}, {"y"});
  b.output("y");
  ir::Graph g = import(b);
  ASSERT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(values(run_cpu(g, {f32({1, 2}, {1, 1})})[0]), (std::vector<float>{2, 3}));
}

TEST(OnnxImport, SoftmaxBeforeOpset13FlattensTo2D) {
  for (int64_t opset : {11, 13}) {
    ModelBuilder b(opset);
    b.input("x", TensorProto::FLOAT, {int64_t{2}, int64_t{2}, int64_t{2}});
    b.node("Softmax", {"x"}, {"y"});
    b.output("y");
    ir::Graph g = import(b);
    const ir::Node& n = only_node(g, ir::OpType::Softmax);
    auto y = values(run_cpu(g, {f32({2, 2, 2}, {0, 1, 2, 3, 0, 0, 0, 0})})[0]);
    if (opset == 11) {
      EXPECT_EQ(n.attrs.get_int("coerce_2d", 0), 1);
      EXPECT_EQ(n.attrs.get_int("axis", -1), 1);
      double sum = 1 + std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
      EXPECT_NEAR(y[3], std::exp(3.0) / sum, 1e-6);  // one softmax over 4 values
      EXPECT_NEAR(y[7], 0.25, 1e-6);
    } else {
      EXPECT_EQ(n.attrs.get_int("coerce_2d", 0), 0);
      EXPECT_NEAR(y[1], std::exp(1.0) / (1 + std::exp(1.0)), 1e-6);  // softmax over the last axis
    }
  }
}

// Slice-9 attributes and Slice-13 inputs give the same result.
TEST(OnnxImport, SliceAttributesBecomeConstantInputs) {
  std::vector<float> x(12);
  for (int i = 0; i < 12; ++i) x[i] = static_cast<float>(i);
  for (int64_t opset : {9, 13}) {
    ModelBuilder b(opset);
    b.input("x", TensorProto::FLOAT, {int64_t{3}, int64_t{4}});
    if (opset < 10) {
      auto& n = b.node("Slice", {"x"}, {"y"});
      attr_ints(n, "starts", {1, 0});
      attr_ints(n, "ends", {3, 3});
      attr_ints(n, "axes", {0, 1});
    } else {
      b.initializer_i64("starts", {2}, {1, 0});
      b.initializer_i64("ends", {2}, {3, 3});
      b.initializer_i64("axes", {2}, {0, 1});
      b.node("Slice", {"x", "starts", "ends", "axes"}, {"y"});
    }
    b.output("y");
    ir::Graph g = import(b);
    EXPECT_EQ(only_node(g, ir::OpType::Slice).num_inputs(), 4) << "opset " << opset;
    EXPECT_EQ(values(run_cpu(g, {f32({3, 4}, x)})[0]), (std::vector<float>{4, 5, 6, 8, 9, 10}))
        << "opset " << opset;
  }
}

TEST(OnnxImport, SplitSqueezeUnsqueezeAttributesBecomeInputs) {
  ModelBuilder b(11);
  b.input("x", TensorProto::FLOAT, {int64_t{2}, int64_t{4}});
  auto& split = b.node("Split", {"x"}, {"a", "c"});
  attr_int(split, "axis", 1);
  attr_ints(split, "split", {1, 3});
  auto& sq = b.node("Squeeze", {"a"}, {"s"});
  attr_ints(sq, "axes", {1});
  auto& unsq = b.node("Unsqueeze", {"s"}, {"u"});
  attr_ints(unsq, "axes", {0});
  b.output("u");
  b.output("c");
  ir::Graph g = import(b);
  auto out = run_cpu(g, {f32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8})});
  EXPECT_EQ(out[0].shape(), ir::Shape({1, 2}));
  EXPECT_EQ(values(out[0]), (std::vector<float>{1, 5}));
  EXPECT_EQ(out[1].shape(), ir::Shape({2, 3}));
  EXPECT_EQ(values(out[1]), (std::vector<float>{2, 3, 4, 6, 7, 8}));
}

TEST(OnnxImport, PadAndClipAttributesBecomeInputs) {
  ModelBuilder b(6);
  b.input("x", TensorProto::FLOAT, {int64_t{1}, int64_t{2}});
  auto& pad = b.node("Pad", {"x"}, {"p"});
  attr_ints(pad, "pads", {0, 1, 0, 1});
  attr_float(pad, "value", 9);
  auto& clip = b.node("Clip", {"p"}, {"y"});
  attr_float(clip, "min", -1);
  attr_float(clip, "max", 5);
  b.output("y");
  ir::Graph g = import(b);
  EXPECT_EQ(only_node(g, ir::OpType::Pad).num_inputs(), 3);
  EXPECT_EQ(only_node(g, ir::OpType::Clip).num_inputs(), 3);
  EXPECT_EQ(values(run_cpu(g, {f32({1, 2}, {-3, 2})})[0]), (std::vector<float>{5, -1, 2, 5}));
}

TEST(OnnxImport, ReduceAxesAttributeAndInput) {
  for (int64_t opset : {11, 13}) {
    ModelBuilder b(opset);
    b.input("x", TensorProto::FLOAT, {int64_t{2}, int64_t{3}});
    auto& mean = b.node("ReduceMean", {"x"}, {"m"});
    attr_ints(mean, "axes", {1});
    attr_int(mean, "keepdims", 0);
    if (opset >= 13) {
      b.initializer_i64("axes", {1}, {0});
      attr_int(b.node("ReduceSum", {"x", "axes"}, {"s"}), "keepdims", 0);
    } else {
      auto& sum = b.node("ReduceSum", {"x"}, {"s"});
      attr_ints(sum, "axes", {0});
      attr_int(sum, "keepdims", 0);
    }
    b.output("m");
    b.output("s");
    auto out = run_cpu(import(b), {f32({2, 3}, {1, 2, 3, 4, 5, 6})});
    EXPECT_EQ(values(out[0]), (std::vector<float>{2, 5})) << "opset " << opset;
    EXPECT_EQ(values(out[1]), (std::vector<float>{5, 7, 9})) << "opset " << opset;
  }
}

// Before opset 7, B broadcasts onto A from `axis` on: B[2] with axis=0 adds along rows.
TEST(OnnxImport, LegacyBroadcastWithAxis) {
  ModelBuilder b(6);
  b.input("a", TensorProto::FLOAT, {int64_t{2}, int64_t{3}});
  b.input("b", TensorProto::FLOAT, {int64_t{2}});
  auto& add = b.node("Add", {"a", "b"}, {"y"});
  attr_int(add, "broadcast", 1);
  attr_int(add, "axis", 0);
  b.output("y");
  auto out = run_cpu(import(b), {f32({2, 3}, {0, 0, 0, 1, 1, 1}), f32({2}, {10, 20})});
  EXPECT_EQ(values(out[0]), (std::vector<float>{10, 10, 10, 21, 21, 21}));
}

TEST(OnnxImport, PReluBeforeOpset7AppliesSlopePerChannel) {
  ModelBuilder b(6);
  b.input("x", TensorProto::FLOAT, {int64_t{1}, int64_t{2}, int64_t{2}});
  b.initializer("slope", {2}, {0.5f, 2.0f});
  b.node("PRelu", {"x", "slope"}, {"y"});
  b.output("y");
  auto out = run_cpu(import(b), {f32({1, 2, 2}, {-2, 2, -2, 2})});
  EXPECT_EQ(values(out[0]), (std::vector<float>{-1, 2, -4, 2}));
}

TEST(OnnxImport, ConstantNodeForms) {
  ModelBuilder b(13);
  b.input("x", TensorProto::FLOAT, {int64_t{2}});
  attr_tensor(b.node("Constant", {}, {"c0"}), "value", float_tensor({2}, {1, 2}));
  attr_float(b.node("Constant", {}, {"c1"}), "value_float", 3);
  attr_floats(b.node("Constant", {}, {"c2"}), "value_floats", {4, 5});
  attr_int(b.node("Constant", {}, {"i0"}), "value_int", 7);
  attr_ints(b.node("Constant", {}, {"i1"}), "value_ints", {8, 9});
  b.node("Add", {"x", "c0"}, {"s0"});
  b.node("Add", {"s0", "c1"}, {"s1"});
  b.node("Add", {"s1", "c2"}, {"y"});
  b.node("Add", {"i0", "i1"}, {"k"});
  b.output("y");
  b.output("k", TensorProto::INT64);
  ir::Graph g = import(b);
  for (const ir::Node& n : g.nodes()) EXPECT_NE(n.op, ir::OpType::Constant);
  auto out = run_cpu(g, {f32({2}, {0, 0})});
  EXPECT_EQ(values(out[0]), (std::vector<float>{8, 10}));
  ASSERT_EQ(out[1].dtype(), ir::DType::i64);
  EXPECT_EQ(out[1].data<int64_t>()[0], 15);
  EXPECT_EQ(out[1].data<int64_t>()[1], 16);
}

TEST(OnnxImport, CastTakesTheOnnxEnumAndRejectsMissingDtypes) {
  ModelBuilder b(13);
  b.input("x", TensorProto::FLOAT, {int64_t{3}});
  attr_int(b.node("Cast", {"x"}, {"y"}), "to", TensorProto::INT64);
  b.output("y", TensorProto::INT64);
  ir::Graph g = import(b);
  EXPECT_EQ(only_node(g, ir::OpType::Cast).attrs.get_string("to", ""), "i64");
  auto out = run_cpu(g, {f32({3}, {1.7f, -2.5f, 3})});
  EXPECT_EQ(out[0].data<int64_t>()[1], -2);

  ModelBuilder u(13);
  u.input("x", TensorProto::FLOAT, {int64_t{3}});
  attr_int(u.node("Cast", {"x"}, {"y"}, "to_u8"), "to", TensorProto::UINT8);
  u.output("y", TensorProto::UINT8);
  EXPECT_THROW(import(u), UnsupportedOpError);
}

TEST(OnnxImport, DropoutIsIdentityWithAMaskOfOnes) {
  ModelBuilder b(13);
  b.input("x", TensorProto::FLOAT, {int64_t{2}});
  b.node("Dropout", {"x"}, {"y", "mask"});
  b.output("y");
  b.output("mask", TensorProto::BOOL);
  auto out = run_cpu(import(b), {f32({2}, {1, 2})});
  EXPECT_EQ(values(out[0]), (std::vector<float>{1, 2}));
  EXPECT_TRUE(out[1].data<bool>()[0] && out[1].data<bool>()[1]);
}

TEST(OnnxImport, SymbolicBatchFromDimParamZeroMinusOneOrUnset) {
  for (int form = 0; form < 4; ++form) {
    ModelBuilder b(13);
    Dim first = form == 0 ? Dim(std::string("N")) : form == 1 ? Dim(int64_t{0}) : Dim(int64_t{-1});
    b.input("x", TensorProto::FLOAT, {first, int64_t{2}});
    if (form == 3)
      b.graph()
          .mutable_input(0)
          ->mutable_type()
          ->mutable_tensor_type()
          ->mutable_shape()
          ->mutable_dim(0)
          ->Clear();
    b.initializer("w", {2, 3}, {1, 0, 0, 0, 1, 0});
    b.node("MatMul", {"x", "w"}, {"y"});
    b.output("y");
    ir::Graph g = import(b);
    EXPECT_EQ(g.input_type(0).shape, ir::Shape({ir::kBatch, 2})) << "form " << form;
    auto out = run_cpu(g, {f32({3, 2}, {1, 2, 3, 4, 5, 6})}, 3);
    EXPECT_EQ(out[0].shape(), ir::Shape({3, 3}));
    EXPECT_EQ(values(out[0]), (std::vector<float>{1, 2, 0, 3, 4, 0, 5, 6, 0}));
  }
}

TEST(OnnxImport, ZeroFirstDimIsASizeWhenAskedTo) {
  ModelBuilder b(13);
  b.input("x", TensorProto::FLOAT, {int64_t{0}, int64_t{2}});
  b.node("Relu", {"x"}, {"y"});
  b.output("y");
  onnx_import::ImportOptions o;
  o.zero_dim_is_batch = false;
  EXPECT_EQ(import(b, o).input_type(0).shape, ir::Shape({0, 2}));
}

TEST(OnnxImport, SymbolicInnerDimensionIsUnsupported) {
  ModelBuilder b(13);
  b.input("x", TensorProto::FLOAT, {std::string("N"), std::string("seq")});
  b.node("Relu", {"x"}, {"y"});
  b.output("y");
  try {
    import(b);
    FAIL() << "expected UnsupportedOpError";
  } catch (const UnsupportedOpError& e) {
    EXPECT_NE(std::string(e.what()).find("input 'x' dim 1 ('seq')"), std::string::npos) << e.what();
  }
}

// Everything unsupported in a model comes in one error: op types with node names, op variants,
// dtypes, and the opset.
TEST(OnnxImport, OneErrorListsEveryUnsupportedOp) {
  ModelBuilder b(13);
  b.input("x", TensorProto::FLOAT, {int64_t{1}, int64_t{1}, int64_t{4}, int64_t{4}});
  b.input("u", TensorProto::UINT8, {int64_t{4}});
  b.node("NonZero", {"x"}, {"r1"}, "nz_a");
  b.node("NonZero", {"x"}, {"r2"}, "nz_b");
  b.node("NonMaxSuppression", {"x"}, {"nms"}, "nms");
  auto& mp = b.node("MaxPool", {"x"}, {"p", "idx"}, "pool");
  attr_ints(mp, "kernel_shape", {2, 2});
  b.node("Relu", {"r1"}, {"after"}, "after_nonzero");
  b.node("FusedConv", {"x"}, {"f"}, "fused").set_domain("com.microsoft");
  b.output("after");
  b.output("p");
  try {
    import(b);
    FAIL() << "expected UnsupportedOpError";
  } catch (const UnsupportedOpError& e) {
    std::string m = e.what();
    for (const char* part :
         {"(opset 13)", "NonZero (no IR equivalent): node 'nz_a', node 'nz_b'",
          "NonMaxSuppression (no IR equivalent): node 'nms'", "MaxPool (the Indices output)",
          "node 'pool'", "dtype UINT8: input 'u'", "com.microsoft.FusedConv", "node 'fused'"})
      EXPECT_NE(m.find(part), std::string::npos) << "missing '" << part << "' in: " << m;
    EXPECT_EQ(m.find("after_nonzero"), std::string::npos) << "a supported op is listed: " << m;
    EXPECT_EQ(e.op_types().size(), 5u);
  }
}

TEST(OnnxImport, OpsetRange) {
  auto model = [](int64_t opset, const std::string& op) {
    ModelBuilder b(opset);
    b.input("x", TensorProto::FLOAT, {int64_t{1}, int64_t{2}, int64_t{2}, int64_t{2}});
    b.node(op, op == "Add" ? std::vector<std::string>{"x", "x"} : std::vector<std::string>{"x"},
           {"y"});
    b.output("y");
    return b;
  };
  EXPECT_THROW(import(model(18, "Relu")), UnsupportedOpError);
  EXPECT_THROW(import(model(1, "Add")), UnsupportedOpError);  // Add-1 predates opset 6
  EXPECT_NO_THROW(import(model(1, "GlobalAveragePool")));     // unchanged since version 1
  EXPECT_NO_THROW(import(model(6, "Add")));
  EXPECT_NO_THROW(import(model(17, "Add")));
}

TEST(OnnxImport, DoubleTensorsRunElementwiseOnCpuOnly) {
  ModelBuilder b(13);
  b.input("x", TensorProto::DOUBLE, {int64_t{2}});
  b.node("Add", {"x", "x"}, {"y"});
  b.output("y", TensorProto::DOUBLE);
  ir::Graph g = import(b);
  ir::HostTensor x(ir::DType::f64, ir::Shape({2}));
  x.data<double>()[0] = 1e-310;  // an f64 denormal, flushed in f32
  x.data<double>()[1] = 1e200;
  auto out = run_cpu(g, {x});
  EXPECT_EQ(out[0].data<double>()[0], 2 * x.data<double>()[0]);
  EXPECT_EQ(out[0].data<double>()[1], 2 * x.data<double>()[1]);
  EXPECT_GT(out[0].data<double>()[0], 0.0);

  ModelBuilder c(13);
  c.input("x", TensorProto::DOUBLE, {int64_t{1}, int64_t{1}, int64_t{3}, int64_t{3}});
  c.input("w", TensorProto::DOUBLE, {int64_t{1}, int64_t{1}, int64_t{1}, int64_t{1}});
  c.node("Conv", {"x", "w"}, {"y"});
  c.output("y", TensorProto::DOUBLE);
  EXPECT_THROW(compile(import(c), Device("cpu")), UnsupportedOpError);
}

TEST(OnnxImport, NodesOutOfOrderAreSorted) {
  ModelBuilder b(13);
  b.input("x", TensorProto::FLOAT, {int64_t{2}});
  b.node("Neg", {"a"}, {"y"});
  b.node("Relu", {"x"}, {"a"});
  b.output("y");
  EXPECT_EQ(values(run_cpu(import(b), {f32({2}, {-1, 3})})[0]), (std::vector<float>{0, -3}));
}

TEST(OnnxImport, ExternalData) {
  std::string dir = temp_dir("external");
  std::vector<float> w{1.5f, -2, 4};
  {
    std::ofstream f(dir + "/weights.bin", std::ios::binary);
    f.write("pad!", 4);
    f.write(reinterpret_cast<const char*>(w.data()), 12);
  }
  auto build = [&](const std::string& location, const std::string& length) {
    ModelBuilder b(13);
    b.input("x", TensorProto::FLOAT, {int64_t{3}});
    auto* t = b.graph().add_initializer();
    t->set_name("w");
    t->set_data_type(TensorProto::FLOAT);
    t->add_dims(3);
    t->set_data_location(TensorProto::EXTERNAL);
    for (auto [k, v] : std::vector<std::pair<std::string, std::string>>{
             {"location", location}, {"offset", "4"}, {"length", length}}) {
      auto* e = t->add_external_data();
      e->set_key(k);
      e->set_value(v);
    }
    b.node("Mul", {"x", "w"}, {"y"});
    b.output("y");
    return b.save(dir + "/model.onnx");
  };
  ir::Graph g = onnx_import::import_model(build("weights.bin", "12")).graph;
  EXPECT_EQ(values(run_cpu(g, {f32({3}, {1, 1, 1})})[0]), w);
  EXPECT_THROW(onnx_import::import_model(build("weights.bin", "16")), IoError);
  EXPECT_THROW(onnx_import::import_model(build("missing.bin", "12")), IoError);
  EXPECT_THROW(onnx_import::import_model(build("../weights.bin", "12")), IoError);
  EXPECT_THROW(onnx_import::import_model(build("/etc/passwd", "12")), IoError);
  std::filesystem::remove_all(dir);
}

TEST(OnnxImport, SupportedOpsList) {
  std::vector<std::string> ops = onnx_import::supported_ops();
  for (const char* op : {"Conv", "Gemm", "Softmax", "Slice", "Constant", "CastLike", "Dropout"})
    EXPECT_NE(std::find(ops.begin(), ops.end(), op), ops.end()) << op;
  EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end()));
}

}  // namespace
}  // namespace mimic::testing
