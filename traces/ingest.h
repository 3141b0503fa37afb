// The writer thread's side of a trace (internal to traces/): turns work items into rows with
// prepared statements, interns strings, and commits each group of items in one transaction that
// is retried whole while another process holds the lock.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "traces/schema.h"
#include "traces/sqlite_db.h"
#include "traces/writer_batch.h"

namespace mimic::traces {

class Ingestor {
 public:
  Ingestor(Db& db, const OpenOptions& options);
  // Writes `items` in order in one transaction. On return they are committed; when a run ended
  // among them, the query indexes are built too. Throws IoError (SqlError) on failure.
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
  void undo();  // forgets cache entries made by a rolled-back transaction

  Db& db_;
  OpenOptions options_;
  std::string host_;
  Stmt insert_run_, end_run_, insert_device_, insert_track_, insert_op_, insert_event_,
      insert_event_chunk_, insert_counter_, insert_table_, insert_table_row_, string_insert_,
      string_select_;
  // Interned strings: the map's keys point into storage_, which never moves its strings.
  std::deque<std::string> storage_;
  std::unordered_map<std::string_view, int64_t> strings_;
  std::vector<std::string_view> new_strings_;  // added by the open transaction
  std::unordered_map<uint64_t, int64_t> runs_;
  std::vector<uint64_t> new_runs_;
};

}  // namespace mimic::traces
