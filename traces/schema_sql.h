// SQL text of the trace schema, one entry per migration (index 0 takes version 0 to 1). Never edit
// a released migration: add the next one. Internal to traces/.
#pragma once

namespace mimic::traces::sql {

inline constexpr const char* kMigrationV1 = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE string(id INTEGER PRIMARY KEY, value TEXT NOT NULL UNIQUE);
CREATE TABLE run(
  id INTEGER PRIMARY KEY,
  uuid TEXT NOT NULL UNIQUE,
  status TEXT NOT NULL CHECK (status IN ('running', 'done', 'failed')),
  started_ns INTEGER NOT NULL,       -- Unix time in ns
  ended_ns INTEGER,
  error TEXT,
  tool_version TEXT NOT NULL,
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,
  model TEXT NOT NULL DEFAULT '',
  batch INTEGER NOT NULL DEFAULT 0,
  layout TEXT NOT NULL DEFAULT '',
  precision TEXT NOT NULL DEFAULT '',
  device TEXT NOT NULL DEFAULT '',
  tag TEXT NOT NULL DEFAULT '',
  config_json TEXT NOT NULL DEFAULT '{}',
  -- Event and counter rows are appended in order, so a run's rows lie in these rowid ranges
  -- (kept current with every committed batch; NULL before the first row). Concurrent writers
  -- interleave, so rows of other runs may lie inside a range too: filter on run_id as well.
  first_event_rowid INTEGER,
  last_event_rowid INTEGER,
  first_counter_rowid INTEGER,
  last_counter_rowid INTEGER,
  stats_done INTEGER NOT NULL DEFAULT 0  -- 1 once event_stat holds this run's aggregates
);
CREATE TABLE device(
  run_id INTEGER NOT NULL REFERENCES run(id),
  id INTEGER NOT NULL,
  backend TEXT NOT NULL,
  preset TEXT NOT NULL,
  clock_hz INTEGER NOT NULL CHECK (clock_hz > 0),
  time_unit TEXT NOT NULL CHECK (time_unit IN ('cycles', 'ns')),
  properties_json TEXT NOT NULL DEFAULT '{}',
  PRIMARY KEY (run_id, id)
) WITHOUT ROWID;
CREATE TABLE track(
  run_id INTEGER NOT NULL,
  id INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  name_id INTEGER NOT NULL REFERENCES string(id),
  kind_id INTEGER NOT NULL REFERENCES string(id),
  PRIMARY KEY (run_id, id),
  FOREIGN KEY (run_id, device_id) REFERENCES device(run_id, id)
) WITHOUT ROWID;
CREATE TABLE op(
  run_id INTEGER NOT NULL REFERENCES run(id),
  id INTEGER NOT NULL,
  node_id INTEGER NOT NULL REFERENCES string(id),
  op_type_id INTEGER NOT NULL REFERENCES string(id),
  shapes_id INTEGER NOT NULL REFERENCES string(id),
  dtype_id INTEGER NOT NULL REFERENCES string(id),
  flops INTEGER NOT NULL,
  bytes_in INTEGER NOT NULL,
  bytes_out INTEGER NOT NULL,
  backend_id INTEGER NOT NULL REFERENCES string(id),
  fallback INTEGER NOT NULL CHECK (fallback IN (0, 1)),
  PRIMARY KEY (run_id, id)
) WITHOUT ROWID;
CREATE TABLE event(
  run_id INTEGER NOT NULL,
  track_id INTEGER NOT NULL,
  op_id INTEGER,                     -- NULL: not part of a graph op
  name_id INTEGER NOT NULL REFERENCES string(id),
  ts INTEGER NOT NULL,               -- device's native unit
  dur INTEGER NOT NULL,
  FOREIGN KEY (run_id, track_id) REFERENCES track(run_id, id)
);
CREATE TABLE counter(
  run_id INTEGER NOT NULL,
  track_id INTEGER NOT NULL,
  ts INTEGER NOT NULL,
  value REAL NOT NULL,
  FOREIGN KEY (run_id, track_id) REFERENCES track(run_id, id)
);
-- Per (run, track, op) aggregates of the event rows, written when the run ends (op_id -1: events
-- of no op). The summary views read these, and aggregate the rows of runs without them (running
-- or crashed) on the fly.
CREATE TABLE event_stat(
  run_id INTEGER NOT NULL,
  track_id INTEGER NOT NULL,
  op_id INTEGER NOT NULL,
  events INTEGER NOT NULL,
  busy INTEGER NOT NULL,             -- sum of durations, native unit
  first_ts INTEGER NOT NULL,         -- first event start
  last_end INTEGER NOT NULL,         -- last event end (ts + dur)
  PRIMARY KEY (run_id, track_id, op_id)
) WITHOUT ROWID;
CREATE TABLE run_table(
  run_id INTEGER NOT NULL REFERENCES run(id),
  name TEXT NOT NULL,
  columns_json TEXT NOT NULL,        -- JSON array of column names
  PRIMARY KEY (run_id, name)
) WITHOUT ROWID;
CREATE TABLE run_table_row(
  run_id INTEGER NOT NULL,
  table_name TEXT NOT NULL,
  row_index INTEGER NOT NULL,
  values_json TEXT NOT NULL,         -- JSON array, one value per column
  PRIMARY KEY (run_id, table_name, row_index)
) WITHOUT ROWID;

-- The rows of each run, found through the run's rowid ranges (no index to maintain on ingest).
-- CROSS JOIN fixes the loop order (runs outside, a rowid range scan of event inside) and the unary
-- + keeps the planner from building an automatic index on event.run_id instead.
CREATE VIEW run_event AS
  SELECT r.id AS run_id, e.rowid AS event_id, e.track_id, e.op_id, e.name_id, e.ts, e.dur
  FROM run r
  CROSS JOIN event e ON e.rowid BETWEEN r.first_event_rowid AND r.last_event_rowid AND +e.run_id = r.id;
CREATE VIEW run_counter AS
  SELECT r.id AS run_id, c.rowid AS counter_id, c.track_id, c.ts, c.value
  FROM run r
  CROSS JOIN counter c ON c.rowid BETWEEN r.first_counter_rowid AND r.last_counter_rowid AND +c.run_id = r.id;
-- Time conversion: ns = native * ns_per_unit, from each device's clock.
CREATE VIEW device_v AS
  SELECT run_id, id AS device_id, backend, preset, clock_hz, time_unit, properties_json,
         CASE time_unit WHEN 'ns' THEN 1.0 ELSE 1e9 / clock_hz END AS ns_per_unit
  FROM device;
CREATE VIEW track_v AS
  SELECT t.run_id, t.id AS track_id, t.device_id, n.value AS name, k.value AS kind,
         d.backend, d.preset, d.clock_hz, d.time_unit, d.ns_per_unit
  FROM track t
  JOIN device_v d ON d.run_id = t.run_id AND d.device_id = t.device_id
  JOIN string n ON n.id = t.name_id
  JOIN string k ON k.id = t.kind_id;
CREATE VIEW op_v AS
  SELECT o.run_id, o.id AS op_id, sn.value AS node, st.value AS op_type, ss.value AS shapes,
         sd.value AS dtype, o.flops, o.bytes_in, o.bytes_out, sb.value AS backend, o.fallback
  FROM op o
  JOIN string sn ON sn.id = o.node_id
  JOIN string st ON st.id = o.op_type_id
  JOIN string ss ON ss.id = o.shapes_id
  JOIN string sd ON sd.id = o.dtype_id
  JOIN string sb ON sb.id = o.backend_id;
CREATE VIEW event_ns AS
  SELECT e.run_id, e.event_id, e.track_id, t.name AS track, t.kind, t.device_id, e.op_id,
         s.value AS name, e.ts, e.dur, e.ts * t.ns_per_unit AS ts_ns, e.dur * t.ns_per_unit AS dur_ns
  FROM run_event e
  JOIN track_v t ON t.run_id = e.run_id AND t.track_id = e.track_id
  JOIN string s ON s.id = e.name_id;
CREATE VIEW counter_ns AS
  SELECT c.run_id, c.track_id, t.name AS track, t.device_id, c.ts, c.ts * t.ns_per_unit AS ts_ns,
         c.value
  FROM run_counter c
  JOIN track_v t ON t.run_id = c.run_id AND t.track_id = c.track_id;
-- Per (run, track, op) aggregates: written at run end, computed from the rows otherwise.
CREATE VIEW event_agg AS
  SELECT run_id, track_id, op_id, events, busy, first_ts, last_end FROM event_stat
  UNION ALL
  SELECT r.id, e.track_id, COALESCE(e.op_id, -1), COUNT(*), SUM(e.dur), MIN(e.ts), MAX(e.ts + e.dur)
  FROM run r
  CROSS JOIN event e ON e.rowid BETWEEN r.first_event_rowid AND r.last_event_rowid AND +e.run_id = r.id
  WHERE r.stats_done = 0
  GROUP BY r.id, e.track_id, COALESCE(e.op_id, -1);
-- Busy span of each device in a run (first event start to last event end).
CREATE VIEW device_span AS
  SELECT a.run_id, t.device_id, MIN(a.first_ts) AS start, MAX(a.last_end) AS end,
         MIN(a.first_ts) * t.ns_per_unit AS start_ns, MAX(a.last_end) * t.ns_per_unit AS end_ns,
         (MAX(a.last_end) - MIN(a.first_ts)) * t.ns_per_unit AS span_ns
  FROM event_agg a
  JOIN track_v t ON t.run_id = a.run_id AND t.track_id = a.track_id
  GROUP BY a.run_id, t.device_id;
-- Device time of a run: the devices of one run (placement segments) run one after another.
CREATE VIEW run_time AS
  SELECT run_id, SUM(span_ns) AS time_ns, COUNT(*) AS devices FROM device_span GROUP BY run_id;
-- Per graph op: time from its first event's start to its last event's end, and busy time.
CREATE VIEW op_summary AS
  SELECT o.run_id, o.op_id, o.node, o.op_type, o.shapes, o.dtype, o.flops, o.bytes_in, o.bytes_out,
         o.backend, o.fallback, COALESCE(p.events, 0) AS events, COALESCE(p.busy_ns, 0) AS busy_ns,
         COALESCE(p.end_ns - p.start_ns, 0) AS time_ns, p.start_ns, p.end_ns
  FROM op_v o
  LEFT JOIN (SELECT a.run_id, a.op_id, SUM(a.events) AS events, SUM(a.busy * t.ns_per_unit) AS busy_ns,
                    MIN(a.first_ts * t.ns_per_unit) AS start_ns, MAX(a.last_end * t.ns_per_unit) AS end_ns
             FROM event_agg a
             JOIN track_v t ON t.run_id = a.run_id AND t.track_id = a.track_id
             WHERE a.op_id >= 0
             GROUP BY a.run_id, a.op_id) p
    ON p.run_id = o.run_id AND p.op_id = o.op_id;
-- Per op type: count, total and mean time, share of the run, flops, bytes, achieved rate.
CREATE VIEW op_type_summary AS
  SELECT s.run_id, s.op_type, COUNT(*) AS ops, SUM(s.events) AS events, SUM(s.time_ns) AS total_ns,
         AVG(s.time_ns) AS mean_ns, 100.0 * SUM(s.time_ns) / NULLIF(r.time_ns, 0) AS pct_of_run,
         SUM(s.flops) AS flops, SUM(s.bytes_in + s.bytes_out) AS bytes,
         SUM(s.flops) / NULLIF(SUM(s.time_ns), 0) AS gflop_per_s,
         SUM(s.fallback) AS fallback_ops
  FROM op_summary s
  LEFT JOIN run_time r ON r.run_id = s.run_id
  GROUP BY s.run_id, s.op_type;
-- Per hardware unit (track): busy time over its device's span.
CREATE VIEW unit_utilization AS
  SELECT t.run_id, t.track_id, t.device_id, t.name AS track, t.kind, t.backend, t.preset,
         COALESCE(b.events, 0) AS events, COALESCE(b.busy, 0) AS busy,
         COALESCE(b.busy, 0) * t.ns_per_unit AS busy_ns, d.span_ns,
         COALESCE(b.busy, 0) * t.ns_per_unit / NULLIF(d.span_ns, 0) AS utilization
  FROM track_v t
  LEFT JOIN (SELECT run_id, track_id, SUM(events) AS events, SUM(busy) AS busy
             FROM event_agg GROUP BY run_id, track_id) b
    ON b.run_id = t.run_id AND b.track_id = t.track_id
  LEFT JOIN device_span d ON d.run_id = t.run_id AND d.device_id = t.device_id;
CREATE VIEW run_overview AS
  SELECT r.id AS run_id, r.uuid, r.status, r.model, r.batch, r.layout, r.precision, r.device,
         r.tag, datetime(r.started_ns / 1000000000, 'unixepoch') AS started_utc,
         (r.ended_ns - r.started_ns) / 1e9 AS wall_s, rt.time_ns AS device_time_ns,
         CASE WHEN r.stats_done = 1
              THEN (SELECT COALESCE(SUM(events), 0) FROM event_stat s WHERE s.run_id = r.id)
              ELSE (SELECT COUNT(*) FROM event e WHERE e.rowid BETWEEN r.first_event_rowid
                      AND r.last_event_rowid AND +e.run_id = r.id) END AS events, r.error
  FROM run r LEFT JOIN run_time rt ON rt.run_id = r.id;
-- Op-by-op comparison of two runs: SELECT * FROM run_compare WHERE run_a = 1 AND run_b = 2.
CREATE VIEW run_compare AS
  SELECT a.run_id AS run_a, b.run_id AS run_b, a.node, a.op_type, a.time_ns AS time_a_ns,
         b.time_ns AS time_b_ns, b.time_ns - a.time_ns AS delta_ns,
         b.time_ns / NULLIF(a.time_ns, 0) AS ratio
  FROM op_summary a JOIN op_summary b ON b.node = a.node AND b.op_type = a.op_type;
)sql";

// Version 2: sweeps (`mimic sweep`). One row per sweep and one per finished point; a point's
// runs carry the tag "sweep=<id> point=<key>". Points are unique per sweep so that a resumed sweep
// never duplicates one.
inline constexpr const char* kMigrationV2 = R"sql(
CREATE TABLE sweep(
  id TEXT PRIMARY KEY,
  spec_json TEXT NOT NULL,
  created_utc TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE sweep_point(
  sweep_id TEXT NOT NULL REFERENCES sweep(id),
  key TEXT NOT NULL,
  status TEXT NOT NULL,
  result_json TEXT NOT NULL,
  run_id INTEGER,
  finished_utc TEXT NOT NULL,
  PRIMARY KEY (sweep_id, key)
) WITHOUT ROWID;
CREATE VIEW sweep_results AS
  SELECT p.sweep_id, p.key, p.status, p.run_id, p.finished_utc,
         json_extract(p.result_json, '$.device') AS device,
         json_extract(p.result_json, '$.batch') AS batch,
         json_extract(p.result_json, '$.layout') AS layout,
         json_extract(p.result_json, '$.precision') AS precision,
         json_extract(p.result_json, '$.latency_s') AS latency_s,
         json_extract(p.result_json, '$.throughput') AS throughput,
         json_extract(p.result_json, '$.utilization') AS utilization,
         json_extract(p.result_json, '$.bound') AS bound,
         json_extract(p.result_json, '$.reason') AS reason
  FROM sweep_point p;
)sql";

// Version 3: training-step phases. A training step's graph names its nodes by phase
// (frontend/api/train_graph.h): "grad/..." the backward pass (autodiff), "optimizer/..." and
// "loss_scale/..." the update; every other op is forward (the model and its loss). trace_reader's
// op_phase() applies the same rule. SELECT phase, SUM(time_ns) FROM op_phase WHERE run_id = 1
// GROUP BY phase, or phase_summary.
inline constexpr const char* kMigrationV3 = R"sql(
CREATE VIEW op_phase AS
  SELECT s.*, CASE
           WHEN s.node = 'grad' OR substr(s.node, 1, 5) = 'grad/' THEN 'backward'
           WHEN substr(s.node, 1, 10) = 'optimizer/' OR s.node = 'optimizer'
                OR substr(s.node, 1, 11) = 'loss_scale/' OR s.node = 'loss_scale' THEN 'update'
           ELSE 'forward' END AS phase
  FROM op_summary s;
CREATE VIEW phase_summary AS
  SELECT p.run_id, p.phase, COUNT(*) AS ops, SUM(p.time_ns) AS total_ns, SUM(p.busy_ns) AS busy_ns,
         100.0 * SUM(p.time_ns) / NULLIF(r.time_ns, 0) AS pct_of_run, SUM(p.flops) AS flops,
         SUM(p.bytes_in + p.bytes_out) AS bytes
  FROM op_phase p
  LEFT JOIN run_time r ON r.run_id = p.run_id
  GROUP BY p.run_id, p.phase;
)sql";

// Version 4: recomputed forward nodes ("recompute/...", frontend/api/recompute.h) count in the
// backward pass, where they run.
inline constexpr const char* kMigrationV4 = R"sql(
DROP VIEW phase_summary;
DROP VIEW op_phase;
CREATE VIEW op_phase AS
  SELECT s.*, CASE
           WHEN s.node = 'grad' OR substr(s.node, 1, 5) = 'grad/'
                OR s.node = 'recompute' OR substr(s.node, 1, 10) = 'recompute/' THEN 'backward'
           WHEN substr(s.node, 1, 10) = 'optimizer/' OR s.node = 'optimizer'
                OR substr(s.node, 1, 11) = 'loss_scale/' OR s.node = 'loss_scale' THEN 'update'
           ELSE 'forward' END AS phase
  FROM op_summary s;
CREATE VIEW phase_summary AS
  SELECT p.run_id, p.phase, COUNT(*) AS ops, SUM(p.time_ns) AS total_ns, SUM(p.busy_ns) AS busy_ns,
         100.0 * SUM(p.time_ns) / NULLIF(r.time_ns, 0) AS pct_of_run, SUM(p.flops) AS flops,
         SUM(p.bytes_in + p.bytes_out) AS bytes
  FROM op_phase p
  LEFT JOIN run_time r ON r.run_id = p.run_id
  GROUP BY p.run_id, p.phase;
)sql";

}  // namespace mimic::traces::sql
