// Sweep results in a trace file: one row per sweep (its spec) and one per finished point (its
// result as JSON, and the run that produced it). Several processes may share the file; recording a
// point again replaces it, so a resumed sweep never holds a point twice.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "traces/schema.h"
#include "traces/sqlite_db.h"

namespace mimic::traces {

struct SweepPointRecord {
  std::string key, status, result_json;
  int64_t run_id = 0;  // 0: no run (the point did not compile)
};

struct SweepRecord {
  std::string id, spec_json, created_utc;
  int64_t points = 0;
};

class SweepStore {
 public:
  // Opens or creates the trace file (same errors as the trace writer: IoError, file untouched).
  explicit SweepStore(const std::string& path, const OpenOptions& options = {});
  // Records the sweep's spec once (kept when the sweep already exists).
  void begin(const std::string& sweep_id, const std::string& spec_json);
  void record(const std::string& sweep_id, const SweepPointRecord& point);
  // Records points whose runs lie in another trace file (a Slurm task's own), in one transaction:
  // copies those runs into this file (trace_merge.h) and records the points with their new run
  // ids. `points[i].run_id` refers to `task_trace`; 0 means no run. Merging a file again copies
  // nothing twice. IoError naming the file when it cannot be read.
  void record_from(const std::string& sweep_id, const std::string& task_trace,
                   const std::vector<SweepPointRecord>& points);
  std::vector<SweepPointRecord> points(const std::string& sweep_id) const;
  // A sweep killed between a point's run finishing and the point being recorded leaves a run tagged
  // with that point but no point row. Before resuming, such runs are re-tagged "... interrupted" so
  // that each point keeps exactly one run under its tag. Returns how many were re-tagged.
  int64_t retag_unrecorded_runs(const std::string& sweep_id);
  std::vector<SweepRecord> sweeps() const;
  const std::string& path() const { return db_.path(); }

 private:
  Db db_;
  OpenOptions options_;
};

}  // namespace mimic::traces
