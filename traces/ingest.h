// The writer thread's side of a trace (internal to traces/): turns work items into rows with
// prepared statements, interns strings, and commits each group of items in one transaction that
// is retried whole while another process holds the lock.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "traces/schema.h"
#include "traces/sqlite_db.h"
#include "traces/writer_batch.h"

namespace mimic::traces {

// Aggregates of a run's events per (track, op), kept while the run is written and stored in
// event_stat when it ends (so summaries never rescan the rows of finished runs).
struct EventAgg {
  int64_t events = 0, busy = 0;
  int64_t first_ts = INT64_MAX, last_end = INT64_MIN;
  void add(int64_t ts, int64_t dur) {
    ++events;
    busy += dur;
    first_ts = ts < first_ts ? ts : first_ts;
    last_end = ts + dur > last_end ? ts + dur : last_end;
  }
  void merge(const EventAgg& o) {
    events += o.events;
    busy += o.busy;
    first_ts = o.first_ts < first_ts ? o.first_ts : first_ts;
    last_end = o.last_end > last_end ? o.last_end : last_end;
  }
};

// One track's aggregates by op. A unit's events mostly belong to the op it is working on, so the
// last op's entry is kept at hand.
struct TrackStats {
  std::unordered_map<int64_t, EventAgg> by_op;
  int64_t last_op = INT64_MIN;
  EventAgg* last = nullptr;  // into by_op (node-based map: stays valid)

  EventAgg& at(int64_t op) {
    if (op != last_op) {
      last = &by_op[op];
      last_op = op;
    }
    return *last;
  }
};
using RunStats = std::vector<TrackStats>;  // by track id

class Ingestor {
 public:
  Ingestor(Db& db, const OpenOptions& options);
  // Writes `items` in order in one transaction; on return they are committed. Throws IoError
  // (SqlError) on failure.
  void write(const std::vector<WorkItem>& items);
  // The file's id of a run begun in this process, or -1 while its row is not written.
  int64_t run_id(uint64_t run_key) const;

 private:
  void write_item(const WorkItem& item);
  void begin_run(const WorkItem& item);
  void end_run(int64_t run, const WorkItem& item);
  void write_batch(int64_t run, const Batch& b);
  void write_events(int64_t run, const Batch& b);
  int64_t intern(std::string_view s);
  void undo();    // forgets cache entries made by a rolled-back transaction
  void commit();  // keeps what the committed transaction added

  Db& db_;
  OpenOptions options_;
  std::string host_;
  Stmt insert_run_, end_run_, insert_device_, insert_track_, insert_op_, insert_event_,
      insert_event_chunk_, insert_counter_, insert_table_, insert_table_row_, event_range_,
      counter_range_, string_insert_, string_select_, insert_stat_, stats_done_;
  // Interned strings: the map's keys point into storage_, which never moves its strings.
  std::deque<std::string> storage_;
  std::unordered_map<std::string_view, int64_t> strings_;
  std::vector<std::string_view> new_strings_;  // added by the open transaction
  std::unordered_map<uint64_t, int64_t> runs_;
  std::vector<uint64_t> new_runs_;
  // Event aggregates per run (file id): committed ones, and those of the open transaction.
  std::unordered_map<int64_t, RunStats> stats_, txn_stats_;
  std::vector<int64_t> ended_runs_;  // ended by the open transaction
  // The last name interned per track: a unit often repeats one instruction name.
  std::vector<std::pair<std::string, int64_t>> last_name_;
};

}  // namespace mimic::traces
