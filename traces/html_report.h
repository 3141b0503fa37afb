// A self-contained HTML report of one run: no script, no network, charts as inline SVG.
// Sections: overview, time by op type (table and bars), top ops, a timeline per device (one row
// per track), utilization per unit, counters, the run's tables (e.g. per-tile memory), devices,
// the run's config, and every op.
#pragma once

#include <cstdint>
#include <ostream>

#include "traces/trace_reader.h"

namespace mimic::traces {

struct ReportOptions {
  int top_ops = 25;          // bars in the per-op chart
  int max_tracks = 64;       // timeline rows per device (the busiest); the rest are counted
  int max_table_rows = 500;  // rows shown of each run table
};

void write_html_report(const TraceReader& reader, int64_t run_id, std::ostream& out,
                       const ReportOptions& options = {});

}  // namespace mimic::traces
