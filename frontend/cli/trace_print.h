// Text and JSON views of traces for `mimic trace ...` and `mimic report`.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "traces/run_diff.h"
#include "traces/trace_reader.h"

namespace mimic::cli {

nlohmann::json run_json(const traces::RunRecord& r);
void print_run_list(std::ostream& os, const std::string& file,
                    const std::vector<traces::RunRecord>& runs);

// Per-op-type table (or each op with `by_op`), then per-unit utilization. `top` 0: all types, 20
// ops.
void print_summary(std::ostream& os, const traces::TraceReader& reader, int64_t run_id, bool by_op,
                   int top);
nlohmann::json summary_json(const traces::TraceReader& reader, int64_t run_id);

// Totals, per op type, then the `top` ops with the largest change.
void print_diff(std::ostream& os, const traces::RunDiff& d, int top);
nlohmann::json diff_json(const traces::RunDiff& d);

// "runs.db" -> "runs-run3.html" beside it.
std::string default_report_path(const std::string& trace_file, int64_t run_id);

}  // namespace mimic::cli
