// The settable fields of an emulated chip's spec (TpuSpec, IpuSpec), in one typed registry per
// chip family: each field has a name (dotted for nested JSON objects: "mxu.rows"), a kind, a unit,
// an allowed range, whether a chip file without a base preset must give it, and a one-line
// description, and reads and writes its member of the spec through a typed accessor. Parsing JSON
// values and `--set` texts, range checks, the field list in errors and JSON output are written
// once here; each family keeps its cross-field checks (validate) and its presets, whose
// `sources` map says where each value comes from.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/error.h"

namespace mimic::models {

// A bad preset name, chip file or field value.
class SpecError : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

enum class Unit : uint8_t { none, count, bytes, hz, bytes_per_s, cycles };
const char* unit_name(Unit unit);  // "", "bytes", "Hz", "bytes/s", "cycles"

enum class FieldKind : uint8_t { integer, flag, text, choice };

struct FieldInfo {
  std::string name;
  Unit unit = Unit::none;
  std::string help;
  int64_t min = 0, max = INT64_MAX;  // integers only
  bool required = false;             // a chip file without "base" must give it
  FieldKind kind = FieldKind::integer;
  std::vector<std::string> choices;  // choice fields: the accepted names
};

// Where a value came from, for errors: "tpu-emu: v4.json: field 'mxu.rows' must be ...".
struct FieldOrigin {
  std::string device, origin;
};
[[noreturn]] void field_error(const FieldOrigin& at, const std::string& field,
                              const std::string& what);

// Parsing shared by every family; each checks the JSON type and the range and names the field.
int64_t parse_integer(const nlohmann::json& v, const FieldInfo& f, const FieldOrigin& at);
bool parse_flag(const nlohmann::json& v, const FieldInfo& f, const FieldOrigin& at);
std::string parse_string(const nlohmann::json& v, const FieldInfo& f, const FieldOrigin& at);
// A `--set` text as the JSON value its field takes ("true", "1.33e9", "ws").
nlohmann::json json_from_text(const std::string& text, const FieldInfo& f, const FieldOrigin& at);
std::string range_text(const FieldInfo& f);  // "[1, 4096] cycles"

// The accessor of a spec member, for const and non-const specs: SPEC_MEMBER(mxu.rows).
#define SPEC_MEMBER(member) \
  [](auto& spec) -> auto& { \
    return spec.member;     \
  }

template <typename Spec>
class SpecFields {
 public:
  struct Field {
    FieldInfo info;
    std::function<void(Spec&, const nlohmann::json&, const FieldOrigin&)> set;
    std::function<nlohmann::json(const Spec&)> get;
  };

  explicit SpecFields(std::string device) : device_(std::move(device)) {}

  template <typename At>
  void integer(FieldInfo info, At at) {
    scalar(std::move(info), FieldKind::integer, at, parse_integer);
  }
  template <typename At>
  void flag(FieldInfo info, At at) {
    scalar(std::move(info), FieldKind::flag, at, parse_flag);
  }
  template <typename At>
  void text(FieldInfo info, At at) {
    scalar(std::move(info), FieldKind::text, at, parse_string);
  }
  // An enum given by name; the first name of a value is the one written out.
  template <typename At, typename E>
  void choice(FieldInfo info, At at, std::vector<std::pair<std::string, E>> names) {
    info.kind = FieldKind::choice;
    for (const auto& n : names) info.choices.push_back(n.first);
    auto set = [at, names](Spec& s, const nlohmann::json& v, const FieldInfo& f,
                           const FieldOrigin& o) {
      std::string name = parse_string(v, f, o);
      for (const auto& [n, e] : names)
        if (n == name) {
          at(s) = e;
          return;
        }
      field_error(o, f.name, "must be one of " + range_text(f) + ", got '" + name + "'");
    };
    auto name_of = [at, names](const Spec& s) -> std::string {
      for (const auto& [n, e] : names)
        if (e == at(s)) return n;
      return "?";
    };
    add(std::move(info), set, name_of);
  }

  const std::vector<Field>& fields() const { return fields_; }
  const Field* find(const std::string& name) const {
    for (const Field& f : fields_)
      if (f.info.name == name) return &f;
    return nullptr;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const Field& f : fields_) out.push_back(f.info.name);
    return out;
  }
  // The field `name`, or an error that lists every field.
  const Field& require(const std::string& name, const std::string& origin) const {
    if (const Field* f = find(name)) return *f;
    std::string list;
    for (const Field& f : fields_) list += (list.empty() ? "" : ", ") + f.info.name;
    throw SpecError(device_ + ": " + origin + ": unknown field '" + name + "' (fields: " + list +
                    ")");
  }
  void set_json(Spec& s, const std::string& name, const nlohmann::json& v,
                const std::string& origin) const {
    require(name, origin).set(s, v, FieldOrigin{device_, origin});
  }
  void set_text(Spec& s, const std::string& name, const std::string& text,
                const std::string& origin) const {
    const Field& f = require(name, origin);
    FieldOrigin at{device_, origin};
    f.set(s, json_from_text(text, f.info, at), at);
  }
  // Every integer field of `s` lies in its range (presets are set in code, not parsed).
  void check_ranges(const Spec& s, const std::string& origin) const {
    for (const Field& f : fields_)
      if (f.info.kind == FieldKind::integer) parse_integer(f.get(s), f.info, {device_, origin});
  }

 private:
  template <typename At, typename Parse>
  void scalar(FieldInfo info, FieldKind kind, At at, Parse parse) {
    info.kind = kind;
    auto set = [at, parse](Spec& s, const nlohmann::json& v, const FieldInfo& f,
                           const FieldOrigin& o) {
      using T = std::decay_t<decltype(at(s))>;
      at(s) = static_cast<T>(parse(v, f, o));
    };
    add(std::move(info), set, at);
  }

  template <typename Set, typename Get>
  void add(FieldInfo info, Set set, Get get) {
    FieldInfo copy = info;
    fields_.push_back(Field{
        std::move(info),
        [set, copy](Spec& s, const nlohmann::json& v, const FieldOrigin& o) { set(s, v, copy, o); },
        [get](const Spec& s) { return nlohmann::json(get(s)); }});
  }

  std::string device_;
  std::vector<Field> fields_;
};

}  // namespace mimic::models
