// Chip presets (figures from the reference sheet), JSON chip files and --set overrides: values,
// validation errors that name the field, and the device strings that use them.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <functional>

#include "base/error.h"
#include "frontend/api/compile.h"
#include "models/tpu/tpu_spec.h"
#include "tpu_test_util.h"

namespace mimic {
namespace {

using models::tpu::Dataflow;
using models::tpu::MatrixNumerics;
using models::tpu::TpuSpec;
namespace tpu = models::tpu;

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TpuPresets, PeakFiguresMatchTheSheet) {
  // Published peaks: v1 92 TOPS, v2 45-46, v3 123, v4 275, v5e 197, v6e 918 TFLOP/s, edge 4 TOPS.
  const std::map<std::string, double> peak{{"v1", 92e12},  {"v2", 45.9e12}, {"v3", 123e12},
                                           {"v4", 275e12}, {"v5e", 197e12}, {"v6e", 918e12},
                                           {"edge", 4e12}};
  for (const auto& [name, expected] : peak) {
    TpuSpec s = tpu::preset(name);
    EXPECT_NEAR(s.peak_flops_per_s() / expected, 1.0, 0.02) << name;
    EXPECT_FALSE(s.sources.empty()) << name;
    EXPECT_NO_THROW(tpu::validate(s)) << name;
  }
  TpuSpec v1 = tpu::preset("v1");
  EXPECT_EQ(v1.numerics, MatrixNumerics::int8);
  EXPECT_EQ(v1.mxu.rows, 256);
  EXPECT_EQ(v1.mxu.weight_fifo_tiles, 4);
  EXPECT_EQ(v1.mxu.accumulator_bytes, 4 << 20);
  EXPECT_EQ(v1.onchip.bytes, 24u << 20);
  EXPECT_EQ(v1.offchip.bytes_per_s, 34'000'000'000u);
  EXPECT_EQ(v1.clock_hz, 700'000'000u);
  // TPUv1's ridge point: 1350 MACs per weight byte (S1), i.e. 2700 FLOP per byte.
  EXPECT_NEAR(v1.ridge_flops_per_byte(), 2700, 30);
  TpuSpec v4 = tpu::preset("v4");
  EXPECT_EQ(v4.cores, 2);
  EXPECT_EQ(v4.mxu.per_core, 4);
  EXPECT_EQ(v4.offchip.bytes_per_s, 1'200'000'000'000u);
  EXPECT_FALSE(v4.offchip_per_core);
  EXPECT_TRUE(tpu::preset("v3").offchip_per_core);
  EXPECT_EQ(tpu::preset("v6e").mxu.rows, 256);
  EXPECT_NE(tpu::preset("v6e").sources.at("mxu").find("inconsistent"), std::string::npos);
  EXPECT_NE(tpu::preset("edge").sources.at("mxu").find("assumed"), std::string::npos);
}

TEST(TpuPresets, UnknownPresetListsTheKnownOnes) {
  std::string e = error_of([] { tpu::preset("v9"); });
  EXPECT_NE(e.find("'v9'"), std::string::npos) << e;
  EXPECT_NE(e.find("v5e"), std::string::npos) << e;
}

TEST(TpuSpecJson, OverridesAPresetField) {
  TpuSpec s = tpu::spec_from_json_text(
      R"({"base": "v4", "name": "small", "mxu": {"rows": 64, "dataflow": "os"}})", "x.json");
  EXPECT_EQ(s.name, "small");
  EXPECT_EQ(s.mxu.rows, 64);
  EXPECT_EQ(s.mxu.cols, 128);
  EXPECT_EQ(s.mxu.dataflow, Dataflow::output_stationary);
  EXPECT_EQ(s.clock_hz, 1'050'000'000u);
  EXPECT_NE(s.sources.at("mxu.rows").find("x.json"), std::string::npos);
}

TEST(TpuSpecJson, DefinesAChipWithoutBase) {
  const char* text = R"({
    "name": "toy", "clock_hz": 1e9, "cores": 1, "numerics": "bf16",
    "mxu": {"rows": 32, "cols": 32, "per_core": 2, "accumulator_bytes": 65536},
    "vpu": {"lanes": 32, "sublanes": 4},
    "host_link": {"bytes_per_s": 1e10}, "offchip": {"bytes": 1073741824, "bytes_per_s": 1e11},
    "onchip": {"bytes": 1048576, "bytes_per_s": 1e12},
    "sources": {"mxu": "made up for a test"}})";
  TpuSpec s = tpu::spec_from_json_text(text, "toy.json");
  EXPECT_EQ(s.mxu.per_core, 2);
  EXPECT_EQ(s.peak_macs_per_cycle(), 2 * 32 * 32);
  EXPECT_EQ(s.sources.at("mxu"), "made up for a test");
}

TEST(TpuSpecJson, ErrorsNameTheField) {
  auto err = [](const std::string& text) {
    return error_of([&] { tpu::spec_from_json_text(text, "chip.json"); });
  };
  EXPECT_NE(err(R"({"base": "v4", "mxu": {"rowz": 3}})").find("unknown field 'mxu.rowz'"),
            std::string::npos);
  EXPECT_NE(
      err(R"({"base": "v4", "mxu": {"rows": "big"}})").find("field 'mxu.rows' must be an integer"),
      std::string::npos);
  EXPECT_NE(err(R"({"base": "v4", "mxu": {"rows": -3}})")
                .find("field 'mxu.rows' (systolic array rows, the reduction dimension) must be in "
                      "[1, 4096], got -3"),
            std::string::npos);
  EXPECT_NE(err(R"({"base": "v4", "clock_hz": 0})").find("must be in [1, 1000000000000] Hz, got 0"),
            std::string::npos);
  EXPECT_NE(err(R"({"base": "v4", "mxu": {"rows": 2.5}})").find("field 'mxu.rows'"),
            std::string::npos);
  EXPECT_NE(err(R"({"base": "v4", "mxu": {"dataflow": "xs"}})")
                .find("'mxu.dataflow' must be one of ws, os, is"),
            std::string::npos);
  EXPECT_NE(err(R"({"base": "v4", "activations_on_chip": 1})")
                .find("'activations_on_chip' must be true or false"),
            std::string::npos);
  EXPECT_NE(err(R"({"base": "v9"})").find("field 'base' names no preset: 'v9'"), std::string::npos);
  EXPECT_NE(err(R"({"name": "x", "cores": 1})").find("field 'clock_hz' is required"),
            std::string::npos);
  EXPECT_NE(
      err(R"({"base": "v4", "mxu": {"accumulator_bytes": 16}})").find("mxu.accumulator_bytes"),
      std::string::npos);
  EXPECT_NE(err(R"({"base": "v4", "offchip": {"bytes_per_s": 0}})").find("offchip.bytes_per_s"),
            std::string::npos);
  EXPECT_NE(err("{not json").find("invalid JSON"), std::string::npos);
  EXPECT_NE(err(R"({"base": "v4", "mxu": {"rows": 6e897}})").find("number overflow"),
            std::string::npos);  // out_of_range, not parse_error: found by the chip_spec fuzzer
  EXPECT_NE(err("[1, 2]").find("must be a JSON object"), std::string::npos);
  EXPECT_THROW(tpu::spec_from_json_file("/nonexistent/chip.json"), IoError);
}

TEST(TpuSpecOverrides, ParsePerFieldTypeAndRevalidate) {
  TpuSpec s = tpu::preset("v4");
  tpu::apply_overrides(s, {{"mxu.rows", "64"},
                           {"mxu.dataflow", "is"},
                           {"mxu.weight_double_buffering", "false"},
                           {"offchip.bytes_per_s", "2.4e12"}});
  EXPECT_EQ(s.mxu.rows, 64);
  EXPECT_EQ(s.mxu.dataflow, Dataflow::input_stationary);
  EXPECT_FALSE(s.mxu.weight_double_buffering);
  EXPECT_EQ(s.offchip.bytes_per_s, 2'400'000'000'000u);
  EXPECT_EQ(s.sources.at("mxu.rows"), "--set override");
  auto err = [](std::map<std::string, std::string> o) {
    return error_of([&] {
      TpuSpec t = tpu::preset("v4");
      tpu::apply_overrides(t, o);
    });
  };
  EXPECT_NE(err({{"mxu.rowz", "1"}}).find("unknown field 'mxu.rowz'"), std::string::npos);
  EXPECT_NE(err({{"mxu.rows", "many"}}).find("field 'mxu.rows' must be an integer, got 'many'"),
            std::string::npos);
  EXPECT_NE(err({{"mxu.rows", "0"}}).find("must be in [1, 4096], got 0"), std::string::npos);
  EXPECT_NE(err({{"mxu.rows", "1e999"}}).find("must be an integer, got '1e999'"),
            std::string::npos);
  EXPECT_NE(err({{"mxu.weight_double_buffering", "maybe"}}).find("must be true or false"),
            std::string::npos);
}

TEST(TpuSpecJson, CanonicalJsonRoundTrips) {
  for (const auto& name : tpu::preset_names()) {
    TpuSpec a = tpu::preset(name);
    TpuSpec b = tpu::spec_from_json_text(tpu::spec_to_json(a), "round trip");
    EXPECT_EQ(tpu::spec_to_json(a), tpu::spec_to_json(b)) << name;
  }
}

TEST(TpuDevices, ProbeReportsBadArguments) {
  backends::DeviceInfo bad = Device("tpu-emu:v9").info();
  EXPECT_FALSE(bad.available);
  EXPECT_NE(bad.reason.find("presets"), std::string::npos) << bad.reason;
  backends::DeviceInfo missing = Device("tpu-emu:/nonexistent/chip.json").info();
  EXPECT_FALSE(missing.available);
  EXPECT_NE(missing.reason.find("cannot read chip file"), std::string::npos) << missing.reason;
  EXPECT_TRUE(Device("tpu-emu:v4").available());
  EXPECT_THROW(Device("tpu-emu:v9").require_available(), DeviceUnavailableError);
}

}  // namespace
}  // namespace mimic
