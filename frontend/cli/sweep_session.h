// One `mimic sweep` in progress, whatever runs its points: the options, the grid, the results known
// so far and the trace they are recorded in, and the outputs (table, recommendation, CSV, JSON,
// HTML report). The executors (local processes, a Slurm job array, a Python concurrent.futures
// executor through --results) only produce `mimic run` results; the session interprets and stores
// them, so a point is the same record whichever executor ran it.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "frontend/cli/process_pool.h"
#include "frontend/cli/sweep_analysis.h"
#include "frontend/cli/sweep_spec.h"
#include "traces/sweep_store.h"

namespace mimic::cli::sweep {

struct Args {
  std::string model, onnx, devices = "cpu", batches = "1,2,4,8", layouts = "nchw",
                           precisions = "default";
  std::vector<std::string> model_args, sets, options;
  bool train = false;  // training steps instead of inferences
  std::string recomputes = "none", optimizer = "sgd";
  std::string latency_budget, csv_path, json_path, trace, report;
  bool timing_only = false, resume = false;
  int jobs = 1;
  uint64_t seed = 0;
  // Executors beyond local processes.
  std::string executor = "local";  // local | slurm
  std::string dir;  // the sweep's directory (slurm): point lists, job scripts, task outputs
  std::vector<std::string> sbatch;  // passed to sbatch as they are
  // 10: the largest grid (kMaxSweepPoints) then fits Slurm's default MaxArraySize (1001).
  int points_per_task = 10;
  int retries = 1;
  bool no_wait = false;
  std::string poll = "5s";
  bool plan = false;    // print the points still to run as JSON, run nothing
  std::string results;  // take the points' `mimic run` results from this JSON-lines file
};

nlohmann::json args_to_json(const Args& a);
Args args_from_json(const nlohmann::json& j);
Spec make_spec(const Args& a);
nlohmann::json spec_json(const Spec& s);

// What one `mimic run` of a point left: its process result, or why the executor could not run it
// (then `failure` is set and the point is recorded as failed).
struct PointOutcome {
  std::string key;
  ProcessResult process;
  std::string failure;
};
nlohmann::json outcome_to_json(const PointOutcome& o);
// One outcome per line; a line that does not parse (a task killed while writing it) is skipped.
std::vector<PointOutcome> read_outcomes(const std::string& path);

class Session {
 public:
  // Which points the trace already holds count as done: none (a new sweep), finished ones (errors
  // and failures run again: --resume), or all of them (collecting a sweep in progress).
  enum class Load { none, finished, all };
  // Builds the grid and opens the trace when there is one.
  Session(const Args& a, Load load);
  const Args& args() const { return args_; }
  const Spec& spec() const { return spec_; }
  const std::string& id() const { return id_; }
  const std::vector<Point>& points() const { return points_; }
  bool has_trace() const { return store_.has_value(); }
  // Index of a point's key; InvalidArgument naming the key when the grid has no such point.
  size_t index_of(const std::string& key) const;
  bool done(size_t i) const { return results_[i].has_value(); }
  size_t done_count() const;
  // Points not done yet, in grid order.
  std::vector<size_t> todo() const;
  // `mimic run` arguments of point i (without a trace).
  std::vector<std::string> run_arguments(size_t i) const {
    return sweep::run_arguments(spec_, points_[i]);
  }
  // The tag that a point's run carries in a trace.
  std::string run_tag(size_t i) const;

  // Records one outcome (its run, if traced, already in this session's trace).
  const PointResult& record(const PointOutcome& o);
  // Records a task's outcomes whose runs lie in the task's own trace file, in one transaction.
  void record_task(const std::string& task_trace, const std::vector<PointOutcome>& outcomes);
  // Records a point the executor gave up on.
  void record_failed(size_t i, const std::string& reason);

  // Prints the table and recommendation of the points done, writes the outputs asked for; says how
  // many points are still pending when some are.
  void finish(size_t pending) const;

 private:
  PointResult interpret(const PointOutcome& o, size_t* index) const;
  Args args_;
  Spec spec_;
  std::string id_;
  std::vector<Point> points_;
  std::map<std::string, size_t> index_;
  std::vector<std::optional<PointResult>> results_;
  std::optional<traces::SweepStore> store_;
};

}  // namespace mimic::cli::sweep
