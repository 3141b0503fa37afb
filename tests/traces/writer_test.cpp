// The batched background writer: batching, time-based flushing, ordering, run status on every
// way a run can end, several runs and threads at once, and the sink's argument checks.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tests/traces/test_util.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

namespace mimic::traces {
namespace {

using test::TempDir;

struct SmallRun {
  sim::TrackId track;
  sim::OpId op;
};

SmallRun add_cpu_device(RunWriter& run) {
  auto dev = run.add_device(sim::DeviceDesc{"cpu", "", 1'000'000'000, sim::TimeUnit::ns, "{}"});
  auto track = run.add_track(dev, "host", "compute");
  auto op = run.add_op(
      sim::OpDesc{"n0", "Add", "f32[4] f32[4] -> f32[4]", "f32", 4, 32, 16, "cpu", false});
  return {track, op};
}

TEST(TraceWriter, ManyBatchesArriveCompleteAndInOrder) {
  TempDir tmp;
  std::string path = tmp.file("t.db");
  WriterOptions o;
  o.batch_rows = 100;
  const int n = 10'050;
  {
    TraceWriter w(path, o);
    auto run = w.begin_run(test::meta("m"));
    SmallRun s = add_cpu_device(*run);
    for (int i = 0; i < n; ++i)
      run->event(s.track, s.op, i % 2 ? "odd" : "even", uint64_t(i) * 10, 5);
    run->finish(true);
  }
  TraceReader r(path);
  int64_t id = r.resolve_run("");
  EXPECT_EQ(r.event_count(id), n);
  int64_t expect_ts = 0;
  bool ordered = true;
  r.for_each_event(id, [&](const EventRecord& e) {
    ordered &= e.ts == expect_ts && e.name == (expect_ts / 10 % 2 ? "odd" : "even");
    expect_ts += 10;
  });
  EXPECT_TRUE(ordered);
  EXPECT_EQ(r.query("SELECT COUNT(*) FROM string WHERE value IN ('odd', 'even')")[0][0], "2");
}

TEST(TraceWriter, PartialBatchIsCommittedWithoutFlushAfterTheInterval) {
  TempDir tmp;
  std::string path = tmp.file("t.db");
  WriterOptions o;
  o.flush_interval = std::chrono::milliseconds(50);
  TraceWriter w(path, o);
  auto run = w.begin_run(test::meta("m"));
  SmallRun s = add_cpu_device(*run);
  for (int i = 0; i < 5; ++i) run->event(s.track, s.op, "e", uint64_t(i), 1);
  // No flush, no finish: the writer thread must commit the 5 rows on its own.
  int64_t seen = 0;
  for (int attempt = 0; attempt < 200 && seen < 5; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    TraceReader r(path);
    seen = r.query("SELECT COUNT(*) FROM event").empty()
               ? 0
               : std::stoll(r.query("SELECT COUNT(*) FROM event")[0][0]);
  }
  EXPECT_EQ(seen, 5);
  TraceReader r(path);
  EXPECT_EQ(r.runs().at(0).status, "running");
  run->finish(true);
}

TEST(TraceWriter, RunStatusForEveryEnding) {
  TempDir tmp;
  std::string path = tmp.file("t.db");
  {
    TraceWriter w(path);
    w.begin_run(test::meta("ok"))->finish(true);
    w.begin_run(test::meta("bad"))->finish(false, "cpu: input 'x' must be f32[1,3], got f32[1,4]");
    { auto abandoned = w.begin_run(test::meta("abandoned")); }
    auto open = w.begin_run(test::meta("open at close"));
    w.close();
    open->finish(true);  // too late: the trace is closed, the run was ended as failed
  }
  TraceReader r(path);
  auto runs = r.runs();
  ASSERT_EQ(runs.size(), 4u);
  EXPECT_EQ(runs[0].status, "done");
  EXPECT_EQ(runs[0].error, "");
  EXPECT_EQ(runs[1].status, "failed");
  EXPECT_EQ(runs[1].error, "cpu: input 'x' must be f32[1,3], got f32[1,4]");
  EXPECT_EQ(runs[2].status, "failed");
  EXPECT_NE(runs[2].error.find("abandoned"), std::string::npos);
  EXPECT_EQ(runs[3].status, "failed");
  EXPECT_NE(runs[3].error.find("closed"), std::string::npos);
}

TEST(TraceWriter, RunIdsAreTheFilesIds) {
  TempDir tmp;
  std::string path = tmp.file("t.db");
  TraceWriter w(path);
  auto a = w.begin_run(test::meta("a"));
  auto b = w.begin_run(test::meta("b"));
  a->finish(true);
  b->finish(true);
  EXPECT_EQ(a->run_id(), 1);
  EXPECT_EQ(b->run_id(), 2);
  EXPECT_EQ(w.run_ids(), (std::vector<int64_t>{1, 2}));
  w.close();
  EXPECT_EQ(w.run_ids(), (std::vector<int64_t>{1, 2}));
}

TEST(TraceWriter, RunsOnSeveralThreadsAreKeptApart) {
  TempDir tmp;
  std::string path = tmp.file("t.db");
  WriterOptions o;
  o.batch_rows = 333;
  const int threads = 4, events = 5000;
  {
    TraceWriter w(path, o);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        auto run = w.begin_run(test::meta("thread", t + 1));
        SmallRun s = add_cpu_device(*run);
        for (int i = 0; i < events; ++i)
          run->event(s.track, s.op, "e", uint64_t(i), uint64_t(t + 1));
        run->finish(true);
      });
    for (auto& th : pool) th.join();
  }
  TraceReader r(path);
  auto runs = r.runs();
  ASSERT_EQ(runs.size(), size_t(threads));
  for (const RunRecord& run : runs) {
    EXPECT_EQ(run.status, "done");
    EXPECT_EQ(run.events, events);
    // Every event of the run carries its thread's duration: nothing crossed over.
    EXPECT_EQ(r.query("SELECT COUNT(*) FROM event WHERE run_id = " + std::to_string(run.id) +
                      " AND dur <> " + std::to_string(run.batch))[0][0],
              "0");
  }
}

TEST(TraceWriter, SinkRejectsBadIdsAndClocks) {
  TempDir tmp;
  TraceWriter w(tmp.file("t.db"));
  auto run = w.begin_run(test::meta("m"));
  EXPECT_THROW(run->add_device(sim::DeviceDesc{"tpu-emu", "v4", 0, sim::TimeUnit::cycles, "{}"}),
               InvalidArgument);
  EXPECT_THROW(run->add_track(0, "mxu", "matrix"), InvalidArgument);
  SmallRun s = add_cpu_device(*run);
  EXPECT_THROW(run->event(s.track + 1, s.op, "e", 0, 1), InvalidArgument);
  EXPECT_THROW(run->event(-1, s.op, "e", 0, 1), InvalidArgument);
  EXPECT_THROW(run->event(s.track, s.op + 5, "e", 0, 1), InvalidArgument);
  EXPECT_THROW(run->counter(7, 0, 1.0), InvalidArgument);
  EXPECT_THROW(run->table_row("t", "not json", "[1]"), InvalidArgument);
  EXPECT_THROW(run->table_row("t", R"(["a","b"])", "[1]"), InvalidArgument);
  run->table_row("t", R"(["a","b"])", "[1,2]");
  EXPECT_THROW(run->table_row("t", R"(["a","c"])", "[1,2]"), InvalidArgument);
  run->event(s.track, sim::kNoOp, "ok", 0, 1);
  run->finish(true);
  EXPECT_THROW(run->event(s.track, s.op, "late", 0, 1), InvalidArgument);
}

TEST(TraceWriter, NsDevicesAlwaysStoreAGigahertzClock) {
  TempDir tmp;
  std::string path = tmp.file("t.db");
  {
    TraceWriter w(path);
    auto run = w.begin_run(test::meta("m"));
    run->add_device(sim::DeviceDesc{"cuda", "0", 0, sim::TimeUnit::ns, ""});
    run->finish(true);
  }
  TraceReader r(path);
  auto devices = r.devices(1);
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].clock_hz, 1'000'000'000);
  EXPECT_EQ(devices[0].properties_json, "{}");
}

TEST(TraceWriter, EmittersWaitInsteadOfGrowingWithoutBound) {
  TempDir tmp;
  std::string path = tmp.file("t.db");
  WriterOptions o;
  o.batch_rows = 64;
  o.max_pending_rows = 256;  // far below the event count: emitters must wait for the disk
  const int n = 20'000;
  {
    TraceWriter w(path, o);
    auto run = w.begin_run(test::meta("m"));
    SmallRun s = add_cpu_device(*run);
    for (int i = 0; i < n; ++i) run->event(s.track, s.op, "e", uint64_t(i), 1);
    run->finish(true);
  }
  TraceReader r(path);
  EXPECT_EQ(r.event_count(1), n);
}

}  // namespace
}  // namespace mimic::traces
