// Runs command lines as child processes, N at a time, collecting stdout and stderr of each.
// Used by `mimic sweep`: each point runs in its own process, so a crashing point cannot take the
// sweep down and several emulated devices run in parallel.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace mimic::cli {

struct ProcessResult {
  int exit_code = -1;  // when it exited
  int signal = 0;      // when it was killed
  std::string out, err;
  double wall_seconds = 0;
};

// Starts `executable` with each argument list, `parallel` at a time; calls on_done(index, result)
// as each one ends. Unless OMP_NUM_THREADS is set, each child gets an equal share of the cores.
void run_processes(const std::string& executable,
                   const std::vector<std::vector<std::string>>& argument_lists, int parallel,
                   const std::function<void(size_t, const ProcessResult&)>& on_done);

// Runs one command to its end (argv[0] searched on PATH, our environment), capturing its output.
// RuntimeError naming the command when it is not found or cannot start.
ProcessResult run_command(const std::vector<std::string>& argv);

// Children started by run_processes have MIMIC_EXIT_WITH_PARENT set: a `mimic` child calls this
// first thing, so that killing a sweep (even with SIGKILL) does not leave its points running.
void exit_with_parent_if_asked();

// Path of the running executable (to start more of itself).
std::string self_executable();

// A progress line: a bar with points done/total and an ETA on a terminal, plain lines otherwise.
class Progress {
 public:
  Progress(size_t total, bool terminal) : total_(total), terminal_(terminal) {}
  void update(size_t done, const std::string& last_line, double elapsed_seconds);
  void finish();

 private:
  size_t total_;
  bool terminal_;
};

}  // namespace mimic::cli
