// Loop fusion on tpu-emu (backends/tpu_emu/loop_fusion.h): elementwise intermediates and the
// broadcasts between them stay on chip, so a normalization written with primitive ops streams its
// input once per pass instead of once per op; sibling loops share the input they both read; numbers
// are those of the unfused program, bit for bit, in inference and in a training step; the option
// turns it off.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>

#include "base/error.h"
#include "frontend/api/nn.h"
#include "frontend/api/train.h"
#include "tpu_test_util.h"

namespace mimic {
namespace {

using ir::OpType;

ir::ValueId axes(ir::Graph& g, const std::string& name) {
  ir::HostTensor a(ir::DType::i64, ir::Shape({3}));
  const int64_t nchw_spatial[3] = {0, 2, 3};
  std::memcpy(a.raw(), nchw_spatial, sizeof nchw_spatial);
  return g.add_constant(name, a);
}

// Batch normalization over (N, H, W) written with primitive ops, then ReLU, as a train step's
// forward pass writes it: 5 elementwise intermediates (d, d*d, var+eps, std, y), 2 reductions.
ir::Graph primitive_batch_norm() {
  ir::Graph g("primitive_bn");
  auto x = g.add_input("x", ir::DType::f32, ir::Shape({8, 64, 14, 14}));
  ir::Attributes keep{{"keepdims", int64_t{1}}};
  auto mean = g.add_node(OpType::ReduceMean, "mean", {x, axes(g, "axes0")}, keep)[0];
  auto d = g.add_node(OpType::Sub, "d", {x, mean})[0];
  auto sq = g.add_node(OpType::Mul, "sq", {d, d})[0];
  auto var = g.add_node(OpType::ReduceMean, "var", {sq, axes(g, "axes1")}, keep)[0];
  ir::HostTensor eps(ir::DType::f32, ir::Shape({}));
  eps.data<float>()[0] = 1e-5f;
  auto ve = g.add_node(OpType::Add, "var_eps", {var, g.add_constant("eps", eps)})[0];
  auto sd = g.add_node(OpType::Sqrt, "std", {ve})[0];
  auto y = g.add_node(OpType::Div, "y", {d, sd})[0];
  g.add_output(g.add_node(OpType::Relu, "relu", {y})[0]);
  return g;
}

CompileOptions fusion(bool on) {
  CompileOptions o;
  o.options["loop_fusion"] = on ? "true" : "false";
  return o;
}

bool bitwise_equal(const ir::HostTensor& a, const ir::HostTensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.raw(), b.raw(), a.numel() * ir::dtype_size(a.dtype())) == 0;
}

TEST(TpuLoopFusion, PrimitiveNormalizationStreamsItsInputOncePerPass) {
  ir::Graph g = primitive_batch_norm();
  Executable fused = compile(g, Device("tpu-emu:v4"), fusion(true));
  Executable unfused = compile(g, Device("tpu-emu:v4"), fusion(false));
  // The 5 intermediates and the copy of d that y's fusion makes (it runs after the variance).
  EXPECT_EQ(fused.compile_report().metrics.at("loop_fused_values"), 6);
  EXPECT_EQ(fused.compile_report().metrics.at("late_reads_duplicated"), 1);
  EXPECT_EQ(unfused.compile_report().metrics.at("loop_fused_values"), 0);
  auto inputs = random_inputs(fused.graph(), 3);
  RunOutput a = fused.run(inputs), b = unfused.run(inputs);
  EXPECT_TRUE(bitwise_equal(a.outputs.at(0), b.outputs.at(0)));
  // In transfers of x's size (each 14 x 14 plane padded to a 16 x 128 tile), besides x staged in
  // and the output staged out, and less than one x of per-channel statistics loaded whole per
  // core: unfused, 11 (x read twice, d written once and read three times, d*d written and read, y
  // written and read, the output written); fused, 4 (x read by the mean, by the variance and by
  // y's fusion, which computes d again as it runs after the variance; the output written).
  const double x_bytes = 8.0 * 64 * 16 * 128 * 4;
  EXPECT_EQ(std::floor(static_cast<double>(b.report.bytes_moved.at("hbm")) / x_bytes), 2 + 11);
  EXPECT_EQ(std::floor(static_cast<double>(a.report.bytes_moved.at("hbm")) / x_bytes), 2 + 4);
  EXPECT_LT(a.report.cycles, b.report.cycles);
}

// The batch statistics as XLA's BatchNormExpander writes them: mean(x) and mean(x * x) are two
// sums with no path between them, one pass over x (sibling fusion), and the normalization reads x
// once more: x read twice, where the two-pass variance above reads it three times.
TEST(TpuLoopFusion, OnePassStatisticsReadTheirInputTwice) {
  ir::Graph g("one_pass_bn");
  auto x = g.add_input("x", ir::DType::f32, ir::Shape({8, 64, 14, 14}));
  ir::Attributes keep{{"keepdims", int64_t{1}}};
  auto mean = g.add_node(OpType::ReduceMean, "mean", {x, axes(g, "axes0")}, keep)[0];
  auto sq = g.add_node(OpType::Mul, "sq", {x, x})[0];
  auto mean_sq = g.add_node(OpType::ReduceMean, "mean_sq", {sq, axes(g, "axes1")}, keep)[0];
  auto var = g.add_node(OpType::Sub, "var",
                        {mean_sq, g.add_node(OpType::Mul, "mean2", {mean, mean})[0]})[0];
  auto sd = g.add_node(OpType::Sqrt, "std", {var})[0];
  auto d = g.add_node(OpType::Sub, "d", {x, mean})[0];
  g.add_output(g.add_node(OpType::Div, "y", {d, sd})[0]);
  Executable fused = compile(g, Device("tpu-emu:v4"), fusion(true));
  EXPECT_EQ(fused.compile_report().metrics.at("late_reads_duplicated"), 0);
  EXPECT_EQ(fused.compile_report().metrics.at("sibling_fused_reads"), 1);  // sq's x, from mean's
  RunOutput a = fused.run(random_inputs(fused.graph(), 3));
  // x staged in and the output staged out; x read by the statistics and by y, the output written.
  const double x_bytes = 8.0 * 64 * 16 * 128 * 4;
  EXPECT_EQ(std::floor(static_cast<double>(a.report.bytes_moved.at("hbm")) / x_bytes), 2 + 3);
}

// A late read of a value XLA does not duplicate (a product of two full-size tensors, as a ReLU's
// gradient dy * mask): the loop that computes it writes it to HBM, its sum takes it from that
// loop's tiles, and the reader after the sum reads it back.
TEST(TpuLoopFusion, LateReadOfAProductOfTwoTensorsIsWrittenBack) {
  ir::Graph g("late_product");
  auto dy = g.add_input("dy", ir::DType::f32, ir::Shape({8, 64, 16, 128}));
  auto mask = g.add_input("mask", ir::DType::f32, ir::Shape({8, 64, 16, 128}));
  ir::Attributes keep{{"keepdims", int64_t{1}}};
  auto grad = g.add_node(OpType::Mul, "grad", {dy, mask})[0];
  auto sum = g.add_node(OpType::ReduceSum, "sum", {grad, axes(g, "axes0")}, keep)[0];
  g.add_output(g.add_node(OpType::Sub, "centered", {grad, sum})[0]);
  Executable fused = compile(g, Device("tpu-emu:v4"), fusion(true));
  Executable unfused = compile(g, Device("tpu-emu:v4"), fusion(false));
  EXPECT_EQ(fused.compile_report().metrics.at("late_reads_duplicated"), 0);
  EXPECT_EQ(fused.compile_report().metrics.at("late_read_values_written_back"), 1);
  auto inputs = random_inputs(fused.graph(), 5);
  RunOutput a = fused.run(inputs), b = unfused.run(inputs);
  EXPECT_TRUE(bitwise_equal(a.outputs.at(0), b.outputs.at(0)));
  // Unfused, the sum reads grad too; kept on chip, grad would be neither written nor read back
  // (three transfers fewer than unfused).
  const double x_bytes = 8.0 * 64 * 16 * 128 * 4;
  EXPECT_NEAR(static_cast<double>(b.report.bytes_moved.at("hbm")) -
                  static_cast<double>(a.report.bytes_moved.at("hbm")),
              x_bytes, 0.01 * x_bytes);
}

// An Expand read only by elementwise ops is broadcast on chip: its small input is read once, not
// the broadcast tensor.
TEST(TpuLoopFusion, BroadcastIntoElementwiseReadsItsSmallInputOnce) {
  ir::Graph g("expand_mul");
  auto x = g.add_input("x", ir::DType::f32, ir::Shape({8, 64, 14, 14}));
  auto s = g.add_input("s", ir::DType::f32, ir::Shape({1, 64, 1, 1}));
  ir::HostTensor shape(ir::DType::i64, ir::Shape({4}));
  const int64_t dims[4] = {8, 64, 14, 14};
  std::memcpy(shape.raw(), dims, sizeof dims);
  auto e = g.add_node(OpType::Expand, "expand", {s, g.add_constant("shape", shape)})[0];
  g.add_output(g.add_node(OpType::Mul, "scale", {x, e})[0]);
  Executable fused = compile(g, Device("tpu-emu:v4"), fusion(true));
  Executable unfused = compile(g, Device("tpu-emu:v4"), fusion(false));
  auto inputs = random_inputs(fused.graph(), 5);
  RunOutput a = fused.run(inputs), b = unfused.run(inputs);
  EXPECT_TRUE(bitwise_equal(a.outputs.at(0), b.outputs.at(0)));
  EXPECT_LT(a.report.bytes_moved.at("hbm"), 0.6 * b.report.bytes_moved.at("hbm"));
}

// Two sums over x, as a batch normalization's gradient takes sum(dy) and sum(dy * xhat): with no
// path between them they are siblings that share x's tiles (sibling multi-output fusion), so x is
// read once. When the second needs the first's result (sum((x - sum(x)) * x)), it is a second
// fusion, whose Sub and Mul share one read of x: x is read twice.
ir::Graph two_sums(bool second_needs_first) {
  ir::Graph g("two_sums");
  auto x = g.add_input("x", ir::DType::f32, ir::Shape({16, 64, 16, 128}));  // whole (8, 128) tiles
  ir::Attributes keep{{"keepdims", int64_t{1}}};
  auto s = g.add_node(OpType::ReduceSum, "sum", {x, axes(g, "axes0")}, keep)[0];
  auto d = second_needs_first ? g.add_node(OpType::Sub, "d", {x, s})[0] : x;
  auto sq = g.add_node(OpType::Mul, "sq", {d, x})[0];
  g.add_output(s);
  g.add_output(g.add_node(OpType::ReduceSum, "sum_sq", {sq, axes(g, "axes1")}, keep)[0]);
  return g;
}

TEST(TpuLoopFusion, SiblingLoopsReadTheirSharedInputOnce) {
  Executable siblings = compile(two_sums(false), Device("tpu-emu:v4"), fusion(true));
  Executable chained = compile(two_sums(true), Device("tpu-emu:v4"), fusion(true));
  Executable unfused = compile(two_sums(false), Device("tpu-emu:v4"), fusion(false));
  EXPECT_EQ(siblings.compile_report().metrics.at("sibling_fused_reads"), 1);  // sq's x
  EXPECT_EQ(chained.compile_report().metrics.at("sibling_fused_reads"), 1);   // sq's x, from d's
  auto inputs = random_inputs(siblings.graph(), 7);
  RunOutput a = siblings.run(inputs), b = unfused.run(inputs), c = chained.run(inputs);
  for (int i = 0; i < 2; ++i) EXPECT_TRUE(bitwise_equal(a.outputs.at(i), b.outputs.at(i)));
  // The same staging of x precedes both; the chained graph streams x once more, and loads the sum
  // whole on each of the 2 cores (64 channels, each padded to an (8, 128) tile).
  const double x_bytes = 16.0 * 64 * 16 * 128 * 4, sum_bytes = 64.0 * 8 * 128 * 4;
  const double once = static_cast<double>(a.report.bytes_moved.at("hbm"));
  const double twice = static_cast<double>(c.report.bytes_moved.at("hbm"));
  EXPECT_NEAR(twice - once, x_bytes + 2 * sum_bytes, 0.01 * x_bytes);
  // Unfused, sq's two reads of x and its write and read come on top.
  EXPECT_NEAR(static_cast<double>(b.report.bytes_moved.at("hbm")) - once, 4 * x_bytes,
              0.01 * x_bytes);
  EXPECT_LT(a.report.cycles, c.report.cycles);
}

// A fused value read by a copy (an Expand whose result a Transpose reads): no DMA can address it,
// so the copy is a vector-unit pass. The broadcast tensor is larger than VMEM, which a DMA from
// on-chip memory would overrun.
ir::Graph fused_value_into_a_copy(int64_t n, int64_t c, int64_t hw) {
  ir::Graph g("fused_copy");
  auto s = g.add_input("s", ir::DType::f32, ir::Shape({1, c, 1, 1}));
  auto squared = g.add_node(OpType::Mul, "squared", {s, s})[0];
  ir::HostTensor shape(ir::DType::i64, ir::Shape({4}));
  const int64_t dims[4] = {n, c, hw, hw};
  std::memcpy(shape.raw(), dims, sizeof dims);
  auto e = g.add_node(OpType::Expand, "expand", {squared, g.add_constant("shape", shape)})[0];
  g.add_output(
      g.add_node(OpType::Transpose, "t", {e}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}})[0]);
  return g;
}

TEST(TpuLoopFusion, FusedValueReadByACopyMovesThroughTheVectorUnit) {
  ir::Graph small = fused_value_into_a_copy(2, 8, 5);
  auto cpu = tpu_test::run(small, "cpu").outputs.at(0);
  auto tpu = tpu_test::run(small, "tpu-emu:v4").outputs.at(0);
  EXPECT_TRUE(bitwise_equal(cpu, tpu));
  CompileOptions timing;
  timing.timing_only = true;
  EXPECT_GT(tpu_test::run(fused_value_into_a_copy(64, 64, 56), "tpu-emu:v4", timing).report.cycles,
            0u);
}

std::shared_ptr<nn::Sequential> bn_cnn() {
  auto m = std::make_shared<nn::Sequential>();
  m->push_back(std::make_shared<nn::Conv2d>(3, 16, 3, 1, 1, 1, false, "NCHW", 1, nn::Init{1}));
  m->push_back(std::make_shared<nn::BatchNorm2d>(16));
  m->push_back(std::make_shared<nn::ReLU>());
  m->push_back(std::make_shared<nn::Flatten>());
  m->push_back(std::make_shared<nn::Linear>(16 * 12 * 12, 10, true, nn::Init{3}));
  return m;
}

// A train step with BatchNorm in training mode: the same losses, parameters and running statistics
// with and without loop fusion, in fewer cycles and no more HBM with it.
TEST(TpuLoopFusion, TrainStepIsBitwiseTheSameAndFaster) {
  ir::HostTensor x = tpu_test::random_tensor(ir::Shape({8, 3, 12, 12}), 11);
  ir::HostTensor y(ir::DType::i64, ir::Shape({8}));
  for (int64_t i = 0; i < 8; ++i) y.data<int64_t>()[i] = i % 10;
  auto train = [&](bool on, double* cycles, double* peak) {
    TrainOptions o;
    o.optimizer.kind = OptimizerKind::sgd;
    o.optimizer.momentum = 0.9;
    o.compile = fusion(on);
    auto model = bn_cnn();
    TrainStep step(*model, ir::TensorType{ir::DType::f32, x.shape()}, Device("tpu-emu:v4"), o);
    std::vector<float> losses;
    for (int s = 0; s < 2; ++s) losses.push_back(step.step(x, y));
    *cycles = static_cast<double>(step.last_report().cycles);
    *peak = step.executable().compile_report().metrics.at("memory.peak_bytes");
    return std::make_pair(losses, step.state_dict());
  };
  double fused_cycles, unfused_cycles, fused_peak, unfused_peak;
  auto [fused_losses, fused_state] = train(true, &fused_cycles, &fused_peak);
  auto [unfused_losses, unfused_state] = train(false, &unfused_cycles, &unfused_peak);
  EXPECT_EQ(fused_losses, unfused_losses);
  ASSERT_EQ(fused_state.size(), unfused_state.size());
  for (size_t i = 0; i < fused_state.size(); ++i) {
    EXPECT_EQ(fused_state[i].first, unfused_state[i].first);
    EXPECT_TRUE(bitwise_equal(fused_state[i].second, unfused_state[i].second))
        << fused_state[i].first;
  }
  EXPECT_LT(fused_cycles, unfused_cycles);
  EXPECT_LE(fused_peak, unfused_peak);
}

// A transformer encoder layer's train step (attention's softmax, LayerNorm, GELU: their gradients
// read values after reductions of them, so loop fusion copies cheap producers into the late readers
// and writes the others back): the same losses and parameters as the unfused program, bit for bit.
TEST(TpuLoopFusion, TransformerTrainStepWithLateReadsIsBitwiseTheSame) {
  ir::HostTensor x = tpu_test::random_tensor(ir::Shape({4, 16, 64}), 13);
  ir::HostTensor y = tpu_test::random_tensor(ir::Shape({4, 16, 64}), 14);
  auto train = [&](bool on, double* duplicated, double* written) {
    TrainOptions o;
    o.loss.kind = LossKind::mse;
    o.optimizer = {OptimizerKind::adamw, 1e-3};
    o.compile = fusion(on);
    auto model = std::make_shared<nn::TransformerEncoderLayer>(64, 4, 128, nn::Init{5});
    TrainStep step(*model, ir::TensorType{ir::DType::f32, x.shape()}, Device("tpu-emu:v4"), o);
    const auto& m = step.executable().compile_report().metrics;
    *duplicated = m.count("late_reads_duplicated") ? m.at("late_reads_duplicated") : 0;
    *written = m.count("late_read_values_written_back") ? m.at("late_read_values_written_back") : 0;
    std::vector<float> losses;
    for (int s = 0; s < 2; ++s) losses.push_back(step.step(x, y));
    return std::make_pair(losses, step.state_dict());
  };
  double duplicated = 0, written = 0, unused = 0;
  auto [fused_losses, fused_state] = train(true, &duplicated, &written);
  auto [unfused_losses, unfused_state] = train(false, &unused, &unused);
  EXPECT_GT(duplicated, 0);
  EXPECT_GT(written, 0);
  EXPECT_EQ(fused_losses, unfused_losses);
  ASSERT_EQ(fused_state.size(), unfused_state.size());
  for (size_t i = 0; i < fused_state.size(); ++i)
    EXPECT_TRUE(bitwise_equal(fused_state[i].second, unfused_state[i].second))
        << fused_state[i].first;
}

// Two convolutions with BatchNorm and ReLU, then global average pooling and a classifier, written
// channels-first as a PyTorch CNN is.
std::shared_ptr<nn::Sequential> bn_gap_cnn() {
  auto m = std::make_shared<nn::Sequential>();
  m->push_back(std::make_shared<nn::Conv2d>(3, 16, 3, 1, 1, 1, false, "NCHW", 1, nn::Init{1}));
  m->push_back(std::make_shared<nn::BatchNorm2d>(16));
  m->push_back(std::make_shared<nn::ReLU>());
  m->push_back(std::make_shared<nn::Conv2d>(16, 16, 3, 1, 1, 1, false, "NCHW", 1, nn::Init{2}));
  m->push_back(std::make_shared<nn::BatchNorm2d>(16));
  m->push_back(std::make_shared<nn::ReLU>());
  m->push_back(std::make_shared<nn::GlobalAvgPool>());
  m->push_back(std::make_shared<nn::Flatten>());
  m->push_back(std::make_shared<nn::Linear>(16, 10, true, nn::Init{3}));
  return m;
}

// The forward pass's centered and normalized copies of each BatchNorm input are recomputed by the
// backward pass from the saved convolution output, as XLA duplicates cheap producers into the
// backward fusions, and leave the saved activations (rematerialize.h); the step's numbers stay
// those of the unfused program.
TEST(TpuLoopFusion, BackwardRecomputesCheapValuesInsteadOfSavingThem) {
  ir::HostTensor x = tpu_test::random_tensor(ir::Shape({8, 3, 12, 12}), 11);
  ir::HostTensor y(ir::DType::i64, ir::Shape({8}));
  for (int64_t i = 0; i < 8; ++i) y.data<int64_t>()[i] = i % 10;
  struct Result {
    std::vector<float> losses;
    double recomputed, saved;
  };
  auto train = [&](bool on) {
    TrainOptions o;
    o.compile = fusion(on);
    auto model = bn_gap_cnn();
    TrainStep step(*model, ir::TensorType{ir::DType::f32, x.shape()}, Device("tpu-emu:v4"), o);
    const auto& m = step.executable().compile_report().metrics;
    Result r{{}, m.at("rematerialized_values"), m.at("memory.saved_activations_bytes")};
    for (int s = 0; s < 2; ++s) r.losses.push_back(step.step(x, y));
    return r;
  };
  const Result on = train(true), off = train(false);
  EXPECT_EQ(on.losses, off.losses);
  EXPECT_GE(on.recomputed, 6);  // per BatchNorm: x - mean, times inv_std, times gamma plus beta
  EXPECT_EQ(off.recomputed, 0);
  // Each recomputed [8, 16, 12, 12] value stops being saved: 8 * 12 rows of 12 positions x 16
  // channels (channels-last after layout assignment), tiled (16, 128) in f32. Per BatchNorm, the
  // backward pass reads the centered and the normalized input (its closed-form gradient): both
  // are recomputed, the convolution output saved in their place. (ReLU's gradient reads ReLU's
  // output, saved anyway as the next layer's input.)
  const double one = 8.0 * 12 * 16 * 128 * 4;
  EXPECT_LE(on.saved, off.saved - one)
      << "saved with recomputation " << on.saved << " B, without " << off.saved;
}

TEST(TpuLoopFusion, BadOptionValueIsAOneLineError) {
  CompileOptions o;
  o.options["loop_fusion"] = "maybe";
  try {
    compile(tpu_test::mlp_graph(8, 128, 1), Device("tpu-emu:v4"), o);
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "tpu-emu: option loop_fusion=maybe (expected true or false)");
  }
}

}  // namespace
}  // namespace mimic
