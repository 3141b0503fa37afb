// `mimic sweep`: what to sweep. The grid is the cartesian product of devices, batches, layouts,
// precisions, preset-field overrides and backend options (and, with --train, recomputation
// modes); each point is one `mimic run` (or, with --train, one timed `mimic train` step) in its
// own process.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mimic::cli::sweep {

struct Spec {
  std::string model;  // zoo model, or empty with onnx
  std::string onnx;   // ONNX file
  std::vector<std::string> model_args;
  std::vector<std::string> devices;
  std::vector<int64_t> batches;
  std::vector<std::string> layouts{"nchw"};
  std::vector<std::string> precisions{"default"};
  // field -> values, from --set field=v1,v2,...
  std::vector<std::pair<std::string, std::vector<std::string>>> overrides;
  // key -> values, from --option key=v1,v2,... (backend options: replicas, num_ipus, ...)
  std::vector<std::pair<std::string, std::vector<std::string>>> options;
  bool train = false;  // points are training steps (`mimic train`), not inferences
  std::vector<std::string> recomputes{"none"};            // --train: recomputation modes
  std::string optimizer = "sgd", loss = "cross_entropy";  // --train
  double latency_budget_s = 0;  // 0: no budget (--train: a step-time budget)
  bool timing_only = false;
  uint64_t seed = 0;
};

struct Point {
  std::string device, layout, precision;
  int64_t batch = 0;
  std::vector<std::pair<std::string, std::string>> overrides;  // field=value
  std::vector<std::pair<std::string, std::string>> options;    // backend option key=value
  std::string recompute;  // training points: none|checkpoints|full; empty for inference points
  std::string key()
      const;  // stable identity within a sweep ("tpu-emu:v4|b8|nchw|default|mxu.rows=64")
  // The grouping for recommendations: everything but the batch (training: also everything a
  // training run chooses, recomputation and backend options, so the best of them is picked).
  std::string config() const;
  std::string choices() const;  // "mxu.rows=64 replicas=2 recompute=full": sets, options, recompute
};

// "1,2,4,...,1024" (powers of two between the ends when "..." is used), "1,8,64", "16".
std::vector<int64_t> parse_batches(const std::string& text);
// "a,b,c" -> {a, b, c}; throws InvalidArgument naming `what` on empty items.
std::vector<std::string> parse_list(const std::string& text, const std::string& what);
// "7ms", "250us", "0.5s", "2000ns" -> seconds.
double parse_duration(const std::string& text);
// Largest grid a sweep may have: each point is one `mimic run` process, so 10,000 points are hours.
inline constexpr int64_t kMaxSweepPoints = 10000;
// Every point of the grid; InvalidArgument naming the factors when it has more than
// kMaxSweepPoints.
std::vector<Point> enumerate(const Spec& spec);
// Deterministic id of a sweep (same spec, same id), so --resume finds its points again.
std::string sweep_id(const Spec& spec);
// The `mimic run` arguments of one point.
std::vector<std::string> run_arguments(const Spec& spec, const Point& p);

}  // namespace mimic::cli::sweep
