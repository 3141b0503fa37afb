#include "traces/sweep_report.h"

#include <fmt/format.h>
#include <map>

#include "traces/svg_charts.h"
#include "traces/svg_plot.h"
#include "traces/text_escape.h"

namespace mimic::traces {
namespace {

std::string seconds_text(double s) {
  if (s >= 1) return fmt::format("{:.3f} s", s);
  if (s >= 1e-3) return fmt::format("{:.3f} ms", s * 1e3);
  return fmt::format("{:.2f} us", s * 1e6);
}

std::string point_tooltip(const SweepReportPoint& p) {
  return fmt::format("{} batch {}: {} latency, {:.1f}/s, {:.1f}% of peak{}", p.config, p.batch,
                     seconds_text(p.latency_s), p.throughput, 100 * p.utilization,
                     p.bound.empty() ? "" : ", " + p.bound + "-bound");
}

// One series per configuration over the points that fit, ordered by batch.
std::vector<PlotSeries> by_config(const SweepReport& r, double (*value)(const SweepReportPoint&)) {
  std::map<std::string, PlotSeries> series;
  std::vector<std::string> order;
  for (const auto& p : r.points) {
    if (p.status != "ok") continue;
    if (!series.count(p.config)) {
      order.push_back(p.config);
      series[p.config] = PlotSeries{p.config, category_color(p.config), {}, true, true, false};
    }
    series[p.config].points.push_back({static_cast<double>(p.batch), value(p), point_tooltip(p)});
  }
  std::vector<PlotSeries> out;
  for (const auto& c : order) out.push_back(series[c]);
  return out;
}

Plot roofline(const SweepReport& r) {
  Plot plot{"Roofline",
            "operational intensity (FLOP per off-chip byte)",
            "achieved FLOP/s",
            true,
            true,
            {},
            {}};
  std::map<std::string, std::pair<double, double>> roofs;  // device -> (peak, ridge)
  double x_lo = 1e300, x_hi = 0;
  for (const auto& p : r.points) {
    if (p.status != "ok" || p.intensity <= 0) continue;
    x_lo = std::min(x_lo, p.intensity);
    x_hi = std::max(x_hi, p.intensity);
    if (p.peak_flops > 0 && p.ridge > 0) roofs[p.device] = {p.peak_flops, p.ridge};
  }
  for (const auto& [device, roof] : roofs) {
    double lo = std::min(x_lo, roof.second) / 4, hi = std::max(x_hi, roof.second) * 4;
    double peak = roof.first,
           ridge = roof.second;  // C++17 lambdas cannot capture structured bindings
    auto at = [peak, ridge](double x) { return peak * std::min(1.0, x / ridge); };
    plot.series.push_back(
        PlotSeries{device + " roof",
                   "#555",
                   {{lo, at(lo), ""},
                    {roof.second, roof.first, fmt::format("ridge {:.0f} FLOP/byte", roof.second)},
                    {hi, at(hi), ""}},
                   true,
                   false,
                   true});
  }
  for (auto& s : by_config(r, [](const SweepReportPoint& p) { return p.achieved_flops; })) {
    // Re-place each point at its intensity (x) instead of its batch.
    size_t i = 0;
    for (const auto& p : r.points)
      if (p.status == "ok" && p.config == s.name && i < s.points.size())
        s.points[i++].x = p.intensity;
    s.lines = false;
    plot.series.push_back(s);
  }
  return plot;
}

void write_tables(const SweepReport& r, std::ostream& out) {
  out << "<h2>Recommendation</h2><table><tr><th>configuration</th><th>batch</th><th>throughput/s</"
         "th><th>latency</th><th></th></tr>";
  for (const auto& rec : r.recommendations) {
    if (!rec.found)
      out << fmt::format("<tr><td>{}</td><td colspan=3>none</td><td>{}</td></tr>",
                         html_escape(rec.config), html_escape(rec.note));
    else
      out << fmt::format(
          "<tr class=\"chosen\"><td>{}</td><td>{}</td><td>{:.1f}</td><td>{}</td><td>{}</td></tr>",
          html_escape(rec.config), rec.batch, rec.throughput, seconds_text(rec.latency_s),
          html_escape(rec.note));
  }
  out << "</table><h2>Points</h2><table><tr><th>configuration</th><th>batch</th><th>latency</"
         "th><th>throughput/s</th>"
         "<th>utilization</th><th>intensity</th><th>bound</th><th>fits</th></tr>";
  for (const auto& p : r.points) {
    if (p.status != "ok") {
      out << fmt::format(
          "<tr class=\"nofit\"><td>{}</td><td>{}</td><td colspan=5>{}</td><td>{}</td></tr>",
          html_escape(p.config), p.batch, html_escape(p.reason),
          p.status == "does not fit" ? "no" : p.status);
      continue;
    }
    out << fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.1f}</td><td>{:.1f}%</td><td>{:.1f}</"
        "td><td>{}</td><td>yes</td></tr>",
        html_escape(p.config), p.batch, seconds_text(p.latency_s), p.throughput,
        100 * p.utilization, p.intensity, html_escape(p.bound));
  }
  out << "</table>";
}

std::string bytes_text(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  return fmt::format("{:.{}f} {}", b, u == 0 ? 0 : 2, units[u]);
}

std::string point_label(const SweepReportPoint& p) {
  return fmt::format("{} b{}", p.config, p.batch);
}

// Memory at the peak by category, one bar per point, with the capacity as a red tick.
void write_memory_chart(const SweepReport& r, std::ostream& out) {
  std::vector<StackedBar> bars;
  for (const auto& p : r.points) {
    StackedBar b{point_label(p), {}, "", 0};
    for (const auto& [key, bytes] : p.memory) {
      if (key == "peak_bytes" || key == "capacity_bytes" || bytes <= 0) continue;
      std::string category = key.size() > 6 && key.compare(key.size() - 6, 6, "_bytes") == 0
                                 ? key.substr(0, key.size() - 6)
                                 : key;
      b.segments.push_back({category, bytes, bytes_text(bytes)});
    }
    if (b.segments.empty()) continue;
    auto peak = p.memory.find("peak_bytes"), cap = p.memory.find("capacity_bytes");
    if (cap != p.memory.end()) b.marker = cap->second;
    b.total_text = (peak != p.memory.end() ? bytes_text(peak->second) : "") +
                   (cap != p.memory.end() ? " of " + bytes_text(cap->second) : "") +
                   (p.status == "ok" ? "" : " (does not fit)");
    bars.push_back(std::move(b));
  }
  if (bars.empty()) return;
  out << "<h2>Memory at the peak, by category</h2><p>Red tick: the capacity. Hover a segment for "
         "its category and bytes.</p>"
      << svg_stacked_bars(bars);
}

void write_phase_chart(const SweepReport& r, std::ostream& out) {
  std::vector<StackedBar> bars;
  for (const auto& p : r.points) {
    if (p.status != "ok" || p.phases.empty()) continue;
    StackedBar b{point_label(p), {}, seconds_text(p.latency_s), 0};
    for (const char* phase : {"forward", "backward", "allreduce", "update", "other"}) {
      auto it = p.phases.find(phase);
      if (it != p.phases.end() && it->second > 0)
        b.segments.push_back({phase, it->second, seconds_text(it->second)});
    }
    bars.push_back(std::move(b));
  }
  if (bars.empty()) return;
  out << "<h2>Step time by phase</h2>" << svg_stacked_bars(bars);
}

}  // namespace

void write_sweep_report(const SweepReport& r, std::ostream& out) {
  out << "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>" << html_escape(r.title)
      << "</title><style>"
      << "body{font-family:sans-serif;margin:24px;color:#222}table{border-collapse:collapse;margin:"
         "8px 0}"
      << "td,th{border:1px solid #ddd;padding:3px "
         "8px;font-size:12px;text-align:right}td:first-child{text-align:left}"
      << "tr.chosen{background:#e8f5e9}tr.nofit{color:#999}.plots{display:flex;flex-wrap:wrap;gap:"
         "12px}"
      << "pre{background:#f6f6f6;padding:8px;font-size:11px;white-space:pre-wrap}</style></"
         "head><body>";
  out << "<h1>" << html_escape(r.title) << "</h1><p>sweep " << html_escape(r.sweep_id) << ", "
      << r.points.size() << " points";
  if (r.latency_budget_s > 0) out << ", latency budget " << seconds_text(r.latency_budget_s);
  out << "</p><div class=\"plots\">";
  Plot throughput{"Throughput vs batch",
                  "batch",
                  r.train ? "samples per second" : "inferences per second",
                  true,
                  true,
                  by_config(r, [](const SweepReportPoint& p) { return p.throughput; }),
                  {}};
  Plot latency{r.train ? "Step time vs batch" : "Latency vs batch",
               "batch",
               r.train ? "step time (s)" : "latency (s)",
               true,
               true,
               by_config(r, [](const SweepReportPoint& p) { return p.latency_s; }),
               {}};
  if (r.latency_budget_s > 0)
    latency.references.push_back(
        {r.latency_budget_s, "budget " + seconds_text(r.latency_budget_s)});
  Plot utilization{"Utilization vs batch",
                   "batch",
                   "% of peak FLOP/s",
                   true,
                   false,
                   by_config(r, [](const SweepReportPoint& p) { return 100 * p.utilization; }),
                   {}};
  for (const Plot* p : {&throughput, &latency, &utilization}) out << svg_plot(*p);
  out << svg_plot(roofline(r)) << "</div>";
  write_memory_chart(r, out);
  write_phase_chart(r, out);
  write_tables(r, out);
  out << "<h2>Sweep</h2><pre>" << html_escape(r.spec_json) << "</pre></body></html>\n";
}

}  // namespace mimic::traces
