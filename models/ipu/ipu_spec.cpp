#include "models/ipu/ipu_spec.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace mimic::models::ipu {
namespace {

using U = models::Unit;
constexpr int64_t kMiB = 1ll << 20;
constexpr int64_t kBig = 10'000'000'000'000;  // bandwidth ceiling, 10 TB/s
constexpr int64_t kCycles = 1'000'000'000;    // latency ceiling

models::SpecFields<IpuSpec> make_fields() {
  models::SpecFields<IpuSpec> t("ipu-emu");
  auto add = [&t](const char* name, U unit, int64_t min, int64_t max, const char* help, auto at) {
    t.integer({name, unit, help, min, max, true}, at);
  };
  add("tiles", U::count, 1, 16384, "tiles per IPU", SPEC_MEMBER(tiles));
  add("tile_sram_bytes", U::bytes, 4096, 64 * kMiB, "SRAM per tile", SPEC_MEMBER(tile_sram_bytes));
  add("clock_hz", U::hz, 1'000'000, 10'000'000'000, "tile clock", SPEC_MEMBER(clock_hz));
  add("worker_contexts", U::count, 1, 32, "worker threads per tile", SPEC_MEMBER(worker_contexts));
  add("amp_fp32_macs_per_cycle", U::count, 1, 4096, "AMP MACs per cycle per tile, fp32",
      SPEC_MEMBER(amp_fp32_macs_per_cycle));
  add("amp_fp16_fp32_macs_per_cycle", U::count, 1, 4096,
      "AMP MACs per cycle per tile, fp16 inputs with fp32 partials",
      SPEC_MEMBER(amp_fp16_fp32_macs_per_cycle));
  add("amp_fp16_fp16_macs_per_cycle", U::count, 1, 4096,
      "AMP MACs per cycle per tile, fp16 inputs with fp16 partials",
      SPEC_MEMBER(amp_fp16_fp16_macs_per_cycle));
  add("amp_fp32_input_channels", U::count, 1, 1024, "AMP input-channel block, fp32",
      SPEC_MEMBER(amp_fp32_input_channels));
  add("amp_fp16_input_channels", U::count, 1, 1024, "AMP input-channel block, fp16",
      SPEC_MEMBER(amp_fp16_input_channels));
  add("amp_output_channels", U::count, 1, 1024, "AMP output-channel block",
      SPEC_MEMBER(amp_output_channels));
  add("amp_vertex_overhead_cycles", U::cycles, 0, 1'000'000, "worker setup per AMP vertex",
      SPEC_MEMBER(amp_vertex_overhead_cycles));
  add("vector_bytes_per_cycle", U::bytes, 4, 1024,
      "vector datapath bytes per worker instruction (multiple of 4)",
      SPEC_MEMBER(vector_bytes_per_cycle));
  add("vector_vertex_overhead_cycles", U::cycles, 0, 1'000'000, "worker setup per vector vertex",
      SPEC_MEMBER(vector_vertex_overhead_cycles));
  add("transcendental_cycles_per_element", U::cycles, 1, 1000,
      "worker cycles per element of exp/log/tanh/erf",
      SPEC_MEMBER(transcendental_cycles_per_element));
  add("exchange_bytes_per_cycle", U::bytes, 1, 1024,
      "exchange bytes per cycle per tile and direction", SPEC_MEMBER(exchange_bytes_per_cycle));
  add("exchange_latency_cycles", U::cycles, 0, kCycles,
      "cycles per exchange phase (setup and traversal)", SPEC_MEMBER(exchange_latency_cycles));
  add("internal_sync_cycles", U::cycles, 0, kCycles, "cycles of a sync within one IPU",
      SPEC_MEMBER(internal_sync_cycles));
  add("external_sync_cycles", U::cycles, 0, kCycles, "cycles of a sync across IPUs",
      SPEC_MEMBER(external_sync_cycles));
  add("ipu_link_bytes_per_second", U::bytes_per_s, 1'000'000, kBig,
      "IPU-Link bandwidth between neighbouring IPUs, each direction",
      SPEC_MEMBER(ipu_link_bytes_per_second));
  t.integer({"ipu_link_efficiency_percent", U::none,
             "share of the IPU-Link rate a transfer achieves (default 100)", 1, 100, false},
            SPEC_MEMBER(ipu_link_efficiency_percent));
  add("ipu_link_latency_cycles", U::cycles, 0, kCycles, "IPU-Link latency per hop",
      SPEC_MEMBER(ipu_link_latency_cycles));
  add("host_bytes_per_second", U::bytes_per_s, 1'000'000, kBig,
      "PCIe host bandwidth, each direction", SPEC_MEMBER(host_bytes_per_second));
  add("host_latency_cycles", U::cycles, 0, kCycles, "host transfer latency",
      SPEC_MEMBER(host_latency_cycles));
  add("ipus_per_host_link", U::count, 1, 4096, "IPUs sharing one host link",
      SPEC_MEMBER(ipus_per_host_link));
  add("max_ipus", U::count, 1, 4096, "largest num_ipus of a system", SPEC_MEMBER(max_ipus));
  add("ipus_per_rack", U::count, 1, 4096,
      "IPUs joined by IPU-Links (one rack); the links between racks are GW-Links",
      SPEC_MEMBER(ipus_per_rack));
  add("gw_link_bytes_per_second", U::bytes_per_s, 1'000'000, kBig,
      "GW-Link bandwidth between racks, each direction", SPEC_MEMBER(gw_link_bytes_per_second));
  t.flag({"ipu_link_ring", U::none, "the links close into a ring (else one chain)"},
         SPEC_MEMBER(ipu_link_ring));
  add("tile_base_code_bytes", U::bytes, 0, 64 * kMiB,
      "always-live code per tile (runtime, supervisor, stacks)", SPEC_MEMBER(tile_base_code_bytes));
  add("vertex_code_bytes", U::bytes, 0, 64 * kMiB, "code per distinct vertex type on a tile",
      SPEC_MEMBER(vertex_code_bytes));
  add("vertex_state_bytes", U::bytes, 0, kMiB, "state per vertex instance",
      SPEC_MEMBER(vertex_state_bytes));
  add("compute_set_code_bytes", U::bytes, 0, kMiB, "control code per compute set on a tile",
      SPEC_MEMBER(compute_set_code_bytes));
  add("exchange_code_bytes", U::bytes, 0, kMiB, "exchange code per exchange on a tile",
      SPEC_MEMBER(exchange_code_bytes));
  return t;
}

using Sources = std::map<std::string, std::string>;

// How the IPU-Machines of a Pod are cabled (Graphcore's Pod build guides and link notes).
constexpr const char* kMk2RackSource =
    "[R] IPU-Links 'connect IPUs both within and between IPU-Machines in a Pod', GW-Links "
    "'connect IPU-Machines horizontally across Bow Pod64 racks' (Bow Pod DA build guide, "
    "glossary; its Pod16 leaves the GW-Link ports unused): a rack of 16 machines x 4 IPUs";
constexpr const char* kMk2RingSource =
    "[R] the IPU-Links of a rack 'form a loop in the vertical direction', the GW-Links 'a "
    "horizontal ... looped topology' across racks (Switched GW-Links in large scale Bow Pod "
    "systems); replicas take 'the required ring structure for communication' (Memory and "
    "Performance Optimisation Guide, 7)";

// Sources shared by the Mk2-family presets (gc200 and bow run the same tile design).
Sources mk2_common_sources() {
  return {
      {"tiles", "[R-3P S9] 1,472 tiles"},
      {"tile_sram_bytes", "[R S8] OOM message 'tiles only have 638976 bytes'"},
      {"worker_contexts", "[R-3P S9] 6 threads per tile (8832 per IPU); poplibs NUM_WORKERS = 6"},
      {"amp_fp16_fp16_macs_per_cycle", "[D] FP16.16 peak / (tiles * clock * 2)"},
      {"amp_fp16_fp32_macs_per_cycle",
       "[I] half of fp16 partials: poplibs' early DeviceInfo has fp16AccumConvUnitsPerTile = 8, "
       "fp32AccumConvUnitsPerTile = 4"},
      {"amp_fp32_input_channels",
       "[I] CONV_UNIT_INPUT_LOAD_ELEMS_FLOAT = 2 x pipeline depth 4 (poplibs)"},
      {"amp_fp16_input_channels",
       "[I] CONV_UNIT_INPUT_LOAD_ELEMS_HALF = 4 x pipeline depth 4 (poplibs)"},
      {"amp_output_channels", "[I] 16 conv units: 64 MACs/cycle = 16 outputs x 4 inputs"},
      {"amp_vertex_overhead_cycles", "[I] order of poplin ConvPartial estimator overheads"},
      {"vector_bytes_per_cycle", "[R S8] poplibs dataPathWidth = 64 bits"},
      {"vector_vertex_overhead_cycles", "[I] order of popops basicOpLoopCycles overhead"},
      {"transcendental_cycles_per_element", "[I] no published figure"},
      {"exchange_bytes_per_cycle", "[D] 8 TB/s (R-3P S9) / (1472 tiles * 1.33 GHz) = 4.1"},
      {"exchange_latency_cycles", "[I] Jia et al. absolute latencies not retrieved"},
      {"internal_sync_cycles", "[I] sync cost not documented (docs/references.md §E)"},
      {"external_sync_cycles", "[I] sync cost not documented (docs/references.md §E)"},
      {"ipu_link_latency_cycles", "[I] ~1 us; Jia et al. absolute latencies not retrieved"},
      {"ipu_link_efficiency_percent",
       "[R-3P] poplibs' IPU model: linkEfficiency = 0.85 (addGlobalExchangeConstraints); measured "
       "on an IPU-M2000: 83% of the Bow-2000's 512 Gbps (gc-iputraffictest's documented output)"},
      {"host_bytes_per_second", "[D] PCIe Gen4 x16 64 GB/s (R-3P S9) / 2 directions"},
      {"host_latency_cycles", "[I] ~1 us"},
      {"ipus_per_host_link",
       "[R] the host servers feed the IPU-Machines over RoCE: a Pod16 has one server (Bow Pod DA "
       "build guide), a Pod64 1-4 and a Pod256 4-16 (Bow Pod64 datasheet), so at most one per 16 "
       "IPUs, whose host link those 16 share"},
      {"max_ipus", "[R] IPU-POD256 and Bow Pod256: 64 machines of 4 IPUs (Bow Pod64 datasheet)"},
      {"ipus_per_rack", kMk2RackSource},
      {"ipu_link_ring", kMk2RingSource},
      {"gw_link_bytes_per_second",
       "[I] as the Bow-2000's 2 x 100 Gbps GW-Links (R S9) = 25 GB/s, the same IPU-Gateway"},
      {"tile_base_code_bytes", "[I] Poplar always-live code per tile, not published"},
      {"vertex_code_bytes", "[I]"},
      {"vertex_state_bytes", "[I]"},
      {"compute_set_code_bytes", "[I]"},
      {"exchange_code_bytes", "[I]"},
  };
}

// The M2000 and Bow-2000 share their IPU-Links.
constexpr const char* kMk2IpuLinkSource =
    "[D] Bow-2000 datasheet 'IPU-Link 512 Gbps' (R S9) = 2 links of 128 Gbit/s between "
    "neighbours (poplibs' IPU model: 2 links a rung of the ladder, 128 Gibit/s each, 85% "
    "efficiency) x 2 directions; measured on an IPU-M2000: 423 Gbit/s both directions summed "
    "(gc-iputraffictest's documented output), 26.5 GB/s each way, 83% of this";

IpuSpec mk2_common() {
  IpuSpec s;
  s.tiles = 1472;
  s.tile_sram_bytes = 638976;
  s.worker_contexts = 6;
  s.amp_fp32_macs_per_cycle = 16;
  s.amp_fp16_fp32_macs_per_cycle = 32;
  s.amp_fp16_fp16_macs_per_cycle = 64;
  s.amp_fp32_input_channels = 8;
  s.amp_fp16_input_channels = 16;
  s.amp_output_channels = 16;
  s.amp_vertex_overhead_cycles = 60;
  s.vector_bytes_per_cycle = 8;
  s.vector_vertex_overhead_cycles = 20;
  s.transcendental_cycles_per_element = 8;
  s.exchange_bytes_per_cycle = 4;
  s.exchange_latency_cycles = 100;
  s.internal_sync_cycles = 150;
  s.external_sync_cycles = 1500;
  s.ipu_link_bytes_per_second = 32'000'000'000ull;
  s.ipu_link_efficiency_percent = 85;
  s.host_bytes_per_second = 32'000'000'000ull;
  s.ipus_per_host_link = 16;
  s.max_ipus = 256;
  s.ipus_per_rack = 64;
  s.gw_link_bytes_per_second = 25'000'000'000ull;
  s.ipu_link_ring = true;
  s.tile_base_code_bytes = 12288;
  s.vertex_code_bytes = 1024;
  s.vertex_state_bytes = 32;
  s.compute_set_code_bytes = 24;
  s.exchange_code_bytes = 32;
  s.sources = mk2_common_sources();
  return s;
}

IpuSpec make_gc200() {
  IpuSpec s = mk2_common();
  s.name = "gc200";
  s.clock_hz = 1'330'000'000;
  s.ipu_link_latency_cycles = 1600;
  s.host_latency_cycles = 1330;
  s.sources["clock_hz"] = "[D] 250e12 / (1472 * 128) = 1.33 GHz; R-3P '1.35 GHz'";
  s.sources["amp_fp32_macs_per_cycle"] =
      "[D] 62.5 TFLOPS fp32 (R-3P S9) / (1472 * 1.33 GHz * 2) = 16";
  s.sources["amp_fp16_fp16_macs_per_cycle"] =
      "[D] 250 TFLOPS FP16.16 (R-3P S9) / (1472 * 1.33 GHz * 2) = 64";
  s.sources["ipu_link_bytes_per_second"] = kMk2IpuLinkSource;
  return s;
}

IpuSpec make_bow() {
  IpuSpec s = mk2_common();
  s.name = "bow";
  s.clock_hz = 1'850'000'000;
  s.ipu_link_latency_cycles = 2200;
  s.host_latency_cycles = 1850;
  s.sources["tiles"] = "[R S9] Bow-2000 datasheet: 5,888 cores / 4 IPUs";
  s.sources["tile_sram_bytes"] = "[R-3P S9] same 900 MB In-Processor-Memory as Mk2";
  s.sources["clock_hz"] = "[R-3P] 1.85 GHz; [D] 350e12 / (1472 * 128) = 1.86 GHz";
  s.sources["amp_fp16_fp16_macs_per_cycle"] =
      "[D] 350 TFLOPS (R-3P S9) / (1472 * 1.85 GHz * 2) = 64";
  s.sources["amp_fp32_macs_per_cycle"] = "[I] Mk2 tile: fp32 peak not published for Bow";
  s.sources["ipu_link_bytes_per_second"] = kMk2IpuLinkSource;
  s.sources["gw_link_bytes_per_second"] = "[R S9] Bow-2000: 2 x 100 Gbps GW-Links = 25 GB/s";
  s.sources["host_bytes_per_second"] = "[I] PCIe Gen4 host link (R S9), 32 GB/s each direction";
  return s;
}

IpuSpec make_gc2() {
  IpuSpec s = mk2_common();
  s.name = "gc2";
  s.tiles = 1216;
  s.tile_sram_bytes = 262144;
  s.clock_hz = 1'600'000'000;
  s.amp_fp32_macs_per_cycle = 8;
  s.amp_fp16_fp32_macs_per_cycle = 16;
  s.amp_fp16_fp16_macs_per_cycle = 32;
  s.amp_output_channels = 8;
  s.ipu_link_bytes_per_second = 64'000'000'000ull;
  s.ipu_link_latency_cycles = 2000;
  s.host_latency_cycles = 1600;
  s.max_ipus = 16;
  s.ipus_per_host_link = 16;
  s.sources["ipus_per_host_link"] = "[I] C2 cards in one server: its PCIe, shared";
  s.ipus_per_rack = 16;
  s.gw_link_bytes_per_second = 64'000'000'000ull;
  s.ipu_link_ring = false;
  s.sources["ipus_per_rack"] = "[I] C2 cards have no IPU-Gateway: one IPU-Link chain";
  s.sources["ipu_link_ring"] = "[I] C2 cards: one IPU-Link chain";
  s.sources["gw_link_bytes_per_second"] = "[I] unused (no gateway): the IPU-Link bandwidth";
  s.sources["tiles"] = "[R-3P S7 notes] 1216 tiles";
  s.sources["tile_sram_bytes"] = "[R-3P S7 notes] 256 KiB per tile, 304 MiB total";
  s.sources["worker_contexts"] = "[R-3P S7 notes] 6 worker threads per tile (7296 per IPU)";
  s.sources["clock_hz"] =
      "[D] '6 clock latency (~3.75 ns)' (R-3P) and 124.5e12 / (1216 * 64) = 1.6 GHz";
  s.sources["amp_fp32_macs_per_cycle"] =
      "[D] 31.1 TFLOPS fp32 (R-3P S7) / (1216 * 1.6 GHz * 2) = 8";
  s.sources["amp_fp16_fp16_macs_per_cycle"] =
      "[D] 124.5 TFLOPS mixed precision (R-3P S7) / (1216 * 1.6 GHz * 2) = 32, taken as the "
      "fastest AMP mode";
  s.sources["amp_output_channels"] =
      "[I] 8 conv units (poplibs early DeviceInfo): 32 MACs = 8 outputs x 4 inputs";
  s.sources["exchange_bytes_per_cycle"] =
      "[I] same fabric width as Mk2; Mk1 exchange bandwidth not retrieved";
  s.sources["ipu_link_bytes_per_second"] =
      "[D] C2 board: 2 links of 64 GB/s bidirectional between the pair (R-3P S7 notes) = 64 GB/s "
      "each direction";
  s.sources["host_bytes_per_second"] = "[M] PCIe Gen4 x16, 32 GB/s each direction";
  s.sources["max_ipus"] = "[I] 8 C2 cards";
  return s;
}

void apply_json(IpuSpec& s, const nlohmann::json& j, const std::string& origin, bool require_all) {
  std::map<std::string, bool> seen;
  for (const auto& [key, value] : j.items()) {
    if (key == "base" || key == "name" || key == "description") continue;
    spec_fields().set_json(s, key, value, origin);
    s.sources[key] = "[" + origin + "]";
    seen[key] = true;
  }
  if (require_all)
    for (const auto& f : spec_fields().fields())
      if (!seen.count(f.info.name))
        throw SpecError(
            fmt::format("ipu-emu: {}: missing field '{}' ({}); give every field or \"base\": "
                        "\"gc200\" to start from a preset",
                        origin, f.info.name, f.info.help));
}

}  // namespace

uint64_t IpuSpec::cycles_for(uint64_t bytes, uint64_t bytes_per_second) const {
  if (bytes == 0 || bytes_per_second == 0) return 0;
  // bytes * clock / bandwidth, rounded up, without overflowing for large transfers.
  unsigned __int128 num = static_cast<unsigned __int128>(bytes) * clock_hz;
  return static_cast<uint64_t>((num + bytes_per_second - 1) / bytes_per_second);
}

const models::SpecFields<IpuSpec>& spec_fields() {
  static const models::SpecFields<IpuSpec> table = make_fields();
  return table;
}

std::vector<std::string> preset_names() {
  return {"gc2", "gc200", "bow"};
}

bool is_preset(const std::string& name) {
  return name == "gc2" || name == "gc200" || name == "bow";
}

IpuSpec preset(const std::string& name) {
  if (name == "gc2") return make_gc2();
  if (name == "gc200") return make_gc200();
  if (name == "bow") return make_bow();
  throw SpecError(fmt::format(
      "ipu-emu: unknown preset '{}' (presets: gc2, gc200, bow; or a .json file)", name));
}

IpuSpec specs_from_json(const std::string& text, const std::string& origin) {
  nlohmann::json j;
  // json::exception: syntax errors, and also numbers out of a double's range (out_of_range 406).
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw SpecError(fmt::format("ipu-emu: {} is not valid JSON: {}", origin, e.what()));
  }
  if (!j.is_object()) throw SpecError(fmt::format("ipu-emu: {} must hold a JSON object", origin));
  IpuSpec s;
  bool has_base = j.contains("base");
  if (has_base) {
    if (!j["base"].is_string())
      throw SpecError(fmt::format("ipu-emu: {}: field 'base' must be a preset name", origin));
    s = preset(j["base"].get<std::string>());
  }
  s.name = j.contains("name") && j["name"].is_string() ? j["name"].get<std::string>() : origin;
  apply_json(s, j, origin, !has_base);
  validate(s);
  return s;
}

IpuSpec resolve_specs(const std::string& arg) {
  if (arg.empty())
    throw SpecError("ipu-emu: give a preset (gc2, gc200, bow) or a .json file: ipu-emu:gc200");
  if (is_preset(arg)) return preset(arg);
  if (arg.size() > 5 && arg.compare(arg.size() - 5, 5, ".json") == 0) {
    std::ifstream in(arg);
    if (!in) throw SpecError(fmt::format("ipu-emu: cannot read device file '{}'", arg));
    std::stringstream ss;
    ss << in.rdbuf();
    return specs_from_json(ss.str(), arg);
  }
  return preset(arg);
}

void apply_overrides(IpuSpec& specs, const std::map<std::string, std::string>& overrides) {
  for (const auto& [key, value] : overrides) {
    spec_fields().set_text(specs, key, value, "--set");
    specs.sources[key] = "[override]";
  }
  validate(specs);
}

void validate(const IpuSpec& s) {
  spec_fields().check_ranges(s, s.name);
  if (s.vector_bytes_per_cycle % 4 != 0)
    throw SpecError(
        fmt::format("ipu-emu: {}: field 'vector_bytes_per_cycle' = {} must be a multiple of 4",
                    s.name, s.vector_bytes_per_cycle));
  uint64_t fixed = s.tile_base_code_bytes;
  if (fixed >= s.tile_sram_bytes)
    throw SpecError(fmt::format(
        "ipu-emu: {}: field 'tile_base_code_bytes' = {} leaves no memory on a tile of {} "
        "bytes (tile_sram_bytes)",
        s.name, fixed, s.tile_sram_bytes));
}

std::string to_json(const IpuSpec& specs) {
  nlohmann::json j;
  j["name"] = specs.name;
  for (const auto& f : spec_fields().fields()) j[f.info.name] = f.get(specs);
  return j.dump();
}

}  // namespace mimic::models::ipu
