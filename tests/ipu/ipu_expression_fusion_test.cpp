// Elementwise expression fusion (backends/ipu_emu/expression_fusion.h): a chain of elementwise ops
// runs as one compute set behind one sync and its intermediates take no tile memory, with the
// same values as the unfused program; a value read twice stays a tensor.
#include <gtest/gtest.h>

#include "frontend/api/random.h"
#include "tests/ipu/ipu_test_util.h"

namespace mimic {
namespace {

using namespace ipu_test;
using ir::DType;
using ir::OpType;

constexpr int64_t kBatch = 8, kC = 64, kHW = 56;

// x -> Mul(x, per-channel scale) -> Add(shift) -> Relu; with `second_reader`, the Mul's result is
// also subtracted from the Relu's (read twice: it must be kept).
ir::Graph scale_shift_relu(bool second_reader) {
  ir::Graph g("scale_shift_relu");
  Random rng(3);
  auto x = g.add_input("x", DType::f32, {kBatch, kC, kHW, kHW});
  auto scale = g.add_constant("scale", rng.tensor(DType::f32, {1, kC, 1, 1}, 1, 0.1f));
  auto shift = g.add_constant("shift", rng.tensor(DType::f32, {1, kC, 1, 1}, 0, 0.1f));
  auto scaled = g.add_node(OpType::Mul, "scale", {x, scale})[0];
  auto shifted = g.add_node(OpType::Add, "shift", {scaled, shift})[0];
  auto y = g.add_node(OpType::Relu, "relu", {shifted})[0];
  if (second_reader) y = g.add_node(OpType::Sub, "residual", {y, scaled})[0];
  g.add_output(y);
  return g;
}

struct Result {
  RunOutput out;
  std::map<std::string, double> metrics;
};

Result run(const ir::Graph& g, bool fusion) {
  Executable e = compile(g, Device("ipu-emu:gc200"),
                         options({{"expression_fusion", fusion ? "true" : "false"}}));
  Result r{e.run(random_inputs(e.graph(), 11)), {}};
  r.metrics = r.out.report.metrics;
  for (const auto& [k, v] : e.compile_report().metrics) r.metrics[k] = v;
  return r;
}

TEST(IpuExpressionFusion, AChainRunsAsOneComputeSetWithTheSameValues) {
  ir::Graph g = scale_shift_relu(false);
  Result fused = run(g, true), plain = run(g, false);
  EXPECT_EQ(fused.metrics.at("fused_elementwise_ops"), 2);  // Mul and Add into the Relu
  EXPECT_EQ(plain.metrics.at("fused_elementwise_ops"), 0);
  EXPECT_EQ(max_rel_diff(fused.out.outputs[0], plain.out.outputs[0]), 0.0);
  // Two syncs fewer; the same exchanges and vertex work.
  const double sync = 150;  // gc200's internal_sync_cycles
  EXPECT_EQ(plain.metrics.at("sync_cycles") - fused.metrics.at("sync_cycles"), 2 * sync);
  EXPECT_EQ(plain.metrics.at("compute_cycles"), fused.metrics.at("compute_cycles"));
  // Neither intermediate is a tensor: the fullest tile holds one 802,816-element value fewer at
  // its peak (4 bytes each over the 1,472 tiles: at least 545 bytes), and less control code.
  double intermediate = double(kBatch * kC * kHW * kHW) * 4 / 1472;
  EXPECT_LE(fused.metrics.at("max_tile_bytes"), plain.metrics.at("max_tile_bytes") - intermediate);
  EXPECT_LT(fused.metrics.at("memory.code_bytes"), plain.metrics.at("memory.code_bytes"));
}

TEST(IpuExpressionFusion, AValueReadTwiceStaysATensor) {
  ir::Graph g = scale_shift_relu(true);
  Result fused = run(g, true), plain = run(g, false);
  // The Add fuses into the Relu and the Relu into the Sub; the Mul's result, read by the Add and
  // by the Sub, is kept: one value of 802,816 elements more than in the chain above.
  EXPECT_EQ(fused.metrics.at("fused_elementwise_ops"), 2);
  EXPECT_EQ(plain.metrics.at("sync_cycles") - fused.metrics.at("sync_cycles"), 2 * 150.0);
  EXPECT_EQ(max_rel_diff(fused.out.outputs[0], plain.out.outputs[0]), 0.0);
  Result chain = run(scale_shift_relu(false), true);
  double intermediate = double(kBatch * kC * kHW * kHW) * 4 / 1472;
  EXPECT_GE(fused.metrics.at("max_tile_bytes"), chain.metrics.at("max_tile_bytes") + intermediate);
}

// A square summed right after it (a BatchNorm's one-pass mean of x^2) is one SQUARE_ADD reduction,
// as poplibs computes it: one sync fewer, no tensor for the square, the same values.
TEST(IpuExpressionFusion, ASummedSquareIsOneSquareAddReduction) {
  ir::Graph g("mean_square");
  auto x = g.add_input("x", DType::f32, {kBatch, kC, kHW, kHW});
  ir::HostTensor axes(DType::i64, ir::Shape({3}));
  axes.data<int64_t>()[0] = 0;
  axes.data<int64_t>()[1] = 2;
  axes.data<int64_t>()[2] = 3;
  auto sq = g.add_node(OpType::Mul, "sq", {x, x})[0];
  g.add_output(g.add_node(OpType::ReduceMean, "mean_sq", {sq, g.add_constant("axes", axes)},
                          {{"keepdims", int64_t{1}}})[0]);
  Result fused = run(g, true), plain = run(g, false);
  EXPECT_EQ(fused.metrics.at("fused_elementwise_ops"), 1);
  EXPECT_EQ(plain.metrics.at("fused_elementwise_ops"), 0);
  EXPECT_EQ(max_rel_diff(fused.out.outputs[0], plain.out.outputs[0]), 0.0);
  EXPECT_EQ(plain.metrics.at("sync_cycles") - fused.metrics.at("sync_cycles"), 150.0);
  double square = double(kBatch * kC * kHW * kHW) * 4 / 1472;
  EXPECT_LE(fused.metrics.at("max_tile_bytes"), plain.metrics.at("max_tile_bytes") - square);
}

}  // namespace
}  // namespace mimic
