// Presets, JSON device files, preset overrides and compile options of ipu-emu: values, sources and
// one-line errors that name the field or option and the value.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "base/error.h"
#include "frontend/api/compile.h"
#include "frontend/api/device.h"
#include "models/ipu/ipu_spec.h"

namespace mimic {
namespace {

using models::ipu::IpuSpec;
using models::ipu::SpecError;

ir::Graph tiny_graph() {
  ir::Graph g("tiny");
  auto x = g.add_input("x", ir::DType::f32, {4, 8});
  g.add_output(g.add_node(ir::OpType::Relu, "relu", {x})[0]);
  return g;
}

std::string write_file(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

// Runs `fn` and returns the mimic::Error message it raises ("" if none), checking its kind.
template <typename Fn>
std::string error_of(Fn fn, ErrorKind kind = ErrorKind::invalid_argument) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.what();
  }
  return "";
}

CompileOptions compile_only(std::map<std::string, std::string> opts = {},
                            std::map<std::string, std::string> set = {}) {
  CompileOptions o;
  o.compile_only = true;
  o.options = std::move(opts);
  o.overrides = std::move(set);
  return o;
}

TEST(IpuPresets, FiguresFollowTheReferenceSheet) {
  IpuSpec gc2 = models::ipu::preset("gc2"), gc200 = models::ipu::preset("gc200"),
          bow = models::ipu::preset("bow");
  EXPECT_EQ(gc2.tiles, 1216u);
  EXPECT_EQ(gc2.tile_sram_bytes, 262144u);
  EXPECT_EQ(gc200.tiles, 1472u);
  EXPECT_EQ(gc200.tile_sram_bytes, 638976u);
  EXPECT_EQ(bow.tiles, 1472u);
  EXPECT_EQ(bow.clock_hz, 1'850'000'000u);
  EXPECT_EQ(gc200.worker_contexts, 6u);
  // Peaks: 124.5 TFLOPS (gc2 fp16), 31.1 (gc2 fp32), 250 (gc200 FP16.16), 62.5 (gc200 fp32).
  EXPECT_NEAR(gc2.peak_flops_per_s(gc2.amp_fp16_fp16_macs_per_cycle) * 1e-12, 124.5, 0.5);
  EXPECT_NEAR(gc2.peak_flops_per_s(gc2.amp_fp32_macs_per_cycle) * 1e-12, 31.1, 0.2);
  EXPECT_NEAR(gc200.peak_flops_per_s(gc200.amp_fp16_fp16_macs_per_cycle) * 1e-12, 250, 2.5);
  EXPECT_NEAR(gc200.peak_flops_per_s(gc200.amp_fp32_macs_per_cycle) * 1e-12, 62.5, 0.7);
  EXPECT_NEAR(gc200.exchange_bytes_per_cycle * gc200.tiles * double(gc200.clock_hz) * 1e-12, 8.0,
              0.2);
  for (const IpuSpec* s : {&gc2, &gc200, &bow})
    for (const std::string& field : models::ipu::spec_fields().names()) {
      ASSERT_TRUE(s->sources.count(field)) << s->name << " has no source for " << field;
      EXPECT_EQ(s->sources.at(field).front(), '[') << s->name << "." << field;
    }
  EXPECT_NE(gc200.sources.at("exchange_latency_cycles").find("[I]"), std::string::npos);
  EXPECT_NE(gc200.sources.at("tile_sram_bytes").find("[R"), std::string::npos);
}

TEST(IpuPresets, DeviceStrings) {
  for (const char* p : {"ipu-emu:gc2", "ipu-emu:gc200", "ipu-emu:bow"}) {
    Device d(p);
    EXPECT_TRUE(d.available()) << p << ": " << d.info().reason;
    EXPECT_NE(d.info().description.find("tiles"), std::string::npos);
  }
  Device bad("ipu-emu:gc9");
  EXPECT_FALSE(bad.available());
  EXPECT_NE(bad.info().reason.find("'gc9'"), std::string::npos) << bad.info().reason;
  EXPECT_NE(bad.info().reason.find("gc200"), std::string::npos);
  Device missing("ipu-emu:/nonexistent/chip.json");
  EXPECT_FALSE(missing.available());
  EXPECT_NE(missing.info().reason.find("/nonexistent/chip.json"), std::string::npos);
}

TEST(IpuPresets, JsonRoundTrip) {
  IpuSpec s = models::ipu::preset("gc200");
  IpuSpec back = models::ipu::specs_from_json(models::ipu::to_json(s), "round trip");
  EXPECT_EQ(models::ipu::to_json(back), models::ipu::to_json(s));
  EXPECT_EQ(back.name, "gc200");
}

TEST(IpuJson, OverrideFileDefinesADevice) {
  std::string path =
      write_file("half_gc200.json", R"({"base": "gc200", "name": "half", "tiles": 736,
                                                       "exchange_latency_cycles": 80})");
  IpuSpec s = models::ipu::resolve_specs(path);
  EXPECT_EQ(s.tiles, 736u);
  EXPECT_EQ(s.exchange_latency_cycles, 80u);
  EXPECT_EQ(s.tile_sram_bytes, 638976u);
  EXPECT_EQ(s.sources.at("tiles"), "[" + path + "]");
  Device d("ipu-emu:" + path);
  ASSERT_TRUE(d.available()) << d.info().reason;
  Executable e = compile(tiny_graph(), d, compile_only());
  EXPECT_EQ(e.compile_report().metrics.at("tiles_per_ipu"), 736);
}

TEST(IpuJson, ErrorsNameTheField) {
  std::string full = models::ipu::to_json(models::ipu::preset("gc2"));
  auto without = [&](const std::string& field) {
    auto j = full;
    size_t at = j.find("\"" + field + "\"");
    size_t end = j.find(',', at);
    return j.erase(at, end - at + 1);
  };
  auto message = [](const std::string& text) {
    try {
      models::ipu::specs_from_json(text, "dev.json");
    } catch (const SpecError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  std::string m = message(without("clock_hz"));
  EXPECT_NE(m.find("missing field 'clock_hz'"), std::string::npos) << m;
  m = message(R"({"base": "gc200", "tilez": 5})");
  EXPECT_NE(m.find("unknown field 'tilez'"), std::string::npos) << m;
  m = message(R"({"base": "gc200", "tiles": 0})");
  EXPECT_NE(m.find("'tiles'"), std::string::npos) << m;
  EXPECT_NE(m.find("(tiles per IPU) must be in [1, 16384], got 0"), std::string::npos) << m;
  m = message(R"({"base": "gc200", "tile_sram_bytes": -5})");
  EXPECT_NE(m.find("'tile_sram_bytes'"), std::string::npos) << m;
  m = message(R"({"base": "gc200", "clock_hz": 1.5})");
  EXPECT_NE(m.find("'clock_hz'"), std::string::npos) << m;
  m = message(R"({"base": "gc200", "tiles": [1]})");
  EXPECT_NE(m.find("'tiles'"), std::string::npos) << m;
  m = message(R"({"base": "gc9"})");
  EXPECT_NE(m.find("'gc9'"), std::string::npos) << m;
  m = message("{not json");
  EXPECT_NE(m.find("not valid JSON"), std::string::npos) << m;
  m = message(R"({"base": "gc200", "tiles": 6e897})");  // out_of_range: found by the fuzzer
  EXPECT_NE(m.find("number overflow"), std::string::npos) << m;
  m = message(R"({"base": "gc200", "vector_bytes_per_cycle": 6})");
  EXPECT_NE(m.find("multiple of 4"), std::string::npos) << m;
  // Through a device string: an InvalidArgument with the same words.
  std::string path = write_file("bad.json", R"({"base": "gc200", "tiles": 999999})");
  EXPECT_FALSE(Device("ipu-emu:" + path).available());
  EXPECT_NE(Device("ipu-emu:" + path).info().reason.find("'tiles'"), std::string::npos);
}

TEST(IpuOverrides, SetAppliesAndValidates) {
  Executable e =
      compile(tiny_graph(), Device("ipu-emu:gc200"), compile_only({}, {{"tiles", "736"}}));
  EXPECT_EQ(e.compile_report().metrics.at("tiles_per_ipu"), 736);
  std::string m = error_of([] {
    compile(tiny_graph(), Device("ipu-emu:gc200"), compile_only({}, {{"tilez", "1"}}));
  });
  EXPECT_NE(m.find("'tilez'"), std::string::npos) << m;
  m = error_of([] {
    compile(tiny_graph(), Device("ipu-emu:gc200"), compile_only({}, {{"tiles", "many"}}));
  });
  EXPECT_NE(m.find("'tiles'"), std::string::npos) << m;
  EXPECT_NE(m.find("many"), std::string::npos) << m;
}

TEST(IpuOptions, UnknownAndBadValuesAreNamed) {
  Device d("ipu-emu:gc200");
  std::string m = error_of([&] { compile(tiny_graph(), d, compile_only({{"num_ipu", "2"}})); });
  EXPECT_NE(m.find("unknown option 'num_ipu'"), std::string::npos) << m;
  EXPECT_NE(m.find("num_ipus"), std::string::npos) << m;
  m = error_of([&] { compile(tiny_graph(), d, compile_only({{"num_ipus", "0"}})); });
  EXPECT_NE(m.find("num_ipus=0"), std::string::npos) << m;
  m = error_of([&] { compile(tiny_graph(), d, compile_only({{"memory_proportion", "1.5"}})); });
  EXPECT_NE(m.find("memory_proportion=1.5"), std::string::npos) << m;
  m = error_of([&] {
    compile(tiny_graph(), d, compile_only({{"enable_half_partials", "maybe"}}));
  });
  EXPECT_NE(m.find("enable_half_partials=maybe"), std::string::npos) << m;
  m = error_of([&] {
    compile(tiny_graph(), d, compile_only({{"num_ipus", "4"}, {"replication_factor", "3"}}));
  });
  EXPECT_NE(m.find("replication_factor=3"), std::string::npos) << m;
  m = error_of([&] { compile(tiny_graph(), d, compile_only({{"num_ipus", "257"}})); });
  EXPECT_NE(m.find("num_ipus=257"), std::string::npos) << m;
  CompileOptions o = compile_only();
  o.precision = "high";
  m = error_of([&] { compile(tiny_graph(), d, o); });
  EXPECT_NE(m.find("precision 'high'"), std::string::npos) << m;
  for (const char* p : {"default", "float32", "float16"}) {
    o.precision = p;
    EXPECT_NO_THROW(compile(tiny_graph(), d, o)) << p;
  }
}

TEST(IpuOptions, CompileOnlyCannotRun) {
  Executable e = compile(tiny_graph(), Device("ipu-emu:gc200"), compile_only());
  ir::HostTensor x(ir::DType::f32, {4, 8});
  EXPECT_THROW(e.run({x}), InvalidArgument);
}

}  // namespace
}  // namespace mimic
