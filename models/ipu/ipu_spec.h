// Hardware parameters of a Graphcore-style IPU (tile processor chip) and of the system around it:
// tiles with their SRAM, worker contexts, the AMP (matrix) and vector datapaths, the on-chip
// exchange, BSP syncs, IPU-Links and GW-Links between chips and the host links.
//
// Presets gc2 (Colossus Mk1), gc200 (Mk2) and bow follow docs/references.md §D/§E;
// every field of every preset says where its value comes from: [R] retrieved, [R-3P] third-party,
// [D] derived by arithmetic from those, [I] inferred (no published figure; our estimate).
// A JSON file either defines a device (every field) or overrides a preset ("base": "gc200"); the
// same field names are accepted as CompileOptions::overrides ("tiles" -> "736"). Values are parsed
// and validated once here; errors name the field, the value and the allowed range.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/spec_fields.h"

namespace mimic::models::ipu {

// A bad preset name, JSON file or field value.
using SpecError = models::SpecError;

struct IpuSpec {
  std::string name;

  // Tiles and their memory.
  uint64_t tiles = 0;            // tiles per IPU
  uint64_t tile_sram_bytes = 0;  // SRAM per tile (code, vertex state and data)
  uint64_t clock_hz = 0;
  uint64_t worker_contexts = 0;  // hardware worker threads per tile, barrel-scheduled

  // AMP (accumulating matrix product) unit: multiply-accumulates per worker instruction, i.e. per
  // tile cycle when every worker issues AMP instructions, by input type and partials type.
  uint64_t amp_fp32_macs_per_cycle = 0;
  uint64_t amp_fp16_fp32_macs_per_cycle = 0;  // fp16 inputs, fp32 partials
  uint64_t amp_fp16_fp16_macs_per_cycle = 0;  // fp16 inputs, fp16 partials
  // AMP work granularity: input channels consumed and output channels produced per pass; smaller
  // blocks are padded (wasted lanes).
  uint64_t amp_fp32_input_channels = 0;
  uint64_t amp_fp16_input_channels = 0;
  uint64_t amp_output_channels = 0;
  uint64_t amp_vertex_overhead_cycles = 0;  // worker cycles per AMP vertex (setup, pipeline fill)

  // Vector datapath: bytes of operands per worker instruction (f32 x2, f16 x4 for 64 bits).
  uint64_t vector_bytes_per_cycle = 0;
  uint64_t vector_vertex_overhead_cycles = 0;      // worker cycles per vector vertex
  uint64_t transcendental_cycles_per_element = 0;  // exp, log, tanh, erf, ... (worker cycles)

  // On-chip exchange and BSP sync.
  uint64_t exchange_bytes_per_cycle = 0;  // per tile, each direction
  uint64_t exchange_latency_cycles = 0;   // per exchange phase (setup + traversal)
  uint64_t internal_sync_cycles = 0;      // sync of the tiles of one IPU
  uint64_t external_sync_cycles = 0;      // sync across IPUs (Sync-Link / GW)

  // Chip-to-chip and host.
  uint64_t ipu_link_bytes_per_second = 0;  // between neighbouring IPUs, each direction
  // Share of that rate a transfer achieves (link protocol overhead), applied to every IPU-Link hop.
  uint64_t ipu_link_efficiency_percent = 100;
  uint64_t ipu_link_latency_cycles = 0;
  uint64_t host_bytes_per_second = 0;  // one host link, each direction
  uint64_t host_latency_cycles = 0;
  // IPUs sharing one host link (a host server feeds 16 IPUs of a Pod).
  uint64_t ipus_per_host_link = 0;
  uint64_t max_ipus = 0;
  // IPUs of one rack, joined by IPU-Links within and between its machines (a Pod64: 16 machines
  // of 4 IPUs): the hops between racks are GW-Links, at gw_link_bytes_per_second.
  uint64_t ipus_per_rack = 0;
  uint64_t gw_link_bytes_per_second = 0;
  // Whether the links close into a ring (the last IPU links back to the first, within a rack over
  // its IPU-Links, across racks over the GW-Links) or form one chain.
  bool ipu_link_ring = false;

  // Per-tile memory the compiler adds besides tensors (Poplar's "code" and "vertex state").
  uint64_t tile_base_code_bytes = 0;    // runtime, supervisor code, worker stacks
  uint64_t vertex_code_bytes = 0;       // per distinct vertex type on a tile
  uint64_t vertex_state_bytes = 0;      // per vertex instance
  uint64_t compute_set_code_bytes = 0;  // control code per compute set a tile takes part in
  uint64_t exchange_code_bytes = 0;     // exchange code per exchange a tile takes part in

  // Where each field's value comes from (field -> "[D] 250e12/(1472*128)", ...).
  std::map<std::string, std::string> sources;

  // Derived figures.
  double peak_flops_per_s(uint64_t macs_per_cycle) const {
    return 2.0 * static_cast<double>(macs_per_cycle) * static_cast<double>(tiles) *
           static_cast<double>(clock_hz);
  }
  // Cycles to move `bytes` at `bytes_per_second` at this clock (rounded up).
  uint64_t cycles_for(uint64_t bytes, uint64_t bytes_per_second) const;
  // Cycles to move `bytes` over one IPU-Link hop at its achieved rate (latency not included).
  uint64_t ipu_link_cycles(uint64_t bytes) const {
    return cycles_for(bytes, ipu_link_bytes_per_second * ipu_link_efficiency_percent / 100);
  }
};

// Every settable field, in documentation order, with its unit, range and description.
const models::SpecFields<IpuSpec>& spec_fields();

// Preset names ("gc2", "gc200", "bow") and lookup; throws SpecError listing the presets.
std::vector<std::string> preset_names();
IpuSpec preset(const std::string& name);
bool is_preset(const std::string& name);

// Resolves a device argument: a preset name, or a path ending in ".json". Throws SpecError.
IpuSpec resolve_specs(const std::string& arg);
// Parses a JSON document (file contents); `origin` names it in errors.
IpuSpec specs_from_json(const std::string& text, const std::string& origin);
// Applies "field" -> "value" overrides (same names as the JSON fields), then validates.
void apply_overrides(IpuSpec& specs, const std::map<std::string, std::string>& overrides);
// Throws SpecError naming the first field out of range.
void validate(const IpuSpec& specs);

// Lossless JSON round trip (used as the device worker's configuration).
std::string to_json(const IpuSpec& specs);

}  // namespace mimic::models::ipu
