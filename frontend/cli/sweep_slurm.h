// `mimic sweep --executor slurm`: the points run as one Slurm job array. The sweep's directory
// holds a state file (sweep.json: the options and the job of each round) and one folder per round:
// the point list (round.json), the batch script (job.sh) and one folder per array task, into which
// the task alone writes: its points' results (results.jsonl), its own SQLite trace and a `done`
// marker. The submitting side merges each finished task into the sweep's trace once, in one
// transaction (SQLite on a network filesystem is unsafe for concurrent writers, so tasks never
// share a file).
//
// Faults: a task that ends without `done` (node failure, time limit, OOM kill, preemption,
// scancel) is found by squeue no longer listing it; its finished points are kept and the rest go
// into the next round, up to --retries times; then they are recorded as failed with the task's
// Slurm state and exit code (sacct, or scontrol where accounting is off).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>

#include "frontend/cli/sweep_session.h"

namespace mimic::cli::sweep {

// Submits the sweep and, unless --no-wait, follows it to the end; returns the exit status.
int run_slurm(const Args& a);
// `mimic sweep collect DIR`: merges the tasks that have finished, resubmits failed ones that have
// retries left, prints what is done; can be run again at any time.
int collect(const std::string& dir);
// `mimic sweep task ROUND_DIR INDEX`, run by the batch script inside the allocation.
int run_task(const std::string& round_dir, int index);

namespace slurm {

struct TaskEnd {
  std::string state;      // COMPLETED, CANCELLED, TIMEOUT, OUT_OF_MEMORY, NODE_FAIL, FAILED, ...
  std::string exit_code;  // "exit:signal", as sacct and scontrol print it
};
// Array task ids of `job` in `squeue -h -r -o %i` output ("123_4" lines; "123_[5-9]" ranges).
std::set<int> parse_squeue(const std::string& text, const std::string& job);
// Task id -> end, from `sacct -n -P -X -o JobID,State,ExitCode` lines ("123_4|CANCELLED by
// 0|0:15").
std::map<int, TaskEnd> parse_sacct(const std::string& text, const std::string& job);
// Task id -> end, from `scontrol -o show job` lines (ArrayTaskId=4 JobState=CANCELLED ...
// ExitCode=0:15).
std::map<int, TaskEnd> parse_scontrol(const std::string& text, const std::string& job);

}  // namespace slurm
}  // namespace mimic::cli::sweep
