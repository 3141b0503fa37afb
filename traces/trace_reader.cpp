#include "traces/trace_reader.h"

#include <fmt/format.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

namespace mimic::traces {
namespace {

constexpr const char* kRunColumns =
    "r.id, r.uuid, r.status, r.started_ns, COALESCE(r.ended_ns, 0), COALESCE(r.error, ''), "
    "r.tool_version, r.host, r.pid, r.model, r.batch, r.layout, r.precision, r.device, r.tag, "
    "r.config_json, CASE WHEN r.stats_done = 1 THEN "
    "(SELECT COALESCE(SUM(events), 0) FROM event_stat s WHERE s.run_id = r.id) ELSE "
    "(SELECT COUNT(*) FROM event e WHERE e.rowid BETWEEN r.first_event_rowid AND "
    "r.last_event_rowid "
    "AND +e.run_id = r.id) END";

// The rows of run ?1, through its rowid range (see schema.h: no index on event or counter).
constexpr const char* kRunEvents =
    "event e WHERE e.rowid BETWEEN (SELECT first_event_rowid FROM run WHERE id = ?1) AND "
    "(SELECT last_event_rowid FROM run WHERE id = ?1) AND +e.run_id = ?1";
constexpr const char* kRunCounters =
    "counter c WHERE c.rowid BETWEEN (SELECT first_counter_rowid FROM run WHERE id = ?1) AND "
    "(SELECT last_counter_rowid FROM run WHERE id = ?1) AND +c.run_id = ?1";

// A run still 'running' whose process, on this machine, is gone was interrupted (a signal, a
// kill, a crash): no one will end it, so readers show it as such.
void mark_if_orphaned(RunRecord& r) {
  if (r.status != "running" || r.pid <= 0 || r.host != host_name()) return;
  if (kill(static_cast<pid_t>(r.pid), 0) == 0 || errno != ESRCH) return;
  r.status = "interrupted";
  r.error =
      fmt::format("process {} ended before the run did (interrupted, killed or crashed)", r.pid);
}

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
  mark_if_orphaned(r);
  return r;
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

TraceReader::TraceReader(const std::string& path) : db_(open_for_read(path)) {}

std::vector<EventAggregate> TraceReader::aggregates(int64_t run_id) const {
  Stmt k = db_.prepare("SELECT stats_done, COALESCE(last_event_rowid, 0) FROM run WHERE id = ?",
                       "read run state");
  k.bind(1, run_id);
  std::pair<int64_t, int64_t> key{-1, -1};
  if (k.step()) key = {k.int_at(0), k.int_at(1)};
  auto cached = agg_cache_.find(run_id);
  if (cached != agg_cache_.end() && cached->second.first == key) return cached->second.second;
  std::vector<EventAggregate> out;
  if (key.first == 1) {
    Stmt s = db_.prepare(
        "SELECT track_id, op_id, events, busy, first_ts, last_end FROM event_stat WHERE run_id = ?",
        "read event aggregates");
    s.bind(1, run_id);
    while (s.step())
      out.push_back(EventAggregate{s.int_at(0), s.int_at(1), s.int_at(2), s.int_at(3), s.int_at(4),
                                   s.int_at(5)});
  } else {
    // A run that did not end: aggregate its rows here (a hash aggregate; SQLite's GROUP BY sorts).
    Stmt s = db_.prepare(
        fmt::format("SELECT e.track_id, COALESCE(e.op_id, -1), e.ts, e.dur FROM {}", kRunEvents),
        "aggregate events");
    s.bind(1, run_id);
    std::map<std::pair<int64_t, int64_t>, EventAggregate> by_key;
    std::pair<int64_t, int64_t> last{-1, -2};
    EventAggregate* a = nullptr;
    while (s.step()) {
      std::pair<int64_t, int64_t> k2{s.int_at(0), s.int_at(1)};
      int64_t ts = s.int_at(2), dur = s.int_at(3);
      if (k2 != last) {
        auto [it, fresh] =
            by_key.try_emplace(k2, EventAggregate{k2.first, k2.second, 0, 0, ts, ts + dur});
        a = &it->second;
        last = k2;
      }
      a->events += 1;
      a->busy += dur;
      a->first_ts = std::min(a->first_ts, ts);
      a->last_end = std::max(a->last_end, ts + dur);
    }
    for (const auto& [k3, agg] : by_key) out.push_back(agg);
  }
  agg_cache_[run_id] = {key, out};
  return out;
}

std::map<int64_t, EventAggregate> TraceReader::track_aggregates(int64_t run_id) const {
  std::map<int64_t, EventAggregate> out;
  for (const EventAggregate& a : aggregates(run_id)) {
    auto [it, fresh] = out.try_emplace(a.track_id, a);
    if (fresh) continue;
    EventAggregate& t = it->second;
    t.events += a.events;
    t.busy += a.busy;
    t.first_ts = std::min(t.first_ts, a.first_ts);
    t.last_end = std::max(t.last_end, a.last_end);
  }
  return out;
}

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
    return fmt::format("{} run(s), ids {}..{}", count,
                       db_.query_int("SELECT MIN(id) FROM run", "runs"),
                       db_.query_int("SELECT MAX(id) FROM run", "runs"));
  };
  if (spec.empty()) return db_.query_int("SELECT MAX(id) FROM run", "find the last run");
  // Digits are a run id, unless no run has that id: then a uuid prefix (trace list shows 8 hex
  // digits of each uuid, and some are all decimal digits).
  if (all_digits(spec) && spec.size() < 19) {
    Stmt s = db_.prepare("SELECT id FROM run WHERE id = ?", "find run");
    s.bind(1, static_cast<int64_t>(std::stoll(spec)));
    if (s.step()) return s.int_at(0);
  }
  Stmt s =
      db_.prepare("SELECT id FROM run WHERE uuid LIKE ? || '%' ESCAPE '\\'", "find run by uuid");
  std::string pattern;
  for (char c : spec) {
    if (c == '%' || c == '_' || c == '\\') pattern += '\\';
    pattern += c;
  }
  s.bind(1, pattern);
  std::vector<int64_t> ids;
  while (s.step()) ids.push_back(s.int_at(0));
  if (ids.size() == 1) return ids[0];
  if (ids.empty() && all_digits(spec))
    throw InvalidArgument(
        fmt::format("run {} is not in trace '{}' (no run has that id or a uuid "
                    "starting so; {})",
                    spec, path(), range()));
  if (ids.empty())
    throw InvalidArgument(fmt::format("run '{}' is not in trace '{}' (give a run id or uuid; {})",
                                      spec, path(), range()));
  throw InvalidArgument(
      fmt::format("run '{}' is ambiguous in trace '{}': {} runs have uuids starting so", spec,
                  path(), ids.size()));
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
  for (const auto& [track, agg] : track_aggregates(run_id)) {
    DeviceRecord* d =
        referenced(by_id, referenced(track_device, track, path(), "track"), path(), "device");
    if (!seen[d->id]) {
      d->start = agg.first_ts;
      d->end = agg.last_end;
      seen[d->id] = true;
    }
    d->start = std::min(d->start, agg.first_ts);
    d->end = std::max(d->end, agg.last_end);
  }
  for (DeviceRecord& d : out) d.span_ns = static_cast<double>(d.end - d.start) * d.ns_per_unit;
  return out;
}

std::vector<TrackRecord> TraceReader::tracks(int64_t run_id) const {
  Stmt s = db_.prepare(
      "SELECT track_id, device_id, name, kind, ns_per_unit FROM track_v WHERE run_id = ? ORDER BY "
      "track_id",
      "read tracks");
  s.bind(1, run_id);
  std::vector<TrackRecord> out;
  while (s.step())
    out.push_back(TrackRecord{s.int_at(0), s.int_at(1), s.text_at(2), s.text_at(3), s.real_at(4)});
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
  // Aggregates per (op, track); each track's units are converted to ns here.
  std::unordered_map<int64_t, std::pair<double, double>> span;  // op -> start, end (ns)
  for (const EventAggregate& a : aggregates(run_id)) {
    auto it = index.find(a.op_id);
    if (a.op_id < 0 || it == index.end()) continue;
    OpRecord& o = out[it->second];
    double k = ns_per_unit.count(a.track_id) ? ns_per_unit[a.track_id] : 1.0;
    double start = a.first_ts * k, end = a.last_end * k;
    o.events += a.events;
    o.busy_ns += a.busy * k;
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
  double op_ns = 0;
  for (const auto& [name, t] : by_type) op_ns += t.total_ns;
  std::vector<OpTypeRecord> out;
  for (auto& [name, t] : by_type) {
    t.mean_ns = t.total_ns / static_cast<double>(t.ops);
    t.pct_of_run = run_ns > 0 ? 100.0 * t.total_ns / run_ns : 0;
    t.pct_of_op_time = op_ns > 0 ? 100.0 * t.total_ns / op_ns : 0;
    out.push_back(t);
  }
  std::stable_sort(out.begin(), out.end(), [](const OpTypeRecord& a, const OpTypeRecord& b) {
    return a.total_ns > b.total_ns;
  });
  return out;
}

const char* op_phase(const std::string& node) {
  auto starts = [&](const char* prefix) {
    size_t n = std::strlen(prefix);
    return node.compare(0, n, prefix) == 0 && (node.size() == n || node[n] == '/');
  };
  if (starts("grad") || starts("recompute")) return "backward";
  if (starts("allreduce")) return "allreduce";
  if (starts("optimizer") || starts("loss_scale")) return "update";
  return "forward";
}

namespace {

// Length of the union of [start, end) intervals: an op's span covers the ops it overlaps (a kernel
// prefetching for the next, replicas staggered), which a sum would count twice.
double union_length(std::vector<std::pair<double, double>> spans) {
  std::sort(spans.begin(), spans.end());
  double total = 0, start = 0, end = -1;
  for (const auto& [a, b] : spans) {
    if (a > end) {
      total += end > start ? end - start : 0;
      start = a;
    }
    end = std::max(end, b);
  }
  return total + (end > start ? end - start : 0);
}

}  // namespace

std::vector<PhaseRecord> TraceReader::phases(int64_t run_id) const {
  double run_ns = run_time_ns(run_id);
  std::vector<PhaseRecord> out = {{"forward"}, {"backward"}, {"allreduce"}, {"update"}};
  std::vector<std::vector<std::pair<double, double>>> spans(out.size());
  for (const OpRecord& o : ops(run_id)) {
    std::string phase = op_phase(o.node);
    size_t k = phase == "forward" ? 0 : phase == "backward" ? 1 : phase == "allreduce" ? 2 : 3;
    PhaseRecord& p = out[k];
    p.ops += 1;
    p.flops += o.flops;
    p.bytes += o.bytes_in + o.bytes_out;
    p.busy_ns += o.busy_ns;
    if (o.time_ns > 0) spans[k].push_back({o.start_ns, o.start_ns + o.time_ns});
  }
  std::vector<PhaseRecord> present;
  for (size_t k = 0; k < out.size(); ++k) {
    PhaseRecord& p = out[k];
    if (p.ops == 0) continue;
    p.total_ns = union_length(spans[k]);
    p.pct_of_run = run_ns > 0 ? 100.0 * p.total_ns / run_ns : 0;
    present.push_back(p);
  }
  return present;
}

std::vector<UnitRecord> TraceReader::units(int64_t run_id) const {
  std::map<int64_t, DeviceRecord> devs;
  for (const DeviceRecord& d : devices(run_id)) devs[d.id] = d;
  auto aggs = track_aggregates(run_id);
  std::vector<UnitRecord> out;
  for (const TrackRecord& t : tracks(run_id)) {
    UnitRecord u;
    u.track_id = t.id;
    u.device_id = t.device_id;
    u.track = t.name;
    u.kind = t.kind;
    const DeviceRecord& d = referenced(devs, t.device_id, path(), "device");
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
  int64_t n = 0;
  for (const EventAggregate& a : aggregates(run_id)) n += a.events;
  return n;
}

int64_t TraceReader::counter_count(int64_t run_id) const {
  Stmt s = db_.prepare(fmt::format("SELECT COUNT(*) FROM {}", kRunCounters), "count counters");
  s.bind(1, run_id);
  return s.step() ? s.int_at(0) : 0;
}

void TraceReader::for_each_event(int64_t run_id,
                                 const std::function<void(const EventRecord&)>& fn) const {
  // Names are interned: look each id up once.
  std::unordered_map<int64_t, std::string> names;
  Stmt n = db_.prepare(fmt::format("SELECT DISTINCT s.id, s.value FROM string s WHERE s.id IN "
                                   "(SELECT e.name_id FROM {})",
                                   kRunEvents),
                       "read event names");
  n.bind(1, run_id);
  while (n.step()) names[n.int_at(0)] = n.text_at(1);
  Stmt s = db_.prepare(
      fmt::format("SELECT e.track_id, COALESCE(e.op_id, -1), e.name_id, e.ts, e.dur FROM {} "
                  "ORDER BY e.rowid",
                  kRunEvents),
      "read events");
  s.bind(1, run_id);
  EventRecord r;
  int64_t last_name = -1;
  while (s.step()) {
    r.track_id = s.int_at(0);
    r.op_id = s.int_at(1);
    int64_t name = s.int_at(2);
    if (name != last_name) {
      r.name = names[name];
      last_name = name;
    }
    r.ts = s.int_at(3);
    r.dur = s.int_at(4);
    fn(r);
  }
}

void TraceReader::for_each_counter(int64_t run_id,
                                   const std::function<void(const CounterRecord&)>& fn) const {
  Stmt s = db_.prepare(
      fmt::format("SELECT c.track_id, c.ts, c.value FROM {} ORDER BY c.rowid", kRunCounters),
      "read counters");
  s.bind(1, run_id);
  while (s.step()) fn(CounterRecord{s.int_at(0), s.int_at(1), s.real_at(2)});
}

std::vector<TableRecord> TraceReader::tables(int64_t run_id) const {
  Stmt t = db_.prepare("SELECT name, columns_json FROM run_table WHERE run_id = ? ORDER BY name",
                       "read tables");
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
      "SELECT values_json FROM run_table_row WHERE run_id = ? AND table_name = ? ORDER BY "
      "row_index",
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

TraceReader::QueryTable TraceReader::query_table(const std::string& sql) const {
  Stmt s = db_.prepare(sql, "query");
  QueryTable t;
  for (int c = 0; c < s.columns(); ++c) t.columns.push_back(s.column_name(c));
  while (s.step()) {
    std::vector<QueryValue> row;
    for (int c = 0; c < s.columns(); ++c) {
      if (s.null_at(c))
        row.emplace_back(std::monostate{});
      else if (s.integer_at(c))
        row.emplace_back(s.int_at(c));
      else if (s.real_number_at(c))
        row.emplace_back(s.real_at(c));
      else
        row.emplace_back(s.text_at(c));
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

}  // namespace mimic::traces
