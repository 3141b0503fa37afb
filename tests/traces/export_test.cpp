// Chrome trace JSON (parsed back with nlohmann), CSV and the HTML report.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "tests/traces/test_util.h"
#include "traces/export.h"
#include "traces/html_report.h"
#include "traces/output_file.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

namespace mimic::traces {
namespace {

using test::TempDir;

// Run 1: an emulated device at 1.5 GHz with 3 tracks (one only has counters) and a cpu device
// with 1 track; 2 * kPerTrack + 3 events, 4 counter samples, one awkward event name.
constexpr int kPerTrack = 250;
const std::string kAwkward = "say \"hi\",\nthen\t\\leave";

void write_trace(const std::string& path) {
  TraceWriter w(path);
  auto run = w.begin_run(RunMeta{"net", 2, "nchw", "default", "tpu-emu:v4", "", R"({"seed":1})"});
  auto tpu =
      run->add_device(sim::DeviceDesc{"tpu-emu", "v4", 1'500'000'000, sim::TimeUnit::cycles, "{}"});
  auto mxu = run->add_track(tpu, "mxu0", "matrix");
  auto dma = run->add_track(tpu, "dma", "dma");
  auto hbm = run->add_track(tpu, "hbm", "memory");
  auto op = run->add_op(
      sim::OpDesc{"conv", "Conv", "f32[2,3] -> f32[2,3]", "f32", 10, 1, 1, "tpu-emu", false});
  for (int i = 0; i < kPerTrack; ++i) {
    run->event(mxu, op, "mm", uint64_t(i) * 3,
               3);  // back to back: must not overlap after conversion
    run->event(dma, op, "copy", uint64_t(i) * 10, 7);
  }
  for (int i = 0; i < 4; ++i) run->counter(hbm, uint64_t(i) * 1500, 100.0 * i);
  auto cpu = run->add_device(sim::DeviceDesc{"cpu", "", 1'000'000'000, sim::TimeUnit::ns, "{}"});
  auto host = run->add_track(cpu, "host", "compute");
  auto sm = run->add_op(sim::OpDesc{"softmax", "Softmax", "", "f32", 5, 1, 1, "cpu", false});
  run->event(host, sm, "softmax", 0, 1234);
  run->event(host, sim::kNoOp, kAwkward, 2000, 1);
  run->event(host, sim::kNoOp, "tail", 3000, 1);
  run->table_row("tile_memory", R"(["tile","code","data"])", R"([0, 100, 200])");
  run->finish(true);
  auto second = w.begin_run(test::meta("net"));
  auto d2 = second->add_device(sim::DeviceDesc{"cpu", "", 1'000'000'000, sim::TimeUnit::ns, "{}"});
  second->event(second->add_track(d2, "host", "compute"), sim::kNoOp, "only", 0, 5);
  second->finish(true);
}

class ExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = tmp_.file("t.db");
    write_trace(path_);
  }
  TempDir tmp_;
  std::string path_;
};

TEST_F(ExportTest, ChromeJsonParsesWithOneThreadPerTrackAndMicroseconds) {
  TraceReader r(path_);
  std::stringstream ss;
  ExportStats stats = export_chrome(r, {1}, ss);
  nlohmann::json j = nlohmann::json::parse(ss.str());
  ASSERT_TRUE(j["traceEvents"].is_array());
  int x = 0, c = 0, process_names = 0, thread_names = 0;
  std::set<std::pair<int, int>> x_threads, named_threads;
  std::map<std::pair<int, int>, double> last_end;
  bool overlap = false;
  for (const auto& e : j["traceEvents"]) {
    std::string ph = e["ph"];
    if (ph == "X") {
      ++x;
      auto key = std::make_pair(e["pid"].get<int>(), e["tid"].get<int>());
      x_threads.insert(key);
      double ts = e["ts"], dur = e["dur"];
      if (last_end.count(key) && ts < last_end[key] - 1e-9) overlap = true;
      last_end[key] = ts + dur;
    } else if (ph == "C") {
      ++c;
      EXPECT_EQ(e["name"], "hbm");
      EXPECT_TRUE(e["args"]["value"].is_number());
    } else if (ph == "M" && e["name"] == "process_name") {
      ++process_names;
    } else if (ph == "M" && e["name"] == "thread_name") {
      ++thread_names;
      named_threads.insert({e["pid"].get<int>(), e["tid"].get<int>()});
    }
  }
  EXPECT_EQ(x, 2 * kPerTrack + 3);
  EXPECT_EQ(c, 4);
  EXPECT_EQ(process_names, 2);  // one per device
  EXPECT_EQ(thread_names, 4);   // one per track, counter-only tracks included
  EXPECT_EQ(x_threads.size(), 3u);
  for (const auto& t : x_threads) EXPECT_TRUE(named_threads.count(t));
  EXPECT_FALSE(overlap) << "slices on one track must not overlap after unit conversion";
  EXPECT_EQ(stats.events, x);
  EXPECT_EQ(stats.counters, c);
  EXPECT_EQ(stats.threads, 4);
  EXPECT_EQ(stats.processes, 2);
  // Cycles at 1.5 GHz: the 250th copy starts at cycle 2490 = 1660 ns = 1.66 us, lasts 7 cycles.
  bool found = false, awkward = false;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X" && e["name"] == "copy" && e["args"]["start_cycle"] == 2490) {
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 1.66);
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 0.005);  // 1665 ns - 1660 ns (rounded ends)
      EXPECT_EQ(e["args"]["cycles"], 7);
      EXPECT_EQ(e["cat"], "Conv");
      EXPECT_EQ(e["args"]["op"], "conv");
      found = true;
    }
    if (e["ph"] == "X" && e["name"] == kAwkward) {
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 2.0);
      awkward = true;
    }
    if (e["ph"] == "X" && e["name"] == "softmax") {
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 1.234);
    }
  }
  EXPECT_TRUE(found);
  EXPECT_TRUE(awkward);
}

TEST_F(ExportTest, ChromeJsonOfEveryRunGivesEachDeviceItsOwnProcess) {
  TraceReader r(path_);
  std::stringstream ss;
  ExportStats stats = export_chrome(r, {}, ss);
  nlohmann::json j = nlohmann::json::parse(ss.str());
  EXPECT_EQ(stats.runs, 2);
  EXPECT_EQ(stats.processes, 3);
  EXPECT_EQ(stats.events, 2 * kPerTrack + 4);
  std::set<int> pids;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "X") pids.insert(e["pid"].get<int>());
  EXPECT_EQ(pids.size(), 3u);
}

TEST_F(ExportTest, CsvHasOneQuotedRowPerEvent) {
  TraceReader r(path_);
  std::stringstream ss;
  ExportStats stats = export_csv(r, {1}, ss);
  std::string csv = ss.str();
  EXPECT_EQ(stats.events, 2 * kPerTrack + 3);
  // Header + one line per event, plus the line break inside the quoted awkward name.
  EXPECT_EQ(test::count_lines(csv), 1 + stats.events + 1);
  EXPECT_EQ(csv.rfind("run_id,device_id,device,track_id,track,op_id,node,op_type,name,ts,dur,unit,"
                      "ts_ns,dur_ns\n",
                      0),
            0u);
  EXPECT_NE(csv.find("\"say \"\"hi\"\",\nthen\t\\leave\""), std::string::npos);
  EXPECT_NE(csv.find("1,0,tpu-emu:v4,1,dma,0,conv,Conv,copy,2490,7,cycles,1660,5\n"),
            std::string::npos);
}

TEST_F(ExportTest, HtmlReportIsSelfContainedAndHasEverySection) {
  TraceReader r(path_);
  std::stringstream ss;
  write_html_report(r, 1, ss);
  std::string html = ss.str();
  for (const char* s :
       {"<!DOCTYPE html>", "Time by op type", "Top ", "Timeline", "Utilization per unit",
        "Counters", "Tables", "tile_memory", "Devices", "Run config", "All ops", "&quot;seed&quot;",
        "<svg", "mxu0", "softmax", "Conv"})
    EXPECT_NE(html.find(s), std::string::npos) << s;
  for (const char* s : {"<script", "http://", "https://", "src=", "<link"})
    EXPECT_EQ(html.find(s), std::string::npos) << s;
  EXPECT_EQ(html.find(kAwkward), std::string::npos) << "names are escaped";
  EXPECT_NE(html.find("say &quot;hi&quot;"), std::string::npos);
}

TEST_F(ExportTest, OutputFilesAreReplacedWholeOrNotAtAll) {
  std::string out = tmp_.file("out.json");
  test::write_file(out, "old");
  EXPECT_THROW(write_output_file(out, [](std::ostream&) { throw IoError("stop"); }), IoError);
  EXPECT_EQ(test::read_file(out), "old");
  write_output_file(out, [](std::ostream& os) { os << "new"; });
  EXPECT_EQ(test::read_file(out), "new");
  EXPECT_THROW(write_output_file(tmp_.file("no/dir/x.json"), [](std::ostream& os) { os << 1; }),
               IoError);
}

TEST_F(ExportTest, OutputFilesNeverReplaceTracesLinksOrDevices) {
  std::string trace = tmp_.file("runs.db");
  test::write_file(trace, std::string("SQLite format 3\0rest of a database", 34));
  try {
    write_output_file(trace, [](std::ostream& os) { os << "{}"; });
    ADD_FAILURE() << "a trace was overwritten";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("is an SQLite database"), std::string::npos) << e.what();
  }
  EXPECT_EQ(test::read_file(trace).substr(0, 15), "SQLite format 3");

  std::string target = tmp_.file("report.html"), link = tmp_.file("latest.html");
  test::write_file(target, "old");
  std::filesystem::create_symlink(target, link);
  write_output_file(link, [](std::ostream& os) { os << "new"; });
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_EQ(test::read_file(target), "new");

  write_output_file("/dev/null", [](std::ostream& os) { os << "discarded"; });
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/null"));
}

}  // namespace
}  // namespace mimic::traces
