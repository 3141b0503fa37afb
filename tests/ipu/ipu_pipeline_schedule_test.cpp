// Pipeline schedules of a pipelined training step on ipu-emu (ipu_options.h: PipelineSchedule,
// after IPU TensorFlow's grouped, interleaved and sequential): the pipeline cycles of each, the
// micro-batches each IPU stashes, how the IPUs' passes overlap in the timeline, the pipeline
// depth each schedule accepts, and the choice of micro-batches when none is given.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "frontend/api/train.h"

namespace mimic {
namespace {

using ir::DType;
using ir::Shape;

constexpr int64_t kPipelineClasses = 10;

// Four 3x3 convolutions (16 channels, 16x16) with ReLUs, pooled into a linear layer: two
// pipeline stages of two convolutions each, whose ReLU outputs the backward pass reads.
std::shared_ptr<nn::Sequential> conv_net() {
  auto m = std::make_shared<nn::Sequential>();
  for (int i = 0; i < 4; ++i) {
    m->push_back(std::make_shared<nn::Conv2d>(i ? 16 : 3, 16, 3, 1, 1, 1, true, "NCHW", 1,
                                              nn::Init{uint64_t(i + 1)}));
    m->push_back(std::make_shared<nn::ReLU>());
  }
  m->push_back(std::make_shared<nn::GlobalAvgPool>());
  m->push_back(std::make_shared<nn::Flatten>());
  m->push_back(std::make_shared<nn::Linear>(16, kPipelineClasses, true, nn::Init{9}));
  return m;
}

TrainStep pipelined_step(std::map<std::string, std::string> opts, int64_t batch = 16,
                         bool compile_only = true) {
  TrainOptions o;
  o.optimizer = {OptimizerKind::sgd, 0.05, 0.9};
  opts.emplace("num_ipus", "2");
  o.compile.options = std::move(opts);
  o.compile.compile_only = compile_only;
  o.compile.timing_only = !compile_only;
  auto net = conv_net();
  return TrainStep(*net, ir::TensorType{DType::f32, Shape({batch, 3, 16, 16})},
                   Device("ipu-emu:gc200"), o);
}

double metric(const TrainStep& s, const std::string& key) {
  return s.executable().compile_report().metrics.at(key);
}

// Bytes each IPU stashes for its backward pass, over all its tiles.
std::vector<double> stashed_per_ipu(const TrainStep& s) {
  return {metric(s, "stashed_bytes.ipu0"), metric(s, "stashed_bytes.ipu1")};
}

std::map<std::string, std::string> schedule(const char* name, const char* micro = "4") {
  return {{"pipeline_schedule", name}, {"gradient_accumulation", micro}};
}

TEST(IpuPipelineSchedule, CyclesAndStashedMicroBatchesFollowTheSchedule) {
  // S = 2 stages, M = 4 micro-batches: grouped M + 2S - 1 cycles, interleaved 2M + 2S - 2,
  // sequential 2S x M.
  TrainStep grouped = pipelined_step(schedule("grouped"));
  TrainStep interleaved = pipelined_step(schedule("interleaved"));
  TrainStep sequential = pipelined_step(schedule("sequential"));
  EXPECT_EQ(metric(grouped, "pipeline_cycles"), 7);
  EXPECT_EQ(metric(interleaved, "pipeline_cycles"), 10);
  EXPECT_EQ(metric(sequential, "pipeline_cycles"), 16);
  // IPU 0's backward pass (stage 3) runs 3 cycles after its forward pass (stage 0), and a cycle
  // runs backward passes first: grouped stashes 3 micro-batches (one enters every cycle),
  // interleaved 2 (every other cycle), sequential 1. IPU 1's are consecutive stages: 1 each.
  std::vector<double> g = stashed_per_ipu(grouped), i = stashed_per_ipu(interleaved),
                      q = stashed_per_ipu(sequential);
  ASSERT_GT(q[0], 0);
  ASSERT_GT(q[1], 0);
  EXPECT_DOUBLE_EQ(g[0], 3 * q[0]);
  EXPECT_DOUBLE_EQ(i[0], 2 * q[0]);
  EXPECT_DOUBLE_EQ(g[1], q[1]);
  EXPECT_DOUBLE_EQ(i[1], q[1]);
  EXPECT_GT(metric(grouped, "memory.peak_bytes"), metric(sequential, "memory.peak_bytes"));
}

// Compute intervals [start, end) of each IPU's forward and backward passes in a step's superstep
// table (ipu, step, op, start, sync, exchange, compute): op supersteps before the IPU's last
// boundary superstep (op -1), after which the update runs.
std::vector<std::vector<std::pair<double, double>>> compute_intervals(
    const backends::RunReport& r) {
  const auto& rows = r.tables.at("ipu_supersteps").rows;
  double last_boundary[2] = {0, 0};
  for (const auto& row : rows)
    if (row[0] <= 1 && row[2] < 0) last_boundary[size_t(row[0])] = row[3];
  std::vector<std::vector<std::pair<double, double>>> out(2);
  for (const auto& row : rows) {
    if (row[0] > 1 || row[2] < 0 || row[6] == 0 || row[3] > last_boundary[size_t(row[0])]) continue;
    double start = row[3] + row[4] + row[5];
    out[size_t(row[0])].push_back({start, start + row[6]});
  }
  return out;
}

bool ipus_overlap(const backends::RunReport& r) {
  auto iv = compute_intervals(r);
  for (const auto& a : iv[0])
    for (const auto& b : iv[1])
      if (a.first < b.second && b.first < a.second) return true;
  return false;
}

TEST(IpuPipelineSchedule, TheTimelineShowsHowEachScheduleOverlapsTheIpus) {
  ir::HostTensor x(DType::f32, Shape({16, 3, 16, 16})), y(DType::i64, Shape({16}));
  std::map<std::string, uint64_t> cycles;
  for (const char* name : {"grouped", "interleaved", "sequential"}) {
    TrainStep s = pipelined_step(schedule(name), 16, false);
    s.step(x, y);
    cycles[name] = s.last_report().cycles;
    // Sequential runs one stage of the system at a time; the others overlap the IPUs' passes.
    EXPECT_EQ(ipus_overlap(s.last_report()), std::string(name) != "sequential") << name;
  }
  // A backward pass is about twice a forward pass: interleaved cycles pair a forward pass on one
  // IPU with a backward pass on the other and wait on it; grouped ones run both on each IPU.
  EXPECT_LT(cycles["grouped"], cycles["interleaved"]);
  EXPECT_LT(cycles["interleaved"], cycles["sequential"]);
}

std::string error_of(std::map<std::string, std::string> opts, int64_t batch = 16) {
  try {
    pipelined_step(std::move(opts), batch);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(IpuPipelineSchedule, EachScheduleChecksItsPipelineDepth) {
  EXPECT_EQ(error_of(schedule("grouped", "2")),
            "ipu-emu: pipeline_schedule=grouped over 2 stages needs at least 3 micro-batches per "
            "step to fill the training pipeline (2 x stages - 1, PopART's pipeline depth), got 2; "
            "set gradient_accumulation (or a batch that allows it)");
  EXPECT_EQ(error_of({{"pipeline_schedule", "interleaved"}, {"micro_batches", "3"}}, 12),
            "ipu-emu: pipeline_schedule=interleaved over 2 stages runs micro-batches in groups of "
            "2 (IPU TensorFlow: a multiple of the stages), got 3; set micro_batches (or a batch "
            "that allows it)");
  EXPECT_EQ(error_of({{"pipeline_schedule", "gpipe"}}),
            "ipu-emu: option pipeline_schedule=gpipe must be grouped, interleaved or sequential");
  EXPECT_EQ(error_of(schedule("sequential", "1")), "");
  // A batch of 2 per step cannot fill a grouped training pipeline over 2 IPUs.
  EXPECT_EQ(error_of({}, 2),
            "ipu-emu: no micro-batch count divides the batch per replica (2) and fills the "
            "pipeline: pipeline_schedule=grouped over 2 stages needs at least 3 micro-batches per "
            "step to fill the training pipeline (2 x stages - 1, PopART's pipeline depth), got 2");
}

TEST(IpuPipelineSchedule, DefaultMicroBatchesFillTheSchedule) {
  // Batch 6 over 2 stages: grouped takes 3 (4 does not divide 6), interleaved 2 (a multiple of
  // the stages), sequential 3 (the largest divisor up to 2 x stages).
  EXPECT_EQ(metric(pipelined_step({{"pipeline_schedule", "grouped"}}, 6), "micro_batches"), 3);
  EXPECT_EQ(metric(pipelined_step({{"pipeline_schedule", "interleaved"}}, 6), "micro_batches"), 2);
  EXPECT_EQ(metric(pipelined_step({{"pipeline_schedule", "sequential"}}, 6), "micro_batches"), 3);
  // Batch 10: grouped and sequential 2 x stages does not divide it: 2 is too few for grouped,
  // so it takes 5, the smallest divisor above.
  EXPECT_EQ(metric(pipelined_step({}, 10), "micro_batches"), 5);
}

}  // namespace
}  // namespace mimic
