// Results of sweep points and the recommendation: for each configuration (device, layout,
// precision, overrides), the batch with the highest throughput whose latency fits the budget.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "frontend/cli/process_pool.h"
#include "frontend/cli/sweep_spec.h"

namespace mimic::cli::sweep {

struct PointResult {
  Point point;
  std::string status;      // "ok", "does not fit", "error" (the run failed), "failed" (the executor
                           // gave up on it)
  std::string reason;      // why it does not fit, or the error
  double latency_s = 0;    // device time of one batch (simulated for emulators, measured otherwise)
  double throughput = 0;   // inferences per second = batch / latency
  double utilization = 0;  // achieved / peak FLOP/s (0 when the device has no peak)
  double intensity = 0;    // FLOP per off-chip byte
  double achieved_flops = 0, peak_flops = 0, ridge = 0;
  std::string bound;  // "compute" | "memory" | ""
  uint64_t cycles = 0;
  int64_t flops = 0;
  double host_seconds = 0;  // how long the point took to emulate
  // Training points: latency_s is the step time, throughput samples per second.
  double samples_per_step = 0;           // batch x gradient accumulation (as the backend reports)
  std::map<std::string, double> phases;  // seconds: forward, backward, allreduce, update
  std::map<std::string, double> memory;  // bytes: peak_bytes, capacity_bytes, <category>_bytes
  bool fits() const { return status == "ok"; }
};

// Interprets one `mimic run --json` process: exit 4 (compile error or out of memory) means the
// point does not fit; other failures and crashes are errors.
PointResult analyze(const Point& p, const ProcessResult& r);
PointResult from_json(const Point& p, const nlohmann::json& run);
nlohmann::json to_json(const PointResult& r);
PointResult point_result_from_json(const nlohmann::json& j);

struct Recommendation {
  std::string config;
  bool found = false;
  PointResult best;
  std::string note;  // why nothing was chosen, or what bounds the choice
};
std::vector<Recommendation> recommend(const std::vector<PointResult>& results,
                                      double latency_budget_s);

std::string table(const std::vector<PointResult>& results);
std::string csv(const std::vector<PointResult>& results);

}  // namespace mimic::cli::sweep
