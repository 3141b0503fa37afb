// IR and cpu-backend pieces the ONNX import needs: f64 tensors (elementwise, reductions, CumSum,
// casts; other ops refuse them), Flatten's negative axis, inputs that define shapes and their
// conversion into constants.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "base/error.h"
#include "frontend/api/compile.h"
#include "frontend/ir/op_helpers.h"
#include "frontend/ir/shape_inference.h"

namespace mimic::testing {
namespace {

using ir::DType;
using ir::OpType;

ir::HostTensor f64(ir::Shape s, std::vector<double> v) {
  return ir::HostTensor::from(std::move(s), v.data());
}

std::vector<double> doubles(const ir::HostTensor& t) {
  return std::vector<double>(t.data<double>(), t.data<double>() + t.numel());
}

ir::HostTensor run1(ir::Graph& g, std::vector<ir::HostTensor> inputs) {
  return compile(g, Device("cpu")).run(inputs).outputs.at(0);
}

TEST(IrF64, ElementwiseAndReductionsComputeInDouble) {
  ir::Graph g("f64");
  ir::ValueId x = g.add_input("x", DType::f64, ir::Shape({2, 2}));
  ir::ValueId e = g.add_node(OpType::Exp, "exp", {x})[0];
  ir::ValueId m = g.add_node(OpType::Max, "max", {e, x})[0];
  int64_t axis = 1;
  ir::ValueId axes = g.add_constant("axes", ir::HostTensor::from(ir::Shape({1}), &axis));
  ir::ValueId r =
      g.add_node(OpType::ReduceLogSumExp, "lse", {m, axes}, {{"keepdims", int64_t{0}}})[0];
  g.add_output(r);
  auto y = doubles(run1(g, {f64({2, 2}, {0, 1e-300, 700, 1})}));
  // exp(700) overflows f32 but not f64.
  EXPECT_NEAR(y[0], std::log(std::exp(1.0) + std::exp(1.0)), 1e-12);
  EXPECT_NEAR(y[1], std::exp(700.0), std::exp(700.0) * 1e-12);
}

TEST(IrF64, CumSumCastAndPow) {
  ir::Graph g("f64");
  ir::ValueId x = g.add_input("x", DType::f64, ir::Shape({3}));
  int32_t axis = 0;
  ir::ValueId a = g.add_constant("axis", ir::HostTensor::from(ir::Shape(), &axis));
  ir::ValueId c = g.add_node(OpType::CumSum, "cumsum", {x, a})[0];
  ir::ValueId p = g.add_node(OpType::Pow, "pow", {c, x})[0];
  ir::ValueId f = g.add_node(OpType::Cast, "cast", {p}, {{"to", std::string("f32")}})[0];
  g.add_output(f);
  ir::HostTensor y = run1(g, {f64({3}, {1, 2, 0.5})});
  ASSERT_EQ(y.dtype(), DType::f32);
  EXPECT_FLOAT_EQ(y.data<float>()[0], 1);
  EXPECT_FLOAT_EQ(y.data<float>()[1], 9);
  EXPECT_FLOAT_EQ(y.data<float>()[2], std::sqrt(3.5f));
}

TEST(IrF64, MatrixOpsRefuseF64) {
  ir::Graph g("f64");
  ir::ValueId a = g.add_input("a", DType::f64, ir::Shape({2, 2}));
  g.add_output(g.add_node(OpType::MatMul, "mm", {a, a})[0]);
  EXPECT_THROW(compile(g, Device("cpu")), UnsupportedOpError);
}

// Integer kernels give numpy's results where C++ would be undefined: wrap-around, INT64_MIN / -1,
// saturating float->int casts, exact int64 CumSum beyond 2^53.
TEST(IrIntegers, WrapSaturateAndStayExact) {
  const int64_t big = std::numeric_limits<int64_t>::max(),
                low = std::numeric_limits<int64_t>::min();
  ir::Graph g("ints");
  ir::ValueId a = g.add_input("a", DType::i64, ir::Shape({3}));
  ir::ValueId b = g.add_input("b", DType::i64, ir::Shape({3}));
  ir::ValueId f = g.add_input("f", DType::f32, ir::Shape({3}));
  int64_t axis = 0;
  ir::ValueId ax = g.add_constant("axis", ir::HostTensor::from(ir::Shape(), &axis));
  g.add_output(g.add_node(OpType::Add, "add", {a, b})[0]);
  g.add_output(g.add_node(OpType::Div, "div", {a, b})[0]);
  g.add_output(g.add_node(OpType::Cast, "cast", {f}, {{"to", std::string("i32")}})[0]);
  g.add_output(g.add_node(OpType::CumSum, "cumsum", {a, ax})[0]);
  int64_t av[] = {big, low, (int64_t{1} << 53) + 1}, bv[] = {1, -1, 2};
  float fv[] = {1e20f, -1e20f, NAN};
  auto out =
      compile(g, Device("cpu"))
          .run({ir::HostTensor::from(ir::Shape({3}), av), ir::HostTensor::from(ir::Shape({3}), bv),
                ir::HostTensor::from(ir::Shape({3}), fv)})
          .outputs;
  EXPECT_EQ(out[0].data<int64_t>()[0], low);  // big + 1 wraps
  EXPECT_EQ(out[1].data<int64_t>()[1], low);  // low / -1 wraps
  EXPECT_EQ(out[2].data<int32_t>()[0], std::numeric_limits<int32_t>::max());
  EXPECT_EQ(out[2].data<int32_t>()[1], std::numeric_limits<int32_t>::min());
  EXPECT_EQ(out[2].data<int32_t>()[2], 0);
  EXPECT_EQ(out[3].data<int64_t>()[2], big + low + (int64_t{1} << 53) + 1);  // -1 + 2^53 + 1, exact
}

TEST(IrFlatten, NegativeAxisCountsFromTheEnd) {
  for (int64_t axis : {-1, -2, -4, 0, 4}) {
    ir::Graph g("flatten");
    ir::ValueId x = g.add_input("x", DType::f32, ir::Shape({2, 3, 4, 5}));
    g.add_output(g.add_node(OpType::Flatten, "flatten", {x}, {{"axis", axis}})[0]);
    ir::infer_shapes(g);
    int64_t a = axis < 0 ? axis + 4 : axis;
    ir::Shape s({2, 3, 4, 5});
    EXPECT_EQ(g.output_type(0).shape,
              ir::Shape({s.product(0, static_cast<int>(a)), s.product(static_cast<int>(a), 4)}))
        << "axis " << axis;
  }
  ir::Graph g("flatten");
  ir::ValueId x = g.add_input("x", DType::f32, ir::Shape({2, 3}));
  g.add_output(g.add_node(OpType::Flatten, "flatten", {x}, {{"axis", int64_t{-3}}})[0]);
  EXPECT_THROW(ir::infer_shapes(g), ShapeError);
}

// Reshape's shape computed from an input through Add: that input defines shapes; the data input
// (only read through Shape) does not.
TEST(IrShapeInputs, FoundThroughProducersAndFrozen) {
  ir::Graph g("reshape");
  ir::ValueId x = g.add_input("x", DType::f32, ir::Shape({2, 6}));
  ir::ValueId s = g.add_input("s", DType::i64, ir::Shape({2}));
  ir::ValueId shape_of_x = g.add_node(OpType::Shape, "shape", {x})[0];
  ir::ValueId target = g.add_node(OpType::Add, "add", {s, shape_of_x})[0];
  g.add_output(g.add_node(OpType::Reshape, "reshape", {x, target})[0]);
  EXPECT_EQ(ir::shape_defining_inputs(g), std::vector<int>({1}));
  int64_t delta[] = {1, -3};  // [2,6] + [1,-3] = [3,3]... not 12 elements
  int64_t ok[] = {2, -3};     // [4,3]
  g.make_constant(s, ir::HostTensor::from(ir::Shape({2}), ok));
  ASSERT_EQ(g.inputs().size(), 1u);
  ir::Graph bound = prepare_graph(g, 0);
  EXPECT_EQ(bound.output_type(0).shape, ir::Shape({4, 3}));
  EXPECT_THROW(g.make_constant(s, ir::HostTensor::from(ir::Shape({2}), delta)),
               InvalidArgument);  // not an input
  EXPECT_THROW(g.make_constant(x, ir::HostTensor(DType::i64, ir::Shape({2, 6}))), InvalidArgument);
}

}  // namespace
}  // namespace mimic::testing
