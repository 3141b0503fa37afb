// `mimic sweep` end to end: the grid's rows, the report's plots, the recommendation under a latency
// budget, points that do not fit recorded with their reason, and kill -9 then --resume.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "frontend/cli/process_pool.h"
#include "frontend/cli/sweep_analysis.h"
#include "frontend/cli/sweep_spec.h"
#include "traces/sweep_store.h"
#include "traces/trace_reader.h"

extern char** environ;

namespace {

std::string temp(const std::string& name) {
  std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_" + name;
  std::remove(path.c_str());
  std::remove((path + "-wal").c_str());
  std::remove((path + "-shm").c_str());
  return path;
}

int run(const std::string& args, std::string* out = nullptr) {
  std::string cmd = std::string(MIMIC_BIN) + " " + args + " 2>/dev/null </dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  std::string text;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
  int status = pclose(p);
  if (out) *out = text;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

const char* kMlp =
    "--model mlp --model-arg layers=3 --model-arg hidden=512 --model-arg in_features=512";

TEST(Sweep, SmallGridRowsReportAndRecommendation) {
  std::string json = temp("sweep.json"), html = temp("sweep.html"), csv = temp("sweep.csv"),
              db = temp("sweep.db");
  std::string out;
  int status = run(
      std::string("sweep ") + kMlp +
          " --device tpu-emu:v1,tpu-emu:v4 --batch 8,...,64 --layout nchw,nhwc --timing-only -j 2"
          " --latency-budget 15us --json " +
          json + " --csv " + csv + " --trace " + db + " -o " + html,
      &out);
  ASSERT_EQ(status, 0) << out;
  auto j = nlohmann::json::parse(read_file(json));
  ASSERT_EQ(j["points"].size(), 16u);  // 4 batches x 2 layouts x 2 devices
  EXPECT_EQ(count(read_file(csv), "\n"), 17);
  for (const auto& p : j["points"]) EXPECT_EQ(p["status"], "ok") << p.dump();
  // The recommendation: highest throughput among points within the budget, per configuration.
  ASSERT_EQ(j["recommendations"].size(), 4u);
  for (const auto& rec : j["recommendations"]) {
    if (!rec["found"].get<bool>()) continue;
    double best = rec["point"]["throughput"];
    EXPECT_LE(rec["point"]["latency_s"].get<double>(), 15e-6);
    for (const auto& p : j["points"]) {
      std::string config =
          p["device"].get<std::string>() + " " + p["layout"].get<std::string>() + " default";
      if (config == rec["config"] && p["latency_s"].get<double>() <= 15e-6) {
        EXPECT_LE(p["throughput"].get<double>(), best);
      }
    }
  }
  std::string report = read_file(html);
  EXPECT_EQ(count(report, "<svg"), 5) << "throughput, latency, utilization, roofline, memory";
  EXPECT_NE(report.find("Throughput vs batch"), std::string::npos);
  EXPECT_NE(report.find("class=\"reference\""), std::string::npos) << "the latency budget line";
  EXPECT_NE(report.find("Roofline"), std::string::npos);
  EXPECT_GE(count(report, "class=\"point\""), 16 + 16);
  mimic::traces::SweepStore store(db);
  ASSERT_EQ(store.sweeps().size(), 1u);
  EXPECT_EQ(store.points(j["sweep_id"]).size(), 16u);
  mimic::traces::TraceReader reader(db);
  int tagged = 0;
  for (const auto& r : reader.runs())
    tagged += r.tag.rfind("sweep=" + j["sweep_id"].get<std::string>(), 0) == 0;
  EXPECT_EQ(tagged, 16);
}

TEST(Sweep, PointThatDoesNotFitIsAResultWithItsReason) {
  std::string json = temp("nofit.json");
  std::string out;
  int status = run(
      "sweep --model mlp --model-arg layers=2 --model-arg hidden=1024 --model-arg in_features=1024"
      " --device ipu-emu:gc200 --set tiles=64 --batch 1,4096 --timing-only --json " +
          json,
      &out);
  ASSERT_EQ(status, 0) << out;
  auto j = nlohmann::json::parse(read_file(json));
  ASSERT_EQ(j["points"].size(), 2u);
  std::map<int64_t, nlohmann::json> by_batch;
  for (const auto& p : j["points"]) by_batch[p["batch"]] = p;
  EXPECT_EQ(by_batch[1]["status"], "ok") << by_batch[1].dump();
  EXPECT_EQ(by_batch[4096]["status"], "does not fit");
  EXPECT_NE(by_batch[4096]["reason"].get<std::string>().find("Out of memory on tile"),
            std::string::npos);
  EXPECT_NE(out.find("no: Out of memory on tile"), std::string::npos) << out;
}

TEST(Sweep, KilledSweepResumesWithoutDuplicates) {
  std::string db = temp("resume.db");
  std::string args =
      std::string("sweep ") + kMlp +
      " --device tpu-emu:v4,tpu-emu:v5e --batch 1,2,...,64 --timing-only -j 1 --trace " + db;
  std::vector<std::string> argv_s{MIMIC_BIN};
  std::istringstream ss(args);
  for (std::string w; ss >> w;) argv_s.push_back(w);
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  ASSERT_EQ(posix_spawn(&pid, MIMIC_BIN, &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  // Wait until a few points are recorded, then kill the sweep mid-way.
  size_t recorded = 0;
  for (int i = 0; i < 600 && recorded < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    try {
      mimic::traces::SweepStore store(db);
      for (const auto& s : store.sweeps()) recorded = s.points;
    } catch (const std::exception&) {
    }
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  ASSERT_GE(recorded, 3u);
  ASSERT_LT(recorded, 14u) << "the sweep finished before it could be killed";
  std::string out;
  ASSERT_EQ(run(args + " --resume", &out), 0) << out;
  mimic::traces::SweepStore store(db);
  auto sweeps = store.sweeps();
  ASSERT_EQ(sweeps.size(), 1u);
  auto points = store.points(sweeps[0].id);
  EXPECT_EQ(points.size(), 14u);  // 7 batches x 2 devices, each once
  std::map<std::string, int> done_runs;
  mimic::traces::TraceReader reader(db);
  for (const auto& r : reader.runs())
    if (r.status == "done") done_runs[r.tag]++;
  for (const auto& p : points) {
    EXPECT_EQ(p.status, "ok");
    EXPECT_EQ(done_runs["sweep=" + sweeps[0].id + " point=" + p.key], 1) << p.key;
  }
}

TEST(Sweep, TrainPointsReportStepTimePhasesAndTheBestChoice) {
  std::string json = temp("train.json"), html = temp("train.html");
  std::string out;
  int status = run(std::string("sweep --train ") + kMlp +
                       " --device tpu-emu:v4 --batch 4,16 --recompute none,full --optimizer adam"
                       " --timing-only -j 2 --json " +
                       json + " -o " + html,
                   &out);
  ASSERT_EQ(status, 0) << out;
  auto j = nlohmann::json::parse(read_file(json));
  ASSERT_EQ(j["points"].size(), 4u);  // 2 batches x 2 recompute modes
  double best = 0;
  for (const auto& p : j["points"]) {
    ASSERT_EQ(p["status"], "ok") << p.dump();
    double step = p["latency_s"], samples = p["samples_per_step"];
    EXPECT_GT(step, 0);
    EXPECT_EQ(samples, p["batch"].get<double>());
    EXPECT_NEAR(p["throughput"].get<double>(), samples / step, 1e-6 * samples / step);
    double phases = 0;
    for (const auto& [name, s] : p["phases"].items()) phases += s.get<double>();
    EXPECT_NEAR(phases, step, 1e-9 + 1e-6 * step) << p["phases"].dump();
    EXPECT_GT(p["phases"].value("update", 0.0), 0) << p["phases"].dump();
    best = std::max(best, p["throughput"].get<double>());
  }
  ASSERT_EQ(j["recommendations"].size(), 1u);  // recomputation is a choice, not a configuration
  EXPECT_EQ(j["recommendations"][0]["point"]["throughput"].get<double>(), best);
  EXPECT_NE(out.find("samples/s"), std::string::npos) << out;
  std::string report = read_file(html);
  EXPECT_NE(report.find("Step time by phase"), std::string::npos);
  EXPECT_NE(report.find("samples per second"), std::string::npos);
  EXPECT_EQ(run("sweep --model mlp --recompute full"), 2);
  EXPECT_EQ(run("sweep --train --model mlp --recompute often"), 2);
  EXPECT_EQ(run("sweep --train --model mlp --option replicas"), 2);
}

TEST(Sweep, BadSpecsAreOneLineErrors) {
  EXPECT_EQ(run("sweep --model mlp --batch 0"), 2);
  EXPECT_EQ(run("sweep --model mlp --batch 8,...,"), 2);
  EXPECT_EQ(run("sweep --model mlp --latency-budget 7"), 2);
  EXPECT_EQ(run("sweep --model mlp --resume"), 2);
  EXPECT_EQ(run("sweep --model mlp --device tpu-emu:v99"), 5);
  EXPECT_EQ(mimic::cli::sweep::parse_batches("1,2,...,16"), (std::vector<int64_t>{1, 2, 4, 8, 16}));
  EXPECT_DOUBLE_EQ(mimic::cli::sweep::parse_duration("7ms"), 7e-3);
}

// Found by tests/fuzz/sweep_spec_fuzzer (regressions in tests/fuzz/regressions/sweep_spec).
TEST(Sweep, SpecParsersBoundWhatTheyBuild) {
  namespace sw = mimic::cli::sweep;
  std::vector<int64_t> b = sw::parse_batches("1,...,9223372036854775807");
  EXPECT_EQ(b.size(), 64u);
  EXPECT_EQ(b[62], int64_t{1} << 62);
  EXPECT_THROW(sw::parse_duration("nanms"), mimic::InvalidArgument);
  EXPECT_THROW(sw::parse_duration("infs"), mimic::InvalidArgument);
  sw::Spec s;
  s.devices = {"cpu", "tpu-emu:v4"};
  s.batches = {1, 2, 4, 8};
  for (char f = 'a'; f < 'h'; ++f)
    s.overrides.emplace_back(std::string(1, f), sw::parse_list("1,2,3,4,5,6,7,8,9,10", "x"));
  try {
    sw::enumerate(s);
    FAIL() << "no error";
  } catch (const mimic::InvalidArgument& e) {
    EXPECT_NE(
        std::string(e.what()).find("the sweep grid has 80000000 points (2 devices x 1 layouts"),
        std::string::npos)
        << e.what();
  }
}

}  // namespace

namespace {

// A point whose process crashes is a result with the signal as its reason, and the other points of
// the pool still finish.
TEST(Sweep, CrashingPointIsReportedAndTheOthersFinish) {
  std::vector<std::vector<std::string>> args{
      {"-c", "kill -SEGV $$"}, {"-c", "exit 0"}, {"-c", "exit 4"}};
  std::map<size_t, mimic::cli::ProcessResult> done;
  mimic::cli::run_processes("/bin/sh", args, 2,
                            [&](size_t i, const mimic::cli::ProcessResult& r) { done[i] = r; });
  ASSERT_EQ(done.size(), 3u);
  mimic::cli::sweep::Point p;
  p.device = "tpu-emu:v4";
  p.batch = 8;
  auto crashed = mimic::cli::sweep::analyze(p, done[0]);
  EXPECT_EQ(done[0].signal, SIGSEGV);
  EXPECT_EQ(crashed.status, "error");
  EXPECT_NE(crashed.reason.find("crashed: killed by signal"), std::string::npos) << crashed.reason;
  EXPECT_EQ(done[1].exit_code, 0);
  EXPECT_EQ(mimic::cli::sweep::analyze(p, done[2]).status, "does not fit");
}

}  // namespace
