#include "backends/ipu_emu/ipu_report.h"

#include <fmt/format.h>
#include <cmath>

#include <algorithm>

namespace mimic::backends::ipu_emu {
namespace {

using models::ipu::RunStats;
using models::ipu::SuperstepRecord;

struct OpTotals {
  uint64_t sync = 0, exchange = 0, compute = 0, exchange_bytes = 0;
  uint64_t cycles() const { return sync + exchange + compute; }
};

uint64_t step_exchange_bytes(const models::ipu::Superstep& s) {
  uint64_t bytes = 0;
  for (const auto& g : s.exchange) bytes += g.recv_bytes * g.tile_count;
  return bytes;
}

// The schedule's shape, and cycles by step phase (the report contract shared with tpu-emu):
// supersteps of an op count under its node's phase; those the compiler adds count where they belong
// (accumulation: backward, all-reduce: allreduce, optimizer state streams: update; host streams and
// pipeline boundaries under host_io and pipeline_exchange). Summed over replica 0's IPUs; with
// several pipeline stages those sums overlap in time (each stage waits at the boundaries while the
// others compute), so they are scaled to the step's cycles: each phase's share of the stages' time,
// and the phases add up to the step as on one IPU.
void schedule_metrics(const DeviceProgram& p, const RunStats& stats,
                      std::map<std::string, double>& m) {
  m["num_ipus"] = static_cast<double>(p.bsp.num_ipus()), m["stages"] = p.stages;
  m["replicas"] = p.replicas, m["micro_batches"] = p.micro_batches;
  std::map<std::string, uint64_t> cycles = {
      {"forward", 0}, {"loss", 0}, {"backward", 0}, {"allreduce", 0}, {"update", 0}};
  for (const SuperstepRecord& rec : stats.steps) {
    if (rec.ipu >= p.stages) continue;
    const auto& step = p.bsp.list(rec.ipu)[rec.index];
    std::string phase;
    if (rec.op >= 0 && static_cast<size_t>(rec.op) < p.op_nodes.size()) {
      phase = ir::phase_name(p.graph.node(p.op_nodes[rec.op]).phase);
    } else {
      const std::string& label = step.label < p.bsp.labels.size() ? p.bsp.labels[step.label] : "";
      phase = label == "all-reduce"                    ? "allreduce"
              : label == "gradient accumulation"       ? "backward"
              : label.rfind("optimizer state", 0) == 0 ? "update"
              : label == "ipu exchange"                ? "pipeline_exchange"
                                                       : "host_io";
    }
    cycles[phase] += rec.sync + rec.exchange + rec.compute;
  }
  double summed = 0;
  for (const auto& [phase, c] : cycles) summed += static_cast<double>(c);
  const double scale = p.stages > 1 && summed > static_cast<double>(stats.cycles)
                           ? static_cast<double>(stats.cycles) / summed
                           : 1.0;
  for (const auto& [phase, c] : cycles)
    m["phase." + phase + "_cycles"] = std::round(static_cast<double>(c) * scale);
}

}  // namespace

namespace {

// Per-IPU unit busy time, link and host traffic, and how evenly the tiles were busy.
void unit_metrics(RunReport& r, const RunStats& stats, uint32_t ipus, uint64_t exchange_bytes) {
  uint64_t busy_sum = 0, busy_max = 0, tile_count = 0, compute = 0, exchange = 0, sync = 0;
  for (uint32_t i = 0; i < stats.ipus.size(); ++i) {
    const auto& u = stats.ipus[i];
    double total = std::max<double>(1.0, static_cast<double>(stats.cycles));
    r.units.push_back({fmt::format("ipu{}.tiles", i), "compute", u.compute, u.compute / total});
    r.units.push_back(
        {fmt::format("ipu{}.exchange", i), "exchange", u.exchange, u.exchange / total});
    r.units.push_back({fmt::format("ipu{}.sync", i), "sync", u.sync, u.sync / total});
    for (uint64_t b : u.tile_busy) busy_sum += b, busy_max = std::max(busy_max, b), ++tile_count;
    compute = std::max(compute, u.compute), exchange = std::max(exchange, u.exchange),
    sync = std::max(sync, u.sync);
    r.bytes_moved["host"] += static_cast<int64_t>(u.host_bytes_in + u.host_bytes_out);
    r.bytes_moved["ipu_link"] += static_cast<int64_t>(u.link_bytes_out);
  }
  double total = std::max<double>(1.0, static_cast<double>(stats.cycles));
  // Utilization of a link group: the mean over its directed lanes (the trace has one track each).
  auto mean_over = [&](uint64_t busy, uint32_t lanes) {
    return busy / (total * std::max(lanes, 1u));
  };
  r.units.push_back(
      {"host-links", "host", stats.host_busy, mean_over(stats.host_busy, stats.host_lanes)});
  if (ipus > 1)
    r.units.push_back(
        {"ipu-links", "link", stats.link_busy, mean_over(stats.link_busy, stats.link_lanes)});
  r.bytes_moved["exchange"] = static_cast<int64_t>(exchange_bytes);
  double mean_busy = tile_count ? static_cast<double>(busy_sum) / tile_count : 0;
  auto& m = r.metrics;
  m["compute_cycles"] = static_cast<double>(compute);
  m["exchange_cycles"] = static_cast<double>(exchange);
  m["sync_cycles"] = static_cast<double>(sync);
  m["supersteps"] = static_cast<double>(stats.steps.size());
  m["tile_busy_max_cycles"] = static_cast<double>(busy_max);
  m["tile_busy_mean_cycles"] = mean_busy;
  m["tile_balance_max_over_mean"] = mean_busy > 0 ? busy_max / mean_busy : 0;
  m["achieved_tflops"] = r.achieved_flops_per_s * 1e-12;
  m["peak_tflops"] = r.peak_flops_per_s * 1e-12;
}

// One row per superstep run: when, and its sync, exchange and compute cycles.
Table superstep_table(const models::ipu::IpuSpec& s, const RunStats& stats) {
  Table steps;
  steps.columns = {"ipu",      "step",    "op",       "start",     "sync",
                   "exchange", "compute", "max_tile", "mean_tile", "busy_tiles"};
  for (const SuperstepRecord& rec : stats.steps)
    steps.rows.push_back(
        {double(rec.ipu), double(rec.index), double(rec.op), double(rec.start), double(rec.sync),
         double(rec.exchange), double(rec.compute), double(rec.max_tile),
         static_cast<double>(rec.sum_tile) / static_cast<double>(s.tiles), double(rec.busy_tiles)});
  return steps;
}

}  // namespace

RunReport make_report(const DeviceProgram& p, const models::ipu::IpuSpec& s, const RunStats& stats,
                      const std::string& device) {
  RunReport r;
  r.device = device;
  r.backend = "ipu-emu";
  r.precision = p.precision;
  r.cycles = stats.cycles;
  r.clock_hz = static_cast<double>(s.clock_hz);
  r.device_seconds = static_cast<double>(stats.cycles) / r.clock_hz;
  uint32_t ipus = p.bsp.num_ipus();
  double peak_per_ipu = s.peak_flops_per_s(p.macs_per_cycle);
  r.peak_flops_per_s = peak_per_ipu * ipus;
  double exchange_bw =
      static_cast<double>(s.tiles * s.exchange_bytes_per_cycle) * r.clock_hz * ipus;
  r.ridge_intensity = exchange_bw > 0 ? r.peak_flops_per_s / exchange_bw : 0;
  // Per op: replica 0's IPUs (the first `stages` IPUs), summed over micro-batches.
  std::vector<OpTotals> ops(p.ops.size());
  uint64_t exchange_bytes = 0;
  for (const SuperstepRecord& rec : stats.steps) {
    const auto& step = p.bsp.list(rec.ipu)[rec.index];
    exchange_bytes += step_exchange_bytes(step);
    if (rec.ipu >= p.stages || rec.op < 0 || static_cast<size_t>(rec.op) >= ops.size()) continue;
    OpTotals& t = ops[rec.op];
    t.sync += rec.sync, t.exchange += rec.exchange, t.compute += rec.compute;
    t.exchange_bytes += step_exchange_bytes(step);
  }
  int64_t flops = 0;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const sim::OpDesc& d = p.ops[i];
    const OpTotals& t = ops[i];
    OpReport o;
    o.node = d.node, o.op_type = d.op_type, o.backend = "ipu-emu", o.shapes = d.shapes;
    o.flops = d.flops, o.bytes_in = d.bytes_in, o.bytes_out = d.bytes_out;
    o.cycles = t.cycles();
    o.device_seconds = static_cast<double>(o.cycles) / r.clock_hz;
    double per_replica = static_cast<double>(d.flops) / std::max<uint32_t>(p.replicas, 1);
    o.utilization =
        o.cycles ? per_replica / (static_cast<double>(o.cycles) * peak_per_ipu / r.clock_hz) : 0;
    o.intensity =
        t.exchange_bytes ? static_cast<double>(d.flops) / static_cast<double>(t.exchange_bytes) : 0;
    o.bound = o.cycles == 0                                    ? ""
              : t.compute >= t.exchange && t.compute >= t.sync ? "compute"
              : t.exchange >= t.sync                           ? "exchange"
                                                               : "sync";
    flops += d.flops;
    r.ops.push_back(std::move(o));
  }
  r.achieved_flops_per_s = r.device_seconds > 0 ? static_cast<double>(flops) / r.device_seconds : 0;
  unit_metrics(r, stats, ipus, exchange_bytes);
  auto& m = r.metrics;
  schedule_metrics(p, stats, m);
  r.tables["ipu_supersteps"] = superstep_table(s, stats);
  r.notes = p.notes;
  return r;
}

}  // namespace mimic::backends::ipu_emu
