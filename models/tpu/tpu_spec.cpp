// TpuSpec: the field table (models/spec_fields.h), cross-field validation, JSON and overrides.
#include "models/tpu/tpu_spec.h"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"
#include "models/spec_fields.h"

namespace mimic::models::tpu {
namespace {

using json = nlohmann::json;

using F = FieldInfo;
using U = Unit;
constexpr int64_t kAny = INT64_MAX;

void add_memory(SpecFields<TpuSpec>& t, const std::string& prefix, MemorySpec TpuSpec::*m,
                bool capacity_required, int64_t min_bw, bool bandwidth_required) {
  auto at = [m](auto& s) -> auto& {
    return s.*m;
  };
  t.text(
      {prefix + ".name", U::none, "memory name (hbm, ddr3, vmem, ub, pcie, usb, ici)"},
      [at](auto& s) -> auto& { return at(s).name; });
  t.integer(
      {prefix + ".bytes", U::bytes, "capacity", 0, kAny, capacity_required},
      [at](auto& s) -> auto& { return at(s).bytes; });
  t.integer(
      {prefix + ".bytes_per_s", U::bytes_per_s, "bandwidth", min_bw, kAny, bandwidth_required},
      [at](auto& s) -> auto& { return at(s).bytes_per_s; });
  t.integer(
      {prefix + ".latency_cycles", U::cycles, "latency per transaction"}, [at](auto& s) -> auto& {
        return at(s).latency_cycles;
      });
  t.integer(
      {prefix + ".min_access_bytes", U::bytes, "access granularity", 1}, [at](auto& s) -> auto& {
        return at(s).min_access_bytes;
      });
}

SpecFields<TpuSpec> make_fields() {
  SpecFields<TpuSpec> t("tpu-emu");
  t.text({"name", U::none, "preset or chip name"}, SPEC_MEMBER(name));
  t.text({"description", U::none, "one line for `mimic devices`"}, SPEC_MEMBER(description));
  t.integer({"clock_hz", U::hz, "core clock", 1, 1'000'000'000'000, true}, SPEC_MEMBER(clock_hz));
  t.integer({"cores", U::count, "TensorCores per chip", 1, 64, true}, SPEC_MEMBER(cores));
  t.choice({"numerics", U::none, "matrix-unit arithmetic", 0, kAny, true}, SPEC_MEMBER(numerics),
           std::vector<std::pair<std::string, MatrixNumerics>>{{"bf16", MatrixNumerics::bf16},
                                                               {"int8", MatrixNumerics::int8}});
  t.integer({"mxu.rows", U::count, "systolic array rows, the reduction dimension", 1, 4096, true},
            SPEC_MEMBER(mxu.rows));
  t.integer({"mxu.cols", U::count, "systolic array columns", 1, 4096, true}, SPEC_MEMBER(mxu.cols));
  t.integer({"mxu.per_core", U::count, "matrix units per core", 1, 64, true},
            SPEC_MEMBER(mxu.per_core));
  t.choice({"mxu.dataflow", U::none, "which operand stays in the array"}, SPEC_MEMBER(mxu.dataflow),
           std::vector<std::pair<std::string, Dataflow>>{
               {"ws", Dataflow::weight_stationary},
               {"os", Dataflow::output_stationary},
               {"is", Dataflow::input_stationary},
               {"weight_stationary", Dataflow::weight_stationary},
               {"output_stationary", Dataflow::output_stationary},
               {"input_stationary", Dataflow::input_stationary}});
  t.flag({"mxu.weight_double_buffering", U::none, "next weights shift in during compute"},
         SPEC_MEMBER(mxu.weight_double_buffering));
  t.integer({"mxu.weight_fifo_tiles", U::count, "weight tiles staged before the array", 1},
            SPEC_MEMBER(mxu.weight_fifo_tiles));
  t.integer(
      {"mxu.accumulator_bytes", U::bytes, "partial-sum memory per matrix unit", 1, kAny, true},
      SPEC_MEMBER(mxu.accumulator_bytes));
  t.integer({"vpu.lanes", U::count, "vector lanes", 1, kAny, true}, SPEC_MEMBER(vpu.lanes));
  t.integer({"vpu.sublanes", U::count, "vector sublanes", 1, kAny, true},
            SPEC_MEMBER(vpu.sublanes));
  t.integer({"vpu.alus", U::count, "ALU instructions per cycle per lane and sublane", 1},
            SPEC_MEMBER(vpu.alus));
  t.integer({"vpu.latency_cycles", U::cycles, "vector pipeline depth"},
            SPEC_MEMBER(vpu.latency_cycles));
  t.flag({"vpu.fused_epilogue", U::none, "matmul epilogue as one pipelined pass"},
         SPEC_MEMBER(vpu.fused_epilogue));
  t.integer({"dma.engines_per_core", U::count, "DMA engines per core", 1},
            SPEC_MEMBER(dma.engines_per_core));
  t.integer({"dma.setup_cycles", U::cycles, "descriptor processing per DMA instruction"},
            SPEC_MEMBER(dma.setup_cycles));
  add_memory(t, "host_link", &TpuSpec::host_link, false, 1, true);
  add_memory(t, "offchip", &TpuSpec::offchip, true, 0, true);
  add_memory(t, "onchip", &TpuSpec::onchip, true, 1, true);
  add_memory(t, "ici", &TpuSpec::ici, false, 0, false);
  t.integer({"chips", U::count, "chips of the slice", 1, 65536}, SPEC_MEMBER(chips));
  t.flag({"offchip_per_core", U::none, "each core owns 1/cores of off-chip memory"},
         SPEC_MEMBER(offchip_per_core));
  t.flag({"activations_on_chip", U::none, "activations live on chip when they fit"},
         SPEC_MEMBER(activations_on_chip));
  t.integer({"quantum_cycles", U::cycles, "SystemC time quantum", 1}, SPEC_MEMBER(quantum_cycles));
  return t;
}

[[noreturn]] void field_error(const std::string& origin, const std::string& field,
                              const std::string& what) {
  models::field_error({"tpu-emu", origin}, field, what);
}

// Flattens {"mxu": {"rows": 64}} into ("mxu.rows", 64) pairs.
void flatten(const json& obj, const std::string& prefix,
             std::vector<std::pair<std::string, json>>& out, const std::string& origin) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it.value().is_object() && !spec_fields().find(key))
      flatten(it.value(), key, out, origin);
    else
      out.emplace_back(key, it.value());
  }
}

}  // namespace

const char* dataflow_name(Dataflow d) {
  switch (d) {
    case Dataflow::weight_stationary:
      return "ws";
    case Dataflow::output_stationary:
      return "os";
    case Dataflow::input_stationary:
      return "is";
  }
  return "?";
}

const char* numerics_name(MatrixNumerics n) {
  return n == MatrixNumerics::int8 ? "int8" : "bf16";
}

double TpuSpec::peak_flops_per_s() const {
  return 2.0 * static_cast<double>(peak_macs_per_cycle()) * static_cast<double>(clock_hz);
}

double TpuSpec::ridge_flops_per_byte() const {
  const MemorySpec& m = bandwidth_memory();
  return m.bytes_per_s ? peak_flops_per_s() / static_cast<double>(m.bytes_per_s) : 0.0;
}

std::string TpuSpec::summary() const {
  double gbps = bandwidth_memory().bytes_per_s * 1e-9;
  return fmt::format(
      "{}x {}x{} {} MXU{} x {} core{}, {:.0f} MHz, {:.1f} T{}/s, {} {} GB/s, {} {} MiB/core",
      mxu.per_core, mxu.rows, mxu.cols, numerics_name(numerics), mxu.per_core > 1 ? "s" : "", cores,
      cores > 1 ? "s" : "", clock_hz * 1e-6, peak_flops_per_s() * 1e-12,
      numerics == MatrixNumerics::int8 ? "OP" : "FLOP", bandwidth_memory().name,
      gbps < 10 ? fmt::format("{:.1f}", gbps) : fmt::format("{:.0f}", gbps), onchip.name,
      onchip.bytes / double(1 << 20));
}

void validate(const TpuSpec& s) {
  spec_fields().check_ranges(s, fmt::format("spec '{}'", s.name));
  auto fail = [&](const std::string& field, const std::string& what) {
    field_error(fmt::format("spec '{}'", s.name), field, what);
  };
  int64_t min_acc = s.mxu.cols * 4;
  if (s.mxu.accumulator_bytes < min_acc)
    fail("mxu.accumulator_bytes",
         fmt::format("must hold at least one row of {} 32-bit sums ({} bytes), got {}", s.mxu.cols,
                     min_acc, s.mxu.accumulator_bytes));
  if (s.offchip.bytes > 0 && s.offchip.bytes_per_s == 0)
    fail("offchip.bytes_per_s", "must be > 0 when offchip.bytes > 0");
  if (s.onchip.bytes == 0) fail("onchip.bytes", "must be > 0");
  if (s.offchip.bytes == 0 && !s.activations_on_chip)
    fail("activations_on_chip",
         "must be true for a chip without off-chip memory (offchip.bytes = 0)");
  if (s.chips > 1 && s.ici.bytes_per_s == 0)
    fail("ici.bytes_per_s", fmt::format("must be > 0 for a slice of {} chips", s.chips));
}

const SpecFields<TpuSpec>& spec_fields() {
  static const SpecFields<TpuSpec> table = make_fields();
  return table;
}

TpuSpec spec_from_json_text(const std::string& text, const std::string& origin) {
  json j;
  // json::exception: syntax errors, and also numbers out of a double's range (out_of_range 406).
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw SpecError(fmt::format("tpu-emu: {}: invalid JSON: {}", origin, e.what()));
  }
  if (!j.is_object()) throw SpecError(fmt::format("tpu-emu: {}: must be a JSON object", origin));
  TpuSpec spec;
  bool has_base = j.contains("base");
  if (has_base) {
    if (!j["base"].is_string())
      field_error(origin, "base", fmt::format("must be a preset name, got {}", j["base"].dump()));
    std::string base = j["base"].get<std::string>();
    if (!is_preset(base))
      field_error(origin, "base",
                  fmt::format("names no preset: '{}' (presets: {})", base,
                              fmt::join(preset_names(), ", ")));
    spec = preset(base);
  }
  std::vector<std::pair<std::string, json>> items;
  flatten(j, "", items, origin);
  std::vector<std::string> given;
  std::map<std::string, std::string> cited;
  for (const auto& [key, value] : items) {
    if (key == "base") continue;
    if (key.rfind("sources.", 0) == 0) {
      if (!value.is_string()) field_error(origin, key, "must be a string (a citation)");
      cited[key.substr(8)] = value.get<std::string>();
      continue;
    }
    spec_fields().set_json(spec, key, value, origin);
    given.push_back(key);
    if (has_base)
      spec.sources[key] = fmt::format("{} (overrides {})", origin, j["base"].get<std::string>());
    else
      spec.sources[key] = origin;
  }
  if (!has_base)
    for (const auto& f : spec_fields().fields())
      if (f.info.required && std::find(given.begin(), given.end(), f.info.name) == given.end())
        field_error(origin, f.info.name,
                    "is required (the file has no \"base\" preset to inherit it from)");
  // A file that cites its figures states its sources (this also makes spec_to_json round-trip).
  if (!cited.empty() && !has_base)
    spec.sources = cited;
  else
    for (const auto& [k, v] : cited) spec.sources[k] = v;
  if (spec.name.empty() ||
      (has_base && std::find(given.begin(), given.end(), "name") == given.end()))
    spec.name = origin;
  if (has_base && std::find(given.begin(), given.end(), "description") == given.end())
    spec.description = fmt::format("{} with fields from {}", j["base"].get<std::string>(), origin);
  validate(spec);
  return spec;
}

TpuSpec spec_from_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw IoError(fmt::format("tpu-emu: cannot read chip file '{}'", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return spec_from_json_text(ss.str(), path);
}

void apply_overrides(TpuSpec& spec, const std::map<std::string, std::string>& overrides) {
  for (const auto& [key, text] : overrides) {
    spec_fields().set_text(spec, key, text, "--set");
    spec.sources[key] = "--set override";
  }
  validate(spec);
}

std::string spec_to_json(const TpuSpec& spec) {
  json j = json::object();
  for (const auto& f : spec_fields().fields()) {
    json* node = &j;
    std::string name = f.info.name;
    for (size_t dot; (dot = name.find('.')) != std::string::npos; name = name.substr(dot + 1))
      node = &(*node)[name.substr(0, dot)];
    (*node)[name] = f.get(spec);
  }
  json sources = json::object();
  for (const auto& [k, v] : spec.sources) sources[k] = v;
  j["sources"] = sources;
  return j.dump();
}

}  // namespace mimic::models::tpu
