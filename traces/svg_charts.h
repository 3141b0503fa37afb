// Inline SVG charts for the HTML report: horizontal bars, a per-track timeline and a line chart.
// Pure functions from data to markup; hover text uses SVG <title> (no script, no network).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mimic::traces {

// A stable, readable color for a category (e.g. an op type).
std::string category_color(const std::string& category);

struct Bar {
  std::string label;
  double value = 0;
  std::string value_text;  // drawn right of the bar
  std::string color;
  std::string tooltip;
};
// `max_value` 0: the largest bar's value fills the width.
std::string svg_bar_chart(const std::vector<Bar>& bars, double max_value = 0);

// Rows with more slices than this are drawn as occupancy (their slices need no tooltip).
inline constexpr size_t kTimelineMaxSlices = 4000;

struct Slice {
  double start_ns = 0, end_ns = 0;
  std::string color, tooltip;
};
struct TimelineRow {
  std::string label;
  std::vector<Slice> slices;  // sorted by start
};
// Horizontal stacked bars (e.g. a sweep point's memory by category), all on one scale: each
// segment's color comes from its category and its tooltip names the category and value_text.
struct Segment {
  std::string category;
  double value = 0;
  std::string value_text;
};
struct StackedBar {
  std::string label;
  std::vector<Segment> segments;
  std::string total_text;  // drawn right of the bar
  double marker = 0;       // a vertical tick at this value (e.g. the capacity); 0: none
};
std::string svg_stacked_bars(const std::vector<StackedBar>& bars);

// One row per track over [0, span_ns]. Rows with more slices than the pixels can show are drawn
// as per-pixel occupancy (opacity = busy fraction, color = the most common category).
std::string svg_timeline(const std::vector<TimelineRow>& rows, double start_ns, double end_ns);

struct Point {
  double x_ns = 0, y = 0;
};
std::string svg_line_chart(const std::string& label, const std::vector<Point>& points);

// Tick positions 1/2/5 x 10^k covering [0, span].
std::vector<double> nice_ticks(double span, int max_ticks);

}  // namespace mimic::traces
