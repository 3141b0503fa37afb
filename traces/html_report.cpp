#include "traces/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "traces/format.h"
#include "traces/svg_charts.h"
#include "traces/text_escape.h"

namespace mimic::traces {
namespace {

constexpr const char* kStyle = R"css(
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px; color: #222; max-width: 1160px; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 8px 0; } td, th { padding: 3px 10px; border-bottom: 1px solid #eee; }
th { text-align: left; background: #f6f6f6; } td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.status { display: inline-block; padding: 1px 8px; border-radius: 10px; color: #fff; font-size: 12px; }
.done { background: #59a14f; } .failed { background: #e15759; } .running { background: #f28e2b; }
.error { color: #b00; } .note { color: #666; font-size: 12px; }
pre { background: #f6f6f6; padding: 8px; overflow-x: auto; }
svg.chart { display: block; margin: 6px 0; }
svg .label { font-size: 11px; text-anchor: end; } svg .value { font-size: 11px; }
svg .value-left { font-size: 10px; text-anchor: end; fill: #666; }
svg .ticklabel { font-size: 10px; text-anchor: middle; fill: #555; }
svg .axis, svg .tick { stroke: #888; stroke-width: 1; } svg .lane { fill: #f4f4f4; }
svg .line { fill: none; stroke: #4e79a7; stroke-width: 1.2; }
details summary { cursor: pointer; color: #345; }
)css";

std::string td(const std::string& s) {
  return "<td>" + html_escape(s) + "</td>";
}
std::string td_num(const std::string& s) {
  return "<td class=\"num\">" + html_escape(s) + "</td>";
}

std::string header_row(std::initializer_list<const char*> names, size_t numeric_from) {
  std::string out = "<tr>";
  size_t i = 0;
  for (const char* n : names)
    out += fmt::format(i++ >= numeric_from ? "<th class=\"num\">{}</th>" : "<th>{}</th>", n);
  return out + "</tr>\n";
}

std::string rate(double flops, double ns) {
  return ns > 0 && flops > 0 ? format_si(flops / (ns * 1e-9), "FLOP/s") : "-";
}

std::string device_name(const DeviceRecord& d) {
  return d.preset.empty() ? d.backend : d.backend + ":" + d.preset;
}

void overview(std::ostream& out, const TraceReader& reader, const RunRecord& r) {
  out << fmt::format("<h1>mimic run {}: {}{} on {}</h1>\n", r.id,
                     html_escape(r.model.empty() ? "(unnamed)" : r.model),
                     r.batch > 0 ? fmt::format(", batch {}", r.batch) : "", html_escape(r.device));
  out << fmt::format("<p><span class=\"status {0}\">{0}</span> ", html_escape(r.status));
  if (!r.error.empty()) out << "<span class=\"error\">" << html_escape(r.error) << "</span>";
  out << "</p>\n<table>\n";
  auto row = [&](const char* k, const std::string& v) {
    out << "<tr><th>" << k << "</th>" << td(v) << "</tr>\n";
  };
  row("run", fmt::format("{} (uuid {})", r.id, r.uuid));
  row("trace file", reader.path());
  row("started", format_utc(r.started_ns));
  row("wall time", r.ended_ns ? format_ns(r.wall_ns()) : std::string("(not ended)"));
  row("device time", format_ns(r.device_time_ns));
  row("events", std::to_string(r.events));
  row("model / batch / layout",
      fmt::format("{} / {} / {}", r.model, r.batch, r.layout.empty() ? "-" : r.layout));
  row("precision", r.precision.empty() ? "-" : r.precision);
  if (!r.tag.empty()) row("tag", r.tag);
  row("recorded by", fmt::format("mimic {} on {} (pid {})", r.tool_version, r.host, r.pid));
  out << "</table>\n";
}

void op_type_section(std::ostream& out, const std::vector<OpTypeRecord>& types) {
  // Shares of the summed op time: op times overlap on chips with several cores, so shares of the
  // run's span would add up past 100%.
  out << "<h2>Time by op type</h2>\n<p class=\"note\">% of op time: the op type's share of the "
         "time summed over all ops (ops that overlap on several cores or units each count "
         "fully), so the column adds up to 100%.</p>\n<table>\n"
      << header_row(
             {"op type", "ops", "total", "mean", "% of op time", "FLOP", "bytes", "achieved"}, 1);
  std::vector<Bar> bars;
  for (const OpTypeRecord& t : types) {
    out << "<tr>" << td(t.op_type) << td_num(std::to_string(t.ops)) << td_num(format_ns(t.total_ns))
        << td_num(format_ns(t.mean_ns)) << td_num(fmt::format("{:.1f}", t.pct_of_op_time))
        << td_num(format_si(static_cast<double>(t.flops), ""))
        << td_num(format_bytes(static_cast<double>(t.bytes)))
        << td_num(rate(static_cast<double>(t.flops), t.total_ns)) << "</tr>\n";
    bars.push_back(
        Bar{t.op_type, t.total_ns,
            fmt::format("{} ({:.1f}% of op time)", format_ns(t.total_ns), t.pct_of_op_time),
            category_color(t.op_type),
            fmt::format("{}: {} ops, {}", t.op_type, t.ops, format_ns(t.total_ns))});
  }
  out << "</table>\n" << svg_bar_chart(bars) << "\n";
}

// Forward, backward and update time of a training step (nothing for other runs), as shares of
// the summed op time like the op types: phases overlap on chips with several cores.
void phase_section(std::ostream& out, const std::vector<PhaseRecord>& phases) {
  if (phases.size() < 2) return;
  double op_time = 0;
  for (const PhaseRecord& p : phases) op_time += p.total_ns;
  out << "<h2>Time by training phase</h2>\n<table>\n"
      << header_row({"phase", "ops", "total", "% of op time", "FLOP", "bytes"}, 1);
  std::vector<Bar> bars;
  for (const PhaseRecord& p : phases) {
    double share = op_time > 0 ? 100.0 * p.total_ns / op_time : 0;
    out << "<tr>" << td(p.phase) << td_num(std::to_string(p.ops)) << td_num(format_ns(p.total_ns))
        << td_num(fmt::format("{:.1f}", share))
        << td_num(format_si(static_cast<double>(p.flops), ""))
        << td_num(format_bytes(static_cast<double>(p.bytes))) << "</tr>\n";
    bars.push_back(Bar{p.phase, p.total_ns,
                       fmt::format("{} ({:.1f}% of op time)", format_ns(p.total_ns), share),
                       category_color(p.phase),
                       fmt::format("{}: {} ops, {}", p.phase, p.ops, format_ns(p.total_ns))});
  }
  out << "</table>\n" << svg_bar_chart(bars) << "\n";
}

void top_ops_section(std::ostream& out, std::vector<OpRecord> ops, int top) {
  std::stable_sort(ops.begin(), ops.end(),
                   [](const OpRecord& a, const OpRecord& b) { return a.time_ns > b.time_ns; });
  if (static_cast<int>(ops.size()) > top) ops.resize(static_cast<size_t>(top));
  std::vector<Bar> bars;
  for (const OpRecord& o : ops)
    bars.push_back(
        Bar{o.node, o.time_ns,
            fmt::format("{}  {}", format_ns(o.time_ns), rate(double(o.flops), o.time_ns)),
            category_color(o.op_type),
            fmt::format("{} ({}) {}\n{} FLOP, {} in, {} out{}", o.node, o.op_type, o.shapes,
                        format_si(double(o.flops), ""), format_bytes(double(o.bytes_in)),
                        format_bytes(double(o.bytes_out)), o.fallback ? ", cpu fallback" : "")});
  out << fmt::format("<h2>Top {} ops by time</h2>\n", bars.size()) << svg_bar_chart(bars) << "\n";
}

void timeline_section(std::ostream& out, const TraceReader& reader, int64_t run_id,
                      const ReportOptions& o, const std::vector<DeviceRecord>& devices,
                      const std::vector<TrackRecord>& tracks,
                      const std::vector<UnitRecord>& units) {
  out << "<h2>Timeline</h2>\n<p class=\"note\">One row per track (hardware unit or queue); hover a "
         "slice for "
         "its name and times. Each device has its own time base, converted from its clock.</p>\n";
  std::unordered_map<int64_t, std::string> op_type;
  for (const OpRecord& op : reader.ops(run_id)) op_type[op.op_id] = op.op_type;
  std::unordered_map<int64_t, double> busy;
  for (const UnitRecord& u : units) busy[u.track_id] = u.busy_ns;
  // The busiest max_tracks tracks of each device get a row.
  std::unordered_map<int64_t, size_t> row_of;
  std::map<int64_t, std::vector<TimelineRow>> rows;
  std::map<int64_t, int> hidden;
  for (const DeviceRecord& d : devices) {
    std::vector<const TrackRecord*> mine;
    for (const TrackRecord& t : tracks)
      if (t.device_id == d.id) mine.push_back(&t);
    std::stable_sort(mine.begin(), mine.end(),
                     [&](auto* a, auto* b) { return busy[a->id] > busy[b->id]; });
    if (static_cast<int>(mine.size()) > o.max_tracks) {
      hidden[d.id] = static_cast<int>(mine.size()) - o.max_tracks;
      mine.resize(static_cast<size_t>(o.max_tracks));
    }
    std::stable_sort(mine.begin(), mine.end(), [](auto* a, auto* b) { return a->id < b->id; });
    for (const TrackRecord* t : mine) {
      row_of[t->id] = rows[d.id].size();
      rows[d.id].push_back(TimelineRow{t->name, {}});
    }
  }
  std::unordered_map<int64_t, const TrackRecord*> track_of;
  for (const TrackRecord& t : tracks) track_of[t.id] = &t;
  std::unordered_map<int64_t, const DeviceRecord*> device_of;
  for (const DeviceRecord& d : devices) device_of[d.id] = &d;
  reader.for_each_event(run_id, [&](const EventRecord& e) {
    auto it = row_of.find(e.track_id);
    if (it == row_of.end()) return;
    const TrackRecord& t = *referenced(track_of, e.track_id, reader.path(), "track");
    const DeviceRecord& d = *referenced(device_of, t.device_id, reader.path(), "device");
    double start = (e.ts - d.start) * t.ns_per_unit, end = (e.ts + e.dur - d.start) * t.ns_per_unit;
    auto type = op_type.find(e.op_id);
    std::string category = type == op_type.end() ? t.kind : type->second;
    std::vector<Slice>& slices = rows[d.id][it->second].slices;
    std::string tip;
    if (slices.size() < kTimelineMaxSlices) {
      tip = fmt::format("{} ({}) at {} for {}", e.name, category, format_ns(start),
                        format_ns(end - start));
      if (d.time_unit == "cycles") tip += fmt::format(" [{} cycles]", e.dur);
    }
    slices.push_back(Slice{start, end, category_color(category), std::move(tip)});
  });
  for (const DeviceRecord& d : devices) {
    out << fmt::format(
        "<h3>device {}: {}{} &mdash; span {}</h3>\n", d.id, html_escape(device_name(d)),
        d.time_unit == "cycles" ? fmt::format(" at {:.0f} MHz", d.clock_hz / 1e6) : "",
        format_ns(d.span_ns));
    if (rows[d.id].empty()) {
      out << "<p class=\"note\">No events.</p>\n";
      continue;
    }
    out << svg_timeline(rows[d.id], 0, d.span_ns) << "\n";
    if (hidden[d.id] > 0)
      out << fmt::format(
          "<p class=\"note\">{} less busy tracks not drawn (see utilization below).</p>\n",
          hidden[d.id]);
  }
}

void utilization_section(std::ostream& out, const std::vector<UnitRecord>& units, int max_bars) {
  out << "<h2>Utilization per unit</h2>\n<p class=\"note\">Busy time of each track over its "
         "device's span.</p>\n";
  std::vector<Bar> bars;
  for (const UnitRecord& u : units) {
    if (static_cast<int>(bars.size()) >= max_bars) break;
    bars.push_back(
        Bar{u.track, u.utilization, format_percent(u.utilization), category_color(u.kind),
            fmt::format("{} ({}, {}): busy {} of {}, {} events", u.track, u.kind, u.backend,
                        format_ns(u.busy_ns), format_ns(u.span_ns), u.events)});
  }
  out << svg_bar_chart(bars, 1.0) << "\n<table>\n"
      << header_row({"track", "kind", "device", "events", "busy", "span", "utilization"}, 3);
  for (const UnitRecord& u : units)
    out << "<tr>" << td(u.track) << td(u.kind) << td(std::to_string(u.device_id))
        << td_num(std::to_string(u.events)) << td_num(format_ns(u.busy_ns))
        << td_num(format_ns(u.span_ns)) << td_num(format_percent(u.utilization)) << "</tr>\n";
  out << "</table>\n";
}

void counters_section(std::ostream& out, const TraceReader& reader, int64_t run_id,
                      const std::vector<TrackRecord>& tracks) {
  if (reader.counter_count(run_id) == 0) return;
  out << "<h2>Counters</h2>\n";
  std::map<int64_t, std::vector<Point>> series;
  std::unordered_map<int64_t, double> k;
  for (const TrackRecord& t : tracks) k[t.id] = t.ns_per_unit;
  reader.for_each_counter(run_id, [&](const CounterRecord& c) {
    series[c.track_id].push_back(Point{c.ts * k[c.track_id], c.value});
  });
  for (const TrackRecord& t : tracks)
    if (series.count(t.id)) out << svg_line_chart(t.name, series[t.id]) << "\n";
}

void tables_section(std::ostream& out, const TraceReader& reader, int64_t run_id, int max_rows) {
  std::vector<TableRecord> tables = reader.tables(run_id);
  if (tables.empty()) return;
  out << "<h2>Tables</h2>\n";
  for (const TableRecord& t : tables) {
    out << fmt::format("<h3>{} ({} rows)</h3>\n<table><tr>", html_escape(t.name),
                       t.rows_json.size());
    for (const std::string& c : t.columns) out << "<th>" << html_escape(c) << "</th>";
    out << "</tr>\n";
    for (size_t i = 0; i < t.rows_json.size() && static_cast<int>(i) < max_rows; ++i) {
      out << "<tr>";
      for (const auto& v : nlohmann::json::parse(t.rows_json[i], nullptr, false))
        out << (v.is_number() ? td_num(v.dump())
                              : td(v.is_string() ? v.get<std::string>() : v.dump()));
      out << "</tr>\n";
    }
    out << "</table>\n";
    if (static_cast<int>(t.rows_json.size()) > max_rows)
      out << fmt::format("<p class=\"note\">{} more rows in the trace (table run_table_row).</p>\n",
                         t.rows_json.size() - static_cast<size_t>(max_rows));
  }
}

std::string pretty_json(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  return j.is_discarded() ? text : j.dump(2);
}

void devices_and_config(std::ostream& out, const RunRecord& r,
                        const std::vector<DeviceRecord>& devices) {
  out << "<h2>Devices</h2>\n<table>\n"
      << header_row({"id", "device", "time unit", "clock", "span", "properties"}, 99);
  for (const DeviceRecord& d : devices)
    out << "<tr>" << td(std::to_string(d.id)) << td(device_name(d)) << td(d.time_unit)
        << td(format_si(double(d.clock_hz), "Hz")) << td(format_ns(d.span_ns)) << "<td><pre>"
        << html_escape(pretty_json(d.properties_json)) << "</pre></td></tr>\n";
  out << "</table>\n<h2>Run config</h2>\n<pre>" << html_escape(pretty_json(r.config_json))
      << "</pre>\n";
}

void all_ops_section(std::ostream& out, const std::vector<OpRecord>& ops) {
  out << fmt::format("<h2>All ops</h2>\n<details><summary>{} ops</summary>\n<table>\n", ops.size())
      << header_row({"#", "node", "op", "shapes", "backend", "time", "FLOP", "achieved"}, 5);
  for (const OpRecord& o : ops)
    out << "<tr>" << td(std::to_string(o.op_id)) << td(o.node) << td(o.op_type) << td(o.shapes)
        << td(o.backend + (o.fallback ? " (fallback)" : "")) << td_num(format_ns(o.time_ns))
        << td_num(format_si(double(o.flops), "")) << td_num(rate(double(o.flops), o.time_ns))
        << "</tr>\n";
  out << "</table>\n</details>\n";
}

}  // namespace

void write_html_report(const TraceReader& reader, int64_t run_id, std::ostream& out,
                       const ReportOptions& o) {
  RunRecord run = reader.run(run_id);
  std::vector<DeviceRecord> devices = reader.devices(run_id);
  std::vector<TrackRecord> tracks = reader.tracks(run_id);
  std::vector<UnitRecord> units = reader.units(run_id);
  std::vector<OpRecord> ops = reader.ops(run_id);
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>"
      << html_escape(fmt::format("mimic run {}: {} on {}", run.id, run.model, run.device))
      << "</title>\n<style>" << kStyle << "</style></head><body>\n";
  overview(out, reader, run);
  phase_section(out, reader.phases(run_id));
  op_type_section(out, reader.op_types(run_id));
  top_ops_section(out, ops, o.top_ops);
  timeline_section(out, reader, run_id, o, devices, tracks, units);
  utilization_section(out, units, o.max_tracks);
  counters_section(out, reader, run_id, tracks);
  tables_section(out, reader, run_id, o.max_table_rows);
  devices_and_config(out, run, devices);
  all_ops_section(out, ops);
  out << fmt::format("<p class=\"note\">Generated by mimic {} from {}.</p>\n</body></html>\n",
                     MIMIC_VERSION, html_escape(reader.path()));
}

}  // namespace mimic::traces
