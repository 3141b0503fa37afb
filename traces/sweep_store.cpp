#include "traces/sweep_store.h"

#include <map>

#include "traces/trace_merge.h"

namespace mimic::traces {

SweepStore::SweepStore(const std::string& path, const OpenOptions& options)
    : db_(open_for_write(path, options)), options_(options) {}

void SweepStore::begin(const std::string& sweep_id, const std::string& spec_json) {
  with_write_transaction(
      db_, options_.lock_give_up,
      [&] {
        db_.prepare("INSERT OR IGNORE INTO sweep(id, spec_json, created_utc) VALUES (?, ?, ?)",
                    "record sweep")
            .bind(1, sweep_id)
            .bind(2, spec_json)
            .bind(3, utc_now())
            .run();
      },
      [] {});
}

namespace {

void insert_point(Db& db, const std::string& sweep_id, const SweepPointRecord& p) {
  Stmt s = db.prepare(
      "INSERT OR REPLACE INTO sweep_point(sweep_id, key, status, result_json, run_id, "
      "finished_utc) "
      "VALUES (?, ?, ?, ?, ?, ?)",
      "record sweep point");
  s.bind(1, sweep_id).bind(2, p.key).bind(3, p.status).bind(4, p.result_json);
  if (p.run_id > 0)
    s.bind(5, p.run_id);
  else
    s.bind_null(5);
  s.bind(6, utc_now()).run();
}

}  // namespace

void SweepStore::record(const std::string& sweep_id, const SweepPointRecord& p) {
  with_write_transaction(
      db_, options_.lock_give_up, [&] { insert_point(db_, sweep_id, p); }, [] {});
}

void SweepStore::record_from(const std::string& sweep_id, const std::string& task_trace,
                             const std::vector<SweepPointRecord>& points) {
  std::vector<int64_t> runs;
  for (const auto& p : points)
    if (p.run_id > 0) runs.push_back(p.run_id);
  if (runs.empty()) {
    with_write_transaction(
        db_, options_.lock_give_up,
        [&] {
          for (const auto& p : points) insert_point(db_, sweep_id, p);
        },
        [] {});
    return;
  }
  // The task's file is checked as any trace is (a mimic trace of a version this build reads).
  open_for_read(task_trace, options_);
  // ATTACH cannot run inside a transaction.
  db_.prepare("ATTACH DATABASE ? AS task", "attach task trace '" + task_trace + "'")
      .bind(1, task_trace)
      .run();
  try {
    with_write_transaction(
        db_, options_.lock_give_up,
        [&] {
          std::map<int64_t, int64_t> ids = copy_attached_runs(db_, runs);
          for (SweepPointRecord p : points) {
            auto it = ids.find(p.run_id);
            p.run_id = it == ids.end() ? 0 : it->second;
            insert_point(db_, sweep_id, p);
          }
        },
        [] {});
  } catch (...) {
    db_.exec("DETACH DATABASE task", "detach task trace");
    throw;
  }
  db_.exec("DETACH DATABASE task", "detach task trace");
}

std::vector<SweepPointRecord> SweepStore::points(const std::string& sweep_id) const {
  Stmt s = db_.prepare(
      "SELECT key, status, result_json, run_id FROM sweep_point WHERE sweep_id = ? ORDER BY key",
      "read sweep points");
  s.bind(1, sweep_id);
  std::vector<SweepPointRecord> out;
  while (s.step())
    out.push_back({s.text_at(0), s.text_at(1), s.text_at(2), s.null_at(3) ? 0 : s.int_at(3)});
  return out;
}

int64_t SweepStore::retag_unrecorded_runs(const std::string& sweep_id) {
  int64_t changed = 0;
  with_write_transaction(
      db_, options_.lock_give_up,
      [&] {
        db_.prepare(
               "UPDATE run SET tag = tag || ' interrupted' "
               "WHERE substr(tag, 1, length(?1)) = ?1 AND substr(tag, -12) != ' interrupted' "
               "AND id NOT IN (SELECT run_id FROM sweep_point WHERE sweep_id = ?2 AND run_id IS "
               "NOT NULL)",
               "re-tag interrupted sweep runs")
            .bind(1, "sweep=" + sweep_id + " point=")
            .bind(2, sweep_id)
            .run();
        changed = db_.changes();
      },
      [] {});
  return changed;
}

std::vector<SweepRecord> SweepStore::sweeps() const {
  Stmt s = db_.prepare(
      "SELECT s.id, s.spec_json, s.created_utc, (SELECT COUNT(*) FROM sweep_point p WHERE "
      "p.sweep_id = s.id) "
      "FROM sweep s ORDER BY s.created_utc",
      "read sweeps");
  std::vector<SweepRecord> out;
  while (s.step()) out.push_back({s.text_at(0), s.text_at(1), s.text_at(2), s.int_at(3)});
  return out;
}

}  // namespace mimic::traces
