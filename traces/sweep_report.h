// The self-contained HTML report of a sweep: throughput, latency (with the budget line) and
// utilization against batch for every configuration, a roofline with every point and each
// device's roof, the recommendation per configuration and the full table (inline SVG, no network).
// Training sweeps add each point's memory at its peak by category (against the capacity) and its
// step time by phase, as stacked bars.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace mimic::traces {

struct SweepReportPoint {
  std::string config;  // the series a point belongs to: device, layout, precision, overrides
  std::string device;
  int64_t batch = 0;
  std::string status, reason, bound;
  double latency_s = 0, throughput = 0, utilization = 0, intensity = 0;
  double achieved_flops = 0, peak_flops = 0, ridge = 0;
  // Training sweeps: bytes at the memory peak by category ("peak_bytes" and "capacity_bytes"
  // apart) and seconds of the step by phase.
  std::map<std::string, double> memory, phases;
};

struct SweepReportRecommendation {
  std::string config;
  bool found = false;
  int64_t batch = 0;
  double latency_s = 0, throughput = 0;
  std::string note;
};

struct SweepReport {
  std::string title, sweep_id, spec_json;
  double latency_budget_s = 0;  // 0: none
  bool train = false;           // points are training steps: samples/s, step time
  std::vector<SweepReportPoint> points;
  std::vector<SweepReportRecommendation> recommendations;
};

void write_sweep_report(const SweepReport& report, std::ostream& out);

}  // namespace mimic::traces
