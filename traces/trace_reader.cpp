#include "traces/trace_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

namespace mimic::traces {
namespace {

constexpr const char* kRunColumns =
    "r.id, r.uuid, r.status, r.started_ns, COALESCE(r.ended_ns, 0), COALESCE(r.error, ''), "
    "r.tool_version, r.host, r.pid, r.model, r.batch, r.layout, r.precision, r.device, r.tag, "
    "r.config_json, (SELECT COUNT(*) FROM event e WHERE e.run_id = r.id)";

RunRecord run_from(const Stmt& s) {
  RunRecord r;
  r.id = s.int_at(0);
  r.uuid = s.text_at(1);
  r.status = s.text_at(2);
  r.started_ns = s.int_at(3);
  r.ended_ns = s.int_at(4);
  r.error = s.text_at(5);
  r.tool_version = s.text_at(6);
  r.host = s.text_at(7);
  r.pid = s.int_at(8);
  r.model = s.text_at(9);
  r.batch = s.int_at(10);
  r.layout = s.text_at(11);
  r.precision = s.text_at(12);
  r.device = s.text_at(13);
  r.tag = s.text_at(14);
  r.config_json = s.text_at(15);
  r.events = s.int_at(16);
  return r;
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Per (track) aggregates of one run's events, in native units.
struct TrackAgg {
  int64_t events = 0, busy = 0, start = 0, end = 0;
};

std::map<int64_t, TrackAgg> track_aggregates(const Db& db, int64_t run_id) {
  Stmt s = db.prepare(
      "SELECT track_id, COUNT(*), SUM(dur), MIN(ts), MAX(ts + dur) FROM event WHERE run_id = ? "
      "GROUP BY track_id",
      "aggregate events per track");
  s.bind(1, run_id);
  std::map<int64_t, TrackAgg> out;
  while (s.step()) out[s.int_at(0)] = TrackAgg{s.int_at(1), s.int_at(2), s.int_at(3), s.int_at(4)};
  return out;
}

}  // namespace

TraceReader::TraceReader(const std::string& path) : db_(open_for_read(path)) {}

std::vector<RunRecord> TraceReader::runs() const {
  Stmt s = db_.prepare(fmt::format("SELECT {} FROM run r ORDER BY r.id", kRunColumns), "list runs");
  std::vector<RunRecord> out;
  while (s.step()) out.push_back(run_from(s));
  for (RunRecord& r : out) r.device_time_ns = run_time_ns(r.id);
  return out;
}

int64_t TraceReader::resolve_run(const std::string& spec) const {
  int64_t count = db_.query_int("SELECT COUNT(*) FROM run", "count runs");
  if (count == 0) throw InvalidArgument(fmt::format("trace '{}' has no runs", path()));
  auto range = [&] {
    return fmt::format("{} run(s), ids {}..{}", count, db_.query_int("SELECT MIN(id) FROM run", "runs"),
                       db_.query_int("SELECT MAX(id) FROM run", "runs"));
  };
  if (spec.empty()) return db_.query_int("SELECT MAX(id) FROM run", "find the last run");
  if (all_digits(spec) && spec.size() < 18) {
    Stmt s = db_.prepare("SELECT id FROM run WHERE id = ?", "find run");
    s.bind(1, static_cast<int64_t>(std::stoll(spec)));
    if (s.step()) return s.int_at(0);
    throw InvalidArgument(fmt::format("run {} is not in trace '{}' ({})", spec, path(), range()));
  }
  Stmt s = db_.prepare("SELECT id FROM run WHERE uuid LIKE ? || '%' ESCAPE '\\'", "find run by uuid");
  std::string pattern;
  for (char c : spec) {
    if (c == '%' || c == '_' || c == '\\') pattern += '\\';
    pattern += c;
  }
  s.bind(1, pattern);
  std::vector<int64_t> ids;
  while (s.step()) ids.push_back(s.int_at(0));
  if (ids.size() == 1) return ids[0];
  if (ids.empty())
    throw InvalidArgument(fmt::format("run '{}' is not in trace '{}' (give a run id or uuid; {})", spec,
                                      path(), range()));
  throw InvalidArgument(fmt::format("run '{}' is ambiguous in trace '{}': {} runs have uuids starting so",
                                    spec, path(), ids.size()));
}

RunRecord TraceReader::run(int64_t run_id) const {
  Stmt s = db_.prepare(fmt::format("SELECT {} FROM run r WHERE r.id = ?", kRunColumns), "read run");
  s.bind(1, run_id);
  if (!s.step()) throw InvalidArgument(fmt::format("run {} is not in trace '{}'", run_id, path()));
  RunRecord r = run_from(s);
  r.device_time_ns = run_time_ns(run_id);
  return r;
}

std::vector<DeviceRecord> TraceReader::devices(int64_t run_id) const {
  Stmt s = db_.prepare(
      "SELECT device_id, backend, preset, time_unit, properties_json, clock_hz, ns_per_unit "
      "FROM device_v WHERE run_id = ? ORDER BY device_id",
      "read devices");
  s.bind(1, run_id);
  std::vector<DeviceRecord> out;
  while (s.step())
    out.push_back(DeviceRecord{s.int_at(0), s.text_at(1), s.text_at(2), s.text_at(3), s.text_at(4),
                               s.int_at(5), s.real_at(6)});
  std::map<int64_t, DeviceRecord*> by_id;
  for (DeviceRecord& d : out) by_id[d.id] = &d;
  std::map<int64_t, int64_t> track_device;
  for (const TrackRecord& t : tracks(run_id)) track_device[t.id] = t.device_id;
  std::map<int64_t, bool> seen;
  for (const auto& [track, agg] : track_aggregates(db_, run_id)) {
    DeviceRecord* d = by_id.at(track_device.at(track));
    if (!seen[d->id]) {
      d->start = agg.start;
      d->end = agg.end;
      seen[d->id] = true;
    }
    d->start = std::min(d->start, agg.start);
    d->end = std::max(d->end, agg.end);
  }
  for (DeviceRecord& d : out) d.span_ns = static_cast<double>(d.end - d.start) * d.ns_per_unit;
  return out;
}

std::vector<TrackRecord> TraceReader::tracks(int64_t run_id) const {
  Stmt s = db_.prepare(
      "SELECT track_id, device_id, name, kind, ns_per_unit FROM track_v WHERE run_id = ? ORDER BY track_id",
      "read tracks");
  s.bind(1, run_id);
  std::vector<TrackRecord> out;
  while (s.step()) out.push_back(TrackRecord{s.int_at(0), s.int_at(1), s.text_at(2), s.text_at(3), s.real_at(4)});
  return out;
}

double TraceReader::run_time_ns(int64_t run_id) const {
  double total = 0;
  for (const DeviceRecord& d : devices(run_id)) total += d.span_ns;
  return total;
}

std::vector<OpRecord> TraceReader::ops(int64_t run_id) const {
  std::unordered_map<int64_t, double> ns_per_unit;
  for (const TrackRecord& t : tracks(run_id)) ns_per_unit[t.id] = t.ns_per_unit;
  Stmt s = db_.prepare(
      "SELECT op_id, node, op_type, shapes, dtype, backend, flops, bytes_in, bytes_out, fallback "
      "FROM op_v WHERE run_id = ? ORDER BY op_id",
      "read ops");
  s.bind(1, run_id);
  std::vector<OpRecord> out;
  std::unordered_map<int64_t, size_t> index;
  while (s.step()) {
    OpRecord o;
    o.op_id = s.int_at(0);
    o.node = s.text_at(1);
    o.op_type = s.text_at(2);
    o.shapes = s.text_at(3);
    o.dtype = s.text_at(4);
    o.backend = s.text_at(5);
    o.flops = s.int_at(6);
    o.bytes_in = s.int_at(7);
    o.bytes_out = s.int_at(8);
    o.fallback = s.int_at(9) != 0;
    index[o.op_id] = out.size();
    out.push_back(std::move(o));
  }
  // Aggregate per (op, track) in SQL, convert each track's units to ns here.
  Stmt e = db_.prepare(
      "SELECT op_id, track_id, COUNT(*), SUM(dur), MIN(ts), MAX(ts + dur) FROM event "
      "WHERE run_id = ? AND op_id IS NOT NULL GROUP BY op_id, track_id",
      "aggregate events per op");
  e.bind(1, run_id);
  std::unordered_map<int64_t, std::pair<double, double>> span;  // op -> start, end (ns)
  while (e.step()) {
    auto it = index.find(e.int_at(0));
    if (it == index.end()) continue;
    OpRecord& o = out[it->second];
    double k = ns_per_unit.count(e.int_at(1)) ? ns_per_unit[e.int_at(1)] : 1.0;
    double start = e.int_at(4) * k, end = e.int_at(5) * k;
    o.events += e.int_at(2);
    o.busy_ns += e.int_at(3) * k;
    auto [sp, fresh] = span.try_emplace(o.op_id, start, end);
    if (!fresh) sp->second = {std::min(sp->second.first, start), std::max(sp->second.second, end)};
  }
  for (const auto& [op, se] : span) {
    OpRecord& o = out[index[op]];
    o.start_ns = se.first;
    o.time_ns = se.second - se.first;
  }
  return out;
}

std::vector<OpTypeRecord> TraceReader::op_types(int64_t run_id) const {
  double run_ns = run_time_ns(run_id);
  std::map<std::string, OpTypeRecord> by_type;
  for (const OpRecord& o : ops(run_id)) {
    OpTypeRecord& t = by_type[o.op_type];
    t.op_type = o.op_type;
    t.ops += 1;
    t.events += o.events;
    t.total_ns += o.time_ns;
    t.flops += o.flops;
    t.bytes += o.bytes_in + o.bytes_out;
    t.fallback_ops += o.fallback ? 1 : 0;
  }
  std::vector<OpTypeRecord> out;
  for (auto& [name, t] : by_type) {
    t.mean_ns = t.total_ns / static_cast<double>(t.ops);
    t.pct_of_run = run_ns > 0 ? 100.0 * t.total_ns / run_ns : 0;
    out.push_back(t);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const OpTypeRecord& a, const OpTypeRecord& b) { return a.total_ns > b.total_ns; });
  return out;
}

std::vector<UnitRecord> TraceReader::units(int64_t run_id) const {
  std::map<int64_t, DeviceRecord> devs;
  for (const DeviceRecord& d : devices(run_id)) devs[d.id] = d;
  auto aggs = track_aggregates(db_, run_id);
  std::vector<UnitRecord> out;
  for (const TrackRecord& t : tracks(run_id)) {
    UnitRecord u;
    u.track_id = t.id;
    u.device_id = t.device_id;
    u.track = t.name;
    u.kind = t.kind;
    const DeviceRecord& d = devs.at(t.device_id);
    u.backend = d.backend;
    auto it = aggs.find(t.id);
    if (it != aggs.end()) {
      u.events = it->second.events;
      u.busy = it->second.busy;
    }
    u.busy_ns = static_cast<double>(u.busy) * t.ns_per_unit;
    u.span_ns = d.span_ns;
    u.utilization = d.span_ns > 0 ? u.busy_ns / d.span_ns : 0;
    out.push_back(std::move(u));
  }
  return out;
}

int64_t TraceReader::event_count(int64_t run_id) const {
  Stmt s = db_.prepare("SELECT COUNT(*) FROM event WHERE run_id = ?", "count events");
  s.bind(1, run_id);
  return s.step() ? s.int_at(0) : 0;
}

int64_t TraceReader::counter_count(int64_t run_id) const {
  Stmt s = db_.prepare("SELECT COUNT(*) FROM counter WHERE run_id = ?", "count counters");
  s.bind(1, run_id);
  return s.step() ? s.int_at(0) : 0;
}

void TraceReader::for_each_event(int64_t run_id, const std::function<void(const EventRecord&)>& fn) const {
  Stmt s = db_.prepare(
      "SELECT e.track_id, COALESCE(e.op_id, -1), s.value, e.ts, e.dur FROM event e "
      "JOIN string s ON s.id = e.name_id WHERE e.run_id = ? ORDER BY e.track_id, e.ts",
      "read events");
  s.bind(1, run_id);
  EventRecord r;
  while (s.step()) {
    r.track_id = s.int_at(0);
    r.op_id = s.int_at(1);
    r.name = s.text_at(2);
    r.ts = s.int_at(3);
    r.dur = s.int_at(4);
    fn(r);
  }
}

void TraceReader::for_each_counter(int64_t run_id, const std::function<void(const CounterRecord&)>& fn) const {
  Stmt s = db_.prepare("SELECT track_id, ts, value FROM counter WHERE run_id = ? ORDER BY track_id, ts",
                       "read counters");
  s.bind(1, run_id);
  while (s.step()) fn(CounterRecord{s.int_at(0), s.int_at(1), s.real_at(2)});
}

std::vector<TableRecord> TraceReader::tables(int64_t run_id) const {
  Stmt t = db_.prepare("SELECT name, columns_json FROM run_table WHERE run_id = ? ORDER BY name", "read tables");
  t.bind(1, run_id);
  std::vector<TableRecord> out;
  while (t.step()) {
    TableRecord rec;
    rec.name = t.text_at(0);
    for (const auto& c : nlohmann::json::parse(t.text_at(1), nullptr, false))
      rec.columns.push_back(c.is_string() ? c.get<std::string>() : c.dump());
    out.push_back(std::move(rec));
  }
  Stmt r = db_.prepare(
      "SELECT values_json FROM run_table_row WHERE run_id = ? AND table_name = ? ORDER BY row_index",
      "read table rows");
  for (TableRecord& rec : out) {
    r.bind(1, run_id).bind(2, rec.name);
    while (r.step()) rec.rows_json.push_back(r.text_at(0));
    r.reset();
  }
  return out;
}

std::vector<std::vector<std::string>> TraceReader::query(const std::string& sql) const {
  Stmt s = db_.prepare(sql, "query");
  std::vector<std::vector<std::string>> rows;
  while (s.step()) {
    std::vector<std::string> row;
    for (int c = 0; c < s.columns(); ++c) row.push_back(s.null_at(c) ? "" : s.text_at(c));
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace mimic::traces
