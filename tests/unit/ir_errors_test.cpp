// Validation errors name the node, the op, the shapes and dtypes involved.
#include <gtest/gtest.h>

#include "base/error.h"
#include "frontend/ir/shape_inference.h"
#include "ir_test_util.h"

namespace mimic::ir {
namespace {

using test::error_of;

TEST(ValidationErrors, MatMulInnerDimensionMismatchNamesNodeAndShapes) {
  Graph g;
  auto a = g.add_input("a", DType::f32, Shape({8, 300}));
  auto b = g.add_input("b", DType::f32, Shape({200, 10}));
  g.add_output(g.add_node(OpType::MatMul, "fc1", {a, b})[0]);
  std::string msg = error_of(g);
  EXPECT_NE(msg.find("node 'fc1' (MatMul)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("f32[8,300]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("f32[200,10]"), std::string::npos) << msg;
}

TEST(ValidationErrors, DtypeMismatch) {
  Graph g;
  auto a = g.add_input("a", DType::f32, Shape({4}));
  auto b = g.add_input("b", DType::bf16, Shape({4}));
  g.add_output(g.add_node(OpType::Add, "sum", {a, b})[0]);
  std::string msg = error_of(g);
  EXPECT_NE(msg.find("different dtypes (f32 vs bf16)"), std::string::npos) << msg;
}

TEST(ValidationErrors, ConvChannelMismatch) {
  Graph g;
  auto x = g.add_input("x", DType::f32, Shape({1, 3, 32, 32}));
  auto w = g.add_constant("w", HostTensor(DType::f32, Shape({16, 4, 3, 3})));
  g.add_output(g.add_node(OpType::Conv, "stem", {x, w})[0]);
  std::string msg = error_of(g);
  EXPECT_NE(msg.find("node 'stem' (Conv)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expects 4 input channels per group, input has 3"), std::string::npos) << msg;
}

TEST(ValidationErrors, BroadcastFailure) {
  Graph g;
  auto a = g.add_input("a", DType::f32, Shape({2, 3}));
  auto b = g.add_input("b", DType::f32, Shape({4}));
  g.add_output(g.add_node(OpType::Mul, "scale", {a, b})[0]);
  std::string msg = error_of(g);
  EXPECT_NE(msg.find("[2,3] and [4] do not broadcast"), std::string::npos) << msg;
}

TEST(ValidationErrors, WrongInputCountAndNonConstantShape) {
  Graph g;
  auto a = g.add_input("a", DType::f32, Shape({2, 3}));
  auto s = g.add_input("s", DType::i64, Shape({1}));
  g.add_output(g.add_node(OpType::Relu, "r", {a, a})[0]);
  EXPECT_NE(error_of(g).find("takes 1 to 1 inputs, got 2"), std::string::npos);
  Graph h;
  a = h.add_input("a", DType::f32, Shape({2, 3}));
  s = h.add_input("s", DType::i64, Shape({1}));
  h.add_output(h.add_node(OpType::Reshape, "view", {a, s})[0]);
  EXPECT_NE(error_of(h).find("must be a constant known at compile time"), std::string::npos);
}

TEST(ValidationErrors, BindBatchRejectsNonPositive) {
  Graph g;
  auto x = g.add_input("x", DType::f32, Shape({kBatch, 4}));
  g.add_output(g.add_node(OpType::Relu, "r", {x})[0]);
  EXPECT_THROW(bind_batch(g, 0), InvalidArgument);
  EXPECT_NO_THROW(validate(g));
}

}  // namespace
}  // namespace mimic::ir
