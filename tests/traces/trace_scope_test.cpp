// mimic::TraceScope: every Executable::run inside the scope becomes a run row with RunInfo's
// metadata, its devices, tracks, ops and events; scopes nest; failures are recorded.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "frontend/api/compile.h"
#include "frontend/api/trace.h"
#include "frontend/api/zoo.h"
#include "tests/traces/test_util.h"
#include "traces/trace_reader.h"

namespace mimic {
namespace {

using traces::test::TempDir;

Executable mlp(int64_t batch) {
  CompileOptions o;
  o.batch = batch;
  Executable exe = compile(zoo::build("mlp"), Device("cpu"), o);
  exe.run_info().model = "mlp";
  exe.run_info().layout = "nchw";
  exe.run_info().config_json = R"({"why":"test"})";
  return exe;
}

TEST(TraceScope, EachRunInTheScopeIsOneRunWithItsOpsAndEvents) {
  TempDir tmp;
  std::string path = tmp.file("t.db");
  Executable exe = mlp(2);
  auto inputs = random_inputs(exe.graph(), 1);
  exe.run(inputs);  // before the scope: not recorded
  std::vector<int64_t> ids;
  {
    TraceScope scope(path);
    exe.run(inputs);
    exe.run(inputs);
    ids = scope.run_ids();
  }
  exe.run(inputs);  // after: not recorded
  EXPECT_EQ(ids, (std::vector<int64_t>{1, 2}));
  traces::TraceReader r(path);
  auto runs = r.runs();
  ASSERT_EQ(runs.size(), 2u);
  int nodes = exe.graph().num_nodes();
  for (const auto& run : runs) {
    EXPECT_EQ(run.status, "done");
    EXPECT_EQ(run.model, "mlp");
    EXPECT_EQ(run.batch, 2);
    EXPECT_EQ(run.layout, "nchw");
    EXPECT_EQ(run.device, "cpu");
    EXPECT_EQ(run.config_json, R"({"why":"test"})");
    EXPECT_EQ(run.events, nodes) << "the cpu backend emits one event per op";
    EXPECT_EQ(r.ops(run.id).size(), size_t(nodes));
    auto devices = r.devices(run.id);
    ASSERT_EQ(devices.size(), 1u);
    EXPECT_EQ(devices[0].backend, "cpu");
    EXPECT_EQ(devices[0].time_unit, "ns");
    EXPECT_GT(r.run_time_ns(run.id), 0);
  }
}

TEST(TraceScope, InnermostScopeRecordsAndFailuresAreKept) {
  TempDir tmp;
  std::string outer_path = tmp.file("outer.db"), inner_path = tmp.file("inner.db");
  Executable exe = mlp(1);
  auto inputs = random_inputs(exe.graph(), 1);
  {
    TraceScope outer(outer_path);
    {
      TraceScope inner(inner_path);
      exe.run(inputs);
      // A run that fails inside the backend reaches the observer as end_run(false, message).
      RunObserver* observer = current_run_observer();
      ASSERT_NE(observer, nullptr);
      RunInfo info;
      info.model = "broken";
      observer->begin_run(info);
      observer->end_run(false, "cpu: kernel failed on node 'x'");
    }
    exe.run(inputs);
  }
  traces::TraceReader inner(inner_path), outer(outer_path);
  auto inner_runs = inner.runs();
  ASSERT_EQ(inner_runs.size(), 2u);
  EXPECT_EQ(inner_runs[1].status, "failed");
  EXPECT_EQ(inner_runs[1].error, "cpu: kernel failed on node 'x'");
  EXPECT_EQ(outer.runs().size(), 1u);
  EXPECT_EQ(current_run_observer(), nullptr);
}

// A scope that closes while another thread's run is recording waits for that run to end: the run
// is whole in the file, and its sink is never used after the scope is gone.
TEST(TraceScope, ClosingWaitsForRunsInProgressOnOtherThreads) {
  TempDir tmp;
  std::string path = tmp.file("t.db");
  Executable exe = mlp(2);
  auto inputs = random_inputs(exe.graph(), 1);
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0}, runs{0};
  std::thread runner([&] {
    while (!stop) {
      try {
        exe.run(inputs);
        ++runs;
      } catch (const std::exception&) {
        ++failures;
      }
    }
  });
  for (int i = 0; i < 30; ++i) TraceScope scope(path);
  while (runs < 5) std::this_thread::yield();
  stop = true;
  runner.join();
  EXPECT_EQ(failures, 0);
  if (std::filesystem::exists(path))
    for (const auto& run : traces::TraceReader(path).runs()) EXPECT_EQ(run.status, "done");
}

TEST(TraceScope, OpeningErrorsAreIoErrorsAndRecordNothing) {
  TempDir tmp;
  std::string text = tmp.file("notes.txt");
  traces::test::write_file(text, "hello, not sqlite");
  EXPECT_THROW(TraceScope scope(text), IoError);
  EXPECT_EQ(traces::test::read_file(text), "hello, not sqlite");
  EXPECT_THROW(TraceScope scope(traces::test::unwritable_dir(tmp) + "/t.db"), IoError);
  EXPECT_EQ(current_run_observer(), nullptr);
}

}  // namespace
}  // namespace mimic
