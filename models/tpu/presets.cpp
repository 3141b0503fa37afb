// Built-in chip presets. Figures come from docs/references.md (the "sheet"), whose
// tags are kept: [R] retrieved from the source named, [R-3P] third-party secondary source, [D]
// derived by arithmetic, [M] from memory (unverified). Values the sheet does not give are marked
// [assumed] with the reasoning; they are the first thing to revisit when a measurement disagrees.
#include <fmt/format.h>

#include "models/spec_fields.h"
#include "models/tpu/tpu_spec.h"

namespace mimic::models::tpu {
namespace {

constexpr uint64_t KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;

MemorySpec memory(const char* name, uint64_t bytes, uint64_t bytes_per_s, uint64_t latency,
                  uint64_t granule) {
  return MemorySpec{name, bytes, bytes_per_s, latency, granule};
}

// Figures shared by the v2-v6e TensorCores unless a preset says otherwise.
void tensorcore_defaults(TpuSpec& s) {
  s.numerics = MatrixNumerics::bf16;
  s.vpu = VpuSpec{128, 8, 2, 2, false};
  s.dma = DmaSpec{2, 16};
  s.mxu.dataflow = Dataflow::weight_stationary;
  s.mxu.weight_double_buffering = true;
  s.mxu.weight_fifo_tiles = 4;
  s.mxu.accumulator_bytes = 4 * MiB;
  s.activations_on_chip = false;
  s.sources["numerics"] = "[R] Cloud TPU docs: bf16 multiplies, fp32 accumulation (sheet A.2)";
  s.sources["vpu"] =
      "[R] S3: (8,128) VPU, 2 ALUs per (lane, sublane) on v4, 2-cycle latency (sheet A.3); used "
      "for v2-v6e";
  s.sources["mxu.dataflow"] =
      "[R-3P] S4: stationary RHS (weights), streaming LHS and results (sheet A.2)";
  s.sources["mxu.weight_fifo_tiles"] =
      "[assumed] 4 staged weight tiles, as TPUv1's weight FIFO; v2+ stage weights in VMEM";
  s.sources["mxu.accumulator_bytes"] =
      "[assumed] 4 MiB per MXU as on TPUv1; v2+ result-buffer sizes are not published";
  s.sources["dma"] =
      "[assumed] 2 engines per core (loads, stores), 16-cycle descriptor setup; S3: one DMA "
      "request per cycle per core";
  s.sources["offchip.latency_cycles"] = "[assumed] ~200 ns HBM access through the DMA path";
  s.sources["onchip.bytes_per_s"] = "[D] S3: VMEM bandwidth to the MXU ~22x HBM bandwidth";
  s.sources["chips"] =
      "one chip; --set chips=N models a slice of N chips for option replicas (Cloud names count "
      "TensorCores on v2-v4: v4-32 is 16 chips)";
}

TpuSpec v1() {
  TpuSpec s;
  s.name = "v1";
  s.description =
      "TPUv1 (2015): 256x256 int8 MXU, 24 MiB Unified Buffer, DDR3 weight memory, PCIe coprocessor";
  s.clock_hz = 700'000'000;
  s.cores = 1;
  s.numerics = MatrixNumerics::int8;
  s.mxu = MxuSpec{256, 256, 1, Dataflow::weight_stationary, true, 4, 4 * static_cast<int64_t>(MiB)};
  s.vpu = VpuSpec{256, 1, 1, 2, true};
  s.dma = DmaSpec{2, 16};
  s.host_link = memory("pcie", 0, 14 * GiB, 700, 64);
  s.offchip = memory("ddr3", 8 * GiB, 34'000'000'000ull, 70, 64);
  s.onchip = memory("ub", 24 * MiB, 256ull * 700'000'000ull, 2, 256);
  s.activations_on_chip = true;
  s.sources = {
      {"clock_hz", "[R] S1: 700 MHz"},
      {"mxu",
       "[R] S1: one 256x256 int8 MAC array, weight-stationary systolic, one 256-element partial "
       "sum per cycle"},
      {"mxu.weight_double_buffering",
       "[R] S1: one 64 KiB weight tile plus one for double-buffering (256-cycle shift-in)"},
      {"mxu.weight_fifo_tiles", "[R] S1: weight FIFO four tiles deep"},
      {"mxu.accumulator_bytes", "[R] S1: 4 MiB = 4096 x 256 x 32-bit accumulators"},
      {"numerics", "[R] S1: 8-bit multiply-add, 32-bit accumulation"},
      {"onchip", "[R] S1: 24 MiB Unified Buffer; [D] 256 B x 700 MHz = 179 GB/s"},
      {"offchip", "[R] S1: 8 GiB DDR3 weight memory, 34 GB/s; latency [assumed] ~100 ns"},
      {"host_link", "[R-3P] Figure-1 label: PCIe Gen3 x16, 14 GiB/s; latency [assumed] ~1 us"},
      {"vpu",
       "[D] S1: 256-byte-wide activation path -> 256 lanes x 1 sublane; [assumed] 1 op/cycle, "
       "2-cycle latency"},
      {"vpu.fused_epilogue",
       "[R] S1: Activate (bias, nonlinearity, requantization) streams accumulators to the UB "
       "at the MXU's rate of one 256-element vector per cycle"},
      {"activations_on_chip",
       "[R] S1: the UB holds intermediate activations (sized for MLP batches up to 2048)"},
      {"dma", "[assumed] 2 engines (host reads, host writes), 16-cycle descriptor setup"},
  };
  return s;
}

TpuSpec v2() {
  TpuSpec s;
  tensorcore_defaults(s);
  s.name = "v2";
  s.description =
      "TPUv2 (2017): 2 TensorCores, one 128x128 bf16 MXU each, 16 GiB HBM split per core";
  s.clock_hz = 700'000'000;
  s.cores = 2;
  s.mxu.rows = s.mxu.cols = 128;
  s.mxu.per_core = 1;
  s.host_link = memory("pcie", 0, 16'000'000'000ull, 700, 64);
  s.offchip = memory("hbm", 16 * GiB, 700'000'000'000ull, 140, 32);
  s.offchip_per_core = true;
  s.onchip = memory("vmem", 16 * MiB, 22ull * 350'000'000'000ull, 2, 32);
  s.sources["clock_hz"] = "[R-3P] 700 MHz";
  s.sources["cores"] = "[R-3P] 2 TensorCores";
  s.sources["mxu"] = "[R-3P] S4: one 128x128 MXU per core; [D] 45.9 TFLOP/s vs 45-46 quoted";
  s.sources["offchip"] =
      "[R-3P, conflicting] 16 GiB HBM at 600 GB/s (Wikipedia copy) or 700 GB/s (Norrie notes): 700 "
      "used";
  s.sources["offchip_per_core"] = "[R] S3: on v3 and older the two cores have separate HBM";
  s.sources["onchip"] = "[D] S4: 128 lanes x 32 Ki x 32 b = 16 MiB VMEM per core";
  s.sources["host_link"] = "[R-3P] PCIe 16 GB/s per chip; latency [assumed] ~1 us";
  s.ici = memory("ici", 0, 62'000'000'000ull, 700, 64);
  s.sources["ici"] =
      "[M] CACM'20: 4 x 496 Gb/s ICI links (~62 GB/s each way), [R-3P] ~500 Gb/s; 2-D torus; "
      "per-hop latency [assumed] ~1 us";
  return s;
}

TpuSpec v3() {
  TpuSpec s = v2();
  s.name = "v3";
  s.description =
      "TPUv3 (2018): 2 TensorCores, two 128x128 bf16 MXUs each, 32 GiB HBM split per core";
  s.clock_hz = 940'000'000;
  s.mxu.per_core = 2;
  s.offchip = memory("hbm", 32 * GiB, 900'000'000'000ull, 190, 32);
  s.onchip = memory("vmem", 16 * MiB, 22ull * 450'000'000'000ull, 2, 32);
  s.sources["clock_hz"] = "[D] 123e12 / (4 x 16384 x 2) = 0.94 GHz; [R-3P] 940 MHz";
  s.sources["mxu"] =
      "[R] S2: 2 x 128x128 MXUs per TensorCore; 123 TFLOP/s (S3 lists 140: inconsistent, 123 used)";
  s.sources["offchip"] = "[R] S2: 32 GiB HBM2, 900 GB/s";
  s.sources["onchip"] = "[assumed] 16 MiB VMEM per core as v2 ([R-3P] '32 MiB on chip')";
  s.sources["host_link"] = "[assumed] as v2: 16 GB/s";
  s.ici = memory("ici", 0, 100'000'000'000ull, 940, 64);
  s.sources["ici"] =
      "[R] S3: 1e11 B/s one-way per link ([M] CACM'20: 656 Gb/s); 2-D torus; per-hop latency "
      "[assumed] ~1 us";
  return s;
}

TpuSpec v4() {
  TpuSpec s;
  tensorcore_defaults(s);
  s.name = "v4";
  s.description =
      "TPU v4 (2021): 2 TensorCores (megacore), four 128x128 bf16 MXUs each, 32 GiB HBM2 shared";
  s.clock_hz = 1'050'000'000;
  s.cores = 2;
  s.mxu.rows = s.mxu.cols = 128;
  s.mxu.per_core = 4;
  s.host_link = memory("pcie", 0, 16'000'000'000ull, 1050, 64);
  s.offchip = memory("hbm", 32 * GiB, 1'200'000'000'000ull, 210, 32);
  s.offchip_per_core = false;
  s.onchip = memory("vmem", 16 * MiB, 22ull * 600'000'000'000ull, 2, 32);
  s.sources["clock_hz"] = "[D] 275e12 / (8 x 16384 x 2) = 1.05 GHz; [R-3P] 1050 MHz";
  s.sources["cores"] = "[R] S2, S3: 2 TensorCores sharing HBM as one megacore device";
  s.sources["mxu"] = "[R] S2: 4 x 128x128 MXUs per TensorCore, 275 TFLOP/s";
  s.sources["offchip"] = "[R] S2: 32 GiB HBM2, 1200 GB/s";
  s.sources["onchip"] = "[R-3P] 16 MiB VMEM per TensorCore; the 128 MiB CMEM is not modeled";
  s.sources["host_link"] = "[R] S3: PCIe 16 GB/s each way; latency [assumed] ~1 us";
  s.ici = memory("ici", 0, 45'000'000'000ull, 1050, 64);
  s.sources["ici"] =
      "[R] S3: 4.5e10 B/s one-way per link (conflicting: 2400 Gb/s per chip / 6 links = 50 GB/s "
      "[R-3P]); 3-D torus; per-hop latency [assumed] ~1 us";
  return s;
}

TpuSpec v5e() {
  TpuSpec s;
  tensorcore_defaults(s);
  s.name = "v5e";
  s.description = "TPU v5e (2023): 1 TensorCore, four 128x128 bf16 MXUs, 16 GB HBM2";
  s.clock_hz = 1'500'000'000;
  s.cores = 1;
  s.mxu.rows = s.mxu.cols = 128;
  s.mxu.per_core = 4;
  s.host_link = memory("pcie", 0, 16'000'000'000ull, 1500, 64);
  s.offchip = memory("hbm", 16'000'000'000ull, 819'000'000'000ull, 300, 32);
  s.onchip = memory("vmem", 128 * MiB, 22ull * 819'000'000'000ull, 2, 32);
  s.sources["clock_hz"] = "[R] S3: 5e13 bf16 FLOP/s per MXU at 1.5 GHz";
  s.sources["mxu"] = "[R] S2, S3: 4 x 128x128 MXUs, 197 TFLOP/s bf16";
  s.sources["offchip"] = "[R] S2: 16 GB HBM2, 819 GB/s";
  s.sources["onchip"] = "[R] S3: 128 MiB VMEM ([R-3P] '48 MiB on-chip' conflicts)";
  s.sources["host_link"] = "[assumed] 16 GB/s (not on the sheet for v5e)";
  s.ici = memory("ici", 0, 50'000'000'000ull, 1500, 64);
  s.sources["ici"] =
      "[R] S3: 5e10 B/s one-way per link; S2: 4 ports, 2-D torus of 16x16; per-hop latency "
      "[assumed] ~1 us";
  return s;
}

TpuSpec v6e() {
  TpuSpec s;
  tensorcore_defaults(s);
  s.name = "v6e";
  s.description =
      "TPU v6e Trillium (2024): 1 TensorCore, 256x256 bf16 MXUs (count/clock approximate), 32 GB "
      "HBM";
  s.clock_hz = 1'750'000'000;
  s.cores = 1;
  s.mxu.rows = s.mxu.cols = 256;
  s.mxu.per_core = 4;
  s.host_link = memory("pcie", 0, 32'000'000'000ull, 1750, 64);
  s.offchip = memory("hbm", 32'000'000'000ull, 1'638'000'000'000ull, 350, 32);
  s.onchip = memory("vmem", 128 * MiB, 22ull * 1'638'000'000'000ull, 2, 32);
  s.sources["clock_hz"] =
      "[D, approximate] 918e12 / (4 x 65536 x 2) = 1.75 GHz; the clock is not published";
  s.sources["mxu"] =
      "[R] S2: 256x256 MXUs, 918 TFLOP/s; the doc's 'two MXUs' is inconsistent with 918 TFLOP/s, 4 "
      "used";
  s.sources["offchip"] = "[R] S2: 32 GB HBM, 1638 GBps";
  s.sources["onchip"] = "[assumed] 128 MiB VMEM as v5e (unknown for v6e)";
  s.sources["host_link"] = "[R] S2, S3: PCIe Gen5 ~32 GB/s";
  s.ici = memory("ici", 0, 100'000'000'000ull, 1750, 64);
  s.sources["ici"] =
      "[D] S2: 800 GBps bidirectional per chip over 4 ports = 100 GB/s one-way per link; per-hop "
      "latency [assumed] ~1 us";
  return s;
}

TpuSpec edge() {
  TpuSpec s;
  s.name = "edge";
  s.description =
      "Coral Edge TPU (approximate): int8, ~4 TOPS, parameters cached on chip, host over a PCIe x1 "
      "link";
  s.clock_hz = 480'000'000;
  s.cores = 1;
  s.numerics = MatrixNumerics::int8;
  s.mxu = MxuSpec{64, 64, 1, Dataflow::weight_stationary, true, 2, 256 * static_cast<int64_t>(KiB)};
  s.vpu = VpuSpec{64, 1, 1, 2, true};
  s.dma = DmaSpec{2, 16};
  s.host_link = memory("pcie", 0, 500'000'000ull, 480, 64);
  s.offchip = memory("none", 0, 0, 0, 1);
  s.onchip = memory("sram", 8 * MiB, 64ull * 480'000'000ull, 2, 64);
  s.activations_on_chip = true;
  s.sources = {
      {"numerics", "[R] S10: int8 ('fixed-point') operations"},
      {"mxu",
       "[assumed] 64x64 array: Coral does not publish the size; Boroumand et al. (PACT 2021, "
       "arXiv 2109.14320) describe the Pixel 4 Edge TPU as a 64x64 PE array [R-3P, summary]; "
       "with clock_hz gives 3.9 TOPS vs 4 TOPS [R] S10"},
      {"clock_hz", "[assumed] 480 MHz (not published)"},
      {"onchip", "[M] ~8 MB on-chip RAM caching parameters; bandwidth [assumed] 64 B/cycle"},
      {"offchip", "[R] S10: no device DRAM; uncached parameters stream from host memory"},
      {"host_link", "[assumed] PCIe Gen2 x1 (M.2 / mini-PCIe module), ~500 MB/s; USB 3 is similar"},
      {"vpu",
       "[assumed] 64 lanes x 1 sublane, fused activation pipeline as TPUv1; depthwise "
       "convolutions run here, one channel per lane (a 64-wide array whose rows share an "
       "activation gives a depthwise layer one useful MAC per column); how the chip maps them is "
       "not published: MobileDets (Xiong et al., CVPR 2021) report that a regular convolution can "
       "use the Edge TPU up to 3x more efficiently than its depthwise variant [R-3P]"},
      {"mxu.accumulator_bytes", "[assumed] 256 KiB"},
  };
  return s;
}

}  // namespace

std::vector<std::string> preset_names() {
  return {"v1", "v2", "v3", "v4", "v5e", "v6e", "edge"};
}

bool is_preset(const std::string& name) {
  for (const auto& n : preset_names())
    if (n == name) return true;
  return false;
}

TpuSpec preset(const std::string& name) {
  TpuSpec s;
  if (name == "v1")
    s = v1();
  else if (name == "v2")
    s = v2();
  else if (name == "v3")
    s = v3();
  else if (name == "v4")
    s = v4();
  else if (name == "v5e")
    s = v5e();
  else if (name == "v6e")
    s = v6e();
  else if (name == "edge")
    s = edge();
  else
    throw SpecError(fmt::format("tpu-emu: unknown preset '{}' (presets: {}; or a .json chip file)",
                                name, fmt::join(preset_names(), ", ")));
  validate(s);
  return s;
}

}  // namespace mimic::models::tpu
