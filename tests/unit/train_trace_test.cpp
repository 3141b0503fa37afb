// Traces of training steps: every step is a run whose ops carry their phase (forward, backward,
// update) by node name; TraceReader::phases(), the op_phase / phase_summary views (schema v3) and
// the node names the training graph gives agree, on cpu and on tpu-emu:v4.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <algorithm>
#include <cstdio>

#include <map>

#include "frontend/api/random.h"
#include "frontend/api/trace.h"
#include "frontend/api/train.h"
#include "traces/trace_reader.h"

namespace mimic {
namespace {

using ir::DType;
using ir::Shape;

void check_phases(const std::string& device) {
  nn::Sequential model;
  model.push_back(std::make_shared<nn::Linear>(12, 16, true, nn::Init{1}));
  model.push_back(std::make_shared<nn::ReLU>());
  model.push_back(std::make_shared<nn::Linear>(16, 5, true, nn::Init{2}));
  TrainOptions o;
  o.optimizer = {OptimizerKind::adamw, 1e-3};
  o.loss_scale.mode = LossScaleMode::fixed;
  ir::TensorType in{DType::f32, Shape({8, 12})};
  TrainStep step(model, in, Device(device), o);
  ir::HostTensor x = Random(1).tensor(DType::f32, in.shape);
  ir::HostTensor y = Random(2).tensor(DType::i64, Shape({8}), 5);
  // One file per device: CTest runs the two cases at once, in two processes.
  std::string file = "mimic_train_trace_" + device + ".db";
  std::replace(file.begin(), file.end(), ':', '_');
  std::string path = ::testing::TempDir() + file;
  std::remove(path.c_str());
  std::vector<int64_t> runs;
  {
    TraceScope trace(path);
    step.step(x, y);
    step.step(x, y);
    runs = trace.run_ids();
    trace.close();
  }
  ASSERT_EQ(runs.size(), 2u);
  traces::TraceReader r(path);
  std::vector<traces::PhaseRecord> phases = r.phases(runs[1]);
  ASSERT_EQ(phases.size(), 3u) << device;
  std::map<std::string, double> sql;
  for (const auto& row : r.query(fmt::format(
           "SELECT phase, SUM(time_ns), COUNT(*) FROM op_phase WHERE run_id = {} GROUP BY phase",
           runs[1])))
    sql[row[0]] = std::stod(row[1]);
  for (const traces::PhaseRecord& p : phases) {
    EXPECT_GT(p.ops, 0) << p.phase;
    EXPECT_GT(p.total_ns, 0) << device << " " << p.phase;
    // The view sums op spans; the reader counts overlapping spans once.
    EXPECT_LE(p.total_ns, sql.at(p.phase) * (1 + 1e-9)) << p.phase;
  }
  EXPECT_EQ(phases[0].phase, "forward");
  EXPECT_EQ(phases[1].phase, "backward");
  EXPECT_EQ(phases[2].phase, "update");
  EXPECT_GT(phases[1].flops, phases[0].flops)
      << "the backward pass has two matmuls per forward one";
  EXPECT_EQ(r.query(fmt::format("SELECT COUNT(*) FROM phase_summary WHERE run_id = {}", runs[1]))
                .at(0)
                .at(0),
            "3");
  std::cout << device << ": forward " << phases[0].pct_of_run << "%, backward "
            << phases[1].pct_of_run << "%, update " << phases[2].pct_of_run << "% of the step\n";
  std::remove(path.c_str());
}

TEST(TrainTrace, PhasesOnCpu) {
  check_phases("cpu");
}

TEST(TrainTrace, PhasesOnTpuEmu) {
  check_phases("tpu-emu:v4");
}

TEST(TrainTrace, PhaseOfANodeName) {
  EXPECT_STREQ(traces::op_phase("grad/fc1.matmul/MatMul_1"), "backward");
  EXPECT_STREQ(traces::op_phase("optimizer/fc1.weight/Mul_1"), "update");
  EXPECT_STREQ(traces::op_phase("loss_scale/Mul_2"), "update");
  EXPECT_STREQ(traces::op_phase("loss/LogSoftmax_1"), "forward");
  EXPECT_STREQ(traces::op_phase("gradient_boost"), "forward");
  EXPECT_STREQ(traces::op_phase("fc1.matmul"), "forward");
}

}  // namespace
}  // namespace mimic
