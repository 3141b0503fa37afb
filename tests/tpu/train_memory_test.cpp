// tpu-emu training memory and time: the HBM plan of a train step by category (checked against the
// parameters' sizes), XLA's out-of-memory error naming the category that overflows, recomputation
// making the same configuration fit at the price of backward cycles, and data parallelism
// (option replicas) with the gradient all-reduce over ICI priced from the preset's link figures.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include "base/error.h"
#include "frontend/api/nn.h"
#include "frontend/api/trace.h"
#include "frontend/api/train.h"
#include "models/tpu/tpu_spec.h"
#include "tpu_test_util.h"
#include "traces/trace_reader.h"

namespace mimic {
namespace {

constexpr int64_t kBatch = 1024, kWidth = 512, kHidden = 4, kClasses = 128;

// kHidden layers Linear(512, 512) + GELU, then Linear(512, 128): every weight is a whole number of
// (8, 128) f32 tiles, each bias [n] one tile row (padded to [8, n]). GELU's gradient reads its
// input, so the step saves both sides of every activation (ReLU's reads its output, the next
// layer's input, which leaves nothing for recomputation to drop).
std::shared_ptr<nn::Sequential> mlp() {
  auto m = std::make_shared<nn::Sequential>();
  for (int l = 0; l < kHidden; ++l) {
    m->push_back(std::make_shared<nn::Linear>(kWidth, kWidth, true, nn::Init{uint64_t(l + 1)}));
    m->push_back(std::make_shared<nn::GELU>());
  }
  m->push_back(std::make_shared<nn::Linear>(kWidth, kClasses, true, nn::Init{9}));
  return m;
}

// Parameters as the plan counts them: (8, 128)-tiled f32.
int64_t tiled_parameter_bytes() {
  int64_t hidden = kWidth * kWidth * 4 + 8 * kWidth * 4;
  return kHidden * hidden + kWidth * kClasses * 4 + 8 * kClasses * 4;
}
// Parameters as the all-reduce moves them: dense f32.
int64_t dense_parameter_bytes() {
  return (kHidden * (kWidth * kWidth + kWidth) + kWidth * kClasses + kClasses) * 4;
}

TrainOptions train_options(Recompute recompute, std::map<std::string, std::string> options = {},
                           std::map<std::string, std::string> overrides = {}) {
  TrainOptions o;
  o.optimizer.kind = OptimizerKind::sgd;
  o.optimizer.momentum = 0.9;  // one optimizer-state slot per parameter
  o.recompute = recompute;
  o.compile.options = std::move(options);
  o.compile.overrides = std::move(overrides);
  return o;
}

ir::TensorType input_type() {
  return {ir::DType::f32, ir::Shape({kBatch, kWidth})};
}

// The compile report of the step (compile only).
backends::CompileReport plan(const std::string& device, TrainOptions o) {
  o.compile.compile_only = true;
  auto model = mlp();
  TrainStep step(*model, input_type(), Device(device), o);
  return step.executable().compile_report();
}

// One timing-only step's run report.
backends::RunReport timed_step(const std::string& device, TrainOptions o) {
  o.compile.timing_only = true;
  auto model = mlp();
  TrainStep step(*model, input_type(), Device(device), o);
  ir::HostTensor x(ir::DType::f32, ir::Shape({kBatch, kWidth}));
  ir::HostTensor y(ir::DType::i64, ir::Shape({kBatch}));
  step.step(x, y);
  return step.last_report();
}

double metric(const std::map<std::string, double>& m, const std::string& key) {
  auto it = m.find(key);
  EXPECT_NE(it, m.end()) << key;
  return it == m.end() ? -1 : it->second;
}

// The categories at the peak add up to the peak; parameters and their one momentum slot are
// counted whole, at their tiled sizes.
void expect_consistent_plan(const std::map<std::string, double>& m) {
  double sum = 0;
  for (const auto& [key, value] : m)
    if (key.rfind("memory.", 0) == 0 && key != "memory.peak_bytes" &&
        key != "memory.capacity_bytes")
      sum += value;
  EXPECT_EQ(sum, metric(m, "memory.peak_bytes"));
  EXPECT_EQ(metric(m, "memory.weights_bytes"), tiled_parameter_bytes());
  EXPECT_EQ(metric(m, "memory.optimizer_state_bytes"), tiled_parameter_bytes());
}

TEST(TpuTrainMemory, PlanBreaksTheStepDownByCategory) {
  backends::CompileReport r = plan("tpu-emu:v4", train_options(Recompute::none));
  expect_consistent_plan(r.metrics);
  EXPECT_EQ(metric(r.metrics, "memory.capacity_bytes"), 32.0 * (1 << 30));  // v4: 32 GiB HBM
  // The step's input batch: [1024, 512] f32 plus the i64 labels (an f32-wide row of 1024).
  EXPECT_GE(metric(r.metrics, "memory.inputs_bytes"), kBatch * kWidth * 4);
  // Forward activations the backward pass reads: at least each hidden layer's [1024, 512] input.
  EXPECT_GE(metric(r.metrics, "memory.saved_activations_bytes"), kHidden * kBatch * kWidth * 4);
}

TEST(TpuTrainMemory, OutOfMemoryNamesSavedActivationsAndRecomputationFits) {
  TrainOptions allow = train_options(Recompute::none, {{"allow_out_of_memory", "true"}});
  double none = metric(plan("tpu-emu:v4", allow).metrics, "memory.peak_bytes");
  // Per-layer rematerialization: the matrix products' outputs are kept, the GELUs recomputed.
  allow.recompute = Recompute::checkpoints;
  backends::CompileReport remat_plan = plan("tpu-emu:v4", allow);
  double remat = metric(remat_plan.metrics, "memory.peak_bytes");
  ASSERT_LT(remat, none);
  expect_consistent_plan(remat_plan.metrics);
  // An HBM between the two peaks: the step without recomputation overflows, by the difference.
  const auto capacity = static_cast<uint64_t>((none + remat) / 2) / 512 * 512;
  const std::map<std::string, std::string> hbm = {{"offchip.bytes", std::to_string(capacity)}};
  try {
    plan("tpu-emu:v4", train_options(Recompute::none, {}, hbm));
    FAIL() << "expected an out-of-memory error";
  } catch (const OutOfMemoryError& e) {
    std::string what = e.what();
    EXPECT_EQ(e.bytes_used(), static_cast<int64_t>(none));
    EXPECT_EQ(e.bytes_available(), static_cast<int64_t>(capacity));
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_EQ(
        what.rfind("RESOURCE_EXHAUSTED: tpu-emu:v4: Ran out of memory in memory space hbm.", 0), 0u)
        << what;
    EXPECT_NE(what.find(fmt::format("({} of {} bytes)", int64_t(none), capacity)),
              std::string::npos)
        << what;
    // The breakdown lists the largest category first: the activations kept for the backward.
    EXPECT_NE(what.find("Breakdown: saved_activations "), std::string::npos) << what;
    EXPECT_NE(what.find("Largest live tensors: 1. f32[1024,512]"), std::string::npos) << what;
  }
  // With allow_out_of_memory the step compiles, reports its plan and refuses to run.
  {
    TrainOptions o = train_options(Recompute::none, {{"allow_out_of_memory", "true"}}, hbm);
    o.compile.timing_only = true;
    auto model = mlp();
    TrainStep step(*model, input_type(), Device("tpu-emu:v4"), o);
    EXPECT_EQ(metric(step.executable().compile_report().metrics, "memory.peak_bytes"), none);
    EXPECT_THROW(step.step(ir::HostTensor(ir::DType::f32, ir::Shape({kBatch, kWidth})),
                           ir::HostTensor(ir::DType::i64, ir::Shape({kBatch}))),
                 OutOfMemoryError);
  }
  backends::CompileReport fits = plan("tpu-emu:v4", train_options(Recompute::checkpoints, {}, hbm));
  EXPECT_EQ(metric(fits.metrics, "memory.peak_bytes"), remat);
  EXPECT_LE(metric(fits.metrics, "memory.peak_bytes"), capacity);
}

// activation_dtype=bf16: the values the passes compute are stored in bf16, so the saved
// activations take half the bytes and the step moves less; parameters and their optimizer state
// stay f32, and the loss follows the f32 step's within bf16 rounding.
TEST(TpuTrainMemory, Bf16ActivationsHalveTheSavedBytes) {
  backends::CompileReport f32 = plan("tpu-emu:v4", train_options(Recompute::none));
  backends::CompileReport bf16 =
      plan("tpu-emu:v4", train_options(Recompute::none, {{"activation_dtype", "bf16"}}));
  expect_consistent_plan(bf16.metrics);
  EXPECT_EQ(metric(bf16.metrics, "memory.saved_activations_bytes"),
            metric(f32.metrics, "memory.saved_activations_bytes") / 2);
  EXPECT_LT(timed_step("tpu-emu:v4", train_options(Recompute::none, {{"activation_dtype", "bf16"}}))
                .device_seconds,
            timed_step("tpu-emu:v4", train_options(Recompute::none)).device_seconds);
  ir::HostTensor x = tpu_test::random_tensor(ir::Shape({64, kWidth}), 3);
  ir::HostTensor y(ir::DType::i64, ir::Shape({64}));
  for (int64_t i = 0; i < 64; ++i) y.data<int64_t>()[i] = i % kClasses;
  auto loss = [&](const std::string& dtype) {
    auto model = mlp();
    TrainStep step(*model, ir::TensorType{ir::DType::f32, x.shape()}, Device("tpu-emu:v4"),
                   train_options(Recompute::none, {{"activation_dtype", dtype}}));
    step.step(x, y);
    return step.step(x, y);
  };
  const float full = loss("f32"), half = loss("bf16");
  EXPECT_NE(full, half);
  EXPECT_NEAR(half, full, 1e-2 * std::fabs(full));
  try {
    plan("tpu-emu:v4", train_options(Recompute::none, {{"activation_dtype", "f16"}}));
    FAIL() << "expected an error";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "tpu-emu: option activation_dtype=f16 (expected f32 or bf16)");
  }
}

TEST(TpuTrainMemory, RecomputationPaysInBackwardCycles) {
  backends::RunReport none = timed_step("tpu-emu:v4", train_options(Recompute::none));
  backends::RunReport full = timed_step("tpu-emu:v4", train_options(Recompute::checkpoints));
  EXPECT_GT(full.cycles, none.cycles);
  EXPECT_GT(metric(full.metrics, "phase.backward_cycles"),
            metric(none.metrics, "phase.backward_cycles"));
  // The forward pass does the same work, and no more: with nothing saved for the backward pass,
  // loop fusion keeps more of its intermediates on chip (loop_fusion.h), as XLA's does.
  EXPECT_LE(metric(full.metrics, "phase.forward_cycles"),
            1.05 * metric(none.metrics, "phase.forward_cycles"));
  for (const char* phase : {"forward", "loss", "backward", "update"})
    EXPECT_GT(metric(none.metrics, std::string("phase.") + phase + "_cycles"), 0) << phase;
  EXPECT_EQ(metric(none.metrics, "phase.allreduce_cycles"), 0);
  double phases = 0;  // with the host transfers ("other"), the phases add up to the step
  for (const auto& [key, value] : none.metrics)
    if (key.rfind("phase.", 0) == 0) phases += value;
  EXPECT_EQ(phases, static_cast<double>(none.cycles));
  // The run report carries the compile-time HBM plan.
  EXPECT_LT(metric(full.metrics, "memory.peak_bytes"), metric(none.metrics, "memory.peak_bytes"));
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "(no InvalidArgument)";
}

TEST(TpuTrainMemory, ReplicasBeyondTheSliceAreOneLineErrors) {
  auto with = [](const std::string& device, const std::string& replicas,
                 std::map<std::string, std::string> overrides = {}) {
    return error_of([&] {
      plan(device, train_options(Recompute::none, {{"replicas", replicas}}, overrides));
    });
  };
  std::string zero = with("tpu-emu:v4", "0");
  EXPECT_NE(zero.find("option replicas=0: needs at least 1 replica"), std::string::npos) << zero;
  std::string v4 = with("tpu-emu:v4", "2");
  EXPECT_NE(v4.find("replicas=2 exceeds the 1 replica device of tpu-emu:v4 (1 chip x 1 device"),
            std::string::npos)
      << v4;
  std::string v3 = with("tpu-emu:v3", "3");
  EXPECT_NE(v3.find("exceeds the 2 replica devices of tpu-emu:v3 (1 chip x 2 cores"),
            std::string::npos)
      << v3;
  std::string slice = with("tpu-emu:v4", "9", {{"chips", "8"}});
  EXPECT_NE(slice.find("exceeds the 8 replica devices"), std::string::npos) << slice;
  std::string word = with("tpu-emu:v4", "two");
  EXPECT_NE(word.find("replicas=two is not an integer"), std::string::npos) << word;
  for (const std::string& e : {zero, v4, v3, slice, word})
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

// Ring all-reduce of `bytes` over `n` v4 replicas: 2 (n - 1) / n x bytes over both directions of
// 45 GB/s links at 1.05 GHz, plus 2 (n - 1) hops of 1050 cycles.
double v4_ring_cycles(double bytes, int n) {
  return std::round(2.0 * (n - 1) / n * bytes / (2 * 45e9) * 1.05e9) + 2 * (n - 1) * 1050;
}

TEST(TpuTrainMemory, DataParallelStepAllReducesGradientsOverIci) {
  const std::map<std::string, std::string> slice = {{"chips", "4"}};
  backends::CompileReport r =
      plan("tpu-emu:v4", train_options(Recompute::none, {{"replicas", "4"}}, slice));
  EXPECT_EQ(metric(r.metrics, "replicas"), 4);
  EXPECT_EQ(metric(r.metrics, "allreduce.gradient_bytes"), dense_parameter_bytes());
  EXPECT_EQ(metric(r.metrics, "allreduce.ring_cycles"), v4_ring_cycles(dense_parameter_bytes(), 4));

  backends::RunReport one = timed_step("tpu-emu:v4", train_options(Recompute::none, {}, slice));
  backends::RunReport four =
      timed_step("tpu-emu:v4", train_options(Recompute::none, {{"replicas", "4"}}, slice));
  // Under 32 MiB of gradients: one bucket, started when the last gradient is computed.
  EXPECT_EQ(metric(four.metrics, "allreduce.buckets"), 1);
  EXPECT_EQ(metric(four.metrics, "allreduce.total_cycles"),
            metric(r.metrics, "allreduce.ring_cycles"));
  double exposed = metric(four.metrics, "phase.allreduce_cycles");
  EXPECT_GT(exposed, 0);
  EXPECT_LE(exposed, metric(four.metrics, "allreduce.total_cycles"));
  EXPECT_EQ(four.cycles, one.cycles + static_cast<uint64_t>(exposed));
  EXPECT_EQ(metric(four.metrics, "train.batches_per_step"), 4);  // samples: 4 x the batch
  EXPECT_EQ(metric(four.metrics, "phase.backward_cycles"),
            metric(one.metrics, "phase.backward_cycles"));
}

// The all-reduce is a phase of the trace: its buckets are ops on the ICI track, and the update
// that waits for them starts after them.
TEST(TpuTrainMemory, TraceShowsTheAllReducePhase) {
  TrainOptions o = train_options(Recompute::none, {{"replicas", "4"}}, {{"chips", "4"}});
  o.compile.timing_only = true;
  auto model = mlp();
  TrainStep step(*model, input_type(), Device("tpu-emu:v4"), o);
  std::string path = ::testing::TempDir() + "mimic_tpu_allreduce_trace.db";
  std::remove(path.c_str());
  std::vector<int64_t> runs;
  {
    TraceScope trace(path);
    step.step(ir::HostTensor(ir::DType::f32, ir::Shape({kBatch, kWidth})),
              ir::HostTensor(ir::DType::i64, ir::Shape({kBatch})));
    runs = trace.run_ids();
    trace.close();
  }
  ASSERT_EQ(runs.size(), 1u);
  traces::TraceReader r(path);
  std::map<std::string, traces::PhaseRecord> phases;
  for (const traces::PhaseRecord& p : r.phases(runs[0])) phases[p.phase] = p;
  ASSERT_EQ(phases.count("allreduce"), 1u);
  EXPECT_EQ(phases["allreduce"].ops, 1);  // one bucket
  const double ns = metric(step.last_report().metrics, "allreduce.total_cycles") / 1.05;
  EXPECT_NEAR(phases["allreduce"].total_ns, ns, 1.0);
  auto rows = r.query(fmt::format(
      "SELECT COUNT(*) FROM op_phase WHERE run_id = {} AND phase = 'allreduce'", runs[0]));
  EXPECT_EQ(rows.at(0).at(0), "1");
}

TEST(TpuTrainMemory, ReplicasOnV3CoresEachHoldHalfTheChipsHbm) {
  backends::CompileReport r =
      plan("tpu-emu:v3", train_options(Recompute::none, {{"replicas", "2"}}));
  EXPECT_EQ(metric(r.metrics, "memory.capacity_bytes"), 16.0 * (1 << 30));
  EXPECT_EQ(metric(r.metrics, "replicas"), 2);
}

}  // namespace
}  // namespace mimic

namespace mimic {
namespace {

std::shared_ptr<nn::Sequential> small_cnn() {
  auto m = std::make_shared<nn::Sequential>();
  m->push_back(std::make_shared<nn::Conv2d>(3, 16, 3, 1, 1, 1, true, "NCHW", 1, nn::Init{1}));
  m->push_back(std::make_shared<nn::BatchNorm2d>(16));
  m->push_back(std::make_shared<nn::ReLU>());
  m->push_back(std::make_shared<nn::Conv2d>(16, 16, 3, 1, 1, 1, true, "NCHW", 1, nn::Init{2}));
  m->push_back(std::make_shared<nn::BatchNorm2d>(16));
  m->push_back(std::make_shared<nn::ReLU>());
  m->push_back(std::make_shared<nn::Flatten>());
  m->push_back(std::make_shared<nn::Linear>(16 * 14 * 14, 10, true, nn::Init{3}));
  return m;
}

backends::CompileReport compile_small_cnn_report(std::map<std::string, std::string> overrides,
                                                 std::map<std::string, std::string> options = {}) {
  TrainOptions o = train_options(Recompute::none, std::move(options), std::move(overrides));
  o.compile.compile_only = true;
  auto model = small_cnn();
  TrainStep step(*model, ir::TensorType{ir::DType::f32, ir::Shape({8, 3, 14, 14})},
                 Device("tpu-emu:v4"), o);
  return step.executable().compile_report();
}

std::map<std::string, double> compile_small_cnn(std::map<std::string, std::string> overrides,
                                                std::map<std::string, std::string> options = {}) {
  return compile_small_cnn_report(std::move(overrides), std::move(options)).metrics;
}

// The plan and the compiled program's allocator count the same bytes: a 3x3 kernel, its gradient,
// its momentum and the optimizer's temporaries over it are stored in the layout that pads least
// (an OIHW [16, 16, 3, 3] kernel in (8, 128) tiles of its last two dimensions would take 113 times
// its size, which made ResNet-18's buffers 10 times its plan).
TEST(TpuTrainMemory, PlanCountsTheCompiledBuffersOfAConvolutionStep) {
  auto m = compile_small_cnn({});
  EXPECT_EQ(metric(m, "hbm.allocated_peak_bytes"), metric(m, "memory.peak_bytes"));
  // Each kernel [16, C, 3, 3] is tiled as [16 * 3, C * 3] or better, never [16 * C, 8 * 128].
  EXPECT_LT(metric(m, "memory.weights_bytes"), 16 * 16 * 8 * 128 * 4);
}

// The optimizer's update of a convolution kernel costs what its bytes cost: a [128, 128, 3, 3]
// kernel updates in about the cycles of a [128, 1152] matrix of the same size (it took 113 times
// as long when each 3 x 3 plane was priced as a padded (8, 128) tile).
TEST(TpuTrainMemory, UpdatingAConvolutionKernelCostsItsSize) {
  auto update_cycles = [](std::shared_ptr<nn::Sequential> m, ir::Shape in) {
    TrainOptions o = train_options(Recompute::none);
    o.compile.timing_only = true;
    TrainStep step(*m, ir::TensorType{ir::DType::f32, in}, Device("tpu-emu:v4"), o);
    ir::HostTensor x(ir::DType::f32, in), y(ir::DType::i64, ir::Shape({2}));
    step.step(x, y);
    return metric(step.last_report().metrics, "phase.update_cycles");
  };
  auto conv = std::make_shared<nn::Sequential>();
  conv->push_back(std::make_shared<nn::Conv2d>(128, 128, 3, 1, 0, 1, true, "NCHW", 1, nn::Init{1}));
  conv->push_back(std::make_shared<nn::Flatten>());
  conv->push_back(std::make_shared<nn::Linear>(128, 10, true, nn::Init{2}));
  auto dense = std::make_shared<nn::Sequential>();
  dense->push_back(std::make_shared<nn::Linear>(128 * 9, 128, true, nn::Init{1}));
  dense->push_back(std::make_shared<nn::Linear>(128, 10, true, nn::Init{2}));
  const double conv_cycles = update_cycles(conv, ir::Shape({2, 128, 3, 3}));
  const double dense_cycles = update_cycles(dense, ir::Shape({2, 128 * 9}));
  EXPECT_GT(conv_cycles, 0);
  EXPECT_LT(conv_cycles, 1.25 * dense_cycles) << conv_cycles << " vs " << dense_cycles;
}

// A CNN step on v4 whose compiled buffers reach further than its plan (fragmentation: the address
// span over the allocated peak): an HBM between the two is a one-line
// RESOURCE_EXHAUSTED naming both at compile time, where it used to compile and then fail inside
// the device with an address error. The step is compiled in the layout it is given (with layout
// assignment, an out-of-memory channels-last program makes the compiler fall back to the given
// layout, whose plan is smaller).
TEST(TpuTrainMemory, BuffersBeyondThePlanAreOutOfMemoryAtCompileTime) {
  const std::map<std::string, std::string> as_given{{"layout", "as_given"}};
  auto m = compile_small_cnn({}, as_given);
  const double peak = metric(m, "memory.peak_bytes");
  const double span = metric(m, "hbm.address_span_bytes");
  EXPECT_GE(metric(m, "hbm.allocated_peak_bytes"), peak);
  EXPECT_GE(span, metric(m, "hbm.allocated_peak_bytes"));
  if (span <= peak + 512) GTEST_SKIP() << "the buffers fit the plan here: " << span << " " << peak;
  const auto capacity = static_cast<uint64_t>((peak + span) / 2) / 512 * 512;
  try {
    compile_small_cnn({{"offchip.bytes", std::to_string(capacity)}}, as_given);
    FAIL() << "expected an out-of-memory error";
  } catch (const OutOfMemoryError& e) {
    std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_NE(what.find("the compiled program's buffers hold up to"), std::string::npos) << what;
    EXPECT_NE(what.find(fmt::format("of {} bytes", capacity)), std::string::npos) << what;
    EXPECT_GT(e.bytes_used(), static_cast<int64_t>(capacity));
  }
}

}  // namespace
}  // namespace mimic
