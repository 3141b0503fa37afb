// The trace file's schema and how a file is opened: checks that it is a mimic trace of a version
// this build understands, WAL mode, and migrations from older versions.
//
// Versioning: PRAGMA user_version holds the schema version and PRAGMA application_id marks the
// file as a mimic trace. Migration N takes a file from version N-1 to N inside one write
// transaction, so two processes opening a new file at once create the schema exactly once.
// A file whose version is newer than kSchemaVersion is refused before anything is written.
//
// Tables (times are integers in the device's native unit: cycles for emulators, ns otherwise):
//   meta(key, value)                     format, schema_version, created_by, created_at
//   string(id, value)                    interned strings (names, op types, shapes, ...)
//   run(id, uuid, status, started_ns, ended_ns, error, tool_version, host, pid, model, batch,
//       layout, precision, device, tag, config_json,        status: running | done | failed
//       first/last_event_rowid, first/last_counter_rowid)  where the run's rows lie
//   device(run_id, id, backend, preset, clock_hz, time_unit, properties_json)
//   track(run_id, id, device_id, name_id, kind_id)          slices on a track never overlap
//   op(run_id, id, node_id, op_type_id, shapes_id, dtype_id, flops, bytes_in, bytes_out,
//      backend_id, fallback)
//   event(run_id, track_id, op_id, name_id, ts, dur)
//   counter(run_id, track_id, ts, value)
//   run_table(run_id, name, columns_json), run_table_row(run_id, table_name, row_index,
//   values_json)
// Views: run_event, run_counter, device_v, track_v, op_v, event_ns, counter_ns, device_span,
//   run_time, op_summary, op_type_summary, unit_utilization, run_overview, run_compare,
//   sweep_results (v2), op_phase and phase_summary (v3: forward/backward/update of training
//   steps; v4: recomputed nodes count as backward; v5: the all-reduce phase) (schema_sql.h). Filter
//   them by run_id: each then reads only that run's rows.
//
// Indexing: event and counter are append-only and never indexed. Rows are appended in emission
// order, so each run's rows are a rowid range, recorded in the run row with every committed batch
// (crashed runs included); per-run queries scan just that range. An index on event would cost
// every later run of a shared file ~4x the insert time per event (measured), for no per-run gain.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "traces/sqlite_db.h"

namespace mimic::traces {

inline constexpr int kSchemaVersion = 5;
inline constexpr int32_t kApplicationId = 0x6d696d63;  // "mimc"

struct OpenOptions {
  // How long one statement waits for another process's lock before SQLite reports busy.
  std::chrono::milliseconds busy_timeout{5000};
  // How long a writer keeps retrying a busy transaction before it gives up with IoError.
  std::chrono::milliseconds lock_give_up{600000};
};

// Opens `path` for appending runs, creating it (and its schema) when missing. Throws IoError
// (one line, naming the file) for: a directory that does not exist or cannot be written, a file
// that is not SQLite or not a mimic trace, a read-only file, a newer schema version.
Db open_for_write(const std::string& path, const OpenOptions& options = {});

// Opens an existing trace read-only. Same checks. A file with an older schema is upgraded in
// place when this process may write it, else read through an upgraded temporary copy; a file in
// WAL mode whose -shm cannot be created here (a read-only file or directory) opens immutable.
Db open_for_read(const std::string& path, const OpenOptions& options = {});

// Schema version of an open database (PRAGMA user_version).
int schema_version(const Db& db);
// The current time as ISO 8601 UTC ("2026-11-21T10:40:09Z"), as stored in meta and sweep rows.
std::string utc_now();
// This machine's name, as runs record it ("unknown" if the system does not say).
std::string host_name();

}  // namespace mimic::traces
