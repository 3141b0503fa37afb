#include "traces/ingest.h"

#include <fmt/format.h>
#include <unistd.h>

#include <climits>
#include <map>

namespace mimic::traces {
namespace {

// Events are inserted kEventChunk rows per statement: one statement run per chunk instead of per
// row (measured: 64 rows per statement ~1.9M rows per CPU-second, 256 ~2.4M, 1 ~1.1M).
constexpr int kEventChunk = 256;
constexpr int kEventColumns = 6;

std::string event_chunk_sql() {
  std::string s = "INSERT INTO event(run_id, track_id, op_id, name_id, ts, dur) VALUES ";
  for (int i = 0; i < kEventChunk; ++i) s += i ? ",(?,?,?,?,?,?)" : "(?,?,?,?,?,?)";
  return s;
}

const char* unit_name(sim::TimeUnit u) {
  return u == sim::TimeUnit::cycles ? "cycles" : "ns";
}

}  // namespace

Ingestor::Ingestor(Db& db, const OpenOptions& options)
    : db_(db),
      options_(options),
      host_(host_name()),
      insert_run_(db.prepare("INSERT INTO run(uuid, status, started_ns, tool_version, host, pid, "
                             "model, batch, layout, "
                             "precision, device, tag, config_json) VALUES (?, 'running', ?, ?, ?, "
                             "?, ?, ?, ?, ?, ?, ?, ?)",
                             "insert run")),
      end_run_(
          db.prepare("UPDATE run SET status = ?, ended_ns = ?, error = ? WHERE id = ?", "end run")),
      insert_device_(db.prepare(
          "INSERT INTO device(run_id, id, backend, preset, clock_hz, time_unit, properties_json) "
          "VALUES (?, ?, ?, ?, ?, ?, ?)",
          "insert device")),
      insert_track_(db.prepare(
          "INSERT INTO track(run_id, id, device_id, name_id, kind_id) VALUES (?, ?, ?, ?, ?)",
          "insert track")),
      insert_op_(db.prepare(
          "INSERT INTO op(run_id, id, node_id, op_type_id, shapes_id, dtype_id, flops, bytes_in, "
          "bytes_out, backend_id, fallback) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
          "insert op")),
      insert_event_(db.prepare(
          "INSERT INTO event(run_id, track_id, op_id, name_id, ts, dur) VALUES (?, ?, ?, ?, ?, ?)",
          "insert event")),
      insert_event_chunk_(db.prepare(event_chunk_sql(), "insert events")),
      insert_counter_(
          db.prepare("INSERT INTO counter(run_id, track_id, ts, value) VALUES (?, ?, ?, ?)",
                     "insert counter")),
      insert_table_(db.prepare("INSERT INTO run_table(run_id, name, columns_json) VALUES (?, ?, ?)",
                               "insert table")),
      insert_table_row_(db.prepare("INSERT INTO run_table_row(run_id, table_name, row_index, "
                                   "values_json) VALUES (?, ?, ?, ?)",
                                   "insert table row")),
      event_range_(db.prepare("UPDATE run SET first_event_rowid = COALESCE(first_event_rowid, ?1), "
                              "last_event_rowid = ?2 WHERE id = ?3",
                              "record event rows")),
      counter_range_(
          db.prepare("UPDATE run SET first_counter_rowid = COALESCE(first_counter_rowid, ?1), "
                     "last_counter_rowid = ?2 WHERE id = ?3",
                     "record counter rows")),
      string_insert_(db.prepare("INSERT OR IGNORE INTO string(value) VALUES (?)", "intern string")),
      string_select_(db.prepare("SELECT id FROM string WHERE value = ?", "look up string")),
      insert_stat_(db.prepare(
          "INSERT INTO event_stat(run_id, track_id, op_id, events, busy, first_ts, last_end) "
          "VALUES (?, ?, ?, ?, ?, ?, ?)",
          "insert event aggregates")),
      stats_done_(db.prepare("UPDATE run SET stats_done = 1 WHERE id = ?", "mark aggregates")) {}

int64_t Ingestor::run_id(uint64_t run_key) const {
  auto it = runs_.find(run_key);
  return it == runs_.end() ? -1 : it->second;
}

void Ingestor::write(const std::vector<WorkItem>& items) {
  with_write_transaction(
      db_, options_.lock_give_up,
      [&] {
        for (const WorkItem& item : items) write_item(item);
      },
      [&] { undo(); });
  commit();
}

void Ingestor::commit() {
  for (auto& [run, stats] : txn_stats_) {
    RunStats& into = stats_[run];
    if (into.size() < stats.size()) into.resize(stats.size());
    for (size_t track = 0; track < stats.size(); ++track)
      for (const auto& [op, agg] : stats[track].by_op) into[track].by_op[op].merge(agg);
  }
  for (int64_t run : ended_runs_) stats_.erase(run);
  txn_stats_.clear();
  ended_runs_.clear();
  new_strings_.clear();
  new_runs_.clear();
}

void Ingestor::undo() {
  for (std::string_view s : new_strings_) strings_.erase(s);
  for (size_t i = 0; i < new_strings_.size(); ++i) storage_.pop_back();
  for (uint64_t key : new_runs_) runs_.erase(key);
  new_strings_.clear();
  new_runs_.clear();
  txn_stats_.clear();
  ended_runs_.clear();
  last_name_.clear();
}

int64_t Ingestor::intern(std::string_view s) {
  auto it = strings_.find(s);
  if (it != strings_.end()) return it->second;
  string_insert_.bind(1, s).run();
  int64_t id;
  if (db_.changes() == 1) {
    id = db_.last_insert_rowid();
  } else {
    string_select_.bind(1, s);
    if (!string_select_.step())
      throw IoError(fmt::format("trace '{}': interned string vanished", db_.path()));
    id = string_select_.int_at(0);
    string_select_.reset();
  }
  storage_.emplace_back(s);
  std::string_view key = storage_.back();
  strings_.emplace(key, id);
  new_strings_.push_back(key);
  return id;
}

void Ingestor::write_item(const WorkItem& item) {
  if (item.kind == WorkItem::Kind::begin_run) return begin_run(item);
  int64_t run = run_id(item.run_key);
  if (run < 0)
    throw IoError(fmt::format("trace '{}': rows for a run that was never begun", db_.path()));
  if (item.kind == WorkItem::Kind::end_run) return end_run(run, item);
  write_batch(run, item.batch);
}

void Ingestor::begin_run(const WorkItem& item) {
  const RunMeta& m = *item.meta;
  insert_run_.bind(1, item.uuid)
      .bind(2, item.time_ns)
      .bind(3, std::string_view(MIMIC_VERSION))
      .bind(4, host_)
      .bind(5, static_cast<int64_t>(getpid()))
      .bind(6, m.model)
      .bind(7, m.batch)
      .bind(8, m.layout)
      .bind(9, m.precision)
      .bind(10, m.device)
      .bind(11, m.tag)
      .bind(12, m.config_json.empty() ? std::string_view("{}") : std::string_view(m.config_json))
      .run();
  runs_[item.run_key] = db_.last_insert_rowid();
  new_runs_.push_back(item.run_key);
}

void Ingestor::end_run(int64_t run, const WorkItem& item) {
  std::map<std::pair<int64_t, int64_t>, EventAgg> all;  // (track, op)
  for (const RunStats* stats : {&stats_[run], &txn_stats_[run]})
    for (size_t track = 0; track < stats->size(); ++track)
      for (const auto& [op, agg] : (*stats)[track].by_op) all[{int64_t(track), op}].merge(agg);
  for (const auto& [key, agg] : all)
    insert_stat_.bind(1, run)
        .bind(2, key.first)
        .bind(3, key.second)
        .bind(4, agg.events)
        .bind(5, agg.busy)
        .bind(6, agg.first_ts)
        .bind(7, agg.last_end)
        .run();
  stats_done_.bind(1, run).run();
  ended_runs_.push_back(run);
  end_run_.bind(1, std::string_view(item.ok ? "done" : "failed")).bind(2, item.time_ns);
  if (item.ok)
    end_run_.bind_null(3);
  else
    end_run_.bind(3, item.error);
  end_run_.bind(4, run).run();
}

void Ingestor::write_batch(int64_t run, const Batch& b) {
  for (const DeviceRow& d : b.devices)
    insert_device_.bind(1, run)
        .bind(2, static_cast<int64_t>(d.id))
        .bind(3, d.desc.backend)
        .bind(4, d.desc.preset)
        .bind(5, static_cast<int64_t>(d.desc.clock_hz))
        .bind(6, std::string_view(unit_name(d.desc.unit)))
        .bind(7, d.desc.properties_json.empty() ? std::string_view("{}")
                                                : std::string_view(d.desc.properties_json))
        .run();
  for (const TrackRow& t : b.tracks)
    insert_track_.bind(1, run)
        .bind(2, static_cast<int64_t>(t.id))
        .bind(3, static_cast<int64_t>(t.device))
        .bind(4, intern(t.name))
        .bind(5, intern(t.kind))
        .run();
  for (const OpRow& o : b.ops)
    insert_op_.bind(1, run)
        .bind(2, o.id)
        .bind(3, intern(o.desc.node))
        .bind(4, intern(o.desc.op_type))
        .bind(5, intern(o.desc.shapes))
        .bind(6, intern(o.desc.dtype))
        .bind(7, o.desc.flops)
        .bind(8, o.desc.bytes_in)
        .bind(9, o.desc.bytes_out)
        .bind(10, intern(o.desc.backend))
        .bind(11, static_cast<int64_t>(o.desc.fallback ? 1 : 0))
        .run();
  write_events(run, b);
  int64_t first_counter = 0;
  for (const CounterRow& c : b.counters) {
    insert_counter_.bind(1, run)
        .bind(2, static_cast<int64_t>(c.track))
        .bind(3, static_cast<int64_t>(c.ts))
        .bind(4, c.value)
        .run();
    if (first_counter == 0) first_counter = db_.last_insert_rowid();
  }
  if (!b.counters.empty())
    counter_range_.bind(1, first_counter).bind(2, db_.last_insert_rowid()).bind(3, run).run();
  for (const TableRowEntry& r : b.table_rows) {
    if (!r.columns_json.empty())
      insert_table_.bind(1, run).bind(2, r.table).bind(3, r.columns_json).run();
    insert_table_row_.bind(1, run)
        .bind(2, r.table)
        .bind(3, r.row_index)
        .bind(4, r.values_json)
        .run();
  }
}

void Ingestor::write_events(int64_t run, const Batch& b) {
  RunStats& stats = txn_stats_[run];
  auto bind_event = [&](Stmt& s, int base, const EventRow& e) {
    size_t track = static_cast<size_t>(e.track);
    if (track >= stats.size()) stats.resize(track + 1);
    stats[track]
        .at(e.op == sim::kNoOp ? -1 : e.op)
        .add(static_cast<int64_t>(e.ts), static_cast<int64_t>(e.dur));
    std::string_view name(b.names.data() + e.name_offset, e.name_len);
    if (track >= last_name_.size()) last_name_.resize(track + 1, {std::string(), -1});
    auto& [last, last_id] = last_name_[track];
    if (last_id < 0 || last != name) {
      last_id = intern(name);
      last.assign(name);
    }
    s.bind(base + 1, run).bind(base + 2, static_cast<int64_t>(e.track));
    if (e.op == sim::kNoOp)
      s.bind_null(base + 3);
    else
      s.bind(base + 3, e.op);
    s.bind(base + 4, last_id)
        .bind(base + 5, static_cast<int64_t>(e.ts))
        .bind(base + 6, static_cast<int64_t>(e.dur));
  };
  // Rows inserted while this transaction holds the write lock get consecutive rowids.
  size_t n = b.events.size(), i = 0;
  if (n == 0) return;
  int64_t first = 0;
  for (; i + kEventChunk <= n; i += kEventChunk) {
    for (int k = 0; k < kEventChunk; ++k)
      bind_event(insert_event_chunk_, k * kEventColumns, b.events[i + k]);
    insert_event_chunk_.run();
    if (first == 0) first = db_.last_insert_rowid() - (kEventChunk - 1);
  }
  for (; i < n; ++i) {
    bind_event(insert_event_, 0, b.events[i]);
    insert_event_.run();
    if (first == 0) first = db_.last_insert_rowid();
  }
  event_range_.bind(1, first).bind(2, db_.last_insert_rowid()).bind(3, run).run();
}

}  // namespace mimic::traces
