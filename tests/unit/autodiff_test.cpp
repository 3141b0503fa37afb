// Finite-difference check of every gradient rule (the table in autodiff_cases.cpp): the gradients
// append_gradients() builds, run on the cpu backend, must match central differences in f32.
// Inputs near a kink (Relu at 0, ties in a max window) are generated away from it.
#include <gtest/gtest.h>

#include <set>

#include "base/error.h"
#include "frontend/api/compile.h"
#include "frontend/api/random.h"
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
    if (has_rule) {
      EXPECT_TRUE(covered.count(op)) << ir::op_name(op) << " has no gradient case";
    }
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

// Training-mode BatchNormalization as the train step writes it (batch statistics), differentiated
// as a whole by its closed form and op by op: the same gradients, with two reductions over the
// activation instead of four.
void check_batch_norm_composite(bool channels_last) {
  Shape xs = channels_last ? Shape({3, 4, 5, 6}) : Shape({3, 6, 4, 5});
  int ch = channels_last ? 3 : 1;
  Shape bshape = channels_last ? Shape({1, 1, 1, 6}) : Shape({1, 6, 1, 1});
  std::vector<int64_t> axes =
      channels_last ? std::vector<int64_t>{0, 1, 2} : std::vector<int64_t>{0, 2, 3};
  std::vector<ir::HostTensor> data;
  std::vector<int> reductions;
  for (bool composite : {true, false}) {
    ir::Graph g;
    ValueId x = g.add_input("x", DType::f32, xs);
    ValueId scale = g.add_input("scale", DType::f32, Shape({xs[ch]}));
    ValueId bias = g.add_input("bias", DType::f32, Shape({xs[ch]}));
    ValueId w = g.add_input("w", DType::f32, xs);
    GraphBuilder b(g, "bn");
    ValueId xc = b.sub(x, b.reduce_mean(x, axes, true));
    ValueId var = b.reduce_mean(b.mul(xc, xc), axes, true);
    ValueId rstd =
        b.op(OpType::Reciprocal, {b.op(OpType::Sqrt, {b.add(var, b.scalar_like(1e-5, var))})});
    ValueId xhat = b.mul(xc, rstd);
    ValueId y = b.add(b.mul(xhat, b.reshape(scale, bshape)), b.reshape(bias, bshape));
    ValueId loss = b.reduce_sum(b.mul(y, w), {0, 1, 2, 3}, false);
    ir::Node whole;
    whole.op = OpType::BatchNormalization;
    whole.name = "bn";
    if (channels_last) whole.attrs.set("layout", std::string("NHWC"));
    whole.inputs = {x, scale, bias, xhat, rstd};
    whole.outputs = {y};
    std::vector<ir::CompositeGradient> composites;
    if (composite) composites.push_back({whole, 3, ir::batch_norm_training_rule});
    int before = g.num_nodes();
    for (ValueId grad : ir::append_gradients(g, loss, {x, scale, bias}, composites))
      g.add_output(grad);
    int count = 0;
    for (int i = before; i < g.num_nodes(); ++i)
      count += g.node(i).op == OpType::ReduceSum && b.shape(g.node(i).inputs[0]) == xs;
    reductions.push_back(count);
    Random rng(7);
    std::vector<ir::HostTensor> in{
        rng.tensor(DType::f32, xs, 10), rng.tensor(DType::f32, Shape({xs[ch]}), 10),
        rng.tensor(DType::f32, Shape({xs[ch]}), 10), rng.tensor(DType::f32, xs, 10)};
    for (ir::HostTensor& t : compile(g, Device("cpu")).run(in).outputs) data.push_back(t);
  }
  EXPECT_EQ(reductions[0], 2);
  EXPECT_EQ(reductions[1], 4);
  for (int i = 0; i < 3; ++i) {
    const ir::HostTensor &got = data[i], &want = data[3 + i];
    float largest = 0;
    for (int64_t k = 0; k < want.numel(); ++k)
      largest = std::max(largest, std::abs(want.data<float>()[k]));
    ASSERT_GT(largest, 0.0f) << i;
    for (int64_t k = 0; k < want.numel(); ++k)
      ASSERT_NEAR(got.data<float>()[k], want.data<float>()[k], 2e-5f * largest) << i << " " << k;
  }
}

TEST(Autodiff, TrainingBatchNormClosedFormEqualsOpByOpDifferentiation) {
  check_batch_norm_composite(false);
  check_batch_norm_composite(true);
}

}  // namespace
}  // namespace mimic::test
