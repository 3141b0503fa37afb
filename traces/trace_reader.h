// Reading traces: runs, devices, tracks, per-op and per-unit summaries, events and counters with
// times converted to ns through each device's clock. The same figures are available in SQL through
// the views in schema.h; tests check that both agree.
//
// Definitions used throughout:
// - an op's time is from its first event's start to its last event's end (ops whose events run on
//   several units at once are not double counted); busy time is the sum of its events' durations;
// - a device's span is from the first event start to the last event end on any of its tracks;
// - a run's device time is the sum of its devices' spans (a placed run's segments, each with its
//   own device, run one after another);
// - a unit's utilization is its busy time over its device's span.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "base/error.h"
#include "traces/schema.h"
#include "traces/sqlite_db.h"

namespace mimic::traces {

// Row `key` of a table read into `rows`; a missing one means rows refer to rows that do not exist
// (a corrupt or hand-edited trace): IoError naming the file and the reference, never an internal
// error.
template <typename Map>
const typename Map::mapped_type& referenced(const Map& rows, const typename Map::key_type& key,
                                            const std::string& path, const char* what) {
  auto it = rows.find(key);
  if (it == rows.end())
    throw IoError(fmt::format("trace '{}' is corrupt: {} {} does not exist", path, what, key));
  return it->second;
}

struct RunRecord {
  int64_t id = 0;
  std::string uuid;
  std::string status;  // running, done, failed; interrupted: running, but its local process is gone
  int64_t started_ns = 0, ended_ns = 0;  // Unix ns; ended_ns 0 while running (or crashed)
  std::string error, tool_version, host;
  int64_t pid = 0;
  std::string model;
  int64_t batch = 0;
  std::string layout, precision, device, tag, config_json;
  int64_t events = 0;
  double device_time_ns = 0;
  double wall_ns() const { return ended_ns > started_ns ? double(ended_ns - started_ns) : 0.0; }
};

struct DeviceRecord {
  int64_t id = 0;
  std::string backend, preset, time_unit, properties_json;
  int64_t clock_hz = 0;
  double ns_per_unit = 1;
  double span_ns = 0;          // first event start to last event end
  int64_t start = 0, end = 0;  // native units
};

struct TrackRecord {
  int64_t id = 0, device_id = 0;
  std::string name, kind;
  double ns_per_unit = 1;
};

struct OpRecord {
  int64_t op_id = 0;
  std::string node, op_type, shapes, dtype, backend;
  int64_t flops = 0, bytes_in = 0, bytes_out = 0;
  bool fallback = false;
  int64_t events = 0;
  double busy_ns = 0, time_ns = 0, start_ns = 0;
};

struct OpTypeRecord {
  std::string op_type;
  int64_t ops = 0, events = 0, flops = 0, bytes = 0, fallback_ops = 0;
  double total_ns = 0, mean_ns = 0;
  // Time over the run's span: op times overlap when a chip runs ops on several cores or units at
  // once, so these can sum past 100 (the op_type_summary view's pct_of_run).
  double pct_of_run = 0;
  // Share of the summed time of all ops of the run: sums to 100 over the op types.
  double pct_of_op_time = 0;
  double flops_per_s() const { return total_ns > 0 ? flops / (total_ns * 1e-9) : 0.0; }
};

// Time of one phase of a training step (forward, backward, allreduce, update; see op_phase()).
// total_ns: the time the phase's ops span, overlapping spans counted once (phases can still
// overlap each other: an update starting while the last gradients are computed).
struct PhaseRecord {
  std::string phase;
  int64_t ops = 0, flops = 0, bytes = 0;
  double total_ns = 0, busy_ns = 0, pct_of_run = 0;
};

// The phase of an op by its node name, as a training step's graph names them (train_graph.h):
// "grad/..." and "recompute/..." backward, "allreduce/..." (data parallelism's gradient
// all-reduce, emitted by emulators) allreduce, "optimizer/..." or "loss_scale/..." update,
// anything else forward. The op_phase view (schema v5) applies the same rule.
const char* op_phase(const std::string& node);

struct UnitRecord {
  int64_t track_id = 0, device_id = 0;
  std::string track, kind, backend;
  int64_t events = 0, busy = 0;  // busy in the device's native unit
  double busy_ns = 0, span_ns = 0, utilization = 0;
};

struct EventRecord {
  int64_t track_id = 0, op_id = -1;  // -1: no op
  std::string name;
  int64_t ts = 0, dur = 0;  // native units
};

struct CounterRecord {
  int64_t track_id = 0, ts = 0;
  double value = 0;
};

// One run's events aggregated per (track, op) in native units; op_id -1: events of no op.
struct EventAggregate {
  int64_t track_id = 0, op_id = -1, events = 0, busy = 0, first_ts = 0, last_end = 0;
};

struct TableRecord {
  std::string name;
  std::vector<std::string> columns;
  std::vector<std::string> rows_json;  // JSON arrays, one value per column
};

class TraceReader {
 public:
  // Opens an existing trace read-only (IoError: missing, not SQLite, not a trace, newer schema).
  explicit TraceReader(const std::string& path);

  const std::string& path() const { return db_.path(); }
  std::vector<RunRecord> runs() const;
  // A run by id ("3"), by uuid or unique uuid prefix, or "" for the most recent run.
  // InvalidArgument naming the file and the runs it has otherwise.
  int64_t resolve_run(const std::string& spec) const;
  RunRecord run(int64_t run_id) const;

  std::vector<DeviceRecord> devices(int64_t run_id) const;
  std::vector<TrackRecord> tracks(int64_t run_id) const;
  std::vector<OpRecord> ops(int64_t run_id) const;           // in emission order
  std::vector<OpTypeRecord> op_types(int64_t run_id) const;  // by total time, largest first
  std::vector<UnitRecord> units(int64_t run_id) const;
  // forward, backward, update (those present), in that order.
  std::vector<PhaseRecord> phases(int64_t run_id) const;
  double run_time_ns(int64_t run_id) const;
  int64_t event_count(int64_t run_id) const;
  int64_t counter_count(int64_t run_id) const;

  // Stored when the run ended (event_stat); computed from its rows for runs that did not end.
  std::vector<EventAggregate> aggregates(int64_t run_id) const;

  // Events and counter samples in the order they were emitted.
  void for_each_event(int64_t run_id, const std::function<void(const EventRecord&)>& fn) const;
  void for_each_counter(int64_t run_id, const std::function<void(const CounterRecord&)>& fn) const;
  std::vector<TableRecord> tables(int64_t run_id) const;

  // Runs one SQL query (e.g. against the views) and returns its rows as text.
  std::vector<std::vector<std::string>> query(const std::string& sql) const;
  // The same with column names and typed values (NULL, integer, real or text).
  using QueryValue = std::variant<std::monostate, int64_t, double, std::string>;
  struct QueryTable {
    std::vector<std::string> columns;
    std::vector<std::vector<QueryValue>> rows;
  };
  QueryTable query_table(const std::string& sql) const;

 private:
  std::map<int64_t, EventAggregate> track_aggregates(int64_t run_id) const;

  Db db_;
  // aggregates() per run, with the (stats_done, last_event_rowid) they were computed for.
  mutable std::map<int64_t, std::pair<std::pair<int64_t, int64_t>, std::vector<EventAggregate>>>
      agg_cache_;
};

}  // namespace mimic::traces
