#include "frontend/cli/trace_print.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "traces/format.h"

namespace mimic::cli {
namespace {

using traces::format_bytes;
using traces::format_ns;
using traces::format_percent;
using traces::format_si;

std::string clip(const std::string& s, size_t n) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - (n - 3));
}

std::string rate(double flops, double ns) {
  return ns > 0 && flops > 0 ? fmt::format("{:.2f}", flops / ns) : "-";  // flop/ns = GFLOP/s
}

std::string run_title(const traces::RunRecord& r) {
  std::string s = fmt::format("run {}: {}", r.id, r.model.empty() ? "(unnamed)" : r.model);
  if (r.batch > 0) s += fmt::format(" batch {}", r.batch);
  if (!r.device.empty()) s += " on " + r.device;
  return s;
}

}  // namespace

nlohmann::json run_json(const traces::RunRecord& r) {
  nlohmann::json config = nlohmann::json::parse(r.config_json, nullptr, false);
  if (config.is_discarded()) config = r.config_json;  // not JSON: keep the text
  return nlohmann::json{{"id", r.id},
                        {"uuid", r.uuid},
                        {"status", r.status},
                        {"error", r.error},
                        {"model", r.model},
                        {"batch", r.batch},
                        {"layout", r.layout},
                        {"precision", r.precision},
                        {"device", r.device},
                        {"tag", r.tag},
                        {"started_ns", r.started_ns},
                        {"ended_ns", r.ended_ns},
                        {"wall_ns", r.wall_ns()},
                        {"device_time_ns", r.device_time_ns},
                        {"events", r.events},
                        {"host", r.host},
                        {"pid", r.pid},
                        {"tool_version", r.tool_version},
                        {"config", config}};
}

void print_run_list(std::ostream& os, const std::string& file,
                    const std::vector<traces::RunRecord>& runs) {
  os << fmt::format("{}: {} run(s)\n", file, runs.size());
  if (runs.empty()) return;
  os << fmt::format("  {:>4}  {:<8}  {:<7}  {:<23}  {:<16} {:>5}  {:<14} {:>10} {:>10} {:>8}\n",
                    "id", "uuid", "status", "started", "model", "batch", "device", "wall", "device",
                    "events");
  for (const auto& r : runs) {
    os << fmt::format("  {:>4}  {:<8}  {:<7}  {:<23}  {:<16} {:>5}  {:<14} {:>10} {:>10} {:>8}",
                      r.id, r.uuid.substr(0, 8), r.status, traces::format_utc(r.started_ns),
                      clip(r.model, 16), r.batch, clip(r.device, 14),
                      r.ended_ns ? format_ns(r.wall_ns()) : "-", format_ns(r.device_time_ns),
                      r.events);
    if (!r.error.empty()) os << "  error: " << r.error;
    os << "\n";
  }
}

void print_summary(std::ostream& os, const traces::TraceReader& reader, int64_t run_id, bool by_op,
                   int top) {
  traces::RunRecord r = reader.run(run_id);
  os << fmt::format("{} ({})  [{}]\n", run_title(r), reader.path(), r.status);
  if (!r.error.empty()) os << "  error: " << r.error << "\n";
  os << fmt::format("  started {}  wall {}  device time {}  events {}\n",
                    traces::format_utc(r.started_ns), r.ended_ns ? format_ns(r.wall_ns()) : "-",
                    format_ns(r.device_time_ns), r.events);
  double run_ns = r.device_time_ns;
  if (!by_op) {
    std::vector<traces::OpTypeRecord> types = reader.op_types(run_id);
    size_t n = top > 0 ? std::min<size_t>(size_t(top), types.size()) : types.size();
    os << "\ntime by op type\n";
    os << fmt::format("  {:<22} {:>5} {:>11} {:>11} {:>6} {:>11} {:>11} {:>9}\n", "op type",
                      "count", "total", "mean", "% ops", "FLOP", "bytes", "GFLOP/s");
    for (size_t i = 0; i < n; ++i) {
      const auto& t = types[i];
      os << fmt::format("  {:<22} {:>5} {:>11} {:>11} {:>6.1f} {:>11} {:>11} {:>9}\n",
                        clip(t.op_type, 22), t.ops, format_ns(t.total_ns), format_ns(t.mean_ns),
                        t.pct_of_op_time, format_si(double(t.flops), ""),
                        format_bytes(double(t.bytes)), rate(double(t.flops), t.total_ns));
    }
    if (n < types.size())
      os << fmt::format("  ... {} more op types (--top 0 shows all)\n", types.size() - n);
  } else {
    std::vector<traces::OpRecord> ops = reader.ops(run_id);
    std::stable_sort(ops.begin(), ops.end(),
                     [](const auto& a, const auto& b) { return a.time_ns > b.time_ns; });
    size_t n = std::min<size_t>(top > 0 ? size_t(top) : 20, ops.size());
    // An op's span runs from its first event to its last on any unit; on an emulator a weight
    // prefetch starts it during the op before, so spans overlap and sum to more than the run
    // (mimic run's per-op time is the op's own cycles instead).
    os << fmt::format(
        "\ntop {} of {} ops by span (first event to last end on any unit; spans of "
        "ops whose transfers overlap add up to more than the run)\n",
        n, ops.size());
    os << fmt::format("  {:<34} {:<16} {:>11} {:>6} {:>11} {:>11} {:>9}  {}\n", "op", "type",
                      "span", "% run", "FLOP", "bytes", "GFLOP/s", "backend");
    for (size_t i = 0; i < n; ++i) {
      const auto& o = ops[i];
      os << fmt::format(
          "  {:<34} {:<16} {:>11} {:>6.1f} {:>11} {:>11} {:>9}  {}{}\n", clip(o.node, 34),
          clip(o.op_type, 16), format_ns(o.time_ns), run_ns > 0 ? 100 * o.time_ns / run_ns : 0.0,
          format_si(double(o.flops), ""), format_bytes(double(o.bytes_in + o.bytes_out)),
          rate(double(o.flops), o.time_ns), o.backend, o.fallback ? " (fallback)" : "");
    }
  }
  std::vector<traces::PhaseRecord> phases = reader.phases(run_id);
  if (phases.size() > 1) {  // a training step: forward, backward, update
    // Each phase's time is the union of its ops' spans: on several cores, or with transfers
    // running ahead, phases overlap and can add up to more than the run (mimic train --json
    // splits the step into phases that add up to it).
    os << "\ntime by training phase (the union of its ops' spans; phases overlapping on several "
          "cores or transfers can add up to more than the run)\n";
    os << fmt::format("  {:<10} {:>5} {:>11} {:>6} {:>11} {:>11}\n", "phase", "ops", "total",
                      "% run", "FLOP", "bytes");
    for (const auto& p : phases)
      os << fmt::format("  {:<10} {:>5} {:>11} {:>6.1f} {:>11} {:>11}\n", p.phase, p.ops,
                        format_ns(p.total_ns), p.pct_of_run, format_si(double(p.flops), ""),
                        format_bytes(double(p.bytes)));
  }
  os << "\nutilization per unit\n";
  os << fmt::format("  {:<6} {:<24} {:<10} {:>8} {:>11} {:>11} {:>7}\n", "device", "track", "kind",
                    "events", "busy", "span", "util");
  for (const auto& u : reader.units(run_id))
    os << fmt::format("  {:<6} {:<24} {:<10} {:>8} {:>11} {:>11} {:>7}\n", u.device_id,
                      clip(u.track, 24), clip(u.kind, 10), u.events, format_ns(u.busy_ns),
                      format_ns(u.span_ns), format_percent(u.utilization));
}

nlohmann::json summary_json(const traces::TraceReader& reader, int64_t run_id) {
  nlohmann::json j{{"trace", reader.path()}, {"run", run_json(reader.run(run_id))}};
  j["phases"] = nlohmann::json::array();
  for (const auto& p : reader.phases(run_id))
    j["phases"].push_back({{"phase", p.phase},
                           {"ops", p.ops},
                           {"total_ns", p.total_ns},
                           {"pct_of_run", p.pct_of_run},
                           {"flops", p.flops},
                           {"bytes", p.bytes}});
  j["op_types"] = nlohmann::json::array();
  for (const auto& t : reader.op_types(run_id))
    j["op_types"].push_back({{"op_type", t.op_type},
                             {"count", t.ops},
                             {"events", t.events},
                             {"total_ns", t.total_ns},
                             {"mean_ns", t.mean_ns},
                             {"pct_of_run", t.pct_of_run},
                             {"pct_of_op_time", t.pct_of_op_time},
                             {"flops", t.flops},
                             {"bytes", t.bytes},
                             {"flops_per_s", t.flops_per_s()},
                             {"fallback_ops", t.fallback_ops}});
  j["ops"] = nlohmann::json::array();
  for (const auto& o : reader.ops(run_id))
    j["ops"].push_back({{"id", o.op_id},
                        {"node", o.node},
                        {"op_type", o.op_type},
                        {"shapes", o.shapes},
                        {"dtype", o.dtype},
                        {"backend", o.backend},
                        {"fallback", o.fallback},
                        {"flops", o.flops},
                        {"bytes_in", o.bytes_in},
                        {"bytes_out", o.bytes_out},
                        {"events", o.events},
                        {"time_ns", o.time_ns},
                        {"busy_ns", o.busy_ns}});
  j["units"] = nlohmann::json::array();
  for (const auto& u : reader.units(run_id))
    j["units"].push_back({{"track_id", u.track_id},
                          {"device_id", u.device_id},
                          {"track", u.track},
                          {"kind", u.kind},
                          {"backend", u.backend},
                          {"events", u.events},
                          {"busy", u.busy},
                          {"busy_ns", u.busy_ns},
                          {"span_ns", u.span_ns},
                          {"utilization", u.utilization}});
  j["devices"] = nlohmann::json::array();
  for (const auto& d : reader.devices(run_id))
    j["devices"].push_back({{"id", d.id},
                            {"backend", d.backend},
                            {"preset", d.preset},
                            {"clock_hz", d.clock_hz},
                            {"time_unit", d.time_unit},
                            {"span_ns", d.span_ns}});
  return j;
}

void print_diff(std::ostream& os, const traces::RunDiff& d, int top) {
  auto ratio = [](double a, double b) {
    return a > 0 ? fmt::format("{:.2f}x", b / a) : std::string("-");
  };
  os << fmt::format("A  {} ({})  [{}]  device time {}\n", run_title(d.a), d.file_a, d.a.status,
                    format_ns(d.a_time_ns));
  os << fmt::format("B  {} ({})  [{}]  device time {}\n", run_title(d.b), d.file_b, d.b.status,
                    format_ns(d.b_time_ns));
  os << fmt::format("B/A device time {}; {} ops matched, {} only in A, {} only in B\n",
                    ratio(d.a_time_ns, d.b_time_ns), d.ops.size() - size_t(d.only_a + d.only_b),
                    d.only_a, d.only_b);
  os << "\nby op type\n";
  os << fmt::format("  {:<22} {:>5} {:>5} {:>11} {:>11} {:>12} {:>8}\n", "op type", "A#", "B#", "A",
                    "B", "B-A", "B/A");
  for (const auto& t : d.op_types)
    os << fmt::format("  {:<22} {:>5} {:>5} {:>11} {:>11} {:>12} {:>8}\n", clip(t.op_type, 22),
                      t.a_ops, t.b_ops, format_ns(t.a_ns), format_ns(t.b_ns),
                      format_ns(t.b_ns - t.a_ns), ratio(t.a_ns, t.b_ns));
  std::vector<const traces::OpDiff*> ops;
  for (const auto& o : d.ops) ops.push_back(&o);
  std::stable_sort(ops.begin(), ops.end(), [](auto* x, auto* y) {
    return std::fabs(x->delta_ns()) > std::fabs(y->delta_ns());
  });
  size_t n = std::min<size_t>(size_t(top), ops.size());
  os << fmt::format("\ntop {} of {} ops by change\n", n, ops.size());
  os << fmt::format("  {:<34} {:<16} {:>11} {:>11} {:>12} {:>8}\n", "op", "type", "A", "B", "B-A",
                    "B/A");
  for (size_t i = 0; i < n; ++i) {
    const auto& o = *ops[i];
    os << fmt::format("  {:<34} {:<16} {:>11} {:>11} {:>12} {:>8}\n", clip(o.node, 34),
                      clip(o.op_type, 16), o.in_a ? format_ns(o.a_ns) : "(none)",
                      o.in_b ? format_ns(o.b_ns) : "(none)", format_ns(o.delta_ns()),
                      o.in_a && o.in_b ? ratio(o.a_ns, o.b_ns) : "-");
  }
}

nlohmann::json diff_json(const traces::RunDiff& d) {
  nlohmann::json j{
      {"a", {{"file", d.file_a}, {"run", run_json(d.a)}, {"device_time_ns", d.a_time_ns}}},
      {"b", {{"file", d.file_b}, {"run", run_json(d.b)}, {"device_time_ns", d.b_time_ns}}},
      {"only_a", d.only_a},
      {"only_b", d.only_b}};
  j["op_types"] = nlohmann::json::array();
  for (const auto& t : d.op_types)
    j["op_types"].push_back({{"op_type", t.op_type},
                             {"a_ops", t.a_ops},
                             {"b_ops", t.b_ops},
                             {"a_ns", t.a_ns},
                             {"b_ns", t.b_ns}});
  j["ops"] = nlohmann::json::array();
  for (const auto& o : d.ops)
    j["ops"].push_back({{"node", o.node},
                        {"op_type", o.op_type},
                        {"in_a", o.in_a},
                        {"in_b", o.in_b},
                        {"a_ns", o.a_ns},
                        {"b_ns", o.b_ns},
                        {"delta_ns", o.delta_ns()}});
  return j;
}

std::string default_report_path(const std::string& trace_file, int64_t run_id) {
  std::string base = trace_file;
  if (base.size() > 3 && base.compare(base.size() - 3, 3, ".db") == 0) base.resize(base.size() - 3);
  return fmt::format("{}-run{}.html", base, run_id);
}

}  // namespace mimic::cli
