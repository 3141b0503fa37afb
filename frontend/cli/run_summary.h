// Text summaries of runs, shared by `mimic run` and later commands.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "frontend/api/compile.h"

namespace mimic::cli {

struct OutputStats {
  std::string name;
  std::string type;
  double sum = 0, mean_abs = 0;
};
OutputStats output_stats(const std::string& name, const ir::HostTensor& t);

// Largest absolute and per-element relative differences between two runs' outputs, and the
// largest absolute difference over the reference's largest magnitude (near-zero outputs make the
// per-element relative figure large for bf16's ~0.4% rounding; this one reads as "of the scale").
// An element that is NaN in one run only counts as an infinite difference, and in nan_mismatches.
struct Difference {
  double max_abs = 0, max_rel = 0, of_scale = 0;
  int64_t nan_mismatches = 0;
};
Difference compare_outputs(const std::vector<ir::HostTensor>& a,
                           const std::vector<ir::HostTensor>& b);

void print_report(std::ostream& os, const backends::RunReport& r, int top_ops);
// Metrics, notes and the first `top_rows` rows of each table of a compile report.
void print_compile_report(std::ostream& os, const backends::CompileReport& r, int top_rows);

}  // namespace mimic::cli
