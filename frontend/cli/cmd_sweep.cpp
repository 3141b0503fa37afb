// `mimic sweep`: runs a grid of (device, batch, layout, precision, preset overrides) points, each in
// its own `mimic run` process, N at a time; prints a table and the recommended batch per
// configuration under a latency budget; writes CSV/JSON.
#include <chrono>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <unistd.h>

#include "frontend/cli/cli_common.h"
#include "frontend/cli/process_pool.h"
#include "frontend/cli/sweep_analysis.h"
#include "frontend/ir/error.h"

namespace mimic::cli {
namespace {

struct SweepArgs {
  std::string model, onnx, devices = "cpu", batches = "1,2,4,8", layouts = "nchw", precisions = "default";
  std::vector<std::string> model_args, sets;
  std::string latency_budget, csv_path, json_path;
  bool timing_only = false;
  int jobs = 1;
  uint64_t seed = 0;
};

sweep::Spec make_spec(const SweepArgs& a) {
  sweep::Spec s;
  if (a.model.empty() == a.onnx.empty()) throw InvalidArgument("give exactly one of --model NAME or --onnx FILE");
  s.model = a.model;
  s.onnx = a.onnx;
  s.model_args = a.model_args;
  s.devices = sweep::parse_list(a.devices, "--device");
  for (const auto& d : s.devices) Device(d).require_available();
  s.batches = sweep::parse_batches(a.batches);
  s.layouts = sweep::parse_list(a.layouts, "--layout");
  for (const auto& l : s.layouts)
    if (l != "nchw" && l != "nhwc") throw InvalidArgument(fmt::format("unknown layout '{}' (use nchw or nhwc)", l));
  s.precisions = sweep::parse_list(a.precisions, "--precision");
  for (const auto& item : a.sets) {
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) throw InvalidArgument(fmt::format("--set '{}' must look like field=v1,v2,...", item));
    s.overrides.emplace_back(item.substr(0, eq), sweep::parse_list(item.substr(eq + 1), "--set " + item.substr(0, eq)));
  }
  if (!a.latency_budget.empty()) s.latency_budget_s = sweep::parse_duration(a.latency_budget);
  if (a.jobs <= 0) throw InvalidArgument(fmt::format("-j must be positive, got {}", a.jobs));
  s.timing_only = a.timing_only;
  s.seed = a.seed;
  return s;
}

void print_recommendations(const std::vector<sweep::Recommendation>& recs, double budget) {
  std::cout << fmt::format("\nrecommendation{}\n", budget > 0 ? " (latency budget " + format_seconds(budget) + ")" : "");
  for (const auto& r : recs) {
    if (!r.found) {
      std::cout << fmt::format("  {:<40} none: {}\n", r.config, r.note);
      continue;
    }
    std::cout << fmt::format("  {:<40} batch {:<5} {:>12.1f} inferences/s at {} ({})\n", r.config, r.best.point.batch,
                             r.best.throughput, format_seconds(r.best.latency_s), r.note);
  }
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  if (!f) throw IoError(fmt::format("cannot write '{}'", path));
  f << text;
}

int run(const SweepArgs& a) {
  sweep::Spec spec = make_spec(a);
  std::vector<sweep::Point> points = sweep::enumerate(spec);
  std::vector<std::vector<std::string>> argument_lists;
  for (const auto& p : points) argument_lists.push_back(sweep::run_arguments(spec, p));
  std::vector<sweep::PointResult> results(points.size());
  Progress progress(points.size(), isatty(STDERR_FILENO) != 0);
  auto start = std::chrono::steady_clock::now();
  size_t done = 0;
  run_processes(self_executable(), argument_lists, a.jobs, [&](size_t i, const ProcessResult& r) {
    results[i] = sweep::analyze(points[i], r);
    ++done;
    const auto& res = results[i];
    std::string line = fmt::format("{} batch {} {} {}: {}", points[i].device, points[i].batch, points[i].layout,
                                   points[i].precision,
                                   res.fits() ? format_seconds(res.latency_s) : res.status + " (" + res.reason + ")");
    progress.update(done, line, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  });
  progress.finish();
  std::cout << sweep::table(results);
  print_recommendations(sweep::recommend(results, spec.latency_budget_s), spec.latency_budget_s);
  if (!a.csv_path.empty()) write_file(a.csv_path, sweep::csv(results));
  if (!a.json_path.empty()) {
    nlohmann::json j{{"sweep_id", sweep::sweep_id(spec)}, {"latency_budget_s", spec.latency_budget_s},
                     {"points", nlohmann::json::array()}, {"recommendations", nlohmann::json::array()}};
    for (const auto& r : results) j["points"].push_back(sweep::to_json(r));
    for (const auto& r : sweep::recommend(results, spec.latency_budget_s))
      j["recommendations"].push_back({{"config", r.config}, {"found", r.found}, {"note", r.note},
                                      {"point", r.found ? sweep::to_json(r.best) : nlohmann::json()}});
    write_file(a.json_path, j.dump(2) + "\n");
  }
  return 0;
}

}  // namespace

Command add_sweep_command(CLI::App& app) {
  auto a = std::make_shared<SweepArgs>();
  CLI::App* cmd = app.add_subcommand("sweep", "Sweep batch, layout, precision and chip configurations");
  cmd->add_option("--model", a->model, "Zoo model");
  cmd->add_option("--onnx", a->onnx, "ONNX model file");
  cmd->add_option("--model-arg", a->model_args, "Model parameter key=value");
  cmd->add_option("--device", a->devices, "Devices, comma separated")->capture_default_str();
  cmd->add_option("--batch", a->batches, "Batches: 1,8,64 or 1,2,4,...,1024 (powers of two)")->capture_default_str();
  cmd->add_option("--layout", a->layouts, "Layouts: nchw,nhwc")->capture_default_str();
  cmd->add_option("--precision", a->precisions, "Precisions, comma separated")->capture_default_str();
  cmd->add_option("--set", a->sets, "Preset field values field=v1,v2,... (repeatable; the grid takes every combination)");
  cmd->add_option("--latency-budget", a->latency_budget, "Latency budget per batch, e.g. 7ms");
  cmd->add_flag("--timing-only", a->timing_only, "Emulators: cycles only, skip numerics");
  cmd->add_option("-j,--jobs", a->jobs, "Points run in parallel")->capture_default_str();
  cmd->add_option("--seed", a->seed, "Seed for weights and inputs")->capture_default_str();
  cmd->add_option("--csv", a->csv_path, "Write the table as CSV");
  cmd->add_option("--json", a->json_path, "Write points and recommendations as JSON");
  return {cmd, [a]() { return run(*a); }};
}

}  // namespace mimic::cli
