// ipu-emu end to end: plans for awkward shapes (1x1, ragged 7x300x1000, depthwise, strided and
// channels-last convolutions) run and match the cpu backend; zoo models; fp16 storage; reports,
// trace events and tables; cpu fallback; several presets in one process.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "backends/cpu/cpu_backend.h"
#include "base/error.h"
#include "base/numeric_formats.h"
#include "frontend/api/random.h"
#include "frontend/api/zoo.h"
#include "tests/ipu/ipu_test_util.h"

namespace mimic {
namespace {

using namespace ipu_test;

struct Compared {
  RunOutput ipu, cpu;
  Executable exe;
};

Compared run_both(const ir::Graph& g, const std::string& device, CompileOptions o = {},
                  uint64_t seed = 7) {
  Executable e = compile(g, Device(device), o);
  CompileOptions co;
  co.batch = o.batch;
  Executable c = compile(g, Device("cpu"), co);
  auto inputs = random_inputs(e.graph(), seed);
  return {e.run(inputs), c.run(inputs), e};
}

const backends::Table& table(const backends::CompileReport& r, const std::string& name) {
  return r.tables.at(name);
}

TEST(IpuBackend, OneByOneMatmul) {
  Compared r = run_both(matmul_graph(1, 1, 1), "ipu-emu:gc200");
  EXPECT_EQ(r.ipu.outputs[0].data<float>()[0], r.cpu.outputs[0].data<float>()[0]);
  EXPECT_GT(r.ipu.report.cycles, 0u);
  const auto& plans = table(r.exe.compile_report(), "ipu_plans");
  ASSERT_EQ(plans.rows.size(), 1u);
  EXPECT_EQ(plans.rows[0][6], 1);  // one tile
}

TEST(IpuBackend, RaggedMatmulUsesManyTilesAndMatchesCpu) {
  Compared r = run_both(matmul_graph(7, 300, 1000), "ipu-emu:gc200");
  EXPECT_LT(max_rel_diff(r.ipu.outputs[0], r.cpu.outputs[0]), 1e-5);
  const auto& plan = table(r.exe.compile_report(), "ipu_plans").rows.at(0);
  EXPECT_GT(plan[6], 100) << "7x300x1000 should spread over many tiles";
  EXPECT_LE(plan[6], 1472);
  const backends::OpReport& op = r.ipu.report.ops.at(0);
  EXPECT_EQ(op.op_type, "MatMul");
  EXPECT_GT(op.cycles, 0u);
  EXPECT_GT(op.utilization, 0.0);
  EXPECT_LT(op.utilization, 1.0);
}

TEST(IpuBackend, DepthwiseConvolution) {
  for (int64_t stride : {1, 2}) {
    Compared r = run_both(conv_graph(2, 32, 32, 17, 3, stride, 32), "ipu-emu:gc200");
    EXPECT_LT(max_rel_diff(r.ipu.outputs[0], r.cpu.outputs[0]), 1e-5) << "stride " << stride;
    const auto& plan = table(r.exe.compile_report(), "ipu_plans").rows.at(0);
    EXPECT_EQ(plan[4], 1);  // no output-channel split
    EXPECT_EQ(plan[5], 1);  // 3x3 taps: a K split (partials, a reduction step) does not pay
    EXPECT_GT(plan[2] * plan[3], 1) << "channels or rows split over tiles";
  }
}

TEST(IpuBackend, ConvolutionsWithKSplitMatchCpu) {
  // Wide input channels and small spatial size: the planner splits K.
  Compared r = run_both(conv_graph(1, 512, 64, 7, 3, 1, 1), "ipu-emu:gc200");
  EXPECT_LT(max_rel_diff(r.ipu.outputs[0], r.cpu.outputs[0]), 1e-4);
  EXPECT_GT(table(r.exe.compile_report(), "ipu_plans").rows.at(0)[5], 1) << "expected a K split";
  r = run_both(conv_graph(2, 16, 24, 15, 3, 2, 1), "ipu-emu:gc200");  // strided, grouped below
  EXPECT_LT(max_rel_diff(r.ipu.outputs[0], r.cpu.outputs[0]), 1e-5);
  r = run_both(conv_graph(2, 16, 32, 9, 3, 1, 4), "ipu-emu:gc200");
  EXPECT_LT(max_rel_diff(r.ipu.outputs[0], r.cpu.outputs[0]), 1e-5);
}

TEST(IpuBackend, ZooModelsMatchCpu) {
  for (const char* layout : {"nchw", "nhwc"}) {
    zoo::ModelOptions mo;
    mo.layout = layout;
    mo.params = {{"image_size", 64}};
    ir::Graph g = zoo::build("resnet18", mo);
    CompileOptions o;
    o.batch = 2;
    Compared r = run_both(g, "ipu-emu:gc200", o);
    EXPECT_LT(max_rel_diff(r.ipu.outputs[0], r.cpu.outputs[0]), 1e-4) << layout;
    EXPECT_EQ(r.ipu.report.fallback_count(), 0);
  }
  zoo::ModelOptions mo;
  mo.params = {{"layers", 1}, {"hidden", 64}, {"heads", 4}, {"seq", 16}, {"vocab", 100}};
  CompileOptions o;
  o.batch = 2;
  Compared r = run_both(zoo::build("bert", mo), "ipu-emu:gc200", o);
  for (size_t i = 0; i < r.ipu.outputs.size(); ++i)
    EXPECT_LT(max_rel_diff(r.ipu.outputs[i], r.cpu.outputs[i]), 1e-4);
}

TEST(IpuBackend, MixedOpsLowerAndMatchCpu) {
  // Transposed convolution, pooling, reductions over inner and outer axes, softmax over a middle
  // axis, data movement and elementwise ops: every family of the lowering.
  using ir::OpType;
  ir::Graph g("mixed");
  Random rng(9);
  auto i64 = [&](std::vector<int64_t> v) {
    return g.add_constant("c" + std::to_string(g.num_values()),
                          ir::HostTensor::from<int64_t>(ir::Shape({int64_t(v.size())}), v.data()));
  };
  auto x = g.add_input("x", ir::DType::f32, {2, 8, 10, 10});
  auto w = g.add_constant("w", rng.tensor(ir::DType::f32, {8, 4, 3, 3}, 0, 0.2f));
  auto ct =
      g.add_node(OpType::ConvTranspose, "up", {x, w}, {{"strides", std::vector<int64_t>{2, 2}}})[0];
  auto mp = g.add_node(
      OpType::MaxPool, "pool", {ct},
      {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"strides", std::vector<int64_t>{2, 2}}})[0];
  auto sm = g.add_node(OpType::Softmax, "softmax", {mp}, {{"axis", int64_t{1}}})[0];
  auto tr = g.add_node(OpType::Transpose, "transpose", {sm},
                       {{"perm", std::vector<int64_t>{0, 2, 3, 1}}})[0];
  auto sl = g.add_node(OpType::Slice, "slice", {tr, i64({1}), i64({6}), i64({1})})[0];
  auto cat = g.add_node(OpType::Concat, "concat", {sl, sl}, {{"axis", int64_t{3}}})[0];
  auto rm = g.add_node(OpType::ReduceMean, "mean0", {cat, i64({0})})[0];
  auto rs = g.add_node(OpType::ReduceSum, "sum3", {cat, i64({3})})[0];
  auto sg = g.add_node(OpType::Sigmoid, "sigmoid", {rs})[0];
  auto pad = g.add_node(OpType::Pad, "pad", {sg, i64({0, 1, 1, 0, 0, 1, 1, 0})})[0];
  auto gap = g.add_node(OpType::GlobalAveragePool, "gap", {ct})[0];
  g.add_output(rm);
  g.add_output(pad);
  g.add_output(gap);
  Compared r = run_both(g, "ipu-emu:gc200");
  ASSERT_EQ(r.ipu.outputs.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_EQ(r.ipu.outputs[i].shape(), r.cpu.outputs[i].shape()) << i;
    EXPECT_LT(max_rel_diff(r.ipu.outputs[i], r.cpu.outputs[i]), 1e-5) << i;
  }
  EXPECT_EQ(r.ipu.report.fallback_count(), 0);
  for (const auto& op : r.ipu.report.ops) EXPECT_GT(op.cycles, 0u) << op.node;
}

TEST(IpuBackend, Float16StorageRoundsLikeTheChip) {
  CompileOptions o;
  o.precision = "float16";
  Compared r = run_both(matmul_graph(16, 256, 64), "ipu-emu:gc200", o);
  const float* y = r.ipu.outputs[0].data<float>();
  for (int64_t i = 0; i < r.ipu.outputs[0].numel(); ++i)
    ASSERT_EQ(y[i], numeric::round_to_f16(y[i]));
  double d = max_rel_diff(r.ipu.outputs[0], r.cpu.outputs[0]);
  EXPECT_GT(d, 1e-5) << "fp16 storage must change the numbers";
  EXPECT_LT(d, 2e-2);
  EXPECT_EQ(r.ipu.report.precision, "float16");
  // fp16 AMP rate: four times the fp32 peak on gc200.
  Compared f = run_both(matmul_graph(16, 256, 64), "ipu-emu:gc200");
  EXPECT_NEAR(r.ipu.report.peak_flops_per_s / f.ipu.report.peak_flops_per_s, 2.0, 1e-9);
}

// A square read only by a sum (a BatchNorm's one-pass mean of x^2) is summed in fp32 at float16,
// as popops' SQUARE_ADD reduction squares inside its fp32 partials: elements of 300 (90,000 when
// squared, over fp16's 65,504) give the f32 mean to fp16 rounding, not inf. A square something
// else reads is stored in fp16 as every value is.
TEST(IpuBackend, Float16SumOfSquaresSquaresInsideTheReduction) {
  ir::Graph g("mean_square");
  ir::ValueId x = g.add_input("x", ir::DType::f32, ir::Shape({4, 8, 16, 16}));
  ir::HostTensor axes(ir::DType::i64, ir::Shape({3}));
  const int64_t spatial[3] = {0, 2, 3};
  std::copy(spatial, spatial + 3, axes.data<int64_t>());
  ir::ValueId sq = g.add_node(ir::OpType::Mul, "sq", {x, x})[0];
  g.add_output(g.add_node(ir::OpType::ReduceMean, "mean_sq", {sq, g.add_constant("axes", axes)},
                          {{"keepdims", int64_t{1}}})[0]);
  ir::HostTensor in = Random(3).tensor(ir::DType::f32, ir::Shape({4, 8, 16, 16}));
  for (int64_t i = 0; i < in.numel(); i += 97) in.data<float>()[i] = 300.0f;
  CompileOptions o;
  o.precision = "float16";
  Executable ipu = compile(g, Device("ipu-emu:gc200"), o), cpu = compile(g, Device("cpu"));
  ir::HostTensor got = ipu.run({in}).outputs.at(0), want = cpu.run({in}).outputs.at(0);
  for (int64_t c = 0; c < 8; ++c) {
    ASSERT_TRUE(std::isfinite(got.data<float>()[c])) << "channel " << c;
    // The input rounds to fp16 first (2^-11 relative), then the mean when stored.
    EXPECT_NEAR(got.data<float>()[c], want.data<float>()[c], 2e-3 * want.data<float>()[c]);
  }
  g.add_output(sq);  // now the square is a graph output too: stored in fp16, 300^2 overflows
  Executable both = compile(g, Device("ipu-emu:gc200"), o);
  EXPECT_TRUE(std::isinf(both.run({in}).outputs.at(1).data<float>()[0]));
}

TEST(IpuBackend, ReportTraceAndTables) {
  CaptureScope scope;
  ir::Graph g = conv_stack(16, 32, 2);
  CompileOptions o;
  o.batch = 4;
  Executable e = compile(g, Device("ipu-emu:gc200"), o);
  RunOutput out = e.run(random_inputs(e.graph(), 3));
  const backends::RunReport& r = out.report;
  EXPECT_EQ(r.backend, "ipu-emu");
  EXPECT_EQ(r.device, "ipu-emu:gc200");
  EXPECT_EQ(r.clock_hz, 1.33e9);
  EXPECT_GT(r.cycles, 0u);
  EXPECT_DOUBLE_EQ(r.device_seconds, r.cycles / 1.33e9);
  EXPECT_NEAR(r.peak_flops_per_s * 1e-12, 62.6, 0.2);
  EXPECT_GT(r.achieved_flops_per_s, 0);
  EXPECT_LT(r.achieved_flops_per_s, r.peak_flops_per_s);
  for (const char* m :
       {"compute_cycles", "exchange_cycles", "sync_cycles", "tile_balance_max_over_mean",
        "achieved_tflops", "max_tile_bytes", "samples_per_second"})
    EXPECT_TRUE(r.metrics.count(m)) << m;
  EXPECT_GE(r.metrics.at("tile_balance_max_over_mean"), 1.0);
  // Per-superstep table: phases add up to the run, and to the ops plus the host streams.
  const backends::Table& steps = r.tables.at("ipu_supersteps");
  uint64_t sum = 0, streams = 0, op_cycles = 0;
  for (const auto& row : steps.rows) {
    sum += static_cast<uint64_t>(row[4] + row[5] + row[6]);
    if (row[2] < 0) streams += static_cast<uint64_t>(row[4] + row[5] + row[6]);
  }
  for (const auto& op : r.ops) op_cycles += op.cycles;
  EXPECT_EQ(sum, r.cycles);
  EXPECT_EQ(op_cycles + streams, r.cycles);
  EXPECT_GT(streams, 0u);
  // Per-tile memory: one row per tile, in the report and in the trace.
  const backends::Table& mem = r.tables.at("ipu_tile_memory");
  EXPECT_EQ(mem.rows.size(), 1472u);
  EXPECT_EQ(mem.columns.at(2), "total");
  for (const auto& row : mem.rows) {
    double parts = row[3] + row[4] + row[5] + row[6] + row[7] + row[8];
    ASSERT_EQ(row[2], parts);
  }
  EXPECT_EQ(scope.sink.tables["ipu_tile_memory"].size(), 1472u);
  // Events per superstep phase, on per-IPU tracks, in cycles.
  ASSERT_EQ(scope.sink.devices.size(), 1u);
  EXPECT_EQ(scope.sink.devices[0].unit, sim::TimeUnit::cycles);
  EXPECT_EQ(scope.sink.devices[0].clock_hz, 1'330'000'000u);
  size_t compute = 0, exchange = 0, sync = 0;
  for (const auto& ev : scope.sink.events) {
    compute += ev.track == "ipu0.compute";
    exchange += ev.track == "ipu0.exchange";
    sync += ev.track == "ipu0.sync";
  }
  EXPECT_GT(compute, 4u);
  EXPECT_GT(exchange, 2u);
  EXPECT_EQ(sync, steps.rows.size());
  bool conv_named = false;
  for (const auto& ev : scope.sink.events)
    if (ev.track == "ipu0.compute" && ev.op >= 0 && scope.sink.ops.at(ev.op).node == "conv1")
      conv_named = true;
  EXPECT_TRUE(conv_named);
}

TEST(IpuBackend, TimingOnlySkipsNumericsWithTheSameCycles) {
  ir::Graph g = matmul_graph(64, 512, 256);
  CompileOptions t;
  t.timing_only = true;
  Compared full = run_both(g, "ipu-emu:gc200");
  Executable e = compile(g, Device("ipu-emu:gc200"), t);
  RunOutput out = e.run(random_inputs(e.graph(), 7));
  EXPECT_EQ(out.report.cycles, full.ipu.report.cycles);
  EXPECT_EQ(out.outputs[0].data<float>()[0], 0.0f);
}

TEST(IpuBackend, UnsupportedOpsFallBackToCpu) {
  ir::Graph g("argmax");
  auto x = g.add_input("x", ir::DType::f32, {4, 10});
  auto r = g.add_node(ir::OpType::Relu, "relu", {x})[0];
  auto a = g.add_node(ir::OpType::ArgMax, "argmax", {r}, {{"axis", int64_t{1}}})[0];
  g.add_output(a);
  g.add_output(r);
  Compared c = run_both(g, "ipu-emu:gc200");
  EXPECT_EQ(c.ipu.report.fallback_count(), 1);
  const int64_t* got = c.ipu.outputs[0].data<int64_t>();
  const int64_t* want = c.cpu.outputs[0].data<int64_t>();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(got[i], want[i]);
  EXPECT_EQ(c.exe.compile_report().fallback_nodes, std::vector<std::string>{"argmax"});
  CompileOptions strict;
  strict.strict = true;
  EXPECT_THROW(compile(g, Device("ipu-emu:gc200"), strict), UnsupportedOpError);
}

TEST(IpuBackend, SeveralPresetsInOneProcess) {
  std::string path = ::testing::TempDir() + "quarter.json";
  std::ofstream(path) << R"({"base": "gc200", "name": "quarter", "tiles": 368})";
  ir::Graph g = conv_stack(8, 16, 2);
  CompileOptions o;
  o.batch = 2;
  std::vector<std::string> devices{"ipu-emu:gc2", "ipu-emu:gc200", "ipu-emu:bow",
                                   "ipu-emu:" + path};
  std::vector<Executable> exes;
  for (const auto& d : devices) exes.push_back(compile(g, Device(d), o));
  CompileOptions co;
  co.batch = 2;
  auto inputs = random_inputs(exes[0].graph(), 11);
  auto want = compile(g, Device("cpu"), co).run(inputs).outputs[0];
  std::map<std::string, uint64_t> cycles;
  for (int round = 0; round < 2; ++round)
    for (size_t i = 0; i < exes.size(); ++i) {
      RunOutput out = exes[i].run(inputs);
      EXPECT_LT(max_rel_diff(out.outputs[0], want), 1e-4) << devices[i];
      EXPECT_NEAR(out.report.device_seconds, out.report.cycles / out.report.clock_hz, 1e-12);
      if (round == 1) {
        EXPECT_EQ(cycles[devices[i]], out.report.cycles) << devices[i] << " is deterministic";
      }
      cycles[devices[i]] = out.report.cycles;
    }
  EXPECT_NE(cycles["ipu-emu:gc2"], cycles["ipu-emu:gc200"]);
  EXPECT_EQ(exes[3].compile_report().metrics.at("tiles_per_ipu"), 368);
}

}  // namespace
}  // namespace mimic
