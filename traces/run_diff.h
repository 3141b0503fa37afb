// Op-by-op comparison of two runs (from one trace file or two): batch 8 against batch 16, one
// device against another. Ops are matched by graph node name; an op that only one run has is
// listed with the other side missing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "traces/trace_reader.h"

namespace mimic::traces {

struct OpDiff {
  std::string node, op_type;
  bool in_a = false, in_b = false;
  double a_ns = 0, b_ns = 0;  // op time (see trace_reader.h)
  int64_t a_flops = 0, b_flops = 0;
  double delta_ns() const { return b_ns - a_ns; }
  double ratio() const { return a_ns > 0 ? b_ns / a_ns : 0.0; }  // 0 when A took no time
};

struct OpTypeDiff {
  std::string op_type;
  int64_t a_ops = 0, b_ops = 0;
  double a_ns = 0, b_ns = 0;
};

struct RunDiff {
  std::string file_a, file_b;
  RunRecord a, b;
  double a_time_ns = 0, b_time_ns = 0;  // device time of each run
  std::vector<OpDiff> ops;              // A's order, then ops only B has
  std::vector<OpTypeDiff> op_types;     // by the larger of the two totals, largest first
  int64_t only_a = 0, only_b = 0;
};

RunDiff diff_runs(const TraceReader& reader_a, int64_t run_a, const TraceReader& reader_b,
                  int64_t run_b);

}  // namespace mimic::traces
