#include "frontend/cli/sweep_session.h"

#include <fmt/format.h>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "base/error.h"
#include "frontend/api/device.h"
#include "frontend/api/recompute.h"
#include "frontend/cli/cli_common.h"
#include "traces/output_file.h"
#include "traces/sweep_report.h"

namespace mimic::cli::sweep {
namespace {

void print_recommendations(const std::vector<Recommendation>& recs, double budget, bool train) {
  std::cout << fmt::format("\nrecommendation{}\n",
                           budget > 0 ? fmt::format(" ({} budget {})", train ? "step" : "latency",
                                                    format_seconds(budget))
                                      : "");
  for (const auto& r : recs) {
    if (!r.found) {
      std::cout << fmt::format("  {:<40} none: {}\n", r.config, r.note);
      continue;
    }
    const Point& p = r.best.point;
    if (p.recompute.empty())
      std::cout << fmt::format("  {:<40} batch {:<5} {:>12.1f} inferences/s at {} ({})\n", r.config,
                               p.batch, r.best.throughput, format_seconds(r.best.latency_s),
                               r.note);
    else
      std::cout << fmt::format("  {:<40} batch {} {}: {:.1f} samples/s, {} per step ({})\n",
                               r.config, p.batch, p.choices(), r.best.throughput,
                               format_seconds(r.best.latency_s), r.note);
  }
}

void write_file(const std::string& path, const std::string& text) {
  traces::write_output_file(path, [&](std::ostream& out) { out << text; });
}

// The trace run of a `mimic run --json` result (0 when it recorded none).
int64_t traced_run_id(const ProcessResult& r) {
  try {
    auto j = nlohmann::json::parse(r.out);
    if (j.contains("trace") && !j["trace"]["runs"].empty())
      return j["trace"]["runs"].back().get<int64_t>();
  } catch (const std::exception&) {
  }
  return 0;
}

void write_report(const std::string& path, const Spec& spec, const std::string& id,
                  const std::vector<PointResult>& results,
                  const std::vector<Recommendation>& recs) {
  traces::SweepReport r;
  r.title = fmt::format("mimic sweep: {}", spec.onnx.empty() ? spec.model : spec.onnx);
  r.sweep_id = id;
  r.spec_json = spec_json(spec).dump(2);
  r.latency_budget_s = spec.latency_budget_s;
  r.train = spec.train;
  for (const auto& p : results) {
    // Training: one series per choice of options and recomputation, each over the batch.
    std::string series = p.point.config();
    if (spec.train && !p.point.choices().empty()) series += " " + p.point.choices();
    r.points.push_back({series, p.point.device, p.point.batch, p.status, p.reason, p.bound,
                        p.latency_s, p.throughput, p.utilization, p.intensity, p.achieved_flops,
                        p.peak_flops, p.ridge, p.memory, p.phases});
  }
  for (const auto& rec : recs)
    r.recommendations.push_back({rec.config, rec.found, rec.found ? rec.best.point.batch : 0,
                                 rec.best.latency_s, rec.best.throughput, rec.note});
  traces::write_output_file(path, [&](std::ostream& out) { traces::write_sweep_report(r, out); });
}

void write_json(const std::string& path, const std::string& id, double budget,
                const std::vector<PointResult>& results, const std::vector<Recommendation>& recs,
                size_t pending) {
  nlohmann::json j{{"sweep_id", id},
                   {"latency_budget_s", budget},
                   {"pending", pending},
                   {"points", nlohmann::json::array()},
                   {"recommendations", nlohmann::json::array()}};
  for (const auto& r : results) j["points"].push_back(to_json(r));
  for (const auto& r : recs)
    j["recommendations"].push_back({{"config", r.config},
                                    {"found", r.found},
                                    {"note", r.note},
                                    {"point", r.found ? to_json(r.best) : nlohmann::json()}});
  write_file(path, j.dump(2) + "\n");
}

// "field=v1,v2" items of --set or --option: field -> values.
std::vector<std::pair<std::string, std::vector<std::string>>> parse_value_lists(
    const std::vector<std::string>& items, const std::string& flag) {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (const auto& item : items) {
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InvalidArgument(fmt::format("{} '{}' must look like field=v1,v2,...", flag, item));
    out.emplace_back(item.substr(0, eq),
                     parse_list(item.substr(eq + 1), flag + " " + item.substr(0, eq)));
  }
  return out;
}

}  // namespace

nlohmann::json args_to_json(const Args& a) {
  return {{"model", a.model},
          {"onnx", a.onnx},
          {"devices", a.devices},
          {"batches", a.batches},
          {"layouts", a.layouts},
          {"precisions", a.precisions},
          {"model_args", a.model_args},
          {"sets", a.sets},
          {"options", a.options},
          {"train", a.train},
          {"recomputes", a.recomputes},
          {"optimizer", a.optimizer},
          {"loss", a.loss},
          {"latency_budget", a.latency_budget},
          {"csv", a.csv_path},
          {"json", a.json_path},
          {"trace", a.trace},
          {"report", a.report},
          {"timing_only", a.timing_only},
          {"jobs", a.jobs},
          {"seed", a.seed},
          {"executor", a.executor},
          {"dir", a.dir},
          {"sbatch", a.sbatch},
          {"points_per_task", a.points_per_task},
          {"retries", a.retries},
          {"poll", a.poll}};
}

Args args_from_json(const nlohmann::json& j) {
  Args a;
  j.at("model").get_to(a.model);
  j.at("onnx").get_to(a.onnx);
  j.at("devices").get_to(a.devices);
  j.at("batches").get_to(a.batches);
  j.at("layouts").get_to(a.layouts);
  j.at("precisions").get_to(a.precisions);
  j.at("model_args").get_to(a.model_args);
  j.at("sets").get_to(a.sets);
  a.options = j.value("options", a.options);
  a.train = j.value("train", a.train);
  a.recomputes = j.value("recomputes", a.recomputes);
  a.optimizer = j.value("optimizer", a.optimizer);
  a.loss = j.value("loss", a.loss);
  j.at("latency_budget").get_to(a.latency_budget);
  j.at("csv").get_to(a.csv_path);
  j.at("json").get_to(a.json_path);
  j.at("trace").get_to(a.trace);
  j.at("report").get_to(a.report);
  j.at("timing_only").get_to(a.timing_only);
  j.at("jobs").get_to(a.jobs);
  j.at("seed").get_to(a.seed);
  j.at("executor").get_to(a.executor);
  j.at("dir").get_to(a.dir);
  j.at("sbatch").get_to(a.sbatch);
  j.at("points_per_task").get_to(a.points_per_task);
  j.at("retries").get_to(a.retries);
  j.at("poll").get_to(a.poll);
  return a;
}

Spec make_spec(const Args& a) {
  Spec s;
  if (a.model.empty() == a.onnx.empty())
    throw InvalidArgument("give exactly one of --model NAME or --onnx FILE");
  s.model = a.model;
  s.onnx = a.onnx;
  s.model_args = a.model_args;
  s.devices = parse_list(a.devices, "--device");
  for (const auto& d : s.devices) Device(d).require_available();
  s.batches = parse_batches(a.batches);
  s.layouts = parse_list(a.layouts, "--layout");
  for (const auto& l : s.layouts)
    if (l != "nchw" && l != "nhwc")
      throw InvalidArgument(fmt::format("unknown layout '{}' (use nchw or nhwc)", l));
  s.precisions = parse_list(a.precisions, "--precision");
  s.overrides = parse_value_lists(a.sets, "--set");
  s.options = parse_value_lists(a.options, "--option");
  s.train = a.train;
  s.optimizer = a.optimizer;
  s.loss = a.loss;
  if (a.train) {
    s.recomputes = parse_list(a.recomputes, "--recompute");
    for (const auto& r : s.recomputes) parse_recompute(r);
  } else if (a.recomputes != "none") {
    throw InvalidArgument(fmt::format("--recompute {} needs --train", a.recomputes));
  }
  if (!a.latency_budget.empty()) s.latency_budget_s = parse_duration(a.latency_budget);
  if (a.jobs <= 0) throw InvalidArgument(fmt::format("-j must be positive, got {}", a.jobs));
  s.timing_only = a.timing_only;
  s.seed = a.seed;
  return s;
}

nlohmann::json spec_json(const Spec& s) {
  nlohmann::json sets = nlohmann::json::object(), options = nlohmann::json::object();
  for (const auto& [f, v] : s.overrides) sets[f] = v;
  for (const auto& [f, v] : s.options) options[f] = v;
  return {{"model", s.model},
          {"onnx", s.onnx},
          {"model_args", s.model_args},
          {"devices", s.devices},
          {"batches", s.batches},
          {"layouts", s.layouts},
          {"precisions", s.precisions},
          {"set", sets},
          {"option", options},
          {"train", s.train},
          {"recompute", s.recomputes},
          {"optimizer", s.optimizer},
          {"loss", s.loss},
          {"latency_budget_s", s.latency_budget_s},
          {"timing_only", s.timing_only},
          {"seed", s.seed}};
}

nlohmann::json outcome_to_json(const PointOutcome& o) {
  if (!o.failure.empty()) return {{"key", o.key}, {"failure", o.failure}};
  return {{"key", o.key},
          {"exit_code", o.process.exit_code},
          {"signal", o.process.signal},
          {"out", o.process.out},
          {"err", o.process.err},
          {"wall_seconds", o.process.wall_seconds}};
}

std::vector<PointOutcome> read_outcomes(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw IoError(fmt::format("point results '{}' is a directory, not a JSON-lines file", path));
  std::ifstream in(path);
  if (!in) throw IoError(fmt::format("cannot read point results '{}'", path));
  std::vector<PointOutcome> out;
  std::string line;
  size_t lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("key") || !j["key"].is_string()) continue;
    PointOutcome o;
    o.key = j["key"];
    o.failure = j.value("failure", "");
    if (o.failure.empty() && !j.contains("exit_code"))
      o.failure = "its result record has neither exit_code nor failure";
    o.process.exit_code = j.value("exit_code", -1);
    o.process.signal = j.value("signal", 0);
    o.process.out = j.value("out", "");
    o.process.err = j.value("err", "");
    o.process.wall_seconds = j.value("wall_seconds", 0.0);
    out.push_back(std::move(o));
  }
  if (lines > 0 && out.empty())
    throw IoError(fmt::format(
        "point results '{}': none of its {} line(s) is a JSON object with a \"key\"", path, lines));
  return out;
}

Session::Session(const Args& a, Load load) : args_(a), spec_(make_spec(a)), id_(sweep_id(spec_)) {
  points_ = enumerate(spec_);
  results_.resize(points_.size());
  for (size_t i = 0; i < points_.size(); ++i) index_[points_[i].key()] = i;
  if (a.trace.empty()) return;
  store_.emplace(a.trace);
  store_->begin(id_, spec_json(spec_).dump());
  if (load == Load::none) return;
  for (const auto& rec : store_->points(id_)) {
    if (load == Load::finished && (rec.status == "error" || rec.status == "failed")) continue;
    auto it = index_.find(rec.key);
    if (it != index_.end())
      results_[it->second] = point_result_from_json(nlohmann::json::parse(rec.result_json));
  }
  store_->retag_unrecorded_runs(id_);
}

size_t Session::index_of(const std::string& key) const {
  auto it = index_.find(key);
  if (it == index_.end())
    throw InvalidArgument(fmt::format("sweep {} has no point '{}'", id_, key));
  return it->second;
}

size_t Session::done_count() const {
  size_t n = 0;
  for (const auto& r : results_) n += r.has_value();
  return n;
}

std::vector<size_t> Session::todo() const {
  std::vector<size_t> out;
  for (size_t i = 0; i < points_.size(); ++i)
    if (!results_[i]) out.push_back(i);
  return out;
}

std::string Session::run_tag(size_t i) const {
  return fmt::format("sweep={} point={}", id_, points_[i].key());
}

PointResult Session::interpret(const PointOutcome& o, size_t* index) const {
  *index = index_of(o.key);
  if (o.failure.empty()) return analyze(points_[*index], o.process);
  PointResult r;
  r.point = points_[*index];
  r.status = "failed";
  r.reason = o.failure;
  return r;
}

const PointResult& Session::record(const PointOutcome& o) {
  size_t i = 0;
  PointResult r = interpret(o, &i);
  if (store_) store_->record(id_, {o.key, r.status, to_json(r).dump(), traced_run_id(o.process)});
  results_[i] = std::move(r);
  return *results_[i];
}

void Session::record_task(const std::string& task_trace,
                          const std::vector<PointOutcome>& outcomes) {
  std::vector<std::pair<size_t, PointResult>> results;
  std::vector<traces::SweepPointRecord> records;
  for (const auto& o : outcomes) {
    size_t i = 0;
    results.emplace_back(0, interpret(o, &i));
    results.back().first = i;
    records.push_back({o.key, results.back().second.status, to_json(results.back().second).dump(),
                       traced_run_id(o.process)});
  }
  if (store_) store_->record_from(id_, task_trace, records);
  for (auto& [i, r] : results) results_[i] = std::move(r);
}

void Session::record_failed(size_t i, const std::string& reason) {
  PointOutcome o;
  o.key = points_[i].key();
  o.failure = reason;
  record(o);
}

void Session::finish(size_t pending) const {
  std::vector<PointResult> results;
  for (const auto& r : results_)
    if (r) results.push_back(*r);
  std::cout << table(results);
  std::vector<Recommendation> recs = recommend(results, spec_.latency_budget_s);
  print_recommendations(recs, spec_.latency_budget_s, spec_.train);
  if (pending > 0)
    std::cout << fmt::format(
        "\n{} of {} points done, {} pending (gather them later with `mimic sweep collect {}`)\n",
        results.size(), points_.size(), pending, args_.dir);
  const Args& a = args_;
  if (!a.report.empty()) write_report(a.report, spec_, id_, results, recs);
  if (!a.csv_path.empty()) write_file(a.csv_path, csv(results));
  if (!a.json_path.empty())
    write_json(a.json_path, id_, spec_.latency_budget_s, results, recs, pending);
  if (store_)
    std::cout << fmt::format(
        "\nsweep {} recorded in {} (SELECT * FROM sweep_results WHERE sweep_id = '{}')\n", id_,
        a.trace, id_);
  if (!a.report.empty()) std::cout << fmt::format("report: {}\n", a.report);
}

}  // namespace mimic::cli::sweep
