// Finite-difference check of every gradient rule (the table in autodiff_cases.cpp): the gradients
// append_gradients() builds, run on the cpu backend, must match central differences in f32.
// Inputs near a kink (Relu at 0, ties in a max window) are generated away from it.
#include <gtest/gtest.h>

#include <set>

#include "base/error.h"
#include "frontend/api/compile.h"
#include "frontend/ir/autodiff.h"
#include "tests/unit/autodiff_cases.h"

namespace mimic::test {
namespace {

using ir::DType;
using ir::GraphBuilder;
using ir::OpType;
using ir::Shape;
using ir::ValueId;

// The op table's gradient column is what the rule registry holds: an op marked `rule` has one and
// a finite-difference case below; no other op has a rule.
TEST(Autodiff, OpTableGradientColumnMatchesTheRulesAndEveryRuleHasACase) {
  std::set<OpType> covered;
  for (const Case& c : all_cases()) {
    CaseGraphs graphs = build_case(c);
    for (const ir::Node& n : graphs.forward.nodes()) covered.insert(n.op);
  }
  for (int i = 0; i < ir::op_count(); ++i) {
    OpType op = ir::op_at(i);
    bool has_rule = ir::find_grad_rule(op) != nullptr;
    EXPECT_EQ(has_rule, ir::op_gradient(op) == ir::OpGradient::rule) << ir::op_name(op);
    if (has_rule) EXPECT_TRUE(covered.count(op)) << ir::op_name(op) << " has no gradient case";
  }
}

TEST(Autodiff, ElementwiseRulesMatchFiniteDifferences) {
  for (const Case& c : elementwise_cases()) check_case(c);
}
TEST(Autodiff, LinearAndConvRulesMatchFiniteDifferences) {
  for (const Case& c : linear_cases()) check_case(c);
}
TEST(Autodiff, ShapeRulesMatchFiniteDifferences) {
  for (const Case& c : shape_cases()) check_case(c);
}
TEST(Autodiff, NnRulesMatchFiniteDifferences) {
  for (const Case& c : nn_cases()) check_case(c);
}
TEST(Autodiff, ReductionScanAndIndexingRulesMatchFiniteDifferences) {
  for (const Case& c : reduce_cases()) check_case(c);
}

// Ties in a max window: the whole gradient goes to the first maximum, as in PyTorch.
TEST(Autodiff, MaxPoolGivesTiesGradientToTheFirstMaximum) {
  ir::Graph g;
  ValueId x = g.add_input("x", DType::f32, Shape({1, 1, 2, 4}));
  GraphBuilder b(g, "t");
  using V = std::vector<int64_t>;
  ValueId y = b.op(OpType::MaxPool, {x}, {{"kernel_shape", V{2, 2}}, {"strides", V{2, 2}}});
  ValueId loss = b.reduce_sum(
      b.mul(y, g.add_constant("w", ir::HostTensor::from(Shape({1, 1, 1, 2}),
                                                        std::vector<float>{3, 5}.data()))),
      {0, 1, 2, 3}, false);
  auto grads = ir::append_gradients(g, loss, {x});
  g.add_output(grads[0]);
  std::vector<float> xs{1, 1, 2, 0, 0, 1, 2, 2};  // window 0: 1 1 / 0 1, window 1: 2 0 / 2 2
  auto out =
      compile(g, Device("cpu")).run({ir::HostTensor::from(Shape({1, 1, 2, 4}), xs.data())}).outputs;
  std::vector<float> want{3, 0, 5, 0, 0, 0, 0, 0};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out[0].data<float>()[i], want[i]) << i;
}

TEST(Autodiff, MissingRuleIsAOneLineErrorNamingOpAndNode) {
  ir::Graph g;
  ValueId x = g.add_input("x", DType::f32, Shape({3}));
  GraphBuilder b(g, "t");
  ValueId scattered = b.op(
      OpType::ScatterND,
      {x, g.add_constant("i", ir::HostTensor::from(Shape({1, 1}), std::vector<int64_t>{1}.data())),
       b.scale(b.reduce_sum(x, {0}, true), 2.0)},
      {{"reduction", std::string("mul")}});
  ValueId y = b.reduce_sum(scattered, {0}, false);
  try {
    ir::append_gradients(g, y, {x});
    FAIL() << "no error";
  } catch (const UnsupportedOpError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("no gradient rule for ScatterND with reduction 'mul'"), std::string::npos)
        << m;
    EXPECT_NE(m.find("t/ScatterND"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos);
  }
}

// Piecewise-constant ops (the op table's `zero` gradient) pass no gradient, as in PyTorch:
// d/dx sum(x * 3 + floor(x) + hardmax(x)) = 3.
TEST(Autodiff, PiecewiseConstantOpsPassNoGradient) {
  ir::Graph g;
  ValueId x = g.add_input("x", DType::f32, Shape({4}));
  GraphBuilder b(g, "t");
  ValueId y = b.add(b.add(b.scale(x, 3.0), b.op(OpType::Floor, {x})), b.op(OpType::Hardmax, {x}));
  ValueId loss = b.reduce_sum(y, {0}, false);
  std::vector<ValueId> grads = ir::append_gradients(g, loss, {x});
  g.add_output(grads[0]);
  std::vector<float> xs{0.5f, -1.25f, 2.0f, 7.5f};
  auto out = compile(g, Device("cpu")).run({ir::HostTensor::from(Shape({4}), xs.data())}).outputs;
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[0].data<float>()[i], 3.0f) << i;
}

TEST(Autodiff, NonScalarLossIsRejected) {
  ir::Graph g;
  ValueId x = g.add_input("x", DType::f32, Shape({3}));
  GraphBuilder b(g, "t");
  ValueId y = b.op(OpType::Relu, {x});
  EXPECT_THROW(ir::append_gradients(g, y, {x}), InvalidArgument);
}

TEST(Autodiff, UnusedInputGetsZeroGradient) {
  ir::Graph g;
  ValueId x = g.add_input("x", DType::f32, Shape({2}));
  ValueId z = g.add_input("z", DType::f32, Shape({2}));
  GraphBuilder b(g, "t");
  ValueId loss = b.reduce_sum(b.mul(x, x), {0}, false);
  auto grads = ir::append_gradients(g, loss, {x, z});
  ASSERT_TRUE(g.value(grads[1]).constant);
  EXPECT_EQ(g.value(grads[1]).constant->data<float>()[0], 0.0f);
}

}  // namespace
}  // namespace mimic::test
