#include "models/spec_fields.h"

#include <fmt/format.h>

#include <cmath>

namespace mimic::models {

using json = nlohmann::json;

const char* unit_name(Unit unit) {
  switch (unit) {
    case Unit::none:
    case Unit::count:
      return "";
    case Unit::bytes:
      return "bytes";
    case Unit::hz:
      return "Hz";
    case Unit::bytes_per_s:
      return "bytes/s";
    case Unit::cycles:
      return "cycles";
  }
  return "";
}

void field_error(const FieldOrigin& at, const std::string& field, const std::string& what) {
  throw SpecError(fmt::format("{}: {}: field '{}' {}", at.device, at.origin, field, what));
}

std::string range_text(const FieldInfo& f) {
  if (f.kind == FieldKind::choice) return fmt::format("{}", fmt::join(f.choices, ", "));
  std::string unit = unit_name(f.unit);
  std::string range =
      f.max == INT64_MAX ? fmt::format(">= {}", f.min) : fmt::format("in [{}, {}]", f.min, f.max);
  return unit.empty() ? range : range + " " + unit;
}

namespace {

[[noreturn]] void out_of_range(const FieldInfo& f, const FieldOrigin& at, const std::string& got) {
  field_error(at, f.name, fmt::format("({}) must be {}, got {}", f.help, range_text(f), got));
}

}  // namespace

int64_t parse_integer(const json& v, const FieldInfo& f, const FieldOrigin& at) {
  if (v.is_string()) {  // "1472" or "1.33e9" in a chip file
    json parsed = json::parse(v.get<std::string>(), nullptr, false);
    if (!parsed.is_number())
      field_error(at, f.name, fmt::format("must be an integer, got {}", v.dump()));
    return parse_integer(parsed, f, at);
  }
  int64_t i = 0;
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      out_of_range(f, at, v.dump());
    i = v.get<int64_t>();
  } else {
    double d = v.is_number() ? v.get<double>() : NAN;
    if (!std::isfinite(d) || d != std::floor(d))
      field_error(at, f.name, fmt::format("must be an integer, got {}", v.dump()));
    if (std::fabs(d) > 9.2e18) out_of_range(f, at, v.dump());
    i = static_cast<int64_t>(d);
  }
  if (i < f.min || i > f.max) out_of_range(f, at, std::to_string(i));
  return i;
}

bool parse_flag(const json& v, const FieldInfo& f, const FieldOrigin& at) {
  if (!v.is_boolean())
    field_error(at, f.name, fmt::format("must be true or false, got {}", v.dump()));
  return v.get<bool>();
}

std::string parse_string(const json& v, const FieldInfo& f, const FieldOrigin& at) {
  if (!v.is_string()) {
    std::string want = f.kind == FieldKind::choice ? "one of " + range_text(f) : "a string";
    field_error(at, f.name, fmt::format("must be {}, got {}", want, v.dump()));
  }
  return v.get<std::string>();
}

json json_from_text(const std::string& text, const FieldInfo& f, const FieldOrigin& at) {
  switch (f.kind) {
    case FieldKind::text:
    case FieldKind::choice:
      return text;
    case FieldKind::flag:
      if (text == "true" || text == "1" || text == "on") return true;
      if (text == "false" || text == "0" || text == "off") return false;
      field_error(at, f.name, fmt::format("must be true or false, got '{}'", text));
    case FieldKind::integer:
      break;
  }
  json v = json::parse(text, nullptr, false);
  if (!v.is_number()) field_error(at, f.name, fmt::format("must be an integer, got '{}'", text));
  return v;
}

}  // namespace mimic::models
