#include "frontend/cli/run_summary.h"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>

#include "frontend/cli/cli_common.h"

namespace mimic::cli {
namespace {

std::vector<double> as_doubles(const ir::HostTensor& t) {
  std::vector<double> v(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = ir::element_as_double(t, i);
  return v;
}

double op_seconds(const backends::OpReport& op) {
  return op.device_seconds > 0 ? op.device_seconds : op.wall_ns * 1e-9;
}

void print_ops(std::ostream& os, const backends::RunReport& r, int top) {
  std::vector<const backends::OpReport*> ops;
  double total = 0;
  for (const auto& op : r.ops) {
    ops.push_back(&op);
    total += op_seconds(op);
  }
  std::stable_sort(ops.begin(), ops.end(),
                   [](auto* a, auto* b) { return op_seconds(*a) > op_seconds(*b); });
  bool cycles = r.cycles > 0;
  os << fmt::format("\ntop {} ops by {}\n", std::min<size_t>(top, ops.size()),
                    cycles ? "device time" : "wall time");
  os << fmt::format("  {:<36} {:<20} {:>10} {:>6} {:>10} {:>9}{}\n", "node", "op", "time", "%",
                    "GFLOP", "GFLOP/s", cycles ? "    cycles  util  FLOP/B  bound" : "");
  for (int i = 0; i < top && i < static_cast<int>(ops.size()); ++i) {
    const auto& op = *ops[i];
    double s = op_seconds(op);
    std::string name = op.node.size() > 36 ? "..." + op.node.substr(op.node.size() - 33) : op.node;
    std::string type = op.op_type + (op.fallback ? " (cpu)" : "");
    os << fmt::format("  {:<36} {:<20} {:>10} {:>6.1f} {:>10.3f} {:>9.1f}", name, type,
                      format_seconds(s), total > 0 ? 100 * s / total : 0, op.flops * 1e-9,
                      s > 0 ? op.flops / s * 1e-9 : 0);
    if (cycles)
      os << fmt::format(" {:>9} {:>5.0f}% {:>7.0f} {:>6}", op.cycles, op.utilization * 100,
                        op.intensity, op.bound);
    os << "\n";
  }
}

// Each table's name, size and first rows (tables are ordered by their producers, e.g. the IPU
// tile-memory table fullest tile first).
void print_tables(std::ostream& os, const std::map<std::string, backends::Table>& tables, int top) {
  for (const auto& [name, t] : tables) {
    os << fmt::format(
        "\ntable {} ({} rows{})\n", name, t.rows.size(),
        t.rows.size() > static_cast<size_t>(top) ? fmt::format(", first {}", top) : "");
    std::string line = " ";
    for (const auto& c : t.columns)
      line += fmt::format(" {:>12}", c.size() > 12 ? c.substr(0, 12) : c);
    os << line << "\n";
    for (size_t i = 0; i < t.rows.size() && i < static_cast<size_t>(top); ++i) {
      line = " ";
      for (double v : t.rows[i]) line += fmt::format(" {:>12.10g}", v);
      os << line << "\n";
    }
  }
}

}  // namespace

void print_compile_report(std::ostream& os, const backends::CompileReport& r, int top_rows) {
  if (!r.metrics.empty()) {
    os << "\ncompile metrics\n";
    for (const auto& [k, v] : r.metrics) os << fmt::format("  {:<32} {:g}\n", k, v);
  }
  for (const auto& note : r.notes) os << "note: " << note << "\n";
  for (const auto& why : r.fallback_reasons) os << "cpu fallback: " << why << "\n";
  print_tables(os, r.tables, top_rows);
}

OutputStats output_stats(const std::string& name, const ir::HostTensor& t) {
  OutputStats s{name, t.type().str(), 0, 0};
  std::vector<double> v = as_doubles(t);
  for (double x : v) {
    s.sum += x;
    s.mean_abs += std::fabs(x);
  }
  if (!v.empty()) s.mean_abs /= static_cast<double>(v.size());
  return s;
}

Difference compare_outputs(const std::vector<ir::HostTensor>& a,
                           const std::vector<ir::HostTensor>& b) {
  Difference d;
  double scale = 0;
  for (size_t k = 0; k < a.size() && k < b.size(); ++k) {
    std::vector<double> x = as_doubles(a[k]), y = as_doubles(b[k]);
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      const bool nan_on_one_side = std::isnan(x[i]) != std::isnan(y[i]);
      d.nan_mismatches += nan_on_one_side;
      double diff = nan_on_one_side ? INFINITY : std::fabs(x[i] - y[i]);
      d.max_abs = std::max(d.max_abs, diff);
      d.max_rel = std::max(d.max_rel, diff / std::max(std::fabs(y[i]), 1e-6));
      scale = std::max(scale, std::fabs(y[i]));
    }
  }
  d.of_scale = scale > 0 ? d.max_abs / scale : d.max_abs;
  return d;
}

void print_report(std::ostream& os, const backends::RunReport& r, int top_ops) {
  os << fmt::format("{:<12}{}\n", "wall time", format_seconds(r.wall_seconds));
  if (r.cycles > 0) {
    os << fmt::format("{:<12}{} cycles = {} at {}\n", "device", r.cycles,
                      format_seconds(r.device_seconds), format_count(r.clock_hz, "Hz"));
    os << fmt::format(
        "{:<12}{} achieved of {} peak ({:.1f}%), ridge point {:.0f} FLOP/byte\n", "compute",
        format_count(r.achieved_flops_per_s, "FLOP/s"), format_count(r.peak_flops_per_s, "FLOP/s"),
        r.peak_flops_per_s > 0 ? 100 * r.achieved_flops_per_s / r.peak_flops_per_s : 0,
        r.ridge_intensity);
  } else {
    os << fmt::format("{:<12}{} total, {} achieved\n", "compute",
                      format_count(static_cast<double>(r.total_flops()), "FLOP"),
                      format_count(r.achieved_flops_per_s, "FLOP/s"));
  }
  if (r.fallback_count() > 0)
    os << fmt::format("{:<12}{} op(s) fell back to cpu ({} host time)\n", "fallback",
                      r.fallback_count(), format_seconds(r.fallback_wall_seconds));
  for (const auto& [level, bytes] : r.bytes_moved)
    os << fmt::format("{:<12}{:<10} {}\n", "traffic", level,
                      format_bytes(static_cast<double>(bytes)));
  if (!r.units.empty()) {
    os << "\nunits\n";
    for (const auto& u : r.units)
      os << fmt::format("  {:<24} {:<10} busy {:>12} cycles  {:>5.1f}%\n", u.name, u.kind,
                        u.busy_cycles, 100 * u.utilization);
  }
  if (!r.metrics.empty()) {
    os << "\nmetrics\n";
    for (const auto& [k, v] : r.metrics) os << fmt::format("  {:<32} {:g}\n", k, v);
  }
  for (const auto& note : r.notes) os << "note: " << note << "\n";
  print_tables(os, r.tables, top_ops);
  print_ops(os, r, top_ops);
}

}  // namespace mimic::cli
