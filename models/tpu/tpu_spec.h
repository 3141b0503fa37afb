// The parameters of an emulated TPU-style chip, parsed and validated once.
//
// A chip is `cores` TensorCores sharing (or, on v2/v3, splitting) one off-chip memory; each core
// has `mxu.per_core` systolic matrix units of `mxu.rows` x `mxu.cols` multiply-accumulators, one
// vector unit of `vpu.lanes` x `vpu.sublanes` ALUs, `dma.engines_per_core` DMA engines and an
// on-chip memory (VMEM, or the Unified Buffer on v1). The host reaches the chip over a link
// (PCIe, USB). Every latency is in core clock cycles, every bandwidth in bytes per second and
// every capacity in bytes, as the field names say.
//
// Presets (presets.cpp) take their figures from docs/references.md and cite them
// per field in `sources`; a figure that is unknown or conflicting is marked there as assumed.
// JSON files and `--set key=value` overrides use the dotted field names of spec_fields() below,
// e.g. "mxu.rows", "offchip.bytes_per_s", "mxu.dataflow".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/spec_fields.h"

namespace mimic::models::tpu {

using models::SpecError;
using models::SpecFields;

// Which operand stays in the array while the other streams through (Kung; SCALE-Sim's names).
enum class Dataflow { weight_stationary, output_stationary, input_stationary };
// Arithmetic of the matrix units: bf16 x bf16 -> fp32 (v2 and later), int8 x int8 -> int32 (v1,
// edge).
enum class MatrixNumerics { bf16, int8 };

const char* dataflow_name(Dataflow d);  // "ws" | "os" | "is"
const char* numerics_name(MatrixNumerics n);

struct MxuSpec {
  int64_t rows = 128, cols = 128;  // PEs; in WS rows take the reduction (K) dimension
  int64_t per_core = 1;
  Dataflow dataflow = Dataflow::weight_stationary;
  bool weight_double_buffering = true;  // next fold's weights shift in while the current computes
  int64_t weight_fifo_tiles = 4;  // weight tiles staged between the weight source and the array
  int64_t accumulator_bytes = 4 << 20;  // per MXU: fp32/int32 partial sums of the streamed rows
};

struct VpuSpec {
  int64_t lanes = 128, sublanes = 8;  // one vreg = lanes x sublanes 32-bit elements
  int64_t alus = 2;                   // ALU instructions issued per cycle per (lane, sublane)
  int64_t latency_cycles = 2;         // pipeline depth paid once per vector instruction
  // The matmul epilogue (bias, residual, activation, requantization) is one pipelined pass per
  // element, as TPUv1's activation unit between the accumulators and the UB (S1: Activate),
  // instead of one vector instruction per operation.
  bool fused_epilogue = false;
};

struct MemorySpec {
  std::string name;               // "hbm", "ddr3", "vmem", "ub", "pcie", "usb"
  uint64_t bytes = 0;             // capacity (0 for the host link: host memory is not modeled)
  uint64_t bytes_per_s = 0;       // bandwidth of the memory's transfer pipe
  uint64_t latency_cycles = 0;    // per transaction
  uint64_t min_access_bytes = 1;  // access granularity
};

struct DmaSpec {
  int64_t engines_per_core = 2;  // engine 0 loads, engine 1 stores (more: round robin)
  uint64_t setup_cycles = 16;    // descriptor processing per DMA instruction
};

struct TpuSpec {
  std::string name;         // preset name or the JSON file's "name"
  std::string description;  // one line for `mimic devices`
  uint64_t clock_hz = 0;
  int64_t cores = 1;
  MatrixNumerics numerics = MatrixNumerics::bf16;
  MxuSpec mxu;
  VpuSpec vpu;
  DmaSpec dma;
  MemorySpec host_link;              // host <-> chip
  MemorySpec offchip;                // HBM or DDR; bytes == 0: the chip has none (edge)
  bool offchip_per_core = false;     // v2/v3: each core owns 1/cores of capacity and bandwidth
  MemorySpec onchip;                 // per core: VMEM (v2+) or the Unified Buffer (v1)
  bool activations_on_chip = false;  // v1/edge: activations live in on-chip memory when they fit
  // The slice the chip belongs to, for data parallelism (option replicas=N): `chips` chips joined
  // by inter-chip interconnect links of `ici.bytes_per_s` each way and `ici.latency_cycles` per
  // hop (ici.bytes_per_s == 0: the chip has none, v1 and edge). A replica is one chip, or one
  // core where each core owns its off-chip memory (v2/v3, offchip_per_core).
  int64_t chips = 1;
  MemorySpec ici{"ici", 0, 0, 0, 1};
  uint64_t quantum_cycles =
      2000;  // global tlm_quantumkeeper quantum (units also sync after every instruction)
  std::map<std::string, std::string> sources;  // field -> where its value comes from

  // Derived figures (floating point only for reports).
  int64_t mxus() const { return mxu.per_core * cores; }
  int64_t peak_macs_per_cycle() const { return mxu.rows * mxu.cols * mxus(); }
  double peak_flops_per_s() const;
  // The memory that bounds weight and activation traffic: off-chip memory, or the host link.
  const MemorySpec& bandwidth_memory() const { return offchip.bytes ? offchip : host_link; }
  double ridge_flops_per_byte() const;
  // Bytes per element as stored on chip and fed to the matrix units (2 for bf16, 1 for int8).
  int64_t matrix_element_bytes() const { return numerics == MatrixNumerics::int8 ? 1 : 2; }
  // Devices a replica can run on: chips x (cores when each core owns its memory, else 1).
  int64_t replica_devices() const { return chips * (offchip_per_core ? cores : 1); }
  std::string summary() const;  // "4x128x128 MXU x 2 cores, 1050 MHz, 275 TFLOP/s, HBM 1200 GB/s"
};

// Throws SpecError naming the first field out of its range or inconsistent with another.
void validate(const TpuSpec& spec);

// The built-in presets: v1, v2, v3, v4, v5e, v6e, edge.
std::vector<std::string> preset_names();
// Throws SpecError listing the presets when `name` is not one.
TpuSpec preset(const std::string& name);
bool is_preset(const std::string& name);

// JSON: {"base": "v4", "name": "...", "mxu": {"rows": 64}, ...}. Without "base" every field must
// be given. Errors (SpecError) name the file and the field.
TpuSpec spec_from_json_text(const std::string& text, const std::string& origin);
TpuSpec spec_from_json_file(const std::string& path);
// Applies "mxu.rows" -> "64" style overrides (values parsed per field type) and re-validates.
void apply_overrides(TpuSpec& spec, const std::map<std::string, std::string>& overrides);
// Canonical JSON of every field (round-trips through spec_from_json_text).
std::string spec_to_json(const TpuSpec& spec);
// Every settable field (dotted names), with its kind, unit, range and description.
const SpecFields<TpuSpec>& spec_fields();

}  // namespace mimic::models::tpu
