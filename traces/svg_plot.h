// Inline SVG x/y plots for reports: several series of points (with lines and hover text), linear
// or logarithmic axes, horizontal reference lines (a latency budget) and a legend. Pure functions
// from data to markup, no script, no network.
#pragma once

#include <string>
#include <vector>

namespace mimic::traces {

struct PlotPoint {
  double x = 0, y = 0;
  std::string tooltip;
};

struct PlotSeries {
  std::string name, color;
  std::vector<PlotPoint> points;  // drawn in order
  bool lines = true;
  bool markers = true;
  bool dashed = false;
};

struct ReferenceLine {
  double y = 0;
  std::string label, color = "#c62828";
};

struct Plot {
  std::string title, x_label, y_label;
  bool log_x = false, log_y = false;
  std::vector<PlotSeries> series;
  std::vector<ReferenceLine> references;
  int width = 640, height = 360;
};

std::string svg_plot(const Plot& plot);
// Engineering-style short numbers for axis ticks: 1.5K, 20M, 0.25.
std::string short_number(double v);

}  // namespace mimic::traces
