// Shape inference of the IR, including the symbolic batch dimension.
#include <gtest/gtest.h>

#include "base/error.h"
#include "frontend/ir/shape_inference.h"

namespace mimic::ir {
namespace {

ValueId ints(Graph& g, std::vector<int64_t> v) {
  return g.add_constant("c", HostTensor::from(Shape({static_cast<int64_t>(v.size())}), v.data()));
}

TEST(ShapeInference, ConvNchwWithPaddingStrideAndGroups) {
  Graph g;
  auto x = g.add_input("x", DType::f32, Shape({kBatch, 32, 56, 56}));
  auto w = g.add_constant("w", HostTensor(DType::f32, Shape({64, 8, 3, 3})));
  auto y = g.add_node(OpType::Conv, "conv", {x, w},
                      {{"strides", std::vector<int64_t>{2, 2}},
                       {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                       {"group", int64_t{4}}})[0];
  g.add_output(y);
  infer_shapes(g);
  EXPECT_EQ(g.value(y).type.shape, Shape({kBatch, 64, 28, 28}));
  Graph bound = bind_batch(g, 8);
  EXPECT_EQ(bound.value(y).type.shape, Shape({8, 64, 28, 28}));
}

TEST(ShapeInference, ConvNhwcSamePaddingDilation) {
  Graph g;
  auto x = g.add_input("x", DType::f32, Shape({2, 17, 17, 3}));
  auto w = g.add_constant("w", HostTensor(DType::f32, Shape({5, 3, 3, 3})));
  auto y = g.add_node(OpType::Conv, "conv", {x, w},
                      {{"auto_pad", std::string("SAME_UPPER")},
                       {"strides", std::vector<int64_t>{2, 2}},
                       {"dilations", std::vector<int64_t>{2, 2}},
                       {"layout", std::string("NHWC")}})[0];
  g.add_output(y);
  infer_shapes(g);
  EXPECT_EQ(g.value(y).type.shape, Shape({2, 9, 9, 5}));
}

TEST(ShapeInference, DepthwiseAndPoolCeilMode) {
  Graph g;
  auto x = g.add_input("x", DType::f32, Shape({1, 8, 10, 10}));
  auto w = g.add_constant("w", HostTensor(DType::f32, Shape({8, 1, 3, 3})));
  auto c = g.add_node(OpType::Conv, "dw", {x, w}, {{"group", int64_t{8}}})[0];
  auto p = g.add_node(OpType::MaxPool, "pool", {c},
                      {{"kernel_shape", std::vector<int64_t>{3, 3}},
                       {"strides", std::vector<int64_t>{2, 2}},
                       {"ceil_mode", int64_t{1}}})[0];
  g.add_output(p);
  infer_shapes(g);
  EXPECT_EQ(g.value(c).type.shape, Shape({1, 8, 8, 8}));
  EXPECT_EQ(g.value(p).type.shape, Shape({1, 8, 4, 4}));
}

TEST(ShapeInference, MatMulBroadcastsBatchDims) {
  Graph g;
  auto a = g.add_input("a", DType::f32, Shape({kBatch, 12, 128, 64}));
  auto b = g.add_input("b", DType::f32, Shape({1, 12, 64, 128}));
  auto y = g.add_node(OpType::MatMul, "mm", {a, b})[0];
  auto v = g.add_input("v", DType::f32, Shape({64}));
  auto z = g.add_node(OpType::MatMul, "mv", {a, v})[0];
  g.add_output(y);
  g.add_output(z);
  infer_shapes(g);
  EXPECT_EQ(g.value(y).type.shape, Shape({kBatch, 12, 128, 128}));
  EXPECT_EQ(g.value(z).type.shape, Shape({kBatch, 12, 128}));
}

TEST(ShapeInference, ReshapeKeepsTheBatchSymbol) {
  Graph g;
  auto x = g.add_input("x", DType::f32, Shape({kBatch, 128, 768}));
  auto r = g.add_node(OpType::Reshape, "split_heads", {x, ints(g, {0, 0, 12, 64})})[0];
  auto f = g.add_node(OpType::Reshape, "rows", {r, ints(g, {-1, 128, 768})})[0];
  g.add_output(f);
  infer_shapes(g);
  EXPECT_EQ(g.value(r).type.shape, Shape({kBatch, 128, 12, 64}));
  EXPECT_EQ(g.value(f).type.shape, Shape({kBatch, 128, 768}));
}

TEST(ShapeInference, ReshapeMergingTheBatchNeedsABoundBatch) {
  Graph g;
  auto x = g.add_input("x", DType::f32, Shape({kBatch, 4}));
  auto r = g.add_node(OpType::Reshape, "merge", {x, ints(g, {-1})})[0];
  g.add_output(r);
  EXPECT_THROW(infer_shapes(g), ShapeError);
  Graph bound = bind_batch(g, 3);
  EXPECT_EQ(bound.value(bound.outputs()[0]).type.shape, Shape({12}));
}

TEST(ShapeInference, SliceClampsLikeOnnx) {
  Graph g;
  auto x = g.add_input("x", DType::f32, Shape({10, 20}));
  auto y = g.add_node(
      OpType::Slice, "s",
      {x, ints(g, {1, -1}), ints(g, {1000, -1000}), ints(g, {0, 1}), ints(g, {3, -2})})[0];
  g.add_output(y);
  infer_shapes(g);
  EXPECT_EQ(g.value(y).type.shape, Shape({3, 10}));
}

TEST(ShapeInference, ShapeFoldsToAConstant) {
  Graph g;
  auto x = g.add_input("x", DType::f32, Shape({2, 3, 4}));
  auto s = g.add_node(OpType::Shape, "shape", {x})[0];
  g.add_output(s);
  infer_shapes(g);
  ASSERT_TRUE(g.value(s).constant);
  EXPECT_EQ(g.value(s).constant->data<int64_t>()[2], 4);
}

TEST(ShapeInference, ReductionsSplitsAndGathers) {
  Graph g;
  auto x = g.add_input("x", DType::f32, Shape({4, 6, 8}));
  auto r =
      g.add_node(OpType::ReduceMean, "mean", {x, ints(g, {-1})}, {{"keepdims", int64_t{0}}})[0];
  auto parts = g.add_node(OpType::Split, "split", {x, ints(g, {2, 4})}, {{"axis", int64_t{1}}}, 2);
  auto idx = g.add_constant("idx", HostTensor(DType::i64, Shape({5, 2})));
  auto ga = g.add_node(OpType::Gather, "gather", {x, idx}, {{"axis", int64_t{1}}})[0];
  for (ValueId v : {r, parts[0], parts[1], ga}) g.add_output(v);
  infer_shapes(g);
  EXPECT_EQ(g.value(r).type.shape, Shape({4, 6}));
  EXPECT_EQ(g.value(parts[1]).type.shape, Shape({4, 4, 8}));
  EXPECT_EQ(g.value(ga).type.shape, Shape({4, 5, 2, 8}));
}

TEST(ShapeInference, ComparisonsProduceBool) {
  Graph g;
  auto a = g.add_input("a", DType::f16, Shape({3, 1}));
  auto b = g.add_input("b", DType::f16, Shape({4}));
  auto y = g.add_node(OpType::Less, "lt", {a, b})[0];
  g.add_output(y);
  infer_shapes(g);
  EXPECT_EQ(g.value(y).type, (TensorType{DType::boolean, Shape({3, 4})}));
}

}  // namespace
}  // namespace mimic::ir
