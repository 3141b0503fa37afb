// TpuSpec: field table (the single list of settable fields), validation, JSON and overrides.
#include "models/tpu/tpu_spec.h"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"

namespace mimic::models::tpu {
namespace {

using json = nlohmann::json;

enum class FieldType { u64, i64, boolean, string, dataflow, numerics };

struct Field {
  std::string name;
  FieldType type;
  std::function<void*(TpuSpec&)> at;
  int64_t min = 0;        // smallest allowed value for integers
  bool required = false;  // must be given when a JSON file has no "base"
};

std::vector<Field> make_fields() {
  std::vector<Field> f;
  auto add = [&](std::string name, FieldType t, std::function<void*(TpuSpec&)> at, int64_t min,
                 bool req) {
    f.push_back({std::move(name), t, std::move(at), min, req});
  };
  using T = FieldType;
  add(
      "name", T::string, [](TpuSpec& s) { return &s.name; }, 0, false);
  add(
      "description", T::string, [](TpuSpec& s) { return &s.description; }, 0, false);
  add(
      "clock_hz", T::u64, [](TpuSpec& s) { return &s.clock_hz; }, 1, true);
  add(
      "cores", T::i64, [](TpuSpec& s) { return &s.cores; }, 1, true);
  add(
      "numerics", T::numerics, [](TpuSpec& s) { return &s.numerics; }, 0, true);
  add(
      "mxu.rows", T::i64, [](TpuSpec& s) { return &s.mxu.rows; }, 1, true);
  add(
      "mxu.cols", T::i64, [](TpuSpec& s) { return &s.mxu.cols; }, 1, true);
  add(
      "mxu.per_core", T::i64, [](TpuSpec& s) { return &s.mxu.per_core; }, 1, true);
  add(
      "mxu.dataflow", T::dataflow, [](TpuSpec& s) { return &s.mxu.dataflow; }, 0, false);
  add(
      "mxu.weight_double_buffering", T::boolean,
      [](TpuSpec& s) { return &s.mxu.weight_double_buffering; }, 0, false);
  add(
      "mxu.weight_fifo_tiles", T::i64, [](TpuSpec& s) { return &s.mxu.weight_fifo_tiles; }, 1,
      false);
  add(
      "mxu.accumulator_bytes", T::i64, [](TpuSpec& s) { return &s.mxu.accumulator_bytes; }, 1,
      true);
  add(
      "vpu.lanes", T::i64, [](TpuSpec& s) { return &s.vpu.lanes; }, 1, true);
  add(
      "vpu.sublanes", T::i64, [](TpuSpec& s) { return &s.vpu.sublanes; }, 1, true);
  add(
      "vpu.alus", T::i64, [](TpuSpec& s) { return &s.vpu.alus; }, 1, false);
  add(
      "vpu.latency_cycles", T::i64, [](TpuSpec& s) { return &s.vpu.latency_cycles; }, 0, false);
  add(
      "vpu.fused_epilogue", T::boolean, [](TpuSpec& s) { return &s.vpu.fused_epilogue; }, 0, false);
  add(
      "dma.engines_per_core", T::i64, [](TpuSpec& s) { return &s.dma.engines_per_core; }, 1, false);
  add(
      "dma.setup_cycles", T::u64, [](TpuSpec& s) { return &s.dma.setup_cycles; }, 0, false);
  auto memory = [&](const std::string& prefix, MemorySpec TpuSpec::*m, bool capacity_required,
                    int64_t min_bw, bool bandwidth_required = true) {
    add(
        prefix + ".name", T::string, [m](TpuSpec& s) { return &(s.*m).name; }, 0, false);
    add(
        prefix + ".bytes", T::u64, [m](TpuSpec& s) { return &(s.*m).bytes; }, 0, capacity_required);
    add(
        prefix + ".bytes_per_s", T::u64, [m](TpuSpec& s) { return &(s.*m).bytes_per_s; }, min_bw,
        bandwidth_required);
    add(
        prefix + ".latency_cycles", T::u64, [m](TpuSpec& s) { return &(s.*m).latency_cycles; }, 0,
        false);
    add(
        prefix + ".min_access_bytes", T::u64, [m](TpuSpec& s) { return &(s.*m).min_access_bytes; },
        1, false);
  };
  memory("host_link", &TpuSpec::host_link, false, 1);
  memory("offchip", &TpuSpec::offchip, true, 0);
  memory("onchip", &TpuSpec::onchip, true, 1);
  memory("ici", &TpuSpec::ici, false, 0, false);
  add(
      "chips", T::i64, [](TpuSpec& s) { return &s.chips; }, 1, false);
  add(
      "offchip_per_core", T::boolean, [](TpuSpec& s) { return &s.offchip_per_core; }, 0, false);
  add(
      "activations_on_chip", T::boolean, [](TpuSpec& s) { return &s.activations_on_chip; }, 0,
      false);
  add(
      "quantum_cycles", T::u64, [](TpuSpec& s) { return &s.quantum_cycles; }, 1, false);
  return f;
}

const std::vector<Field>& fields() {
  static const std::vector<Field> f = make_fields();
  return f;
}

const Field* find_field(const std::string& name) {
  for (const auto& f : fields())
    if (f.name == name) return &f;
  return nullptr;
}

[[noreturn]] void field_error(const std::string& origin, const std::string& field,
                              const std::string& what) {
  throw InvalidArgument(fmt::format("tpu-emu: {}: field '{}' {}", origin, field, what));
}

int64_t parse_integer(const json& v, const std::string& origin, const Field& f) {
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      field_error(origin, f.name, "is too large");
    int64_t i = v.get<int64_t>();
    if (i < f.min) field_error(origin, f.name, fmt::format("must be >= {}, got {}", f.min, i));
    return i;
  }
  if (!v.is_number())
    field_error(origin, f.name, fmt::format("must be an integer, got {}", v.dump()));
  double d = v.get<double>();
  if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9.2e18)
    field_error(origin, f.name, fmt::format("must be an integer, got {}", v.dump()));
  if (d < static_cast<double>(f.min))
    field_error(origin, f.name, fmt::format("must be >= {}, got {}", f.min, v.dump()));
  return static_cast<int64_t>(d);
}

Dataflow parse_dataflow(const std::string& s, const std::string& origin, const std::string& field) {
  if (s == "ws" || s == "weight_stationary") return Dataflow::weight_stationary;
  if (s == "os" || s == "output_stationary") return Dataflow::output_stationary;
  if (s == "is" || s == "input_stationary") return Dataflow::input_stationary;
  field_error(origin, field, fmt::format("must be ws, os or is, got '{}'", s));
}

MatrixNumerics parse_numerics(const std::string& s, const std::string& origin,
                              const std::string& field) {
  if (s == "bf16") return MatrixNumerics::bf16;
  if (s == "int8") return MatrixNumerics::int8;
  field_error(origin, field, fmt::format("must be bf16 or int8, got '{}'", s));
}

void set_field(TpuSpec& spec, const Field& f, const json& v, const std::string& origin) {
  void* p = f.at(spec);
  switch (f.type) {
    case FieldType::u64:
      *static_cast<uint64_t*>(p) = static_cast<uint64_t>(parse_integer(v, origin, f));
      break;
    case FieldType::i64:
      *static_cast<int64_t*>(p) = parse_integer(v, origin, f);
      break;
    case FieldType::boolean:
      if (!v.is_boolean())
        field_error(origin, f.name, fmt::format("must be true or false, got {}", v.dump()));
      *static_cast<bool*>(p) = v.get<bool>();
      break;
    case FieldType::string:
      if (!v.is_string())
        field_error(origin, f.name, fmt::format("must be a string, got {}", v.dump()));
      *static_cast<std::string*>(p) = v.get<std::string>();
      break;
    case FieldType::dataflow:
      if (!v.is_string())
        field_error(origin, f.name, fmt::format("must be ws, os or is, got {}", v.dump()));
      *static_cast<Dataflow*>(p) = parse_dataflow(v.get<std::string>(), origin, f.name);
      break;
    case FieldType::numerics:
      if (!v.is_string())
        field_error(origin, f.name, fmt::format("must be bf16 or int8, got {}", v.dump()));
      *static_cast<MatrixNumerics*>(p) = parse_numerics(v.get<std::string>(), origin, f.name);
      break;
  }
}

json get_field(const TpuSpec& spec, const Field& f) {
  void* p = f.at(const_cast<TpuSpec&>(spec));
  switch (f.type) {
    case FieldType::u64:
      return *static_cast<uint64_t*>(p);
    case FieldType::i64:
      return *static_cast<int64_t*>(p);
    case FieldType::boolean:
      return *static_cast<bool*>(p);
    case FieldType::string:
      return *static_cast<std::string*>(p);
    case FieldType::dataflow:
      return dataflow_name(*static_cast<Dataflow*>(p));
    case FieldType::numerics:
      return numerics_name(*static_cast<MatrixNumerics*>(p));
  }
  return nullptr;
}

// Flattens {"mxu": {"rows": 64}} into ("mxu.rows", 64) pairs.
void flatten(const json& obj, const std::string& prefix,
             std::vector<std::pair<std::string, json>>& out, const std::string& origin) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it.value().is_object() && !find_field(key))
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
  auto fail = [&](const std::string& field, const std::string& what) {
    throw InvalidArgument(fmt::format("tpu spec '{}': {} {}", s.name, field, what));
  };
  if (s.clock_hz == 0 || s.clock_hz > 1'000'000'000'000ull)
    fail("clock_hz", fmt::format("must be in (0, 1e12], got {}", s.clock_hz));
  if (s.cores < 1 || s.cores > 64)
    fail("cores", fmt::format("must be in [1, 64], got {}", s.cores));
  if (s.mxu.rows < 1 || s.mxu.cols < 1)
    fail("mxu.rows/mxu.cols", fmt::format("must be > 0, got {}x{}", s.mxu.rows, s.mxu.cols));
  if (s.mxu.rows > 4096 || s.mxu.cols > 4096)
    fail("mxu.rows/mxu.cols", fmt::format("must be <= 4096, got {}x{}", s.mxu.rows, s.mxu.cols));
  if (s.mxu.per_core < 1 || s.mxu.per_core > 64)
    fail("mxu.per_core", fmt::format("must be in [1, 64], got {}", s.mxu.per_core));
  if (s.mxu.weight_fifo_tiles < 1)
    fail("mxu.weight_fifo_tiles", fmt::format("must be >= 1, got {}", s.mxu.weight_fifo_tiles));
  int64_t min_acc = s.mxu.cols * 4;
  if (s.mxu.accumulator_bytes < min_acc)
    fail("mxu.accumulator_bytes",
         fmt::format("must hold at least one row of {} 32-bit sums ({} bytes), got {}", s.mxu.cols,
                     min_acc, s.mxu.accumulator_bytes));
  if (s.vpu.lanes < 1 || s.vpu.sublanes < 1 || s.vpu.alus < 1)
    fail("vpu", "lanes, sublanes and alus must be > 0");
  if (s.dma.engines_per_core < 1) fail("dma.engines_per_core", "must be >= 1");
  if (s.host_link.bytes_per_s == 0) fail("host_link.bytes_per_s", "must be > 0");
  if (s.offchip.bytes > 0 && s.offchip.bytes_per_s == 0)
    fail("offchip.bytes_per_s", "must be > 0 when offchip.bytes > 0");
  if (s.onchip.bytes == 0) fail("onchip.bytes", "must be > 0");
  if (s.onchip.bytes_per_s == 0) fail("onchip.bytes_per_s", "must be > 0");
  for (const MemorySpec* m : {&s.host_link, &s.offchip, &s.onchip, &s.ici})
    if (m->min_access_bytes == 0) fail(m->name + ".min_access_bytes", "must be > 0");
  if (s.offchip.bytes == 0 && !s.activations_on_chip)
    fail("activations_on_chip",
         "must be true for a chip without off-chip memory (offchip.bytes = 0)");
  if (s.quantum_cycles == 0) fail("quantum_cycles", "must be > 0");
  if (s.chips < 1 || s.chips > 65536)
    fail("chips", fmt::format("must be in [1, 65536], got {}", s.chips));
  if (s.chips > 1 && s.ici.bytes_per_s == 0)
    fail("ici.bytes_per_s", fmt::format("must be > 0 for a slice of {} chips", s.chips));
}

std::vector<std::string> spec_fields() {
  std::vector<std::string> out;
  for (const auto& f : fields()) out.push_back(f.name);
  return out;
}

TpuSpec spec_from_json_text(const std::string& text, const std::string& origin) {
  json j;
  // json::exception: syntax errors, and also numbers out of a double's range (out_of_range 406).
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw InvalidArgument(fmt::format("tpu-emu: {}: invalid JSON: {}", origin, e.what()));
  }
  if (!j.is_object())
    throw InvalidArgument(fmt::format("tpu-emu: {}: must be a JSON object", origin));
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
    const Field* f = find_field(key);
    if (!f)
      throw InvalidArgument(fmt::format("tpu-emu: {}: unknown field '{}' (fields: {})", origin, key,
                                        fmt::join(spec_fields(), ", ")));
    set_field(spec, *f, value, origin);
    given.push_back(key);
    if (has_base)
      spec.sources[key] = fmt::format("{} (overrides {})", origin, j["base"].get<std::string>());
    else
      spec.sources[key] = origin;
  }
  if (!has_base)
    for (const auto& f : fields())
      if (f.required && std::find(given.begin(), given.end(), f.name) == given.end())
        field_error(origin, f.name,
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
    const Field* f = find_field(key);
    if (!f)
      throw InvalidArgument(fmt::format("tpu-emu: --set: unknown field '{}' (fields: {})", key,
                                        fmt::join(spec_fields(), ", ")));
    json v;
    if (f->type == FieldType::string || f->type == FieldType::dataflow ||
        f->type == FieldType::numerics) {
      v = text;
    } else if (f->type == FieldType::boolean) {
      if (text == "true" || text == "1" || text == "on")
        v = true;
      else if (text == "false" || text == "0" || text == "off")
        v = false;
      else
        field_error("--set", key, fmt::format("must be true or false, got '{}'", text));
    } else {
      try {
        v = json::parse(text);
      } catch (const json::exception&) {
        field_error("--set", key, fmt::format("must be an integer, got '{}'", text));
      }
    }
    set_field(spec, *f, v, "--set");
    spec.sources[key] = "--set override";
  }
  validate(spec);
}

std::string spec_to_json(const TpuSpec& spec) {
  json j = json::object();
  for (const auto& f : fields()) {
    json* node = &j;
    std::string name = f.name;
    for (size_t dot; (dot = name.find('.')) != std::string::npos; name = name.substr(dot + 1))
      node = &(*node)[name.substr(0, dot)];
    (*node)[name] = get_field(spec, f);
  }
  json sources = json::object();
  for (const auto& [k, v] : spec.sources) sources[k] = v;
  j["sources"] = sources;
  return j.dump();
}

}  // namespace mimic::models::tpu
