#include "traces/trace_merge.h"

#include <string>

namespace mimic::traces {
namespace {

// Rows of `table` (run-scoped, columns listed) copied with run_id remapped through temp.merge_run.
void copy_run_rows(Db& db, const std::string& table, const std::string& columns) {
  db.exec("INSERT INTO main." + table + "(run_id, " + columns + ") SELECT m.new, " + columns +
              " FROM task." + table + " AS x JOIN temp.merge_run m ON m.old = x.run_id",
          "merge " + table);
}

// Event or counter rows, appended run by run so that each run's rows stay one rowid range; then the
// run rows get their ranges.
void copy_appended_rows(Db& db, const std::string& table, const std::string& select_columns,
                        const std::string& joins, const std::string& insert_columns,
                        const std::string& range) {
  int64_t before =
      db.query_int("SELECT COALESCE(MAX(rowid), 0) FROM main." + table, "merge " + table);
  db.exec("INSERT INTO main." + table + "(" + insert_columns + ") SELECT m.new, " + select_columns +
              " FROM task." + table + " AS x JOIN temp.merge_run m ON m.old = x.run_id " + joins +
              " ORDER BY m.new, x.rowid",
          "merge " + table);
  db.prepare(
        "UPDATE main.run SET first_" + range + "_rowid = (SELECT MIN(rowid) FROM main." + table +
            " WHERE rowid > ?1 AND run_id = run.id), last_" + range +
            "_rowid = (SELECT MAX(rowid) FROM main." + table +
            " WHERE rowid > ?1 AND run_id = run.id) WHERE id IN (SELECT new FROM temp.merge_run)",
        "merge " + table + " ranges")
      .bind(1, before)
      .run();
}

}  // namespace

std::map<int64_t, int64_t> copy_attached_runs(Db& db, const std::vector<int64_t>& task_run_ids) {
  db.exec(
      "CREATE TEMP TABLE IF NOT EXISTS merge_run(old INTEGER PRIMARY KEY, new INTEGER);"
      "CREATE TEMP TABLE IF NOT EXISTS merge_string(old INTEGER PRIMARY KEY, new INTEGER NOT NULL);"
      "DELETE FROM temp.merge_run; DELETE FROM temp.merge_string;",
      "prepare merge");
  Stmt pick = db.prepare(
      "INSERT OR IGNORE INTO temp.merge_run(old) SELECT id FROM task.run WHERE id = ? AND uuid NOT "
      "IN "
      "(SELECT uuid FROM main.run)",
      "select runs to merge");
  for (int64_t id : task_run_ids) pick.bind(1, id).run();
  // New ids follow the file's largest, in the task's order.
  db.exec(
      "UPDATE temp.merge_run SET new = (SELECT COALESCE(MAX(id), 0) FROM main.run) + "
      "(SELECT COUNT(*) FROM temp.merge_run m2 WHERE m2.old <= merge_run.old)",
      "number merged runs");
  db.exec(
      "INSERT OR IGNORE INTO main.string(value) SELECT value FROM task.string;"
      "INSERT INTO temp.merge_string(old, new) SELECT t.id, m.id FROM task.string t JOIN "
      "main.string m "
      "ON m.value = t.value;",
      "merge strings");
  db.exec(
      "INSERT INTO main.run(id, uuid, status, started_ns, ended_ns, error, tool_version, host, "
      "pid, model, batch, "
      "layout, precision, device, tag, config_json, stats_done) SELECT m.new, uuid, status, "
      "started_ns, ended_ns, "
      "error, tool_version, host, pid, model, batch, layout, precision, device, tag, config_json, "
      "stats_done "
      "FROM task.run t JOIN temp.merge_run m ON m.old = t.id",
      "merge runs");
  copy_run_rows(db, "device", "id, backend, preset, clock_hz, time_unit, properties_json");
  db.exec(
      "INSERT INTO main.track(run_id, id, device_id, name_id, kind_id) SELECT m.new, x.id, "
      "x.device_id, n.new, "
      "k.new FROM task.track x JOIN temp.merge_run m ON m.old = x.run_id JOIN temp.merge_string n "
      "ON n.old = "
      "x.name_id JOIN temp.merge_string k ON k.old = x.kind_id",
      "merge tracks");
  db.exec(
      "INSERT INTO main.op(run_id, id, node_id, op_type_id, shapes_id, dtype_id, flops, bytes_in, "
      "bytes_out, "
      "backend_id, fallback) SELECT m.new, x.id, a.new, b.new, c.new, d.new, x.flops, x.bytes_in, "
      "x.bytes_out, "
      "e.new, x.fallback FROM task.op x JOIN temp.merge_run m ON m.old = x.run_id "
      "JOIN temp.merge_string a ON a.old = x.node_id JOIN temp.merge_string b ON b.old = "
      "x.op_type_id "
      "JOIN temp.merge_string c ON c.old = x.shapes_id JOIN temp.merge_string d ON d.old = "
      "x.dtype_id "
      "JOIN temp.merge_string e ON e.old = x.backend_id",
      "merge ops");
  copy_appended_rows(db, "event", "x.track_id, x.op_id, s.new, x.ts, x.dur",
                     "JOIN temp.merge_string s ON s.old = x.name_id",
                     "run_id, track_id, op_id, name_id, ts, dur", "event");
  copy_appended_rows(db, "counter", "x.track_id, x.ts, x.value", "", "run_id, track_id, ts, value",
                     "counter");
  copy_run_rows(db, "event_stat", "track_id, op_id, events, busy, first_ts, last_end");
  copy_run_rows(db, "run_table", "name, columns_json");
  copy_run_rows(db, "run_table_row", "table_name, row_index, values_json");
  // Every requested run that either file holds, by uuid (copied now or earlier).
  std::map<int64_t, int64_t> out;
  Stmt find =
      db.prepare("SELECT m.id FROM main.run m JOIN task.run t ON t.uuid = m.uuid WHERE t.id = ?",
                 "map merged runs");
  for (int64_t id : task_run_ids) {
    find.bind(1, id);
    if (find.step()) out[id] = find.int_at(0);
    find.reset();
  }
  return out;
}

}  // namespace mimic::traces
