// The TPU compiler and reports: layers that cannot be tiled and memories that overflow are compile
// errors naming the layer and the sizes; unsupported ops fall back to cpu (or fail with --strict);
// padding and layout show up in cycles and utilization; the report and the trace carry what the
// issue lists.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <map>

#include "backends/registry.h"
#include "base/error.h"
#include "tpu_test_util.h"

namespace mimic {
namespace {

using tpu_test::options;

template <typename E>
std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  return "(no error of the expected type)";
}

TEST(TpuCompile, LayerThatCannotBeTiledNamesLayerAndSizes) {
  ir::Graph g("big_softmax");
  auto x = g.add_input("x", ir::DType::f32, ir::Shape({4, 100000}));
  g.add_output(g.add_node(ir::OpType::Softmax, "scores", {x}, {{"axis", int64_t{-1}}})[0]);
  auto o = options({{"onchip.bytes", "262144"}});
  std::string e = error_of<OutOfMemoryError>([&] { compile(g, Device("tpu-emu:v4"), o); });
  EXPECT_NE(e.find("Softmax 'scores' cannot be tiled"), std::string::npos) << e;
  EXPECT_NE(e.find("131072 bytes per kernel"), std::string::npos) << e;
  EXPECT_NE(e.find("4 rows of 1601536 bytes"), std::string::npos)
      << e;  // 2 x 100000 floats, padded to (8, 128) tiles
  try {
    compile(g, Device("tpu-emu:v4"), o);
  } catch (const OutOfMemoryError& err) {
    EXPECT_EQ(err.kind(), ErrorKind::out_of_memory);
    EXPECT_EQ(err.op(), "scores");
    EXPECT_GT(err.bytes_used(), err.bytes_available());
  }
  std::string conv = error_of<OutOfMemoryError>([&] {
    compile(tpu_test::conv_graph(1, 512, 64, 64), Device("tpu-emu:v4"),
            options({{"onchip.bytes", "65536"}}));
  });
  EXPECT_NE(conv.find("Conv 'conv' cannot be tiled"), std::string::npos) << conv;
  EXPECT_NE(conv.find("GEMM M=4096 K=4608 N=64"), std::string::npos) << conv;
}

TEST(TpuCompile, WeightsThatDoNotFitOffChipMemory) {
  std::string e = error_of<OutOfMemoryError>([&] {
    compile(tpu_test::matmul_graph(8, 2048, 2048), Device("tpu-emu:v4"),
            options({{"offchip.bytes", "1048576"}}));
  });
  EXPECT_NE(e.find("Ran out of memory in memory space hbm"), std::string::npos) << e;
  EXPECT_NE(e.find("of 1048576 bytes"), std::string::npos) << e;
  // The constant weights, stored bf16 for the matrix units, are the largest tensor: 8 MiB.
  EXPECT_NE(e.find("Breakdown: weights 8.00M"), std::string::npos) << e;
  EXPECT_NE(e.find("1. bf16[1,2048,2048] 'mm.weights' 8.00M"), std::string::npos) << e;
}

// Elementwise ops whose chunks fill a half of on-chip memory: the 512-byte rounding of each
// slot must stay inside the budget (it once overflowed by 1 KiB: an internal error).
TEST(TpuCompile, LargeElementwiseChunksFitTheirHalfOfOnChipMemory) {
  for (ir::Shape s : {ir::Shape({9, 2, 64, 8, 8}), ir::Shape({784, 1024})}) {
    ir::Graph g("mul");
    ir::ValueId a = g.add_input("a", ir::DType::f32, s), b = g.add_input("b", ir::DType::f32, s);
    g.add_output(g.add_node(ir::OpType::Mul, "mul", {a, b})[0]);
    EXPECT_NO_THROW(compile(g, Device("tpu-emu:v4"), options())) << s.str();
  }
}

TEST(TpuCompile, BadOptionsAreRejected) {
  ir::Graph g = tpu_test::matmul_graph(8, 8, 8);
  std::string p =
      error_of<InvalidArgument>([&] { compile(g, Device("tpu-emu:v4"), options({}, "extreme")); });
  EXPECT_NE(p.find("unknown precision 'extreme'"), std::string::npos) << p;
  CompileOptions o;
  o.options["num_ipus"] = "2";
  std::string opt = error_of<InvalidArgument>([&] { compile(g, Device("tpu-emu:v4"), o); });
  EXPECT_NE(opt.find("unknown option 'num_ipus'"), std::string::npos) << opt;
}

// A projection followed by Hardmax, which has no TPU lowering (it falls back to cpu).
ir::Graph hardmax_graph() {
  ir::Graph g("hardmax");
  auto x = g.add_input("x", ir::DType::f32, ir::Shape({4, 32}));
  auto w = g.add_constant("w", tpu_test::random_tensor(ir::Shape({32, 16}), 4));
  auto y = g.add_node(ir::OpType::MatMul, "proj", {x, w})[0];
  auto h = g.add_node(ir::OpType::Hardmax, "lookup", {y}, {{"axis", int64_t{-1}}})[0];
  g.add_output(g.add_node(ir::OpType::Relu, "act", {h})[0]);
  return g;
}

TEST(TpuCompile, UnsupportedOpsFallBackToCpuUnlessStrict) {
  ir::Graph g = hardmax_graph();
  Executable e = compile(g, Device("tpu-emu:v4"), options({}, "highest"));
  EXPECT_EQ(e.compile_report().fallback_nodes, std::vector<std::string>{"lookup"});
  auto inputs = random_inputs(e.graph(), 5);
  RunOutput out = e.run(inputs);
  RunOutput ref = compile(g, Device("cpu")).run(inputs);
  ASSERT_EQ(out.report.fallback_count(), 1);
  bool found = false;
  for (const auto& op : out.report.ops)
    if (op.node == "lookup") found = op.fallback;
  EXPECT_TRUE(found);
  for (int64_t i = 0; i < out.outputs[0].numel(); ++i)
    EXPECT_NEAR(out.outputs[0].data<float>()[i], ref.outputs[0].data<float>()[i], 1e-5);
  CompileOptions strict = options();
  strict.strict = true;
  std::string s = error_of<UnsupportedOpError>([&] { compile(g, Device("tpu-emu:v4"), strict); });
  EXPECT_NE(s.find("Hardmax 'lookup'"), std::string::npos) << s;
}

TEST(TpuCompile, PaddingToTheArrayIsLostUtilization) {
  auto util = [](int64_t n) {
    auto o = options({{"cores", "1"}, {"mxu.per_core", "1"}}, "default", true);
    auto r = tpu_test::run(tpu_test::matmul_graph(1024, 1024, n), "tpu-emu:v4", o).report;
    return static_cast<double>(r.total_flops()) /
           (2.0 * 128 * 128 * tpu_test::unit(r, "core0_mxu0")->busy_cycles);
  };
  double exact = util(128), padded = util(129);
  EXPECT_GT(exact, 0.8);
  EXPECT_LT(padded, exact * 0.6);  // 129 columns need two 128-wide folds
}

// NCHW keeps W (14) as the minor dimension: tiles padded to 128 lanes move ~9x the bytes and need
// a relayout to feed the matrix units; NHWC keeps channels minor. layout=as_given prices the
// graph's own layout (by default layout assignment would run both channels-last:
// layout_assignment_test).
TEST(TpuCompile, NchwCostsMoreThanNhwc) {
  auto o = options({}, "default", true);
  o.options["layout"] = "as_given";
  auto nchw = tpu_test::run(tpu_test::conv_graph(8, 256, 14, 256, false), "tpu-emu:v4", o).report;
  auto nhwc = tpu_test::run(tpu_test::conv_graph(8, 256, 14, 256, true), "tpu-emu:v4", o).report;
  EXPECT_GT(nchw.ops[0].cycles, nhwc.ops[0].cycles * 1.2);
  EXPECT_GT(nchw.bytes_moved.at("hbm"), nhwc.bytes_moved.at("hbm") * 3);
  EXPECT_LT(nchw.ops[0].utilization, nhwc.ops[0].utilization);
}

TEST(TpuReport, CarriesCyclesUnitsBytesAndRoofline) {
  auto out = tpu_test::run(tpu_test::mlp_graph(64, 512, 2), "tpu-emu:v4");
  const auto& r = out.report;
  EXPECT_EQ(r.backend, "tpu-emu");
  EXPECT_EQ(r.device, "tpu-emu:v4");
  EXPECT_EQ(r.clock_hz, 1.05e9);
  EXPECT_GT(r.cycles, 0u);
  EXPECT_NEAR(r.device_seconds, r.cycles / 1.05e9, 1e-12);
  EXPECT_NEAR(r.peak_flops_per_s, 275e12, 1e12);
  EXPECT_NEAR(r.ridge_intensity, 275.25e12 / 1.2e12, 1);
  EXPECT_GT(r.achieved_flops_per_s, 0);
  EXPECT_LT(r.achieved_flops_per_s, r.peak_flops_per_s);
  for (const char* level : {"hbm", "vmem", "pcie"}) EXPECT_GT(r.bytes_moved.at(level), 0) << level;
  std::map<std::string, int> kinds;
  for (const auto& u : r.units) {
    kinds[u.kind]++;
    EXPECT_LE(u.busy_cycles, r.cycles) << u.name;
    EXPECT_NEAR(u.utilization, static_cast<double>(u.busy_cycles) / r.cycles, 1e-9);
  }
  EXPECT_EQ(kinds["matrix"], 8);
  EXPECT_EQ(kinds["vector"], 2);
  EXPECT_EQ(kinds["dma"], 5);  // two per core and the host DMA engine
  int matmuls = 0;
  for (const auto& op : r.ops) {
    if (op.op_type != "MatMul+Relu") continue;
    ++matmuls;
    EXPECT_GT(op.cycles, 0u);
    EXPECT_GT(op.utilization, 0);
    EXPECT_GT(op.intensity, 0);
    EXPECT_FALSE(op.bound.empty());
  }
  EXPECT_EQ(matmuls, 2);
  EXPECT_GT(out.report.metrics.at("instructions"), 0);
}

class CaptureSink final : public sim::EventSink {
 public:
  sim::DeviceId add_device(const sim::DeviceDesc& d) override {
    device = d;
    return 1;
  }
  sim::TrackId add_track(sim::DeviceId, const std::string& name, const std::string& kind) override {
    tracks.push_back({name, kind});
    return static_cast<sim::TrackId>(tracks.size() - 1);
  }
  sim::OpId add_op(const sim::OpDesc& op) override {
    ops.push_back(op.node);
    return static_cast<sim::OpId>(ops.size() - 1);
  }
  void event(sim::TrackId t, sim::OpId, std::string_view name, uint64_t ts, uint64_t dur) override {
    auto& last = last_end[t];
    EXPECT_GE(ts, last) << tracks[t].first << " " << name;  // slices on a track never overlap
    last = ts + dur;
    events_per_track[t]++;
  }
  void counter(sim::TrackId t, uint64_t, double) override { counters[t]++; }
  sim::DeviceDesc device;
  std::vector<std::pair<std::string, std::string>> tracks;
  std::vector<std::string> ops;
  std::map<sim::TrackId, uint64_t> last_end;
  std::map<sim::TrackId, int> events_per_track, counters;
};

TEST(TpuReport, TraceHasOneTrackPerUnitAndOccupancyCounters) {
  ir::Graph g = prepare_graph(tpu_test::mlp_graph(32, 256, 2), 0);
  const backends::Backend* tpu = backends::Registry::global().find("tpu-emu");
  auto exe = backends::compile_with_fallback(*tpu, g, "v4", options());
  CaptureSink sink;
  auto result = exe->run(random_inputs(g, 1), sink);
  EXPECT_EQ(sink.device.unit, sim::TimeUnit::cycles);
  EXPECT_EQ(sink.device.clock_hz, 1'050'000'000u);
  EXPECT_EQ(sink.device.preset, "v4");
  int events = 0, memory_tracks = 0;
  for (size_t t = 0; t < sink.tracks.size(); ++t) {
    events += sink.events_per_track[static_cast<sim::TrackId>(t)];
    if (sink.tracks[t].second == "memory") {
      ++memory_tracks;
      EXPECT_GT(sink.counters[static_cast<sim::TrackId>(t)], 1);
    }
  }
  EXPECT_EQ(memory_tracks, 2);
  EXPECT_EQ(sink.tracks.size(), 15u + 2);  // 15 units and 2 on-chip memories
  // One event per instruction except syncs.
  EXPECT_GT(events, 10);
  EXPECT_LT(events, result.report.metrics.at("instructions"));
  EXPECT_FALSE(sink.ops.empty());
}

// A chip file and --set overrides change the chip the program runs on.
TEST(TpuDevices, ChipFileAndOverridesDriveCompilation) {
  std::string path = ::testing::TempDir() + "tpu_small_chip.json";
  {
    std::ofstream f(path);
    f << R"({"base": "v4", "name": "v4-64", "mxu": {"rows": 64, "cols": 64}})";
  }
  auto out = tpu_test::run(tpu_test::matmul_graph(64, 64, 64), "tpu-emu:" + path);
  EXPECT_EQ(out.report.device, "tpu-emu:v4-64");
  EXPECT_NEAR(out.report.peak_flops_per_s, 2.0 * 64 * 64 * 8 * 1.05e9, 1e9);
  auto o = tpu_test::options({{"mxu.rows", "32"}, {"mxu.cols", "32"}});
  EXPECT_NEAR(
      tpu_test::run(tpu_test::matmul_graph(64, 64, 64), "tpu-emu:v4", o).report.peak_flops_per_s,
      2.0 * 32 * 32 * 8 * 1.05e9, 1e9);
  std::string bad = ::testing::TempDir() + "tpu_bad_chip.json";
  {
    std::ofstream f(bad);
    f << R"({"base": "v4", "vpu": {"lanes": "wide"}})";
  }
  std::string e =
      error_of<Error>([&] { tpu_test::run(tpu_test::matmul_graph(8, 8, 8), "tpu-emu:" + bad); });
  EXPECT_NE(e.find("field 'vpu.lanes' must be an integer"), std::string::npos) << e;
  std::remove(path.c_str());
  std::remove(bad.c_str());
}

}  // namespace
}  // namespace mimic
