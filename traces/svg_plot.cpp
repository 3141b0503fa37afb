#include "traces/svg_plot.h"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <limits>

#include "traces/text_escape.h"

namespace mimic::traces {
namespace {

constexpr int kLeft = 70, kRight = 150, kTop = 30, kBottom = 45;

struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  double map(double v, double pixels_lo, double pixels_hi) const {
    double a = log ? std::log10(std::max(v, 1e-300)) : v, l = log ? std::log10(lo) : lo,
           h = log ? std::log10(hi) : hi;
    double t = h > l ? (a - l) / (h - l) : 0.5;
    return pixels_lo + t * (pixels_hi - pixels_lo);
  }
  std::vector<double> ticks() const {
    std::vector<double> out;
    if (log) {
      for (double p = std::floor(std::log10(lo)); p <= std::ceil(std::log10(hi)); ++p) {
        double v = std::pow(10.0, p);
        if (v >= lo * 0.999 && v <= hi * 1.001) out.push_back(v);
      }
      if (out.size() < 2) out = {lo, hi};
      return out;
    }
    double span = hi - lo, step = std::pow(10.0, std::floor(std::log10(span > 0 ? span : 1)));
    if (span / step < 3) step /= 2;
    if (span / step > 8) step *= 2;
    for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push_back(v);
    return out;
  }
};

Axis make_axis(const Plot& p, bool x) {
  Axis a;
  a.log = x ? p.log_x : p.log_y;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  auto take = [&](double v) {
    if (a.log && v <= 0) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  };
  for (const auto& s : p.series)
    for (const auto& pt : s.points) take(x ? pt.x : pt.y);
  if (!x)
    for (const auto& r : p.references) take(r.y);
  if (!std::isfinite(lo)) lo = a.log ? 1 : 0, hi = a.log ? 10 : 1;
  if (a.log) {
    a.lo = std::pow(10.0, std::floor(std::log10(lo)));
    a.hi = std::pow(10.0, std::ceil(std::log10(hi)));
    if (a.hi <= a.lo) a.hi = a.lo * 10;
  } else {
    a.lo = std::min(0.0, lo);
    a.hi = hi > a.lo ? hi * 1.05 : a.lo + 1;
  }
  return a;
}

}  // namespace

std::string short_number(double v) {
  double a = std::fabs(v);
  if (a >= 1e12) return fmt::format("{:g}T", v / 1e12);
  if (a >= 1e9) return fmt::format("{:g}G", v / 1e9);
  if (a >= 1e6) return fmt::format("{:g}M", v / 1e6);
  if (a >= 1e3) return fmt::format("{:g}K", v / 1e3);
  return fmt::format("{:g}", v);
}

std::string svg_plot(const Plot& p) {
  Axis ax = make_axis(p, true), ay = make_axis(p, false);
  int x0 = kLeft, x1 = p.width - kRight, y0 = p.height - kBottom, y1 = kTop;
  std::string svg = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="{}" height="{}" viewBox="0 0 {} {}" font-family="sans-serif" font-size="11">)",
      p.width, p.height, p.width, p.height);
  svg += fmt::format(R"(<text x="{}" y="18" font-size="13" font-weight="bold">{}</text>)", x0,
                     html_escape(p.title));
  for (double t : ax.ticks()) {
    double x = ax.map(t, x0, x1);
    svg += fmt::format(
        R"(<line x1="{:.1f}" y1="{}" x2="{:.1f}" y2="{}" stroke="#eee"/><text x="{:.1f}" y="{}" text-anchor="middle">{}</text>)",
        x, y1, x, y0, x, y0 + 14, short_number(t));
  }
  for (double t : ay.ticks()) {
    double y = ay.map(t, y0, y1);
    svg += fmt::format(
        R"(<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" stroke="#eee"/><text x="{}" y="{:.1f}" text-anchor="end">{}</text>)",
        x0, y, x1, y, x0 - 4, y + 4, short_number(t));
  }
  svg += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#999"/>)",
                     x0, y1, x1 - x0, y0 - y1);
  svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">{}</text>)", (x0 + x1) / 2,
                     p.height - 8, html_escape(p.x_label + (p.log_x ? " (log)" : "")));
  svg += fmt::format(
      R"svg(<text transform="translate(14,{}) rotate(-90)" text-anchor="middle">{}</text>)svg",
      (y0 + y1) / 2, html_escape(p.y_label + (p.log_y ? " (log)" : "")));
  for (const auto& r : p.references) {
    double y = ay.map(r.y, y0, y1);
    svg += fmt::format(
        R"(<line class="reference" x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" stroke="{}" stroke-dasharray="6,4"/><text x="{}" y="{:.1f}" fill="{}">{}</text>)",
        x0, y, x1, y, r.color, x1 + 4, y + 4, r.color, html_escape(r.label));
  }
  int legend_y = y1 + 10;
  for (const auto& s : p.series) {
    std::string path;
    for (const auto& pt : s.points) {
      if ((p.log_x && pt.x <= 0) || (p.log_y && pt.y <= 0)) continue;
      path += fmt::format("{}{:.1f},{:.1f}", path.empty() ? "M" : " L", ax.map(pt.x, x0, x1),
                          ay.map(pt.y, y0, y1));
    }
    if (s.lines && !path.empty())
      svg += fmt::format(
          R"(<path class="series" d="{}" fill="none" stroke="{}" stroke-width="1.6"{}/>)", path,
          s.color, s.dashed ? R"( stroke-dasharray="4,3")" : "");
    if (s.markers)
      for (const auto& pt : s.points) {
        if ((p.log_x && pt.x <= 0) || (p.log_y && pt.y <= 0)) continue;
        svg += fmt::format(
            R"(<circle class="point" cx="{:.1f}" cy="{:.1f}" r="3" fill="{}"><title>{}</title></circle>)",
            ax.map(pt.x, x0, x1), ay.map(pt.y, y0, y1), s.color, html_escape(pt.tooltip));
      }
    svg += fmt::format(
        R"(<rect x="{}" y="{}" width="10" height="10" fill="{}"/><text x="{}" y="{}">{}</text>)",
        x1 + 6, legend_y - 9, s.color, x1 + 20, legend_y, html_escape(s.name));
    legend_y += 15;
  }
  return svg + "</svg>";
}

}  // namespace mimic::traces
