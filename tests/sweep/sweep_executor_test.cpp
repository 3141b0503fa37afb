// The pieces of `mimic sweep`'s executors that need no cluster: Slurm's squeue/sacct/scontrol
// output parsed, a task's trace merged into the sweep's (once, however often it is merged), --plan
// and
// --results (the Python module's executor path), and bad executor options as one-line errors.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "frontend/cli/sweep_slurm.h"
#include "traces/schema.h"
#include "traces/sweep_store.h"

namespace {

using namespace mimic::cli::sweep;

std::string temp(const std::string& name) {
  std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_exec_" + name;
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  return path;
}

int run(const std::string& args, std::string* out = nullptr, std::string env = "") {
  std::string cmd = env + " " + std::string(MIMIC_BIN) + " " + args + " 2>&1 </dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  std::string text;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
  int status = pclose(p);
  if (out) *out = text;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

const char* kGrid =
    "--model mlp --model-arg layers=2 --model-arg hidden=32 --model-arg in_features=32 "
    "--device tpu-emu:v4 --batch 1,2 --timing-only";

TEST(SweepSlurm, SqueueListsRunningTasksAndPendingRanges) {
  auto tasks = slurm::parse_squeue("12_3\n12_[5-7,9%2]\n13_1\n120_4\n", "12");
  EXPECT_EQ(tasks, (std::set<int>{3, 5, 6, 7, 9}));
  EXPECT_TRUE(slurm::parse_squeue("", "12").empty());
}

TEST(SweepSlurm, SacctAndScontrolGiveStateAndExitCode) {
  auto acct =
      slurm::parse_sacct("12_4|CANCELLED by 0|0:15\n12_5|COMPLETED|0:0\n13_4|TIMEOUT|0:1\n", "12");
  ASSERT_EQ(acct.size(), 2u);
  EXPECT_EQ(acct[4].state, "CANCELLED");
  EXPECT_EQ(acct[4].exit_code, "0:15");
  EXPECT_EQ(acct[5].state, "COMPLETED");
  auto ctl = slurm::parse_scontrol(
      "JobId=14 ArrayJobId=12 ArrayTaskId=2 JobName=x JobState=OUT_OF_MEMORY Reason=OutOfMemory "
      "ExitCode=0:125\n"
      "JobId=12 ArrayJobId=12 ArrayTaskId=3-9 JobState=PENDING ExitCode=0:0\n",
      "12");
  ASSERT_EQ(ctl.size(), 1u);
  EXPECT_EQ(ctl[2].state, "OUT_OF_MEMORY");
  EXPECT_EQ(ctl[2].exit_code, "0:125");
}

TEST(SweepMerge, TaskTraceIsCopiedOnceWithItsEvents) {
  std::string task = temp("task.db"), main = temp("main.db"), out;
  for (int batch : {1, 4})
    ASSERT_EQ(
        run(fmt::format(
                "run --model mlp --device tpu-emu:v4 --batch {} --timing-only --json --trace {}",
                batch, task),
            &out),
        0)
        << out;
  auto count = [](const std::string& path, const std::string& sql) {
    return mimic::traces::open_for_read(path).query_int(sql, "test");
  };
  int64_t events = count(task, "SELECT COUNT(*) FROM event");
  ASSERT_GT(events, 0);
  mimic::traces::SweepStore store(main);
  store.begin("s", "{}");
  for (int round = 0; round < 2; ++round)
    store.record_from("s", task,
                      {{"a", "ok", "{}", 1}, {"b", "ok", "{}", 2}, {"c", "error", "{}", 0}});
  EXPECT_EQ(count(main, "SELECT COUNT(*) FROM run"), 2);
  EXPECT_EQ(count(main, "SELECT COUNT(*) FROM event"), events);
  EXPECT_EQ(count(main, "SELECT COUNT(*) FROM run_event"),
            events);  // each run's rowid range holds its rows
  EXPECT_EQ(count(main, "SELECT COUNT(*) FROM op_summary"),
            count(task, "SELECT COUNT(*) FROM op_summary"));
  EXPECT_EQ(count(main, "SELECT COUNT(*) FROM sweep_point WHERE run_id IS NOT NULL"), 2);
  EXPECT_THROW(store.record_from("s", temp("missing.db"), {{"a", "ok", "{}", 1}}), mimic::IoError);
}

// The pid of `parent`'s first child, once it has one (0 after ~20 s without).
pid_t first_child(pid_t parent) {
  for (int i = 0; i < 2000; ++i) {
    std::ifstream f(fmt::format("/proc/{}/task/{}/children", parent, parent));
    pid_t child = 0;
    if (f >> child && child > 0) return child;
    usleep(10000);
  }
  return 0;
}

// scancel signals every process of a task: a point process can die before the task does, and its
// SIGTERM must not be recorded as the point's result (the retried task runs it again).
TEST(SweepSlurm, APointStoppedFromOutsideIsLeftForTheNextRound) {
  std::string out, dir = temp("round");
  ASSERT_EQ(run(fmt::format("sweep {} --plan", kGrid), &out), 0) << out;
  nlohmann::json round = nlohmann::json::parse(out);
  round["points_per_task"] = 2;
  // The first point runs for seconds, so that it is still running when it is stopped.
  round["points"][0]["args"] = {
      "run",     "--device", "tpu-emu:v4", "--batch",      "8",
      "--model", "resnet50", "--json",     "--no-compare", "--timing-only"};
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/round.json") << round.dump();
  pid_t task = fork();
  if (task == 0) {
    execl(MIMIC_BIN, MIMIC_BIN, "sweep", "task", dir.c_str(), "0", static_cast<char*>(nullptr));
    _exit(127);
  }
  pid_t point = first_child(task);
  ASSERT_GT(point, 0) << "the task started no point process";
  kill(point, SIGTERM);
  int status = 0;
  waitpid(task, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  std::ifstream results(dir + "/task-0/results.jsonl");
  std::vector<std::string> keys;
  for (std::string line; std::getline(results, line);)
    keys.push_back(nlohmann::json::parse(line).at("key"));
  ASSERT_EQ(keys.size(), 1u) << "the stopped point has a result line";
  EXPECT_EQ(keys[0], round["points"][1]["key"]);
  std::filesystem::remove_all(dir);
}

TEST(SweepExecutors, PlanThenResultsRecordsWhatAnotherExecutorRan) {
  std::string out, results = temp("results.jsonl"), json = temp("sweep.json");
  ASSERT_EQ(run(fmt::format("sweep {} --plan", kGrid), &out), 0) << out;
  auto plan = nlohmann::json::parse(out);
  ASSERT_EQ(plan["points"].size(), 2u);
  std::string key0 = plan["points"][0]["key"];
  {
    std::ofstream f(results);
    f << nlohmann::json{{"key", key0}, {"failure", "executor: worker lost"}}.dump()
      << "\n{\"key\": \"trunc";
  }
  ASSERT_EQ(run(fmt::format("sweep {} --results {} --json {}", kGrid, results, json), &out), 0)
      << out;
  std::ifstream in(json);
  auto j = nlohmann::json::parse(in);
  ASSERT_EQ(j["points"].size(), 1u);
  EXPECT_EQ(j["points"][0]["status"], "failed");
  EXPECT_EQ(j["points"][0]["reason"], "executor: worker lost");
  EXPECT_EQ(j["pending"], 1);
  EXPECT_NE(out.find("failed"), std::string::npos) << out;
  {
    std::ofstream f(results);
    f << nlohmann::json{{"key", "tpu-emu:v9|b1"}, {"failure", "x"}}.dump() << "\n";
  }
  EXPECT_EQ(run(fmt::format("sweep {} --results {}", kGrid, results), &out), 2);
  EXPECT_NE(out.find("has no point 'tpu-emu:v9|b1'"), std::string::npos) << out;
}

TEST(SweepExecutors, BadExecutorOptionsAreOneLineErrors) {
  std::string out;
  const std::string dir = temp("dir");
  EXPECT_EQ(run(fmt::format("sweep {} --executor kubernetes", kGrid), &out), 2);
  EXPECT_NE(out.find("unknown executor 'kubernetes'"), std::string::npos) << out;
  EXPECT_EQ(
      run(fmt::format("sweep {} --executor slurm --dir {} --sbatch=--array=0-3", kGrid, dir), &out),
      2);
  EXPECT_NE(out.find("mimic sets the job array itself"), std::string::npos) << out;
  EXPECT_EQ(
      run(fmt::format("sweep {} --executor slurm --dir {} --points-per-task 0", kGrid, dir), &out),
      2);
  EXPECT_NE(out.find("--points-per-task must be positive, got 0"), std::string::npos) << out;
  EXPECT_EQ(run(fmt::format("sweep collect {}", dir + "-none"), &out), 2);
  EXPECT_NE(out.find("holds no sweep"), std::string::npos) << out;
  EXPECT_EQ(
      run(fmt::format("sweep {} --executor slurm --dir {}", kGrid, dir), &out, "PATH=/nonexistent"),
      7);
  EXPECT_NE(out.find("'sbatch' not found on PATH"), std::string::npos) << out;
}

}  // namespace
