#include "traces/svg_charts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "traces/format.h"
#include "traces/text_escape.h"

namespace mimic::traces {
namespace {

constexpr int kWidth = 1100;      // whole chart
constexpr int kLabelWidth = 220;  // left column with row labels
constexpr int kRowHeight = 18;
constexpr int kAxisHeight = 22;

std::string truncate(const std::string& s, size_t n) {
  return s.size() <= n ? s : s.substr(0, n - 1) + "\u2026";
}

std::string axis(double start_ns, double end_ns, int x0, int width, int y) {
  std::string out;
  double span = end_ns - start_ns;
  fmt::format_to(std::back_inserter(out), R"(<line x1="{}" y1="{}" x2="{}" y2="{}" class="axis"/>)",
                 x0, y, x0 + width, y);
  for (double t : nice_ticks(span, 8)) {
    double x = x0 + (span > 0 ? t / span * width : 0);
    fmt::format_to(std::back_inserter(out),
                   R"(<line x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2}" class="tick"/>)"
                   R"(<text x="{0:.1f}" y="{3}" class="ticklabel">{4}</text>)",
                   x, y, y + 4, y + 15, html_escape(format_ns(start_ns + t)));
  }
  return out;
}

}  // namespace

std::string category_color(const std::string& category) {
  static const char* palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
                                  "#b07aa1", "#ff9da7", "#9c755f", "#79706e", "#1f77b4", "#8c564b"};
  uint32_t h = 2166136261u;  // FNV-1a: the same category gets the same color in every report
  for (unsigned char c : category) h = (h ^ c) * 16777619u;
  return palette[h % (sizeof palette / sizeof palette[0])];
}

std::vector<double> nice_ticks(double span, int max_ticks) {
  std::vector<double> ticks;
  if (!(span > 0) || max_ticks < 1) return {0.0};
  double raw = span / max_ticks;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  for (double t = 0; t <= span * (1 + 1e-9); t += step) ticks.push_back(t);
  return ticks;
}

std::string svg_bar_chart(const std::vector<Bar>& bars, double max_value) {
  if (max_value <= 0)
    for (const Bar& b : bars) max_value = std::max(max_value, b.value);
  int bar_width = kWidth - kLabelWidth - 130;
  int height = static_cast<int>(bars.size()) * kRowHeight + 4;
  std::string out =
      fmt::format(R"(<svg class="chart" width="{}" height="{}" viewBox="0 0 {} {}" role="img">)",
                  kWidth, height, kWidth, height);
  int y = 2;
  for (const Bar& b : bars) {
    double w = max_value > 0 ? std::max(0.0, b.value / max_value * bar_width) : 0;
    fmt::format_to(std::back_inserter(out),
                   R"(<g><title>{}</title><text x="{}" y="{}" class="label">{}</text>)"
                   R"(<rect x="{}" y="{}" width="{:.1f}" height="{}" fill="{}"/>)"
                   R"(<text x="{:.1f}" y="{}" class="value">{}</text></g>)",
                   html_escape(b.tooltip.empty() ? b.label : b.tooltip), kLabelWidth - 6, y + 12,
                   html_escape(truncate(b.label, 34)), kLabelWidth, y + 2, w, kRowHeight - 4,
                   b.color.empty() ? "#4e79a7" : b.color, kLabelWidth + w + 6, y + 12,
                   html_escape(b.value_text));
    y += kRowHeight;
  }
  out += "</svg>";
  return out;
}

std::string svg_stacked_bars(const std::vector<StackedBar>& bars) {
  double max_value = 0;
  for (const StackedBar& b : bars) {
    double total = 0;
    for (const Segment& s : b.segments) total += std::max(0.0, s.value);
    max_value = std::max({max_value, total, b.marker});
  }
  const int bar_width = kWidth - kLabelWidth - 130;
  const int height = static_cast<int>(bars.size()) * kRowHeight + 4;
  std::string out =
      fmt::format(R"(<svg class="chart" width="{}" height="{}" viewBox="0 0 {} {}" role="img">)",
                  kWidth, height, kWidth, height);
  auto width_of = [&](double v) {
    return max_value > 0 ? std::max(0.0, v) / max_value * bar_width : 0;
  };
  int y = 2;
  for (const StackedBar& b : bars) {
    fmt::format_to(std::back_inserter(out), R"(<text x="{}" y="{}" class="label">{}</text>)",
                   kLabelWidth - 6, y + 12, html_escape(truncate(b.label, 34)));
    double x = kLabelWidth;
    for (const Segment& s : b.segments) {
      double w = width_of(s.value);
      fmt::format_to(
          std::back_inserter(out),
          R"(<rect x="{:.1f}" y="{}" width="{:.1f}" height="{}" fill="{}"><title>{}: {}</title></rect>)",
          x, y + 2, w, kRowHeight - 4, category_color(s.category), html_escape(s.category),
          html_escape(s.value_text));
      x += w;
    }
    if (b.marker > 0)
      fmt::format_to(
          std::back_inserter(out),
          R"(<line x1="{0:.1f}" x2="{0:.1f}" y1="{1}" y2="{2}" stroke="#d62728" stroke-width="2"/>)",
          kLabelWidth + width_of(b.marker), y, y + kRowHeight);
    fmt::format_to(std::back_inserter(out), R"(<text x="{:.1f}" y="{}" class="value">{}</text>)",
                   x + 6, y + 12, html_escape(b.total_text));
    y += kRowHeight;
  }
  out += "</svg>";
  return out;
}

std::string svg_timeline(const std::vector<TimelineRow>& rows, double start_ns, double end_ns) {
  int plot = kWidth - kLabelWidth - 10;
  double span = std::max(end_ns - start_ns, 1e-9);
  int height = static_cast<int>(rows.size()) * kRowHeight + kAxisHeight + 4;
  std::string out =
      fmt::format(R"(<svg class="chart" width="{}" height="{}" viewBox="0 0 {} {}" role="img">)",
                  kWidth, height, kWidth, height);
  auto x_of = [&](double ns) { return kLabelWidth + (ns - start_ns) / span * plot; };
  int y = 2;
  for (const TimelineRow& row : rows) {
    fmt::format_to(
        std::back_inserter(out),
        R"(<text x="{}" y="{}" class="label">{}</text><rect x="{}" y="{}" width="{}" height="{}" class="lane"/>)",
        kLabelWidth - 6, y + 12, html_escape(truncate(row.label, 34)), kLabelWidth, y + 1, plot,
        kRowHeight - 2);
    if (row.slices.size() <= kTimelineMaxSlices) {
      for (const Slice& s : row.slices) {
        double x = x_of(s.start_ns), w = std::max(0.5, x_of(s.end_ns) - x);
        fmt::format_to(
            std::back_inserter(out),
            R"(<rect x="{:.2f}" y="{}" width="{:.2f}" height="{}" fill="{}"><title>{}</title></rect>)",
            x, y + 2, w, kRowHeight - 4, s.color, html_escape(s.tooltip));
      }
    } else {
      // Occupancy per pixel column: busy ns per column and the color that covers most of it.
      std::vector<double> busy(static_cast<size_t>(plot), 0.0);
      std::vector<std::map<std::string, double>> colors(static_cast<size_t>(plot));
      double ns_per_px = span / plot;
      for (const Slice& s : row.slices) {
        double a = (s.start_ns - start_ns) / ns_per_px, b = (s.end_ns - start_ns) / ns_per_px;
        for (int px = std::max(0, static_cast<int>(a)); px < plot && px <= static_cast<int>(b);
             ++px) {
          double cover = (std::min(b, px + 1.0) - std::max(a, double(px))) * ns_per_px;
          if (cover <= 0) continue;
          busy[px] += cover;
          colors[px][s.color] += cover;
        }
      }
      for (int px = 0; px < plot; ++px) {
        if (busy[px] <= 0) continue;
        auto best =
            std::max_element(colors[px].begin(), colors[px].end(),
                             [](const auto& p, const auto& q) { return p.second < q.second; });
        fmt::format_to(
            std::back_inserter(out),
            R"(<rect x="{}" y="{}" width="1" height="{}" fill="{}" fill-opacity="{:.2f}"/>)",
            kLabelWidth + px, y + 2, kRowHeight - 4, best->first,
            std::clamp(busy[px] / ns_per_px, 0.15, 1.0));
      }
      fmt::format_to(std::back_inserter(out), R"(<title>{}: {} events, drawn as occupancy</title>)",
                     html_escape(row.label), row.slices.size());
    }
    y += kRowHeight;
  }
  out += axis(0, span, kLabelWidth, plot, y + 2);
  out += "</svg>";
  return out;
}

std::string svg_line_chart(const std::string& label, const std::vector<Point>& points) {
  const int height = 120, plot_h = 90, plot = kWidth - kLabelWidth - 10;
  std::string out =
      fmt::format(R"(<svg class="chart" width="{}" height="{}" viewBox="0 0 {} {}" role="img">)",
                  kWidth, height + kAxisHeight, kWidth, height + kAxisHeight);
  if (points.empty()) return out + "</svg>";
  double x0 = points.front().x_ns, x1 = points.back().x_ns;
  double lo = points.front().y, hi = lo;
  for (const Point& p : points) {
    lo = std::min(lo, p.y);
    hi = std::max(hi, p.y);
    x0 = std::min(x0, p.x_ns);
    x1 = std::max(x1, p.x_ns);
  }
  if (hi == lo) hi = lo + 1;
  double span = std::max(x1 - x0, 1e-9);
  fmt::format_to(
      std::back_inserter(out),
      R"(<text x="{}" y="20" class="label">{}</text><text x="{}" y="36" class="value-left">max {:.4g}</text>)"
      R"(<text x="{}" y="{}" class="value-left">min {:.4g}</text><polyline class="line" points=")",
      kLabelWidth - 6, html_escape(truncate(label, 34)), kLabelWidth - 6, hi, kLabelWidth - 6,
      plot_h, lo);
  // At most ~2 samples per pixel column (every k-th sample).
  size_t stride = std::max<size_t>(1, points.size() / (2 * static_cast<size_t>(plot)));
  for (size_t i = 0; i < points.size(); i += stride) {
    const Point& p = points[i];
    fmt::format_to(std::back_inserter(out), "{:.1f},{:.1f} ",
                   kLabelWidth + (p.x_ns - x0) / span * plot,
                   10 + (hi - p.y) / (hi - lo) * (plot_h - 10));
  }
  out += R"("/>)";
  out += axis(x0, x1, kLabelWidth, plot, height);
  out += "</svg>";
  return out;
}

}  // namespace mimic::traces
