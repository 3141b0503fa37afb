// `mimic sweep`: runs a grid of (device, batch, layout, precision, preset overrides) points, each
// in its own `mimic run` process: N at a time here, as a Slurm job array (--executor slurm,
// sweep_slurm.h), or on any executor that hands back the processes' results (--plan, then
// --results: how the Python module's mimic.sweep drives a concurrent.futures executor). Prints a
// table and the recommended batch per configuration under a latency budget; writes CSV/JSON.
#include <fmt/format.h>
#include <unistd.h>
#include <chrono>
#include <iostream>

#include "base/error.h"
#include "frontend/cli/cli_common.h"
#include "frontend/cli/process_pool.h"
#include "frontend/cli/sweep_session.h"
#include "frontend/cli/sweep_slurm.h"
#include "traces/output_file.h"

namespace mimic::cli {
namespace {

using sweep::Args;
using sweep::Session;

Session::Load load_mode(const Args& a) {
  if (a.resume && a.trace.empty())
    throw InvalidArgument("--resume needs the sweep's trace file: --trace FILE");
  return a.resume ? Session::Load::finished : Session::Load::none;
}

void announce_resume(const Args& a, const Session& s) {
  if (a.resume)
    std::cerr << fmt::format("resuming sweep {}: {} of {} points already done\n", s.id(),
                             s.done_count(), s.points().size());
}

int run_local(const Args& a) {
  Session s(a, load_mode(a));
  announce_resume(a, s);
  std::vector<size_t> todo = s.todo();
  std::vector<std::vector<std::string>> argument_lists;
  for (size_t i : todo) {
    argument_lists.push_back(s.run_arguments(i));
    if (s.has_trace())
      argument_lists.back().insert(argument_lists.back().end(),
                                   {"--trace", a.trace, "--tag", s.run_tag(i)});
  }
  Progress progress(todo.size(), isatty(STDERR_FILENO) != 0);
  auto start = std::chrono::steady_clock::now();
  size_t done = 0, failed = 0;
  std::string first_failure;
  run_processes(self_executable(), argument_lists, a.jobs, [&](size_t k, const ProcessResult& r) {
    const sweep::Point& p = s.points()[todo[k]];
    const sweep::PointResult& res = s.record({p.key(), r, ""});
    if (res.status == "error" && failed++ == 0) first_failure = res.reason;
    std::string line = fmt::format(
        "{} batch {} {} {}: {}", p.device, p.batch, p.layout, p.precision,
        res.fits() ? format_seconds(res.latency_s) : res.status + " (" + res.reason + ")");
    progress.update(
        ++done, line,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  });
  progress.finish();
  s.finish(0);
  // Every point failing is a bad input (a model, option or precision no point can run), not a
  // batch that does not fit.
  if (!todo.empty() && failed == todo.size())
    throw RuntimeError(
        fmt::format("sweep: all {} points failed; the first: {}", failed, first_failure));
  return 0;
}

// --plan: the points still to run and their `mimic run` arguments, as JSON on stdout.
int plan(const Args& a) {
  Session s(a, load_mode(a));
  nlohmann::json j{
      {"sweep_id", s.id()}, {"total", s.points().size()}, {"points", nlohmann::json::array()}};
  for (size_t i : s.todo())
    j["points"].push_back({{"key", s.points()[i].key()}, {"args", s.run_arguments(i)}});
  std::cout << j.dump() << "\n";
  return 0;
}

// --results FILE: records the outcomes another executor produced, then reports as a local sweep
// does.
int record_results(const Args& a) {
  Session s(a, load_mode(a));
  announce_resume(a, s);
  std::vector<sweep::PointOutcome> outcomes = sweep::read_outcomes(a.results);
  for (const auto& o : outcomes)
    s.index_of(o.key);  // every key is checked before anything is recorded
  for (const auto& o : outcomes) s.record(o);
  s.finish(s.todo().size());
  return 0;
}

int run(const Args& a) {
  if (a.plan && !a.results.empty())
    throw InvalidArgument("give at most one of --plan and --results");
  if (a.executor != "local" && a.executor != "slurm")
    throw InvalidArgument(fmt::format("unknown executor '{}' (use local or slurm)", a.executor));
  for (const std::string* out : {&a.report, &a.csv_path, &a.json_path})
    if (!out->empty()) traces::check_output_path(*out);
  if (a.plan) return plan(a);
  if (!a.results.empty()) return record_results(a);
  if (a.executor == "slurm") return sweep::run_slurm(a);
  return run_local(a);
}

void add_executor_options(CLI::App* cmd, Args& a) {
  cmd->add_option("--executor", a.executor,
                  "Where points run: local (processes here) or slurm (a job array)")
      ->capture_default_str();
  cmd->add_option(
         "--dir", a.dir,
         "slurm: the sweep's directory, on a filesystem the nodes share (default ./mimic-sweep)")
      ->capture_default_str();
  cmd->add_option("--points-per-task", a.points_per_task, "slurm: points run by one array task")
      ->capture_default_str();
  cmd->add_option("--sbatch", a.sbatch,
                  "slurm: an sbatch option, passed as it is (repeatable): --sbatch=--partition=gpu")
      ->allow_extra_args(false);
  cmd->add_option("--retries", a.retries, "slurm: times a failed task's points are resubmitted")
      ->capture_default_str();
  cmd->add_flag("--no-wait", a.no_wait,
                "slurm: submit and return; gather with `mimic sweep collect DIR`");
  cmd->add_option("--poll", a.poll, "slurm: how often to ask squeue, e.g. 5s")
      ->capture_default_str();
  cmd->add_flag(
      "--plan", a.plan,
      "Print the points still to run and their `mimic run` arguments as JSON; run nothing");
  cmd->add_option("--results", a.results,
                  "Record the points' `mimic run` results from this JSON-lines file");
}

}  // namespace

Command add_sweep_command(CLI::App& app) {
  auto a = std::make_shared<Args>();
  CLI::App* cmd =
      app.add_subcommand("sweep", "Sweep batch, layout, precision and chip configurations");
  cmd->add_option("--model", a->model, "Zoo model");
  cmd->add_option("--onnx", a->onnx, "ONNX model file");
  cmd->add_option("--model-arg", a->model_args, "Model parameter key=value");
  cmd->add_option("--device", a->devices, "Devices, comma separated")->capture_default_str();
  cmd->add_option("--batch", a->batches, "Batches: 1,8,64 or 1,2,4,...,1024 (powers of two)")
      ->capture_default_str();
  cmd->add_option("--layout", a->layouts, "Layouts: nchw,nhwc")->capture_default_str();
  cmd->add_option("--precision", a->precisions, "Precisions, comma separated")
      ->capture_default_str();
  cmd->add_option(
      "--set", a->sets,
      "Preset field values field=v1,v2,... (repeatable; the grid takes every combination)");
  cmd->add_option("--option", a->options,
                  "Backend option values key=v1,v2,... (repeatable; e.g. replicas=1,2,4)");
  cmd->add_flag("--train", a->train,
                "Sweep training steps (`mimic train`): step time, samples/s, time by phase, "
                "memory by category; the recommendation picks batch, options and recomputation");
  cmd->add_option("--recompute", a->recomputes,
                  "--train: recomputation modes, comma separated (none,checkpoints,full)")
      ->capture_default_str();
  cmd->add_option("--optimizer", a->optimizer, "--train: sgd, adam, adamw or lamb")
      ->capture_default_str();
  cmd->add_option("--loss", a->loss, "--train: cross_entropy, mse or bce_with_logits")
      ->capture_default_str();
  cmd->add_option("--latency-budget,--step-budget", a->latency_budget,
                  "Latency budget per batch (--train: step-time budget), e.g. 7ms");
  cmd->add_flag("--timing-only", a->timing_only, "Emulators: cycles only, skip numerics");
  cmd->add_option("-j,--jobs", a->jobs, "Points run in parallel")->capture_default_str();
  cmd->add_option("--seed", a->seed, "Seed for weights and inputs")->capture_default_str();
  cmd->add_option("--csv", a->csv_path, "Write the table as CSV");
  add_memory_limit_option(cmd);
  cmd->add_option("--json", a->json_path, "Write points and recommendations as JSON");
  cmd->add_option("--trace", a->trace,
                  "Record every run and the sweep's results in this SQLite file");
  cmd->add_option("-o,--report", a->report,
                  "Write the HTML report (plots, roofline, recommendation)");
  cmd->add_flag("--resume", a->resume,
                "Continue the same sweep from --trace, skipping finished points");
  add_executor_options(cmd, *a);
  auto collect_dir = std::make_shared<std::string>();
  CLI::App* collect = cmd->add_subcommand(
      "collect", "Gather a Slurm sweep's finished tasks (run it again any time)");
  collect->add_option("DIR", *collect_dir, "The sweep's --dir")->required();
  auto task = std::make_shared<std::pair<std::string, int>>();
  CLI::App* task_cmd =
      cmd->add_subcommand("task", "Run one array task's points (the batch script's command)");
  task_cmd->group("");
  task_cmd->add_option("ROUND_DIR", task->first)->required();
  task_cmd->add_option("INDEX", task->second)->required();
  return {cmd, [a, collect, collect_dir, task_cmd, task]() {
            if (collect->parsed()) return sweep::collect(*collect_dir);
            if (task_cmd->parsed()) return sweep::run_task(task->first, task->second);
            return run(*a);
          }};
}

}  // namespace mimic::cli
