// SystemC event throughput of the TPU chip model (models/tpu): a device program built by hand
// through the model's API (no IR, no compiler) runs on one elaborated TpuChip, and each run
// reports simulated cycles, instructions, TLM transactions and SystemC delta cycles per host
// second.
//
// One SystemC simulation per process (design.md): the chip is elaborated once, on first use, and
// every iteration runs the whole program again on it (TpuChip::run continues the same simulation
// until idle, as the mimic-device worker does for successive runs). So one binary = one preset.
//
// The program is what the tpu-emu compiler emits for a chain of GEMM layers, simplified: per layer
// and core, the weights are loaded once into VMEM; M is cut into tiles dealt round-robin to the
// cores; each tile is DMA'd in, multiplied on every MXU of its core (N split over the MXUs), passed
// through a vector epilogue (ReLU) and stored back to HBM; double-buffered A and output tiles
// (a load waits for the tile two back to be consumed); a per-core sync frees the weights and every
// core's next layer waits for all of them. Input and output cross the host link (core 0).
// The simulation is single-threaded: times and rates are per CPU second of the benchmark thread
// (Google Benchmark's default), which other work on a shared machine disturbs less than wall time.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "benchmarks/micro/resnet50_gemms.h"
#include "models/tpu/program.h"
#include "models/tpu/tpu_chip.h"
#include "models/tpu/tpu_spec.h"
#include "sim/systemc/kernel.h"

namespace mimic {
namespace {

namespace tpu = models::tpu;

using GemmLayer = bench::GemmLayer<int64_t>;
using bench::kImageElements;
using bench::kLogitElements;
const std::vector<GemmLayer> kResnetLayers = bench::resnet50_b8_gemms<int64_t>();
constexpr uint64_t MiB = 1 << 20;

class ProgramBuilder {
 public:
  ProgramBuilder(const tpu::TpuSpec& s, int64_t tile_m) : s_(s), tile_m_(tile_m) {
    p_.name = "bench-gemm-chain";
    p_.numerics = s.numerics;
  }

  tpu::Program build(const std::vector<GemmLayer>& layers) {
    const uint64_t eb = static_cast<uint64_t>(s_.matrix_element_bytes());
    uint32_t host_in = dma(0, tpu::Level::host, tpu::Level::offchip, kImageElements * eb, 0, 0, {});
    std::vector<uint32_t> barrier{host_in};
    for (const GemmLayer& l : layers) barrier = layer(l, barrier, eb);
    dma(0, tpu::Level::offchip, tpu::Level::host, kLogitElements * eb, 0, 0, barrier);
    return std::move(p_);
  }

 private:
  uint32_t add(tpu::Instruction in, const std::vector<uint32_t>& deps) {
    in.dep_begin = static_cast<uint32_t>(p_.deps.size());
    in.dep_count = static_cast<uint32_t>(deps.size());
    p_.deps.insert(p_.deps.end(), deps.begin(), deps.end());
    p_.instructions.push_back(in);
    return static_cast<uint32_t>(p_.instructions.size() - 1);
  }

  uint32_t dma(int core, tpu::Level src, tpu::Level dst, uint64_t bytes, int64_t alloc,
               int64_t free, const std::vector<uint32_t>& deps, uint16_t engine = 0,
               uint64_t onchip_address = 0) {
    tpu::Instruction in;
    in.opcode = tpu::Opcode::dma;
    in.core = static_cast<uint8_t>(core);
    in.unit = engine;
    in.src = src, in.dst = dst, in.bytes = bytes;
    in.onchip_alloc = alloc, in.onchip_free = free;
    in.src_address = src == tpu::Level::onchip ? onchip_address : 0;
    in.dst_address = dst == tpu::Level::onchip ? onchip_address : 0;
    return add(in, deps);
  }

  // One layer on every core; returns the syncs that end it (the next layer's barrier).
  std::vector<uint32_t> layer(const GemmLayer& l, const std::vector<uint32_t>& barrier,
                              uint64_t eb) {
    const int64_t cores = s_.cores, mxus = s_.mxu.per_core;
    const int64_t tiles = (l.m + tile_m_ - 1) / tile_m_;
    const int64_t n_per_mxu = (l.n + mxus - 1) / mxus;
    const uint64_t w_bytes = uint64_t(l.k * l.n) * eb;
    std::vector<uint32_t> ends;
    for (int64_t c = 0; c < cores && c < tiles; ++c) {
      uint32_t w = dma(int(c), tpu::Level::offchip, tpu::Level::onchip, w_bytes, int64_t(w_bytes),
                       0, barrier, 0, 8 * MiB);
      std::vector<uint32_t> consumed, stored;  // per tile of this core: epilogue, store
      for (int64_t t = c; t < tiles; t += cores) {
        const int64_t rows = std::min(tile_m_, l.m - t * tile_m_);
        const size_t i = consumed.size();
        const uint64_t a_bytes = uint64_t(rows * l.k) * eb, y_bytes = uint64_t(rows * l.n) * eb;
        std::vector<uint32_t> load_deps = barrier;
        if (i >= 2) load_deps.push_back(consumed[i - 2]);  // A buffer i % 2 is free again
        uint32_t a = dma(int(c), tpu::Level::offchip, tpu::Level::onchip, a_bytes, int64_t(a_bytes),
                         0, load_deps, 0, (i % 2) * 4 * MiB);
        std::vector<uint32_t> products;
        for (int64_t u = 0; u < mxus && u * n_per_mxu < l.n; ++u) {
          tpu::Instruction mm;
          mm.opcode = tpu::Opcode::matmul;
          mm.core = static_cast<uint8_t>(c);
          mm.unit = static_cast<uint16_t>(u);
          mm.m = rows, mm.k = l.k, mm.n = std::min(n_per_mxu, l.n - u * n_per_mxu);
          mm.weight_source = tpu::Level::onchip;
          mm.weight_address = 8 * MiB + uint64_t(u * n_per_mxu * l.k) * eb;
          products.push_back(add(mm, {a, w}));
        }
        if (i >= 2) products.push_back(stored[i - 2]);  // output buffer i % 2 is free again
        tpu::Instruction ep;
        ep.opcode = tpu::Opcode::vector;
        ep.core = static_cast<uint8_t>(c);
        ep.elements = uint64_t(rows * l.n);
        ep.ops_per_element = tpu::vector_ops_per_element(tpu::VectorFunc::relu);
        ep.onchip_alloc = int64_t(y_bytes);
        ep.onchip_free = int64_t(a_bytes);
        consumed.push_back(add(ep, products));
        stored.push_back(dma(int(c), tpu::Level::onchip, tpu::Level::offchip, y_bytes, 0,
                             int64_t(y_bytes), {consumed.back()}, 1, 13 * MiB + (i % 2) * MiB));
      }
      tpu::Instruction sync;
      sync.opcode = tpu::Opcode::sync;
      sync.core = static_cast<uint8_t>(c);
      sync.onchip_free = int64_t(w_bytes);
      ends.push_back(add(sync, stored));
    }
    return ends;
  }

  const tpu::TpuSpec& s_;
  int64_t tile_m_;
  tpu::Program p_;
};

// The one chip of this process (SystemC: one elaboration per process).
tpu::TpuChip& chip() {
  static tpu::TpuChip* c = new tpu::TpuChip("chip", tpu::preset("v4"));
  return *c;
}

// range(0): rows per M tile (smaller tiles: more instructions for the same work).
void BM_TpuModelResnetGemms(benchmark::State& state) {
  tpu::TpuChip& c = chip();
  tpu::Program program = ProgramBuilder(c.spec(), state.range(0)).build(kResnetLayers);
  uint64_t cycles = 0, instructions = 0, transactions = 0, deltas = 0;
  for (auto _ : state) {
    uint64_t d0 = sc_core::sc_delta_count();
    tpu::TimingResult r = c.run(program);
    deltas += sc_core::sc_delta_count() - d0;
    cycles += r.cycles;
    for (const auto& u : r.units) instructions += u.instructions;
    for (const auto& m : r.memories) transactions += m.transactions;
  }
  using benchmark::Counter;
  state.counters["sim_cycles/s"] = Counter(double(cycles), Counter::kIsRate);
  state.counters["instructions/s"] = Counter(double(instructions), Counter::kIsRate);
  state.counters["tlm_transactions/s"] = Counter(double(transactions), Counter::kIsRate);
  state.counters["delta_cycles/s"] = Counter(double(deltas), Counter::kIsRate);
  state.counters["sim_cycles/run"] = Counter(double(cycles), Counter::kAvgIterations);
  state.SetLabel(fmt::format("{}: {} instructions, {} layers", c.spec().name,
                             program.instructions.size(), kResnetLayers.size()));
}
BENCHMARK(BM_TpuModelResnetGemms)
    ->ArgName("tile_m")
    ->Arg(512)
    ->Arg(128)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace mimic

BENCHMARK_MAIN();
