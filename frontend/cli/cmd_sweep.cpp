// `mimic sweep`: runs a grid of (device, batch, layout, precision, preset overrides) points, each in
// its own `mimic run` process, N at a time; prints a table and the recommended batch per
// configuration under a latency budget; writes CSV/JSON.
#include <chrono>
#include <map>
#include <optional>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <unistd.h>

#include "frontend/cli/cli_common.h"
#include "frontend/cli/process_pool.h"
#include "frontend/cli/sweep_analysis.h"
#include "frontend/ir/error.h"
#include "traces/output_file.h"
#include "traces/sweep_report.h"
#include "traces/sweep_store.h"

namespace mimic::cli {
namespace {

struct SweepArgs {
  std::string model, onnx, devices = "cpu", batches = "1,2,4,8", layouts = "nchw", precisions = "default";
  std::vector<std::string> model_args, sets;
  std::string latency_budget, csv_path, json_path, trace, report;
  bool timing_only = false, resume = false;
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
  traces::write_output_file(path, [&](std::ostream& out) { out << text; });
}

nlohmann::json spec_json(const sweep::Spec& s) {
  nlohmann::json sets = nlohmann::json::object();
  for (const auto& [f, v] : s.overrides) sets[f] = v;
  return {{"model", s.model}, {"onnx", s.onnx}, {"model_args", s.model_args}, {"devices", s.devices},
          {"batches", s.batches}, {"layouts", s.layouts}, {"precisions", s.precisions}, {"set", sets},
          {"latency_budget_s", s.latency_budget_s}, {"timing_only", s.timing_only}, {"seed", s.seed}};
}

int64_t traced_run_id(const ProcessResult& r) {
  try {
    auto j = nlohmann::json::parse(r.out);
    if (j.contains("trace") && !j["trace"]["runs"].empty()) return j["trace"]["runs"].back().get<int64_t>();
  } catch (const std::exception&) {
  }
  return 0;
}

void write_report(const std::string& path, const sweep::Spec& spec, const std::string& id,
                  const std::vector<sweep::PointResult>& results, const std::vector<sweep::Recommendation>& recs) {
  traces::SweepReport r;
  r.title = fmt::format("mimic sweep: {}", spec.onnx.empty() ? spec.model : spec.onnx);
  r.sweep_id = id;
  r.spec_json = spec_json(spec).dump(2);
  r.latency_budget_s = spec.latency_budget_s;
  for (const auto& p : results)
    r.points.push_back({p.point.config(), p.point.device, p.point.batch, p.status, p.reason, p.bound, p.latency_s,
                        p.throughput, p.utilization, p.intensity, p.achieved_flops, p.peak_flops, p.ridge});
  for (const auto& rec : recs)
    r.recommendations.push_back({rec.config, rec.found, rec.found ? rec.best.point.batch : 0,
                                 rec.best.latency_s, rec.best.throughput, rec.note});
  traces::write_output_file(path, [&](std::ostream& out) { traces::write_sweep_report(r, out); });
}

// Points already recorded for this sweep (with --resume): finished ones are kept, errors rerun.
std::map<std::string, sweep::PointResult> finished_points(traces::SweepStore& store, const std::string& id) {
  std::map<std::string, sweep::PointResult> out;
  for (const auto& rec : store.points(id)) {
    if (rec.status == "error") continue;
    out[rec.key] = sweep::point_result_from_json(nlohmann::json::parse(rec.result_json));
  }
  return out;
}

int run(const SweepArgs& a) {
  sweep::Spec spec = make_spec(a);
  if (a.resume && a.trace.empty()) throw InvalidArgument("--resume needs the sweep's trace file: --trace FILE");
  std::string id = sweep::sweep_id(spec);
  std::vector<sweep::Point> points = sweep::enumerate(spec);
  std::vector<sweep::PointResult> results(points.size());
  std::optional<traces::SweepStore> store;
  std::map<std::string, sweep::PointResult> finished;
  if (!a.trace.empty()) {
    store.emplace(a.trace);
    store->begin(id, spec_json(spec).dump());
    if (a.resume) {
      finished = finished_points(*store, id);
      store->retag_unrecorded_runs(id);
    }
  }
  // Points still to run, and their `mimic run` arguments.
  std::vector<size_t> todo;
  std::vector<std::vector<std::string>> argument_lists;
  for (size_t i = 0; i < points.size(); ++i) {
    auto it = finished.find(points[i].key());
    if (it != finished.end()) {
      results[i] = it->second;
      continue;
    }
    todo.push_back(i);
    argument_lists.push_back(sweep::run_arguments(spec, points[i]));
    if (store)
      argument_lists.back().insert(argument_lists.back().end(),
                                   {"--trace", a.trace, "--tag", fmt::format("sweep={} point={}", id, points[i].key())});
  }
  if (a.resume) std::cerr << fmt::format("resuming sweep {}: {} of {} points already done\n", id, points.size() - todo.size(), points.size());
  Progress progress(todo.size(), isatty(STDERR_FILENO) != 0);
  auto start = std::chrono::steady_clock::now();
  size_t done = 0;
  run_processes(self_executable(), argument_lists, a.jobs, [&](size_t k, const ProcessResult& r) {
    size_t i = todo[k];
    results[i] = sweep::analyze(points[i], r);
    if (store) store->record(id, {points[i].key(), results[i].status, sweep::to_json(results[i]).dump(), traced_run_id(r)});
    ++done;
    const auto& res = results[i];
    std::string line = fmt::format("{} batch {} {} {}: {}", points[i].device, points[i].batch, points[i].layout,
                                   points[i].precision,
                                   res.fits() ? format_seconds(res.latency_s) : res.status + " (" + res.reason + ")");
    progress.update(done, line, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  });
  progress.finish();
  std::cout << sweep::table(results);
  std::vector<sweep::Recommendation> recs = sweep::recommend(results, spec.latency_budget_s);
  print_recommendations(recs, spec.latency_budget_s);
  if (!a.report.empty()) write_report(a.report, spec, id, results, recs);
  if (!a.csv_path.empty()) write_file(a.csv_path, sweep::csv(results));
  if (!a.json_path.empty()) {
    nlohmann::json j{{"sweep_id", id}, {"latency_budget_s", spec.latency_budget_s},
                     {"points", nlohmann::json::array()}, {"recommendations", nlohmann::json::array()}};
    for (const auto& r : results) j["points"].push_back(sweep::to_json(r));
    for (const auto& r : recs)
      j["recommendations"].push_back({{"config", r.config}, {"found", r.found}, {"note", r.note},
                                      {"point", r.found ? sweep::to_json(r.best) : nlohmann::json()}});
    write_file(a.json_path, j.dump(2) + "\n");
  }
  if (!a.trace.empty())
    std::cout << fmt::format("\nsweep {} recorded in {} (SELECT * FROM sweep_results WHERE sweep_id = '{}')\n", id, a.trace, id);
  if (!a.report.empty()) std::cout << fmt::format("report: {}\n", a.report);
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
  add_memory_limit_option(cmd);
  cmd->add_option("--json", a->json_path, "Write points and recommendations as JSON");
  cmd->add_option("--trace", a->trace, "Record every run and the sweep's results in this SQLite file");
  cmd->add_option("-o,--report", a->report, "Write the HTML report (plots, roofline, recommendation)");
  cmd->add_flag("--resume", a->resume, "Continue the same sweep from --trace, skipping finished points");
  return {cmd, [a]() { return run(*a); }};
}

}  // namespace mimic::cli
