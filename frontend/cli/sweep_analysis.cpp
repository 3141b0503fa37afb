#include "frontend/cli/sweep_analysis.h"

#include <algorithm>
#include <csignal>
#include <cstring>
#include <fmt/format.h>
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
  static const char* const kOffchipPrefixes[] = {"hbm", "ddr", "dram", "gddr", "lpddr", "host", "offchip", "streaming"};
  for (const auto& [level, bytes] : moved.items())
    for (const char* prefix : kOffchipPrefixes)
      if (level.rfind(prefix, 0) == 0) {
        total += bytes.get<double>();
        break;
      }
  return total;
}

std::string overrides_text(const Point& p) {
  std::string s;
  for (const auto& [f, v] : p.overrides) s += (s.empty() ? "" : " ") + f + "=" + v;
  return s;
}

}  // namespace

PointResult from_json(const Point& p, const nlohmann::json& run) {
  PointResult r;
  r.point = p;
  r.status = "ok";
  const auto& rep = run.at("report");
  r.cycles = rep.value("cycles", uint64_t{0});
  r.flops = rep.value("total_flops", int64_t{0});
  r.latency_s = r.cycles > 0 ? rep.value("device_seconds", 0.0) : run.at("wall_seconds").value("min", 0.0);
  r.throughput = r.latency_s > 0 ? static_cast<double>(p.batch) / r.latency_s : 0;
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
    r.reason = fmt::format("crashed: killed by signal {} ({})", proc.signal, strsignal(proc.signal));
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
  nlohmann::json ov = nlohmann::json::object();
  for (const auto& [f, v] : r.point.overrides) ov[f] = v;
  return {{"key", r.point.key()}, {"device", r.point.device}, {"batch", r.point.batch}, {"layout", r.point.layout},
          {"precision", r.point.precision}, {"overrides", ov}, {"status", r.status}, {"reason", r.reason},
          {"latency_s", r.latency_s}, {"throughput", r.throughput}, {"utilization", r.utilization},
          {"intensity", r.intensity}, {"achieved_flops", r.achieved_flops}, {"peak_flops", r.peak_flops},
          {"ridge", r.ridge}, {"bound", r.bound}, {"cycles", r.cycles}, {"flops", r.flops},
          {"host_seconds", r.host_seconds}};
}

PointResult point_result_from_json(const nlohmann::json& j) {
  PointResult r;
  r.point.device = j.at("device");
  r.point.batch = j.at("batch");
  r.point.layout = j.at("layout");
  r.point.precision = j.at("precision");
  for (const auto& [f, v] : j.at("overrides").items()) r.point.overrides.emplace_back(f, v.get<std::string>());
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
      rec.note = budget > 0 ? fmt::format("no batch fits and meets the {} budget", format_seconds(budget))
                            : "no batch fits";
    } else {
      bool larger_fits = false;
      for (const auto& r : results)
        if (r.point.config() == config && r.fits() && r.point.batch > rec.best.point.batch) larger_fits = true;
      rec.note = larger_fits && budget > 0 ? "larger batches exceed the latency budget"
                 : larger_fits             ? "larger batches have lower throughput"
                                           : "largest batch swept that fits";
    }
    out.push_back(rec);
  }
  return out;
}

std::string table(const std::vector<PointResult>& results) {
  bool any_overrides = false;
  for (const auto& r : results) any_overrides = any_overrides || !r.point.overrides.empty();
  std::string out = fmt::format("{:<18} {:>6} {:<6} {:<9} {}{:>12} {:>14} {:>7} {:>8} {}\n", "device", "batch", "layout",
                                "precision", any_overrides ? fmt::format("{:<20} ", "set") : "", "latency",
                                "throughput/s", "util", "bound", "fits");
  for (const auto& r : results) {
    const Point& p = r.point;
    std::string ov = any_overrides ? fmt::format("{:<20} ", overrides_text(p)) : "";
    if (!r.fits()) {
      out += fmt::format("{:<18} {:>6} {:<6} {:<9} {}{:>12} {:>14} {:>7} {:>8} {}: {}\n", p.device, p.batch, p.layout,
                         p.precision, ov, "-", "-", "-", "-", r.status == "does not fit" ? "no" : r.status, r.reason);
      continue;
    }
    out += fmt::format("{:<18} {:>6} {:<6} {:<9} {}{:>12} {:>14.1f} {:>6.1f}% {:>8} yes\n", p.device, p.batch, p.layout,
                       p.precision, ov, format_seconds(r.latency_s), r.throughput, 100 * r.utilization,
                       r.bound.empty() ? "-" : r.bound);
  }
  return out;
}

std::string csv(const std::vector<PointResult>& results) {
  std::string out = "device,batch,layout,precision,overrides,status,reason,latency_s,throughput,utilization,"
                    "intensity,bound,cycles,flops,host_seconds\n";
  auto quote = [](std::string s) {
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  for (const auto& r : results)
    out += fmt::format("{},{},{},{},{},{},{},{:.9g},{:.9g},{:.6g},{:.6g},{},{},{},{:.3f}\n", r.point.device,
                       r.point.batch, r.point.layout, r.point.precision, quote(overrides_text(r.point)), r.status,
                       quote(r.reason), r.latency_s, r.throughput, r.utilization, r.intensity, r.bound, r.cycles,
                       r.flops, r.host_seconds);
  return out;
}

}  // namespace mimic::cli::sweep
