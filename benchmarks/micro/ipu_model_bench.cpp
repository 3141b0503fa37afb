// SystemC event throughput of the IPU system model (models/ipu): a BSP program built by hand
// through the model's API (no IR, no compiler) runs on one elaborated IpuSystem, and each run
// reports simulated cycles, supersteps, trace events and SystemC delta cycles per host second.
//
// One SystemC simulation per process (design.md): the system is elaborated once, on first use, and
// every iteration runs the whole program again on it (IpuSystem::run continues the same simulation,
// as the mimic-device worker does for successive runs). So one binary = one preset and IPU count.
//
// The program follows the shape of what the ipu-emu compiler emits for a chain of matrix products
// (linear_plan.h): per layer, one superstep exchanges each tile's operand blocks (A rows, weights)
// and runs AMP vertices (one per worker context), layers whose K is split over tiles add a
// superstep that exchanges partial sums and reduces them on the vector datapath, and an
// epilogue superstep applies ReLU where the output lives. The work is spread over every tile of
// the IPU with a remainder group, as a linear mapping leaves it. Host streams open and close it.
// The simulation is single-threaded: times and rates are per CPU second of the benchmark thread
// (Google Benchmark's default), which other work on a shared machine disturbs less than wall time.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "benchmarks/micro/resnet50_gemms.h"
#include "models/ipu/ipu_spec.h"
#include "models/ipu/ipu_system.h"
#include "sim/event_sink.h"

namespace mimic {
namespace {

namespace ipu = models::ipu;

using GemmLayer = bench::GemmLayer<uint64_t>;
using bench::kImageElements;
using bench::kLogitElements;
const std::vector<GemmLayer> kResnetLayers = bench::resnet50_b8_gemms<uint64_t>();

uint64_t ceil_div(uint64_t a, uint64_t b) {
  return (a + b - 1) / b;
}

class BspBuilder {
 public:
  explicit BspBuilder(const ipu::IpuSpec& s) : s_(s), tiles_(static_cast<uint32_t>(s.tiles)) {
    p_.labels = {"stream in", "matmul", "reduce", "relu", "stream out"};
    p_.ipus.resize(1);
  }

  ipu::BspProgram build(const std::vector<GemmLayer>& layers) {
    ipu::Superstep in = step(0);
    in.host_to_device_bytes = kImageElements * kBytes;
    p_.ipus[0].push_back(in);
    for (uint32_t i = 0; i < layers.size(); ++i) layer(layers[i], static_cast<int32_t>(i));
    ipu::Superstep out = step(4);
    out.device_to_host_bytes = kLogitElements * kBytes;
    p_.ipus[0].push_back(out);
    return std::move(p_);
  }

 private:
  static constexpr uint64_t kBytes = 4;  // float32 storage

  ipu::Superstep step(uint32_t label, int32_t op = -1) {
    ipu::Superstep s;
    s.label = label;
    s.op = op;
    s.sync = ipu::SyncKind::internal;
    return s;
  }

  // `total` units of work over all tiles: ceil shares on the first tiles, the rest on the others.
  template <typename Fn>
  void spread(uint64_t total, Fn fn) {
    uint64_t share = ceil_div(total, tiles_);
    uint32_t full = static_cast<uint32_t>(std::min<uint64_t>(tiles_, total / share));
    if (full) fn(0u, full, share);
    uint64_t rest = total - share * full;
    if (rest && full < tiles_) fn(full, 1u, rest);
  }

  std::vector<ipu::VertexBatch> per_worker(ipu::VertexClass cls, uint64_t amount) {
    uint32_t workers = static_cast<uint32_t>(s_.worker_contexts);
    ipu::VertexWork w{cls, ipu::NumberFormat::f32, ipu::NumberFormat::f32, 1,
                      ceil_div(amount, workers)};
    return {{w, workers}};
  }

  void layer(const GemmLayer& l, int32_t op) {
    // K split when one tile's share of rows would be tiny (few rows, deep K), as the planner does.
    uint64_t ks = l.m < tiles_ ? std::min<uint64_t>(8, ceil_div(tiles_, l.m)) : 1;
    ipu::Superstep mm = step(1, op);
    const uint64_t out = l.m * l.n;
    spread(out * ks, [&](uint32_t first, uint32_t count, uint64_t outputs) {
      uint64_t k = ceil_div(l.k, ks);
      uint64_t rows = std::max<uint64_t>(1, outputs / l.n);
      uint64_t recv = (rows * k + k * std::min(outputs, l.n)) * kBytes;
      mm.exchange.push_back({first, count, rows * k * kBytes, recv});
      mm.compute.push_back({first, count, per_worker(ipu::VertexClass::amp, outputs * k)});
    });
    p_.ipus[0].push_back(mm);
    if (ks > 1) {
      ipu::Superstep red = step(2, op);
      spread(out, [&](uint32_t first, uint32_t count, uint64_t outputs) {
        red.exchange.push_back({first, count, outputs * kBytes, (ks - 1) * outputs * kBytes});
        red.compute.push_back({first, count, per_worker(ipu::VertexClass::vector, ks * outputs)});
      });
      p_.ipus[0].push_back(red);
    }
    ipu::Superstep relu = step(3, op);
    spread(out, [&](uint32_t first, uint32_t count, uint64_t outputs) {
      relu.compute.push_back({first, count, per_worker(ipu::VertexClass::vector, outputs)});
    });
    p_.ipus[0].push_back(relu);
  }

  const ipu::IpuSpec& s_;
  uint32_t tiles_;
  ipu::BspProgram p_;
};

// Counts what the model emits (its own event count); does no I/O.
class CountingSink final : public sim::NullSink {
 public:
  void event(sim::TrackId, sim::OpId, std::string_view, uint64_t, uint64_t) override { ++events; }
  void counter(sim::TrackId, uint64_t, double) override { ++events; }
  uint64_t events = 0;
};

// The one system of this process (SystemC: one elaboration per process).
ipu::IpuSystem& system() {
  static ipu::IpuSystem* s = new ipu::IpuSystem(ipu::preset("gc200"), 1);
  return *s;
}

// range(0): 1 = trace events go to a counting sink, 0 = no sink.
void BM_IpuModelResnetGemms(benchmark::State& state) {
  ipu::IpuSystem& sys = system();
  const bool traced = state.range(0) != 0;
  ipu::BspProgram program = BspBuilder(sys.specs()).build(kResnetLayers);
  sys.check(program);
  CountingSink sink;
  ipu::TraceTarget trace;
  if (traced) {
    trace.sink = &sink;
    trace.op_ids.assign(kResnetLayers.size(), 0);
  }
  uint64_t cycles = 0, steps = 0, deltas = 0, tile_groups = 0;
  for (const auto& st : program.ipus[0]) tile_groups += st.compute.size() + st.exchange.size();
  for (auto _ : state) {
    uint64_t d0 = sc_core::sc_delta_count();
    ipu::RunStats r = sys.run(program, trace);
    deltas += sc_core::sc_delta_count() - d0;
    cycles += r.cycles;
    steps += r.steps.size();
  }
  using benchmark::Counter;
  state.counters["sim_cycles/s"] = Counter(double(cycles), Counter::kIsRate);
  state.counters["supersteps/s"] = Counter(double(steps), Counter::kIsRate);
  state.counters["delta_cycles/s"] = Counter(double(deltas), Counter::kIsRate);
  if (traced) state.counters["trace_events/s"] = Counter(double(sink.events), Counter::kIsRate);
  state.counters["sim_cycles/run"] = Counter(double(cycles), Counter::kAvgIterations);
  state.SetLabel(fmt::format("{} x1: {} supersteps, {} tile groups, {}", sys.specs().name,
                             program.ipus[0].size(), tile_groups, traced ? "traced" : "no sink"));
}
BENCHMARK(BM_IpuModelResnetGemms)->ArgName("traced")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace mimic

BENCHMARK_MAIN();
