// Exports of a trace for other tools.
//
// Chrome trace event JSON (opens in Perfetto and chrome://tracing): one process per device of a
// run ("run 3 · tpu-emu:v4"), one thread per track, each event a complete ("X") slice and each
// counter sample a "C" event, with process/thread names and sort order as metadata ("M") events.
// ts/dur are microseconds converted from each device's native unit through its clock: every
// device of a run starts near 0 (it has its own time base). Converted times are rounded to whole
// ns on both ends of a slice, so slices that did not overlap in cycles do not overlap after.
//
// CSV: one row per event with its run, device, track, op and both native and ns times.
#pragma once

#include <cstdint>
#include <ostream>
#include <vector>

#include "traces/trace_reader.h"

namespace mimic::traces {

struct ExportStats {
  int64_t runs = 0, processes = 0, threads = 0, events = 0, counters = 0;
};

// `run_ids` empty: every run in the file.
ExportStats export_chrome(const TraceReader& reader, const std::vector<int64_t>& run_ids,
                          std::ostream& out);
ExportStats export_csv(const TraceReader& reader, const std::vector<int64_t>& run_ids,
                       std::ostream& out);

}  // namespace mimic::traces
