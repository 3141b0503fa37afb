// What a run reports: per-op rows, per-unit busy time, totals, memory traffic. Emulators fill the
// cycle fields; physical devices fill wall/device time. Shared by every backend.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mimic::backends {

struct OpReport {
  std::string node, op_type, backend;
  bool fallback = false;  // ran on cpu because the device could not
  std::string shapes;     // "f32[8,64,56,56] f32[64,64,3,3] -> f32[8,64,56,56]"
  int64_t flops = 0, bytes_in = 0, bytes_out = 0;
  double wall_ns = 0;         // host wall time (cpu backend and fallbacks)
  uint64_t cycles = 0;        // simulated cycles (emulators)
  double device_seconds = 0;  // cycles at the preset clock, or measured device time
  double utilization = 0;     // matrix-unit utilization while the op ran, 0..1 (emulators)
  double intensity = 0;       // flops per byte of off-chip traffic
  std::string bound;          // "compute" | "memory" against the device's ridge point
};

struct UnitReport {
  std::string name, kind;  // "mxu0", "matrix"
  uint64_t busy_cycles = 0;
  double utilization = 0;  // busy / total cycles
};

// A small named table (columns + numeric rows), e.g. the IPU per-tile memory plan.
struct Table {
  std::vector<std::string> columns;
  std::vector<std::vector<double>> rows;
};

struct RunReport {
  std::string device, backend, precision;
  double wall_seconds = 0;  // host wall time of the whole run
  uint64_t cycles = 0;      // simulated cycles (emulators)
  double clock_hz = 0;
  double device_seconds = 0;
  double fallback_wall_seconds = 0;  // host time spent in ops that fell back to cpu
  double peak_flops_per_s = 0, achieved_flops_per_s = 0, ridge_intensity = 0;
  std::vector<OpReport> ops;
  std::vector<UnitReport> units;
  std::map<std::string, int64_t> bytes_moved;  // per memory level: "host", "hbm", "vmem", ...
  std::map<std::string, double> metrics;       // backend-specific figures
  std::map<std::string, Table> tables;
  std::vector<std::string> notes;

  int64_t total_flops() const;
  int fallback_count() const;
};

struct CompileReport {
  std::string device;
  double compile_seconds = 0;
  std::map<std::string, double> metrics;  // e.g. "program_instructions", "max_tile_bytes"
  std::map<std::string, Table> tables;
  std::vector<std::string> notes;
  std::vector<std::string> fallback_nodes;
  // One per fallback node: "LSTM 'lstm1': no TPU lowering of recurrent layers".
  std::vector<std::string> fallback_reasons;
};

}  // namespace mimic::backends
