#include "frontend/cli/sweep_analysis.h"

#include <fmt/format.h>
#include <algorithm>
#include <csignal>
#include <cstring>
#include <map>

#include "frontend/cli/cli_common.h"

namespace mimic::cli::sweep {
namespace {

std::string first_line(const std::string& s) {
  std::string line = s.substr(0, s.find('\n'));
  const std::string prefix = "mimic: error: ";
  return line.rfind(prefix, 0) == 0 ? line.substr(prefix.size()) : line;
}

// Off-chip traffic of a run: the report's "offchip_bytes" metric when the device defines one, else
// the bytes moved through its off-chip levels (hbm, ddr3, lpddr4, host streaming memory, ...).
double offchip_bytes(const nlohmann::json& report) {
  const auto& metrics = report.value("metrics", nlohmann::json::object());
  if (metrics.contains("offchip_bytes")) return metrics["offchip_bytes"].get<double>();
  double total = 0;
  // Bound to a local: a range-for over items() of value()'s temporary would dangle.
  const nlohmann::json moved = report.value("bytes_moved", nlohmann::json::object());
  static const char* const kOffchipPrefixes[] = {"hbm",   "ddr",  "dram",    "gddr",
                                                 "lpddr", "host", "offchip", "streaming"};
  for (const auto& [level, bytes] : moved.items())
    for (const char* prefix : kOffchipPrefixes)
      if (level.rfind(prefix, 0) == 0) {
        total += bytes.get<double>();
        break;
      }
  return total;
}

std::map<std::string, double> number_map(const nlohmann::json& j) {
  std::map<std::string, double> out;
  if (j.is_object())
    for (const auto& [k, v] : j.items())
      if (v.is_number()) out[k] = v.get<double>();
  return out;
}

// A training point (`mimic train --json`): the step time, samples per second, phases, memory.
void read_train(const nlohmann::json& train, PointResult& r) {
  r.latency_s = train.value("step_seconds", 0.0);
  r.samples_per_step = train.value("samples_per_step", double(r.point.batch));
  r.throughput = train.value("samples_per_s", 0.0);
  r.phases = number_map(train.value("phases", nlohmann::json::object()));
  r.memory = number_map(train.value("memory", nlohmann::json::object()));
}

std::string memory_text(const PointResult& r) {
  auto peak = r.memory.find("peak_bytes");
  if (peak == r.memory.end()) return "-";
  auto cap = r.memory.find("capacity_bytes");
  return cap == r.memory.end() || cap->second <= 0
             ? format_bytes(peak->second)
             : fmt::format("{} ({:.0f}%)", format_bytes(peak->second),
                           100 * peak->second / cap->second);
}

std::string phases_text(const PointResult& r) {
  std::string s;
  for (const char* name : {"forward", "backward", "allreduce", "update", "other"}) {
    auto it = r.phases.find(name);
    if (it != r.phases.end() && it->second > 0)
      s += fmt::format("{}{} {}", s.empty() ? "" : " ", name[0], format_seconds(it->second));
  }
  return s.empty() ? "-" : s;
}

}  // namespace

PointResult from_json(const Point& p, const nlohmann::json& run) {
  PointResult r;
  r.point = p;
  r.status = "ok";
  const auto& rep = run.at("report");
  r.cycles = rep.value("cycles", uint64_t{0});
  r.flops = rep.value("total_flops", int64_t{0});
  if (run.contains("train")) {
    read_train(run.at("train"), r);
  } else {
    r.latency_s =
        r.cycles > 0 ? rep.value("device_seconds", 0.0) : run.at("wall_seconds").value("min", 0.0);
    r.throughput = r.latency_s > 0 ? static_cast<double>(p.batch) / r.latency_s : 0;
    // The plan's memory, as a training point's (the report's "memory.<key>" metrics).
    for (const auto& [key, value] : number_map(rep.value("metrics", nlohmann::json::object())))
      if (key.rfind("memory.", 0) == 0) r.memory[key.substr(7)] = value;
  }
  r.peak_flops = rep.value("peak_flops_per_s", 0.0);
  r.ridge = rep.value("ridge_intensity", 0.0);
  r.achieved_flops = r.latency_s > 0 ? static_cast<double>(r.flops) / r.latency_s : 0;
  r.utilization = r.peak_flops > 0 ? r.achieved_flops / r.peak_flops : 0;
  double bytes = offchip_bytes(rep);
  r.intensity = bytes > 0 ? static_cast<double>(r.flops) / bytes : 0;
  if (r.ridge > 0 && r.intensity > 0) r.bound = r.intensity < r.ridge ? "memory" : "compute";
  return r;
}

PointResult analyze(const Point& p, const ProcessResult& proc) {
  PointResult r;
  r.point = p;
  r.host_seconds = proc.wall_seconds;
  if (proc.signal != 0) {
    r.status = "error";
    r.reason =
        fmt::format("crashed: killed by signal {} ({})", proc.signal, strsignal(proc.signal));
    return r;
  }
  if (proc.exit_code == 4) {
    r.status = "does not fit";
    r.reason = first_line(proc.err);
    return r;
  }
  if (proc.exit_code != 0) {
    r.status = "error";
    r.reason = first_line(proc.err);
    return r;
  }
  try {
    PointResult ok = from_json(p, nlohmann::json::parse(proc.out));
    ok.host_seconds = proc.wall_seconds;
    return ok;
  } catch (const std::exception& e) {
    r.status = "error";
    r.reason = fmt::format("unreadable result: {}", e.what());
    return r;
  }
}

nlohmann::json to_json(const PointResult& r) {
  nlohmann::json ov = nlohmann::json::object(), options = nlohmann::json::object();
  for (const auto& [f, v] : r.point.overrides) ov[f] = v;
  for (const auto& [f, v] : r.point.options) options[f] = v;
  return {{"key", r.point.key()},
          {"device", r.point.device},
          {"batch", r.point.batch},
          {"layout", r.point.layout},
          {"precision", r.point.precision},
          {"overrides", ov},
          {"options", options},
          {"recompute", r.point.recompute},
          {"samples_per_step", r.samples_per_step},
          {"phases", r.phases},
          {"memory", r.memory},
          {"status", r.status},
          {"reason", r.reason},
          {"latency_s", r.latency_s},
          {"throughput", r.throughput},
          {"utilization", r.utilization},
          {"intensity", r.intensity},
          {"achieved_flops", r.achieved_flops},
          {"peak_flops", r.peak_flops},
          {"ridge", r.ridge},
          {"bound", r.bound},
          {"cycles", r.cycles},
          {"flops", r.flops},
          {"host_seconds", r.host_seconds}};
}

PointResult point_result_from_json(const nlohmann::json& j) {
  PointResult r;
  r.point.device = j.at("device");
  r.point.batch = j.at("batch");
  r.point.layout = j.at("layout");
  r.point.precision = j.at("precision");
  for (const auto& [f, v] : j.at("overrides").items())
    r.point.overrides.emplace_back(f, v.get<std::string>());
  const nlohmann::json options = j.value("options", nlohmann::json::object());
  for (const auto& [f, v] : options.items())
    if (v.is_string()) r.point.options.emplace_back(f, v.get<std::string>());
  r.point.recompute = j.value("recompute", "");
  r.samples_per_step = j.value("samples_per_step", 0.0);
  r.phases = number_map(j.value("phases", nlohmann::json::object()));
  r.memory = number_map(j.value("memory", nlohmann::json::object()));
  r.status = j.at("status");
  r.reason = j.value("reason", "");
  r.latency_s = j.value("latency_s", 0.0);
  r.throughput = j.value("throughput", 0.0);
  r.utilization = j.value("utilization", 0.0);
  r.intensity = j.value("intensity", 0.0);
  r.achieved_flops = j.value("achieved_flops", 0.0);
  r.peak_flops = j.value("peak_flops", 0.0);
  r.ridge = j.value("ridge", 0.0);
  r.bound = j.value("bound", "");
  r.cycles = j.value("cycles", uint64_t{0});
  r.flops = j.value("flops", int64_t{0});
  r.host_seconds = j.value("host_seconds", 0.0);
  return r;
}

namespace {

// A smaller batch of the same configuration that does not fit while the recommended one does: an
// IPU's tile mapping changes with the batch, so the busiest tile's memory need not grow with it; a
// loop growing the batch until it fails would stop below the recommendation.
std::string smaller_misfit_note(const std::vector<PointResult>& results, const PointResult& best) {
  for (const auto& r : results)
    if (r.point.config() == best.point.config() && r.status == "does not fit" &&
        r.point.batch < best.point.batch)
      return fmt::format("; batch {} (smaller) does not fit: memory is not monotonic in the batch",
                         r.point.batch);
  return "";
}

}  // namespace

std::vector<Recommendation> recommend(const std::vector<PointResult>& results, double budget) {
  std::map<std::string, Recommendation> by_config;
  std::vector<std::string> order;
  for (const auto& r : results) {
    std::string config = r.point.config();
    if (!by_config.count(config)) {
      order.push_back(config);
      by_config[config].config = config;
    }
    Recommendation& rec = by_config[config];
    if (!r.fits() || r.throughput <= 0) continue;
    if (budget > 0 && r.latency_s > budget) continue;
    if (!rec.found || r.throughput > rec.best.throughput) {
      rec.found = true;
      rec.best = r;
    }
  }
  std::vector<Recommendation> out;
  for (const auto& config : order) {
    Recommendation rec = by_config[config];
    if (!rec.found) {
      rec.note = budget > 0
                     ? fmt::format("no batch fits and meets the {} budget", format_seconds(budget))
                     : "no batch fits";
    } else {
      bool larger_fits = false;
      for (const auto& r : results)
        if (r.point.config() == config && r.fits() && r.point.batch > rec.best.point.batch)
          larger_fits = true;
      rec.note = larger_fits && budget > 0 ? "larger batches exceed the latency budget"
                 : larger_fits             ? "larger batches have lower throughput"
                                           : "largest batch swept that fits";
      rec.note += smaller_misfit_note(results, rec.best);
    }
    out.push_back(rec);
  }
  return out;
}

std::string table(const std::vector<PointResult>& results) {
  bool any_choices = false, train = false;
  for (const auto& r : results) {
    any_choices = any_choices || !r.point.choices().empty();
    train = train || !r.point.recompute.empty();
  }
  // One line: the point's columns, then what was measured (or "-" where it does not fit).
  auto line = [&](const std::vector<std::string>& point, const std::vector<std::string>& measured,
                  const std::string& fits) {
    std::string s =
        fmt::format("{:<18} {:>6} {:<6} {:<9} ", point[0], point[1], point[2], point[3]);
    if (any_choices) s += fmt::format("{:<28} ", point[4]);
    s += fmt::format("{:>12} {:>14} {:>7} {:>8} ", measured[0], measured[1], measured[2],
                     measured[3]);
    if (train) s += fmt::format("{:>16} {:<40} ", measured[4], measured[5]);
    return s + fits + "\n";
  };
  std::string out = line({"device", "batch", "layout", "precision", "choices"},
                         {train ? "step" : "latency", train ? "samples/s" : "throughput/s", "util",
                          "bound", "peak memory", "phases"},
                         "fits");
  for (const auto& r : results) {
    const Point& p = r.point;
    std::vector<std::string> point{p.device, std::to_string(p.batch), p.layout, p.precision,
                                   p.choices()};
    if (!r.fits())
      out += line(point, {"-", "-", "-", "-", memory_text(r), "-"},
                  (r.status == "does not fit" ? "no" : r.status) + ": " + r.reason);
    else
      out += line(point,
                  {format_seconds(r.latency_s), fmt::format("{:.1f}", r.throughput),
                   fmt::format("{:.1f}%", 100 * r.utilization), r.bound.empty() ? "-" : r.bound,
                   memory_text(r), phases_text(r)},
                  "yes");
  }
  return out;
}

std::string csv(const std::vector<PointResult>& results) {
  std::string out =
      "device,batch,layout,precision,overrides,status,reason,latency_s,throughput,utilization,"
      "intensity,bound,cycles,flops,host_seconds,peak_memory_bytes\n";
  auto quote = [](std::string s) {
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  for (const auto& r : results)
    out += fmt::format(
        "{},{},{},{},{},{},{},{:.9g},{:.9g},{:.6g},{:.6g},{},{},{},{:.3f},{:.0f}\n", r.point.device,
        r.point.batch, r.point.layout, r.point.precision, quote(r.point.choices()), r.status,
        quote(r.reason), r.latency_s, r.throughput, r.utilization, r.intensity, r.bound, r.cycles,
        r.flops, r.host_seconds, r.memory.count("peak_bytes") ? r.memory.at("peak_bytes") : 0.0);
  return out;
}

}  // namespace mimic::cli::sweep
