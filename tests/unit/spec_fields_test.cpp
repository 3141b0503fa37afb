// The spec-field registry (models/spec_fields.h) both emulated chips read their specs through:
// typed parsing with ranges and units on a small spec, and the TPU and IPU tables themselves.
#include "models/spec_fields.h"

#include <gtest/gtest.h>

#include <functional>

#include "models/ipu/ipu_spec.h"
#include "models/tpu/tpu_spec.h"

namespace mimic::models {
namespace {

enum class Mode { fast, slow };

struct ToySpec {
  std::string name;
  uint64_t clock_hz = 0;
  struct {
    int64_t rows = 1;
  } grid;
  bool cached = false;
  Mode mode = Mode::fast;
};

SpecFields<ToySpec> toy_fields() {
  SpecFields<ToySpec> t("toy-emu");
  t.text({"name", Unit::none, "chip name"}, SPEC_MEMBER(name));
  t.integer({"clock_hz", Unit::hz, "clock", 1, 5'000'000'000, true}, SPEC_MEMBER(clock_hz));
  t.integer({"grid.rows", Unit::count, "rows", 1, 64}, SPEC_MEMBER(grid.rows));
  t.flag({"cached", Unit::none, "has a cache"}, SPEC_MEMBER(cached));
  t.choice({"mode", Unit::none, "mode"}, SPEC_MEMBER(mode),
           std::vector<std::pair<std::string, Mode>>{{"fast", Mode::fast}, {"slow", Mode::slow}});
  return t;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const SpecError& e) {
    return e.what();
  }
  return "no error";
}

TEST(SpecFields, ParsesEachKindFromJsonAndText) {
  SpecFields<ToySpec> t = toy_fields();
  ToySpec s;
  t.set_json(s, "clock_hz", 1.5e9, "chip.json");
  t.set_json(s, "grid.rows", "8", "chip.json");
  t.set_text(s, "cached", "on", "--set");
  t.set_text(s, "mode", "slow", "--set");
  t.set_text(s, "name", "mine", "--set");
  EXPECT_EQ(s.clock_hz, 1'500'000'000u);
  EXPECT_EQ(s.grid.rows, 8);
  EXPECT_TRUE(s.cached);
  EXPECT_EQ(s.mode, Mode::slow);
  EXPECT_EQ(t.find("mode")->get(s), "slow");
  EXPECT_EQ(t.find("clock_hz")->get(s), 1'500'000'000u);
  EXPECT_EQ(t.names(),
            (std::vector<std::string>{"name", "clock_hz", "grid.rows", "cached", "mode"}));
}

TEST(SpecFields, ErrorsNameTheDeviceOriginFieldRangeAndUnit) {
  SpecFields<ToySpec> t = toy_fields();
  ToySpec s;
  EXPECT_EQ(error_of([&] { t.set_json(s, "clock_hz", 0, "chip.json"); }),
            "toy-emu: chip.json: field 'clock_hz' (clock) must be in [1, 5000000000] Hz, got 0");
  EXPECT_EQ(error_of([&] { t.set_text(s, "grid.rows", "2.5", "--set"); }),
            "toy-emu: --set: field 'grid.rows' must be an integer, got 2.5");
  EXPECT_EQ(error_of([&] { t.set_text(s, "grid.rows", "1e30", "--set"); }),
            "toy-emu: --set: field 'grid.rows' (rows) must be in [1, 64], got 1e+30");
  EXPECT_EQ(error_of([&] { t.set_text(s, "cached", "maybe", "--set"); }),
            "toy-emu: --set: field 'cached' must be true or false, got 'maybe'");
  EXPECT_EQ(error_of([&] { t.set_text(s, "mode", "turbo", "--set"); }),
            "toy-emu: --set: field 'mode' must be one of fast, slow, got 'turbo'");
  EXPECT_EQ(error_of([&] { t.set_json(s, "name", 3, "chip.json"); }),
            "toy-emu: chip.json: field 'name' must be a string, got 3");
  EXPECT_EQ(
      error_of([&] { t.set_text(s, "rows", "3", "--set"); }),
      "toy-emu: --set: unknown field 'rows' (fields: name, clock_hz, grid.rows, cached, mode)");
  s.grid.rows = 65;
  EXPECT_EQ(error_of([&] { t.check_ranges(s, "preset x"); }),
            "toy-emu: preset x: field 'clock_hz' (clock) must be in [1, 5000000000] Hz, got 0");
}

// A field's unit is in its name, so that chip files read without the documentation.
template <typename Spec>
void expect_units_in_names(const SpecFields<Spec>& table) {
  for (const auto& f : table.fields()) {
    const std::string& n = f.info.name;
    EXPECT_FALSE(f.info.help.empty()) << n;
    switch (f.info.unit) {
      case Unit::bytes:
        EXPECT_NE(n.find("bytes"), std::string::npos) << n;
        break;
      case Unit::bytes_per_s:
        EXPECT_TRUE(n.find("bytes_per_s") != std::string::npos) << n;
        break;
      case Unit::hz:
        EXPECT_NE(n.find("_hz"), std::string::npos) << n;
        break;
      case Unit::cycles:
        EXPECT_NE(n.find("cycles"), std::string::npos) << n;
        break;
      case Unit::none:
      case Unit::count:
        break;
    }
  }
}

TEST(SpecFields, TpuAndIpuFieldsSayTheirUnitsAndEveryPresetIsInRange) {
  expect_units_in_names(tpu::spec_fields());
  expect_units_in_names(ipu::spec_fields());
  for (const std::string& name : tpu::preset_names())
    EXPECT_NO_THROW(tpu::spec_fields().check_ranges(tpu::preset(name), name)) << name;
  for (const std::string& name : ipu::preset_names())
    EXPECT_NO_THROW(ipu::spec_fields().check_ranges(ipu::preset(name), name)) << name;
}

}  // namespace
}  // namespace mimic::models
