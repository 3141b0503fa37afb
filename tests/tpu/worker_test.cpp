// Device workers: several presets in one process (each in its own `mimic-device` worker, one
// SystemC simulation each) in any order and many times, and a worker killed in the middle of a run.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <map>
#include <set>
#include <thread>

#include "backends/device_worker/worker_process.h"
#include "base/error.h"
#include "frontend/api/zoo.h"
#include "models/tpu/tpu_spec.h"
#include "tpu_test_util.h"

namespace mimic {
namespace {

pid_t worker_pid(const std::string& preset) {
  std::string json = models::tpu::spec_to_json(models::tpu::preset(preset));
  return backends::shared_worker("tpu", std::vector<uint8_t>(json.begin(), json.end()))->pid();
}

TEST(TpuWorkers, SeveralPresetsInOneProcessInAnyOrderManyTimes) {
  ir::Graph g = tpu_test::mlp_graph(16, 128, 2);
  const std::vector<std::string> order[] = {{"v4", "v1", "v5e", "edge", "v2"},
                                            {"edge", "v2", "v4", "v1", "v6e", "v3"},
                                            {"v3", "v6e", "v1", "v4", "v5e", "edge", "v2"}};
  std::map<std::string, uint64_t> cycles;
  std::map<std::string, pid_t> pids;
  std::map<std::string, Executable> executables;
  for (const auto& round : order)
    for (const auto& preset : round) {
      auto it = executables.find(preset);
      if (it == executables.end())
        it = executables.emplace(preset, compile(g, Device("tpu-emu:" + preset))).first;
      RunOutput out = it->second.run(random_inputs(it->second.graph(), 3));
      EXPECT_EQ(out.report.device, "tpu-emu:" + preset);
      if (cycles.count(preset)) {
        EXPECT_EQ(out.report.cycles, cycles[preset]) << preset;  // deterministic
      }
      cycles[preset] = out.report.cycles;
      pid_t pid = worker_pid(preset);
      if (pids.count(preset)) {
        EXPECT_EQ(pid, pids[preset]) << preset;  // the worker is reused
      }
      pids[preset] = pid;
      // A fresh compile of the same preset shares that worker too.
      EXPECT_EQ(tpu_test::run(g, "tpu-emu:" + preset).report.cycles, cycles[preset]);
    }
  std::set<pid_t> distinct;
  for (const auto& [preset, pid] : pids) distinct.insert(pid);
  EXPECT_EQ(distinct.size(), pids.size());  // one worker per chip
  EXPECT_EQ(pids.size(), 7u);
}

TEST(TpuWorkers, KilledMidRunGivesACleanErrorAndTheNextRunWorks) {
  zoo::ModelOptions mo;
  ir::Graph model = zoo::build("resnet18", mo);
  CompileOptions o;
  o.batch = 4;
  Executable e = compile(model, Device("tpu-emu:v4"), o);
  auto inputs = random_inputs(e.graph(), 1);
  RunOutput first = e.run(inputs);  // loads the program; measures how long a run takes
  double seconds = first.report.wall_seconds;
  pid_t victim = worker_pid("v4");
  std::atomic<bool> started{false};
  std::thread killer([&] {
    while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds * 0.4));
    kill(victim, SIGKILL);
  });
  std::string message;
  try {
    started = true;
    e.run(inputs);
  } catch (const RuntimeError& err) {
    message = err.what();
  }
  killer.join();
  // On a loaded machine the run may finish before the kill lands; the worker then dies idle and
  // the next run reports it the same way.
  if (message.empty()) {
    try {
      e.run(inputs);
    } catch (const RuntimeError& err) {
      message = err.what();
    }
  }
  EXPECT_NE(message.find("signal 9"), std::string::npos) << message;
  EXPECT_NE(message.find("device worker 'tpu'"), std::string::npos) << message;
  RunOutput again = e.run(inputs);
  EXPECT_NE(worker_pid("v4"), victim);
  EXPECT_EQ(again.report.cycles, first.report.cycles);
  for (int64_t i = 0; i < again.outputs[0].numel(); ++i)
    ASSERT_EQ(again.outputs[0].data<float>()[i], first.outputs[0].data<float>()[i]);
}

}  // namespace
}  // namespace mimic
