// Several processes and crashes: a writer killed with SIGKILL mid-run leaves a readable file with
// its committed batches and the run not 'done'; two processes appending to one file at once (and
// creating it at once) lose nothing.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tests/traces/test_util.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

extern char** environ;

namespace mimic::traces {
namespace {

using test::TempDir;

// Starts the helper with stdout on a pipe; returns its pid and the pipe's read end.
pid_t spawn_helper(const std::vector<std::string>& args, int* out_fd) {
  std::vector<std::string> all{MIMIC_TRACE_HELPER};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  int fds[2] = {-1, -1};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (out_fd) {
    EXPECT_EQ(pipe(fds), 0);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
  }
  pid_t pid = -1;
  EXPECT_EQ(posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  if (out_fd) {
    close(fds[1]);
    *out_fd = fds[0];
  }
  return pid;
}

int wait_exit(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(TraceProcesses, KilledWriterLeavesReadableFileWithCommittedRowsAndRunNotDone) {
  TempDir tmp;
  std::string path = tmp.file("t.db");
  const int committed = 5000;
  int fd = -1;
  pid_t pid = spawn_helper({"crash", path, std::to_string(committed)}, &fd);
  std::string line;
  char c;
  while (read(fd, &c, 1) == 1 && c != '\n') line += c;
  close(fd);
  ASSERT_EQ(line, "committed");
  usleep(150 * 1000);  // let it write more batches, so the kill lands mid-run
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  EXPECT_EQ(wait_exit(pid), 128 + SIGKILL);

  TraceReader r(path);
  EXPECT_EQ(r.query("PRAGMA integrity_check")[0][0], "ok");
  auto runs = r.runs();
  ASSERT_EQ(runs.size(), 1u);
  // 'running' in the file; its process is gone, so readers show it interrupted, with the pid.
  EXPECT_EQ(r.query("SELECT status FROM run")[0][0], "running");
  EXPECT_EQ(runs[0].status, "interrupted");
  EXPECT_NE(runs[0].error.find(std::to_string(pid)), std::string::npos) << runs[0].error;
  EXPECT_EQ(runs[0].ended_ns, 0);
  EXPECT_EQ(std::stoll(r.query("SELECT COUNT(*) FROM event WHERE name_id = "
                               "(SELECT id FROM string WHERE value = 'before')")[0][0]),
            committed);
  EXPECT_GE(runs[0].events, committed);
  // Every committed event is whole: timestamps are exactly 0..events-1.
  auto ts = r.query("SELECT MIN(ts), MAX(ts), COUNT(DISTINCT ts) FROM event");
  EXPECT_EQ(ts[0][0], "0");
  EXPECT_EQ(std::stoll(ts[0][1]) + 1, std::stoll(ts[0][2]));

  // The file stays usable: a new process appends a run after the crash.
  pid_t next = spawn_helper({"append", path, "1", "100", "10", "after-crash"}, nullptr);
  EXPECT_EQ(wait_exit(next), 0);
  TraceReader again(path);
  auto all = again.runs();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].status, "interrupted");
  EXPECT_EQ(all[1].status, "done");
  EXPECT_EQ(all[1].events, 100);
}

// Both processes create the file at once, then interleave small transactions. With a 1 ms busy
// timeout SQLite's own wait rarely suffices, so the writers' retry loop does the work.
void two_processes_append(const std::string& busy_timeout_ms) {
  TempDir tmp;
  std::string path = tmp.file("shared.db");
  const int runs = 3, events = 20000;
  std::vector<std::string> args{"append", path, std::to_string(runs), std::to_string(events),
                                "500"};
  auto with = [&](const char* tag) {
    std::vector<std::string> v = args;
    v.push_back(tag);
    v.push_back(busy_timeout_ms);
    return v;
  };
  pid_t a = spawn_helper(with("A"), nullptr);
  pid_t b = spawn_helper(with("B"), nullptr);
  EXPECT_EQ(wait_exit(a), 0);
  EXPECT_EQ(wait_exit(b), 0);
  TraceReader r(path);
  EXPECT_EQ(r.query("PRAGMA integrity_check")[0][0], "ok");
  auto all = r.runs();
  ASSERT_EQ(all.size(), size_t(2 * runs));
  int a_runs = 0, b_runs = 0;
  for (const RunRecord& run : all) {
    EXPECT_EQ(run.status, "done");
    EXPECT_EQ(run.events, events);
    (run.tag == "A" ? a_runs : b_runs) += 1;
    std::string id = std::to_string(run.id);
    auto agg = r.query(
        "SELECT MIN(ts), MAX(ts), COUNT(DISTINCT ts), "
        "SUM(name_id <> (SELECT id FROM string WHERE value = '" +
        run.tag +
        "')) "
        "FROM event WHERE run_id = " +
        id);
    EXPECT_EQ(agg[0][0], "0");
    EXPECT_EQ(agg[0][1], std::to_string(events - 1));
    EXPECT_EQ(agg[0][2], std::to_string(events));
    EXPECT_EQ(agg[0][3], "0") << "run " << id << " holds events of the other process";
  }
  EXPECT_EQ(a_runs, runs);
  EXPECT_EQ(b_runs, runs);
}

TEST(TraceProcesses, TwoProcessesAppendingAtOnceLoseNothing) {
  two_processes_append("5000");
}

TEST(TraceProcesses, TwoProcessesLoseNothingWhenOnlyTheRetryLoopWaits) {
  two_processes_append("1");
}

}  // namespace
}  // namespace mimic::traces
