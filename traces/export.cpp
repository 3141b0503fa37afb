#include "traces/export.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <string>
#include <unordered_map>

#include "traces/text_escape.h"

namespace mimic::traces {
namespace {

std::vector<int64_t> all_runs(const TraceReader& reader, const std::vector<int64_t>& run_ids) {
  if (!run_ids.empty()) return run_ids;
  std::vector<int64_t> ids;
  for (const auto& row : reader.query("SELECT id FROM run ORDER BY id"))
    ids.push_back(std::stoll(row[0]));
  return ids;
}

// Native time to whole ns, then to "123.456" microseconds (exact decimal, no float noise).
int64_t to_ns(int64_t native, double ns_per_unit) {
  return static_cast<int64_t>(std::llround(static_cast<double>(native) * ns_per_unit));
}

void append_us(std::string& out, int64_t ns) {
  if (ns < 0) {
    out += '-';
    ns = -ns;
  }
  fmt::format_to(std::back_inserter(out), "{}.{:03}", ns / 1000, ns % 1000);
}

std::string run_label(const RunRecord& r) {
  std::string label = fmt::format("run {}", r.id);
  if (!r.model.empty()) label += " " + r.model;
  if (r.batch > 0) label += fmt::format(" b{}", r.batch);
  return label;
}

std::string device_label(const DeviceRecord& d) {
  return d.preset.empty() ? d.backend : d.backend + ":" + d.preset;
}

// Streams the "traceEvents" array; `first` tracks the commas.
class ChromeWriter {
 public:
  explicit ChromeWriter(std::ostream& out) : out_(out) { buf_.reserve(1 << 20); }
  void begin_event() {
    if (!first_) buf_ += ",\n";
    first_ = false;
  }
  std::string& buf() { return buf_; }
  void maybe_flush() {
    if (buf_.size() > (1 << 20)) flush();
  }
  void flush() {
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    buf_.clear();
  }
  void metadata(const char* name, int64_t pid, int64_t tid, const std::string& args_json) {
    begin_event();
    fmt::format_to(std::back_inserter(buf_),
                   R"({{"ph":"M","name":"{}","pid":{},"tid":{},"args":{}}})", name, pid, tid,
                   args_json);
  }

 private:
  std::ostream& out_;
  std::string buf_;
  bool first_ = true;
};

}  // namespace

namespace {

// A run's tracks as the Chrome trace names them: process (device) id and ns per time unit, name,
// and whether the track counts cycles.
struct ChromeTracks {
  std::unordered_map<int64_t, std::pair<int64_t, double>> pid;  // track -> pid, ns/unit
  std::unordered_map<int64_t, std::string> name;
  std::unordered_map<int64_t, bool> cycles;
};

// Process (device) and thread (track) names and sort order of one run.
ChromeTracks write_run_metadata(const TraceReader& reader, const RunRecord& run, ChromeWriter& w,
                                int64_t& next_pid, ExportStats& stats) {
  ChromeTracks tracks;
  std::map<int64_t, int64_t> pid_of_device;
  for (const DeviceRecord& d : reader.devices(run.id)) {
    int64_t pid = next_pid++;
    pid_of_device[d.id] = pid;
    std::string name = fmt::format("{} · {}", run_label(run), device_label(d));
    if (d.time_unit == "cycles") name += fmt::format(" ({:.0f} MHz)", d.clock_hz / 1e6);
    w.metadata("process_name", pid, 0, fmt::format(R"({{"name":{}}})", json_quoted(name)));
    w.metadata("process_sort_index", pid, 0, fmt::format(R"({{"sort_index":{}}})", pid));
    ++stats.processes;
  }
  for (const TrackRecord& t : reader.tracks(run.id)) {
    int64_t pid = referenced(pid_of_device, t.device_id, reader.path(), "device");
    tracks.pid[t.id] = {pid, t.ns_per_unit};
    tracks.name[t.id] = t.name;
    w.metadata("thread_name", pid, t.id + 1, fmt::format(R"({{"name":{}}})", json_quoted(t.name)));
    w.metadata("thread_sort_index", pid, t.id + 1, fmt::format(R"({{"sort_index":{}}})", t.id));
    ++stats.threads;
  }
  for (const DeviceRecord& d : reader.devices(run.id))
    for (const TrackRecord& t : reader.tracks(run.id))
      if (t.device_id == d.id) tracks.cycles[t.id] = d.time_unit == "cycles";
  return tracks;
}

// One complete ("X") event: its op and op type when it has one, its cycles on cycle tracks.
void write_event(ChromeWriter& w, const EventRecord& e, int64_t pid, double ns_per_unit,
                 const std::pair<std::string, std::string>* op, bool cycles) {
  int64_t start = to_ns(e.ts, ns_per_unit), end = to_ns(e.ts + e.dur, ns_per_unit);
  std::string& b = w.buf();
  w.begin_event();
  b += R"({"ph":"X","name":)";
  b += json_quoted(e.name);
  if (op) {
    b += R"(,"cat":)";
    b += json_quoted(op->second);
  }
  fmt::format_to(std::back_inserter(b), R"(,"pid":{},"tid":{},"ts":)", pid, e.track_id + 1);
  append_us(b, start);
  b += R"(,"dur":)";
  append_us(b, end - start);
  b += R"(,"args":{)";
  if (op) {
    b += R"("op":)";
    b += json_quoted(op->first);
  }
  if (cycles)
    fmt::format_to(std::back_inserter(b), R"({}"start_cycle":{},"cycles":{})", op ? "," : "", e.ts,
                   e.dur);
  b += "}}";
}

}  // namespace

ExportStats export_chrome(const TraceReader& reader, const std::vector<int64_t>& run_ids,
                          std::ostream& out) {
  ExportStats stats;
  ChromeWriter w(out);
  w.buf() += "{\"traceEvents\":[\n";
  int64_t next_pid = 1;
  for (int64_t run_id : all_runs(reader, run_ids)) {
    RunRecord run = reader.run(run_id);
    ++stats.runs;
    ChromeTracks tracks = write_run_metadata(reader, run, w, next_pid, stats);
    std::unordered_map<int64_t, std::pair<std::string, std::string>> op_names;  // op -> node, type
    for (const OpRecord& o : reader.ops(run_id)) op_names[o.op_id] = {o.node, o.op_type};
    reader.for_each_event(run_id, [&](const EventRecord& e) {
      auto [pid, k] = referenced(tracks.pid, e.track_id, reader.path(), "track");
      auto op = op_names.find(e.op_id);
      write_event(w, e, pid, k, op != op_names.end() ? &op->second : nullptr,
                  tracks.cycles[e.track_id]);
      ++stats.events;
      w.maybe_flush();
    });
    reader.for_each_counter(run_id, [&](const CounterRecord& c) {
      auto [pid, k] = referenced(tracks.pid, c.track_id, reader.path(), "track");
      std::string& b = w.buf();
      w.begin_event();
      b += R"({"ph":"C","name":)";
      b += json_quoted(tracks.name[c.track_id]);
      fmt::format_to(std::back_inserter(b), R"(,"pid":{},"tid":{},"ts":)", pid, c.track_id + 1);
      append_us(b, to_ns(c.ts, k));
      double v = std::isfinite(c.value) ? c.value : 0.0;
      fmt::format_to(std::back_inserter(b), R"(,"args":{{"value":{}}}}})", v);
      ++stats.counters;
      w.maybe_flush();
    });
  }
  fmt::format_to(std::back_inserter(w.buf()),
                 "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{{\"generator\":\"mimic "
                 "{}\",\"trace\":{}}}}}\n",
                 MIMIC_VERSION, json_quoted(reader.path()));
  w.flush();
  return stats;
}

ExportStats export_csv(const TraceReader& reader, const std::vector<int64_t>& run_ids,
                       std::ostream& out) {
  ExportStats stats;
  out << "run_id,device_id,device,track_id,track,op_id,node,op_type,name,ts,dur,unit,ts_ns,dur_"
         "ns\n";
  std::string line;
  for (int64_t run_id : all_runs(reader, run_ids)) {
    ++stats.runs;
    std::map<int64_t, DeviceRecord> devices;
    for (const DeviceRecord& d : reader.devices(run_id)) devices[d.id] = d;
    std::unordered_map<int64_t, TrackRecord> tracks;
    for (const TrackRecord& t : reader.tracks(run_id)) tracks[t.id] = t;
    std::unordered_map<int64_t, std::pair<std::string, std::string>> ops;
    for (const OpRecord& o : reader.ops(run_id))
      ops[o.op_id] = {csv_field(o.node), csv_field(o.op_type)};
    reader.for_each_event(run_id, [&](const EventRecord& e) {
      const TrackRecord& t = referenced(tracks, e.track_id, reader.path(), "track");
      const DeviceRecord& d = referenced(devices, t.device_id, reader.path(), "device");
      auto op = ops.find(e.op_id);
      line.clear();
      fmt::format_to(std::back_inserter(line), "{},{},{},{},{},", run_id, d.id,
                     csv_field(device_label(d)), t.id, csv_field(t.name));
      if (op != ops.end())
        fmt::format_to(std::back_inserter(line), "{},{},{},", e.op_id, op->second.first,
                       op->second.second);
      else
        line += ",,,";
      int64_t start = to_ns(e.ts, t.ns_per_unit), end = to_ns(e.ts + e.dur, t.ns_per_unit);
      fmt::format_to(std::back_inserter(line), "{},{},{},{},{},{}\n", csv_field(e.name), e.ts,
                     e.dur, d.time_unit, start, end - start);
      out << line;
      ++stats.events;
    });
  }
  return stats;
}

}  // namespace mimic::traces
