// Loop fusion on the cpu backend's fast path (backends/cpu/loop_fusion.h): fused elementwise
// groups, and the reductions that end them, give bitwise the reference kernels' results (but for
// the vectorized Exp, Erf, Sigmoid and Tanh, within a few ulp), with broadcast, boolean and
// constant operands;
// values read after a group are written out, values read before it keep it from fusing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "base/error.h"
#include "frontend/api/compile.h"
#include "frontend/api/random.h"
#include "frontend/ir/graph_builder.h"

namespace mimic {
namespace {

using ir::DType;
using ir::GraphBuilder;
using ir::OpType;
using ir::Shape;
using ir::ValueId;

// "kernels=onednn: S oneDNN steps, G loop-fused groups of N nodes" -> {G, N}.
std::pair<int, int> fused(const Executable& exe) {
  for (const std::string& note : exe.compile_report().notes) {
    size_t at = note.find("steps, ");
    if (note.rfind("kernels=onednn", 0) == 0 && at != std::string::npos) {
      int groups = 0, nodes = 0;
      std::sscanf(note.c_str() + at, "steps, %d loop-fused groups of %d nodes", &groups, &nodes);
      return {groups, nodes};
    }
  }
  return {0, 0};
}

// Runs `g` fused and on the reference kernels: the outputs are bitwise equal.
void expect_bitwise_reference(const ir::Graph& g, std::pair<int, int> want) {
  CompileOptions ref;
  ref.options["kernels"] = "reference";
  Executable a = compile(g, "cpu"), b = compile(g, "cpu", ref);
  EXPECT_EQ(fused(a), want) << g.name();
  std::vector<ir::HostTensor> inputs = random_inputs(a.graph(), 5, 10);
  RunOutput x = a.run(inputs), y = b.run(inputs);
  ASSERT_EQ(x.outputs.size(), y.outputs.size());
  for (size_t o = 0; o < x.outputs.size(); ++o) {
    ASSERT_EQ(x.outputs[o].type(), y.outputs[o].type()) << g.name() << " output " << o;
    EXPECT_EQ(std::memcmp(x.outputs[o].raw(), y.outputs[o].raw(), x.outputs[o].nbytes()), 0)
        << g.name() << " output " << o;
  }
}

// BatchNormalization in training mode as autodiff writes it: per-channel statistics broadcast
// over [N, C, H, W], then normalize, scale, shift and Relu in one group.
TEST(CpuLoopFusion, NormalizationChainsFuseBitwiseExact) {
  ir::Graph g("bn_chain");
  ValueId x = g.add_input("x", DType::f32, Shape({2, 3, 5, 7}));
  ValueId gamma = g.add_input("gamma", DType::f32, Shape({1, 3, 1, 1}));
  GraphBuilder b(g, "bn");
  ValueId mean = b.reduce_mean(x, {0, 2, 3}, true);
  ValueId centered = b.sub(x, mean);
  ValueId var = b.reduce_mean(b.mul(centered, centered), {0, 2, 3}, true);
  ValueId inv =
      b.op(OpType::Reciprocal, {b.op(OpType::Sqrt, {b.add(var, b.scalar(1e-5, DType::f32))})});
  ValueId y = b.add(b.mul(b.mul(centered, inv), gamma), b.scalar(0.25, DType::f32));
  g.add_output(b.op(OpType::Relu, {y}));
  // The variance's ReduceMean sums the squares as its group (Sub, Mul) computes them, and the
  // group writes `centered` out too (a multi-output fusion): the normalization group reads it,
  // after the variance. That group (Mul, Mul, Add, Relu) cannot take the Sub: the variance,
  // before it, reads it and feeds it. The statistics' Add, Sqrt and Reciprocal fuse too. The
  // mean's ReduceMean reads an input: nothing to fuse.
  expect_bitwise_reference(g, {3, 10});
}

// A ReduceSum/ReduceMean at the end of a group sums the values as they are computed: reduced
// axes last, first, in the middle and all of them, kept or not, broadcast operands, a member read
// after the group; every result bitwise the reference kernels'.
TEST(CpuLoopFusion, ReductionsSumTheGroupsValuesBitwiseExact) {
  struct Case {
    Shape shape;
    std::vector<int64_t> axes;
    bool keepdims, mean;
  };
  for (const Case& c :
       {Case{Shape({8, 16, 7, 9}), {0, 2, 3}, true, false},
        Case{Shape({8, 16, 7, 9}), {0, 2, 3}, true, true}, Case{Shape({6, 1500}), {1}, false, true},
        Case{Shape({6, 1500}), {0}, true, false}, Case{Shape({4, 5, 300}), {1}, false, false},
        Case{Shape({3, 2050}), {0, 1}, false, false}}) {
    ir::Graph g("reduce_" + c.shape.str());
    ValueId x = g.add_input("x", DType::f32, c.shape);
    ValueId y = g.add_input("y", DType::f32, c.shape);
    std::vector<int64_t> row(c.shape.rank(), 1);
    row.back() = c.shape.dims().back();
    ValueId r = g.add_input("r", DType::f32, Shape(row));
    GraphBuilder b(g, "t");
    ValueId prod = b.mul(b.sub(x, r), y);
    ValueId sq = b.op(OpType::Abs, {b.mul(prod, b.scalar(0.1, DType::f32))});
    ValueId red =
        c.mean ? b.reduce_mean(sq, c.axes, c.keepdims) : b.reduce_sum(sq, c.axes, c.keepdims);
    g.add_output(red);
    g.add_output(b.op(OpType::Sigmoid, {prod}));  // prod is read after the reduction: written out
    expect_bitwise_reference(g, {1, 5});
  }
}

// Relu's gradient: dy * cast(x > 0) with the mask a bool inside the group, and a Where.
TEST(CpuLoopFusion, BooleanMasksAndWhereStayInsideTheGroup) {
  ir::Graph g("relu_grad");
  ValueId x = g.add_input("x", DType::f32, Shape({4, 1000}));
  ValueId dy = g.add_input("dy", DType::f32, Shape({4, 1000}));
  GraphBuilder b(g, "grad");
  ValueId pos = b.op(OpType::Greater, {x, b.scalar(0.0, DType::f32)});
  ValueId masked = b.mul(dy, b.cast(pos, DType::f32));
  ValueId big = b.op(OpType::Less, {b.neg(masked), b.scalar(-0.5, DType::f32)});
  g.add_output(b.op(OpType::Where, {big, b.op(OpType::Abs, {masked}), b.scale(dy, 0.5)}));
  expect_bitwise_reference(g, {1, 8});
}

// A comparison as the group's last node stores bool; a value read outside a group (here a graph
// output) is never fused away.
TEST(CpuLoopFusion, BoolResultsAndValuesReadOutsideTheGroup) {
  ir::Graph g("outputs");
  ValueId x = g.add_input("x", DType::f32, Shape({3, 4, 6}));
  ValueId row = g.add_input("row", DType::f32, Shape({6}));
  GraphBuilder b(g, "t");
  ValueId s = b.op(OpType::Sqrt, {b.div(x, b.add(row, b.scalar(3.0, DType::f32)))});
  g.add_output(s);
  g.add_output(
      b.op(OpType::GreaterOrEqual, {b.op(OpType::Sigmoid, {s}), b.scalar(0.6, DType::f32)}));
  // {Add} alone does not fuse; {Div, Exp} and {Sigmoid, GreaterOrEqual} do.
  expect_bitwise_reference(g, {2, 4});
}

// Largest |fast - want| relative to max(1, |want|), element by element.
double worst_gap(const ir::HostTensor& fast, const ir::HostTensor& want) {
  double worst = 0;
  for (int64_t i = 0; i < want.numel(); ++i)
    worst = std::max(worst, std::fabs(double(fast.data<float>()[i]) - want.data<float>()[i]) /
                                std::max(1.0, std::fabs(double(want.data<float>()[i]))));
  return worst;
}

// Exp and Erf in a group run vectorized (Eigen's packet exp and XLA's rational erf): within 1 and 6
// ulp of the C library's expf and erff (measured over [-20, 20]), so the group's results are the
// reference's to float rounding, not bitwise. Gelu's gradient is such a chain.
TEST(CpuLoopFusion, ExpAndErfRunVectorizedWithinAFewUlp) {
  ir::Graph g("gelu_grad");
  ValueId x = g.add_input("x", DType::f32, Shape({8, 3000}));
  ValueId dy = g.add_input("dy", DType::f32, Shape({8, 3000}));
  GraphBuilder b(g, "t");
  ValueId cdf = b.scale(
      b.add(b.op(OpType::Erf, {b.scale(x, 0.7071067811865476)}), b.scalar(1.0, DType::f32)), 0.5);
  ValueId pdf = b.scale(b.op(OpType::Exp, {b.scale(b.mul(x, x), -0.5)}), 0.3989422804014327);
  g.add_output(b.mul(dy, b.add(cdf, b.mul(x, pdf))));
  CompileOptions ref;
  ref.options["kernels"] = "reference";
  Executable a = compile(g, "cpu"), r = compile(g, "cpu", ref);
  EXPECT_EQ(fused(a), (std::pair<int, int>{1, 11}));
  std::vector<ir::HostTensor> inputs = random_inputs(a.graph(), 5, 10);
  for (int64_t i = 0; i < inputs[0].numel(); ++i) inputs[0].data<float>()[i] *= 4.0f;
  ir::HostTensor fast = a.run(inputs).outputs.at(0), want = r.run(inputs).outputs.at(0);
  const double worst = worst_gap(fast, want);
  EXPECT_LT(worst, 2e-6);
  EXPECT_GT(worst, 0.0) << "the vectorized functions are not the C library's";
}

// Sigmoid and Tanh in a group run vectorized too (Eigen's packet logistic and tanh): within a few
// ulp of the reference kernels' scalar formulas (base/activations.h), over [-20, 20]. (Gelu runs
// as a oneDNN step.)
TEST(CpuLoopFusion, SigmoidAndTanhRunVectorizedWithinAFewUlp) {
  for (OpType op : {OpType::Sigmoid, OpType::Tanh}) {
    ir::Graph g(ir::op_name(op));
    ValueId x = g.add_input("x", DType::f32, Shape({4, 4000}));
    GraphBuilder b(g, "t");
    g.add_output(b.mul(b.op(op, {b.scale(x, 2.0)}), x));
    CompileOptions ref;
    ref.options["kernels"] = "reference";
    Executable a = compile(g, "cpu"), r = compile(g, "cpu", ref);
    EXPECT_EQ(fused(a), (std::pair<int, int>{1, 3})) << g.name();
    std::vector<ir::HostTensor> inputs = random_inputs(a.graph(), 5, 10);
    for (int64_t i = 0; i < inputs[0].numel(); ++i) inputs[0].data<float>()[i] *= 5.0f;
    ir::HostTensor fast = a.run(inputs).outputs.at(0), want = r.run(inputs).outputs.at(0);
    const double worst = worst_gap(fast, want);
    EXPECT_LT(worst, 4e-6) << g.name();
    EXPECT_GT(worst, 0.0) << g.name() << ": the vectorized function is not the C library's";
  }
}

// The vectorized functions give an element the same result wherever it lies: in the middle of a
// block, at its start or in its last partial packet, whatever the alignment of the memory the block
// was computed in. (Eigen alone computes an unaligned span's first and last elements with the C
// library's function, so a train step repeated from the same state once gave another result.)
// Each row holds the same 64 values, rotated, so that every value falls in a row's tail.
TEST(CpuLoopFusion, VectorizedFunctionsGiveAValueTheSameResultAnywhere) {
  constexpr int64_t kRows = 64, kCols = 1013;
  for (OpType op : {OpType::Exp, OpType::Erf, OpType::Sigmoid, OpType::Tanh}) {
    ir::Graph g(ir::op_name(op));
    ValueId x = g.add_input("x", DType::f32, Shape({kRows, kCols}));
    ValueId ones = g.add_input("ones", DType::f32, Shape({1, kCols}));
    GraphBuilder b(g, "t");
    g.add_output(b.mul(b.op(op, {x}), ones));  // the broadcast makes each row a run of blocks
    Executable a = compile(g, "cpu");
    ASSERT_EQ(fused(a), (std::pair<int, int>{1, 2})) << g.name();
    ir::HostTensor values = Random(7).tensor(DType::f32, Shape({kRows}));
    ir::HostTensor in(DType::f32, Shape({kRows, kCols}));
    for (int64_t r = 0; r < kRows; ++r)
      for (int64_t c = 0; c < kCols; ++c)
        in.data<float>()[r * kCols + c] = 6.0f * values.data<float>()[(r + c) % kRows];
    ir::HostTensor one(DType::f32, Shape({1, kCols}));
    std::fill(one.data<float>(), one.data<float>() + kCols, 1.0f);
    ir::HostTensor result = a.run({in, one}).outputs.at(0);
    const float* out = result.data<float>();
    // Row 0's columns 512..575 hold every value once, in the middle of the row's block.
    for (int64_t r = 0; r < kRows; ++r)
      for (int64_t c = 0; c < kCols; ++c)
        ASSERT_EQ(out[r * kCols + c], out[512 + (r + c) % kRows])
            << g.name() << " at row " << r << " column " << c;
  }
}

// fusion=off keeps the fast path's oneDNN steps and runs every elementwise node alone; a bad value
// is a one-line error naming the option.
TEST(CpuLoopFusion, OptionTurnsItOff) {
  ir::Graph g("chain");
  ValueId x = g.add_input("x", DType::f32, Shape({8, 8}));
  GraphBuilder b(g, "t");
  g.add_output(b.op(OpType::Tanh, {b.op(OpType::Exp, {x})}));
  CompileOptions off;
  off.options["fusion"] = "off";
  EXPECT_EQ(fused(compile(g, "cpu")), std::make_pair(1, 2));
  EXPECT_EQ(fused(compile(g, "cpu", off)), std::make_pair(0, 0));
  off.options["fusion"] = "maybe";
  try {
    compile(g, "cpu", off);
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()), "cpu: option fusion='maybe' must be on or off");
  }
}

}  // namespace
}  // namespace mimic
