// Copies runs from one trace file into another: a Slurm task writes its points' runs into its own
// file (SQLite on a network filesystem is unsafe for concurrent writers), and the submitting side
// merges each task's file into the sweep's trace once. Internal to traces/ (SweepStore uses it).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "traces/sqlite_db.h"

namespace mimic::traces {

// Inside the caller's write transaction on `db`, with the source file attached as schema `task`:
// copies the given runs of `task` (with their devices, tracks, ops, events, counters, per-op stats
// and run tables; interned strings re-interned) and returns task run id -> run id in `db`. A run
// whose uuid `db` already holds is not copied again (merging the same file twice is harmless); it
// maps to the existing row. Runs the source does not hold are left out of the map.
std::map<int64_t, int64_t> copy_attached_runs(Db& db, const std::vector<int64_t>& task_run_ids);

}  // namespace mimic::traces
