// Reader summaries and the SQL views, checked against figures worked out by hand for a run with
// an emulated device (cycles at 2 GHz) and a cpu fallback device (ns); run lookup; run diff.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <sstream>

#include "tests/traces/test_util.h"
#include "traces/html_report.h"
#include "traces/run_diff.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

namespace mimic::traces {
namespace {

using test::TempDir;

// Device 0: tpu-emu at 2 GHz (0.5 ns per cycle), tracks mxu and dma. Device 1: cpu (ns), host.
//   dma  conv "load"    [0, 100) cycles        mxu conv "mm"   [100, 100 + mm_cycles)
//   dma  relu "load"    [400, 450)             mxu relu "relu" [450, 600)
//   host softmax        [1000, 1200) ns        host (no op) "sync" [1300, 1400) ns
void write_run(TraceWriter& w, uint64_t mm_cycles) {
  auto run = w.begin_run(RunMeta{"net", 8, "nchw", "default", "tpu-emu:v4", "", ""});
  auto tpu =
      run->add_device(sim::DeviceDesc{"tpu-emu", "v4", 2'000'000'000, sim::TimeUnit::cycles, "{}"});
  auto mxu = run->add_track(tpu, "mxu", "matrix");
  auto dma = run->add_track(tpu, "dma", "dma");
  auto conv = run->add_op(sim::OpDesc{"conv", "Conv", "", "f32", 4000, 100, 100, "tpu-emu", false});
  auto relu = run->add_op(sim::OpDesc{"relu", "Relu", "", "f32", 100, 10, 10, "tpu-emu", false});
  auto cpu = run->add_device(sim::DeviceDesc{"cpu", "", 1'000'000'000, sim::TimeUnit::ns, "{}"});
  auto host = run->add_track(cpu, "host", "compute");
  auto softmax = run->add_op(sim::OpDesc{"softmax", "Softmax", "", "f32", 50, 5, 5, "cpu", false});
  run->event(dma, conv, "load", 0, 100);
  run->event(mxu, conv, "mm", 100, mm_cycles);
  run->event(dma, relu, "load", 400, 50);
  run->event(mxu, relu, "relu", 450, 150);
  run->event(host, softmax, "softmax", 1000, 200);
  run->event(host, sim::kNoOp, "sync", 1300, 100);
  run->counter(mxu, 100, 1.0);
  run->finish(true);
}

class TraceReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = tmp_.file("t.db");
    TraceWriter w(path_);
    write_run(w, 300);
    write_run(w, 600);
  }
  double q(const std::string& sql) const {
    return std::stod(TraceReader(path_).query(sql).at(0).at(0));
  }
  TempDir tmp_;
  std::string path_;
};

TEST_F(TraceReaderTest, DeviceSpansAndRunTimeUseEachDevicesClock) {
  TraceReader r(path_);
  auto devices = r.devices(1);
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_DOUBLE_EQ(devices[0].ns_per_unit, 0.5);
  EXPECT_DOUBLE_EQ(devices[0].span_ns, 300);
  EXPECT_DOUBLE_EQ(devices[1].span_ns, 400);
  EXPECT_DOUBLE_EQ(r.run_time_ns(1), 700);
  EXPECT_DOUBLE_EQ(q("SELECT time_ns FROM run_time WHERE run_id = 1"), 700);
  EXPECT_DOUBLE_EQ(q("SELECT span_ns FROM device_span WHERE run_id = 1 AND device_id = 0"), 300);
  EXPECT_DOUBLE_EQ(q("SELECT ts_ns FROM event_ns WHERE run_id = 1 AND name = 'relu'"), 225);
  EXPECT_DOUBLE_EQ(q("SELECT dur_ns FROM event_ns WHERE run_id = 1 AND name = 'relu'"), 75);
  EXPECT_DOUBLE_EQ(q("SELECT ts_ns FROM counter_ns WHERE run_id = 1"), 50);
}

TEST_F(TraceReaderTest, OpTimesAreSpansAndBusyIsTheSumOfEvents) {
  TraceReader r(path_);
  auto ops = r.ops(1);
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[0].node, "conv");
  EXPECT_EQ(ops[0].events, 2);
  EXPECT_DOUBLE_EQ(ops[0].busy_ns, 200);
  EXPECT_DOUBLE_EQ(ops[0].time_ns, 200);
  EXPECT_DOUBLE_EQ(ops[1].time_ns, 100);
  EXPECT_DOUBLE_EQ(ops[1].start_ns, 200);
  EXPECT_DOUBLE_EQ(ops[2].time_ns, 200);
  EXPECT_TRUE(ops[2].fallback);
  EXPECT_FALSE(ops[0].fallback);
  for (const OpRecord& o : ops) {
    std::string where = " FROM op_summary WHERE run_id = 1 AND op_id = " + std::to_string(o.op_id);
    EXPECT_DOUBLE_EQ(q("SELECT time_ns" + where), o.time_ns) << o.node;
    EXPECT_DOUBLE_EQ(q("SELECT busy_ns" + where), o.busy_ns) << o.node;
    EXPECT_DOUBLE_EQ(q("SELECT events" + where), double(o.events)) << o.node;
    EXPECT_DOUBLE_EQ(q("SELECT fallback" + where), o.fallback ? 1 : 0) << o.node;
  }
}

TEST_F(TraceReaderTest, OpTypeSummaryMatchesTheViewAndHandFigures) {
  TraceReader r(path_);
  auto types = r.op_types(1);
  ASSERT_EQ(types.size(), 3u);
  // Largest total first; Conv and Softmax tie at 200 ns (stable: alphabetical among equals).
  EXPECT_EQ(types[0].op_type, "Conv");
  EXPECT_DOUBLE_EQ(types[0].total_ns, 200);
  EXPECT_NEAR(types[0].pct_of_run, 100.0 * 200 / 700, 1e-9);
  EXPECT_DOUBLE_EQ(types[0].flops_per_s(), 4000 / 200e-9);
  EXPECT_EQ(types[0].bytes, 200);
  EXPECT_EQ(types[2].op_type, "Relu");
  for (const OpTypeRecord& t : types) {
    std::string where = " FROM op_type_summary WHERE run_id = 1 AND op_type = '" + t.op_type + "'";
    EXPECT_DOUBLE_EQ(q("SELECT total_ns" + where), t.total_ns) << t.op_type;
    EXPECT_DOUBLE_EQ(q("SELECT mean_ns" + where), t.mean_ns) << t.op_type;
    EXPECT_NEAR(q("SELECT pct_of_run" + where), t.pct_of_run, 1e-9) << t.op_type;
    EXPECT_DOUBLE_EQ(q("SELECT flops" + where), double(t.flops)) << t.op_type;
    EXPECT_DOUBLE_EQ(q("SELECT gflop_per_s" + where), t.flops_per_s() / 1e9) << t.op_type;
    EXPECT_DOUBLE_EQ(q("SELECT ops" + where), double(t.ops)) << t.op_type;
  }
  EXPECT_DOUBLE_EQ(
      q("SELECT fallback_ops FROM op_type_summary WHERE run_id = 1 AND op_type = 'Softmax'"), 1);
}

TEST_F(TraceReaderTest, UnitUtilizationIsBusyOverTheDeviceSpan) {
  TraceReader r(path_);
  auto units = r.units(1);
  ASSERT_EQ(units.size(), 3u);
  EXPECT_EQ(units[0].track, "mxu");
  EXPECT_EQ(units[0].busy, 450);
  EXPECT_DOUBLE_EQ(units[0].busy_ns, 225);
  EXPECT_DOUBLE_EQ(units[0].utilization, 0.75);
  EXPECT_DOUBLE_EQ(units[1].utilization, 0.25);
  EXPECT_DOUBLE_EQ(units[2].utilization, 0.75);
  for (const UnitRecord& u : units) {
    std::string where =
        " FROM unit_utilization WHERE run_id = 1 AND track_id = " + std::to_string(u.track_id);
    EXPECT_DOUBLE_EQ(q("SELECT utilization" + where), u.utilization) << u.track;
    EXPECT_DOUBLE_EQ(q("SELECT busy_ns" + where), u.busy_ns) << u.track;
    EXPECT_DOUBLE_EQ(q("SELECT events" + where), double(u.events)) << u.track;
  }
}

TEST_F(TraceReaderTest, RunOverviewAndCompareViews) {
  EXPECT_DOUBLE_EQ(q("SELECT events FROM run_overview WHERE run_id = 2"), 6);
  EXPECT_DOUBLE_EQ(q("SELECT device_time_ns FROM run_overview WHERE run_id = 2"), 750);
  // Run 2's mm takes 600 cycles: conv spans 0..700 cycles = 350 ns against 200 ns in run 1.
  EXPECT_DOUBLE_EQ(
      q("SELECT time_b_ns FROM run_compare WHERE run_a = 1 AND run_b = 2 AND node = 'conv'"), 350);
  EXPECT_DOUBLE_EQ(
      q("SELECT ratio FROM run_compare WHERE run_a = 1 AND run_b = 2 AND node = 'conv'"), 1.75);
  EXPECT_DOUBLE_EQ(
      q("SELECT ratio FROM run_compare WHERE run_a = 1 AND run_b = 2 AND node = 'relu'"), 1.0);
}

TEST_F(TraceReaderTest, DiffMatchesOpsByNode) {
  TraceReader r(path_);
  RunDiff d = diff_runs(r, 1, r, 2);
  EXPECT_DOUBLE_EQ(d.a_time_ns, 700);
  EXPECT_DOUBLE_EQ(d.b_time_ns, 750);
  ASSERT_EQ(d.ops.size(), 3u);
  EXPECT_EQ(d.ops[0].node, "conv");
  EXPECT_DOUBLE_EQ(d.ops[0].a_ns, 200);
  EXPECT_DOUBLE_EQ(d.ops[0].b_ns, 350);
  EXPECT_DOUBLE_EQ(d.ops[0].ratio(), 1.75);
  EXPECT_EQ(d.only_a + d.only_b, 0);
  ASSERT_EQ(d.op_types.size(), 3u);
  EXPECT_EQ(d.op_types[0].op_type, "Conv");
}

TEST_F(TraceReaderTest, DiffListsOpsOnlyOneRunHas) {
  {
    TraceWriter w(path_);
    auto run = w.begin_run(test::meta("net"));
    auto dev = run->add_device(sim::DeviceDesc{"cpu", "", 1'000'000'000, sim::TimeUnit::ns, "{}"});
    auto host = run->add_track(dev, "host", "compute");
    auto op = run->add_op(sim::OpDesc{"conv", "Conv", "", "f32", 4000, 100, 100, "cpu", false});
    auto extra = run->add_op(sim::OpDesc{"extra", "Add", "", "f32", 1, 1, 1, "cpu", false});
    run->event(host, op, "conv", 0, 1000);
    run->event(host, extra, "extra", 1000, 10);
    run->finish(true);
  }
  TraceReader r(path_);
  RunDiff d = diff_runs(r, 1, r, 3);
  EXPECT_EQ(d.only_a, 2);  // relu, softmax
  EXPECT_EQ(d.only_b, 1);  // extra
  EXPECT_DOUBLE_EQ(d.ops[0].b_ns, 1000);
}

TEST_F(TraceReaderTest, RunsAreFoundByIdUuidPrefixOrLast) {
  TraceReader r(path_);
  auto runs = r.runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(r.resolve_run(""), 2);
  EXPECT_EQ(r.resolve_run("1"), 1);
  EXPECT_EQ(r.resolve_run(runs[0].uuid), 1);
  EXPECT_EQ(r.resolve_run(runs[1].uuid.substr(0, 13)), 2);
  try {
    r.resolve_run("123456789");  // 9 digits: never a uuid prefix (its 9th character is a dash)
    FAIL() << "run 123456789 does not exist";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("run 123456789 is not in trace"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("ids 1..2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(r.resolve_run("zzzz"), InvalidArgument);
  EXPECT_THROW(r.run(99), InvalidArgument);
}

// trace list shows 8 hex digits of each uuid; when those are all decimal digits they still name
// the run, unless a run has that number as its id.
TEST_F(TraceReaderTest, AllDigitUuidPrefixesNameTheirRun) {
  {
    Db db(path_, Db::Mode::read_write_create);
    db.exec("UPDATE run SET uuid = '07980348-0000-4000-8000-000000000000' WHERE id = 2", "set");
    db.exec("UPDATE run SET uuid = '1aaaaaaa-0000-4000-8000-000000000000' WHERE id = 1", "set");
  }
  TraceReader r(path_);
  EXPECT_EQ(r.resolve_run("07980348"), 2);
  EXPECT_EQ(r.resolve_run("1"), 1) << "an id first";
}

}  // namespace
}  // namespace mimic::traces

namespace mimic::traces {
namespace {

// A run that has not ended (still running, or crashed) has no stored aggregates: the reader and
// the views compute them from its rows, and agree with what is stored once it ends.
TEST(TraceReaderUnfinished, AggregatesComeFromTheRowsUntilTheRunEnds) {
  TempDir tmp;
  std::string path = tmp.file("t.db");
  TraceWriter w(path);
  auto run = w.begin_run(test::meta("m"));
  auto dev =
      run->add_device(sim::DeviceDesc{"tpu-emu", "x", 1'000'000'000, sim::TimeUnit::cycles, "{}"});
  auto a = run->add_track(dev, "a", "matrix"), b = run->add_track(dev, "b", "dma");
  auto op0 = run->add_op(sim::OpDesc{"n0", "Conv", "", "f32", 1, 1, 1, "tpu-emu", false});
  auto op1 = run->add_op(sim::OpDesc{"n1", "Relu", "", "f32", 1, 1, 1, "tpu-emu", false});
  for (int i = 0; i < 1000; ++i) {
    run->event(i % 3 ? a : b, i < 600 ? op0 : op1, "x", uint64_t(i) * 10, 4);
    if (i % 7 == 0) run->event(b, sim::kNoOp, "sync", uint64_t(i) * 10 + 5, 1);
  }
  w.flush();
  auto snapshot = [&] {
    TraceReader r(path);
    std::vector<std::string> s;
    for (const auto& o : r.ops(1))
      s.push_back(fmt::format("{} {} {} {}", o.node, o.events, o.busy_ns, o.time_ns));
    for (const auto& u : r.units(1))
      s.push_back(fmt::format("{} {} {} {}", u.track, u.events, u.busy, u.utilization));
    for (const char* view : {"op_summary", "unit_utilization", "device_span", "op_type_summary"})
      for (const auto& row : r.query(std::string("SELECT * FROM ") + view + " WHERE run_id = 1"))
        s.push_back(fmt::format("{}", fmt::join(row, "|")));
    s.push_back(r.query("SELECT stats_done FROM run")[0][0]);
    return s;
  };
  std::vector<std::string> before = snapshot();
  EXPECT_EQ(before.back(), "0");
  run->finish(true);
  w.flush();
  std::vector<std::string> after = snapshot();
  EXPECT_EQ(after.back(), "1");
  before.pop_back();
  after.pop_back();
  EXPECT_EQ(before, after);
  EXPECT_EQ(before.at(0), "n0 600 2400 5994");  // 600 events x 4 ns; first at 0, last ends 5994
  TraceReader r(path);
  EXPECT_EQ(r.query("SELECT COUNT(*), SUM(events) FROM event_stat")[0],
            (std::vector<std::string>{"5", "1143"}));  // (a|b) x (n0|n1), b x no op
}

// Two cores run a Conv and a Relu at the same time for the whole run: each op type takes the
// run's whole span (100% of run each, 200% in all), and half of the summed op time, which is what
// the report shows.
TEST(TraceReaderShares, OpTypeSharesOfOpTimeSumTo100WhenCoresOverlap) {
  TempDir tmp;
  std::string path = tmp.file("t.db");
  {
    TraceWriter w(path);
    auto run = w.begin_run(test::meta("two_cores"));
    auto dev = run->add_device(
        sim::DeviceDesc{"tpu-emu", "v4", 1'000'000'000, sim::TimeUnit::cycles, "{}"});
    auto core0 = run->add_track(dev, "core0.mxu", "matrix");
    auto core1 = run->add_track(dev, "core1.vpu", "vector");
    auto conv = run->add_op(sim::OpDesc{"conv", "Conv", "", "f32", 1, 1, 1, "tpu-emu", false});
    auto relu = run->add_op(sim::OpDesc{"relu", "Relu", "", "f32", 1, 1, 1, "tpu-emu", false});
    run->event(core0, conv, "mm", 0, 1000);
    run->event(core1, relu, "relu", 0, 250);
    run->event(core1, relu, "relu", 500, 500);
    run->finish(true);
  }
  TraceReader r(path);
  auto types = r.op_types(1);
  ASSERT_EQ(types.size(), 2u);
  double run_sum = 0, op_sum = 0;
  for (const OpTypeRecord& t : types) {
    run_sum += t.pct_of_run;
    op_sum += t.pct_of_op_time;
    EXPECT_NEAR(t.pct_of_run, 100.0, 1e-9) << t.op_type;
    EXPECT_NEAR(t.pct_of_op_time, 50.0, 1e-9) << t.op_type;
  }
  EXPECT_NEAR(run_sum, 200.0, 1e-9);
  EXPECT_NEAR(op_sum, 100.0, 1e-9);
  std::stringstream html;
  write_html_report(r, 1, html);
  EXPECT_NE(html.str().find("% of op time"), std::string::npos);
  EXPECT_EQ(html.str().find("% of run"), std::string::npos);
  EXPECT_NE(html.str().find("<td class=\"num\">50.0</td>"), std::string::npos) << html.str();
}

// A training step on two cores: the forward op and a gradient op run at the same time for the
// whole run. The report's phase table shows shares of the summed op time (50% each), not of the
// run's span (100% each).
TEST(TraceReaderShares, PhaseSharesOfOpTimeSumTo100WhenCoresOverlap) {
  TempDir tmp;
  std::string path = tmp.file("t.db");
  {
    TraceWriter w(path);
    auto run = w.begin_run(test::meta("two_cores_training"));
    auto dev = run->add_device(
        sim::DeviceDesc{"tpu-emu", "v4", 1'000'000'000, sim::TimeUnit::cycles, "{}"});
    auto core0 = run->add_track(dev, "core0.mxu", "matrix");
    auto core1 = run->add_track(dev, "core1.mxu", "matrix");
    auto fwd = run->add_op(sim::OpDesc{"conv", "Conv", "", "f32", 1, 1, 1, "tpu-emu", false});
    auto bwd = run->add_op(sim::OpDesc{"grad/conv", "Conv", "", "f32", 1, 1, 1, "tpu-emu", false});
    run->event(core0, fwd, "mm", 0, 1000);
    run->event(core1, bwd, "mm", 0, 1000);
    run->finish(true);
  }
  TraceReader r(path);
  auto phases = r.phases(1);
  ASSERT_EQ(phases.size(), 2u);
  for (const PhaseRecord& p : phases) EXPECT_NEAR(p.pct_of_run, 100.0, 1e-9) << p.phase;
  std::stringstream html;
  write_html_report(r, 1, html);
  EXPECT_NE(html.str().find("Time by training phase"), std::string::npos);
  EXPECT_EQ(html.str().find("% of run"), std::string::npos) << "phase shares past 100%";
  EXPECT_NE(html.str().find("(50.0% of op time)"), std::string::npos) << html.str();
}

}  // namespace
}  // namespace mimic::traces
