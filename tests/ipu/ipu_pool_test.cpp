// Pooling windows too large for one tile: the planner splits the kernel's taps over tiles (the
// K split of the vector path, poplin's kernel split that popnn's pooling goes through), each tile
// reduces its block of the window and the partial maxima / sums are exchanged and reduced. Checked
// at the planner (the split fits where the unsplit plan overflows a tile) and end to end (the
// layer compiles within tile memory and matches the cpu backend).
#include <gtest/gtest.h>

#include "backends/ipu_emu/linear_plan.h"
#include "backends/ipu_emu/lowering.h"
#include "base/numeric_formats.h"
#include "frontend/api/random.h"
#include "frontend/ir/nn_geometry.h"
#include "models/ipu/ipu_spec.h"
#include "tests/ipu/ipu_test_util.h"

namespace mimic {
namespace {

using namespace ipu_test;
using backends::ipu_emu::LinearPlan;
using backends::ipu_emu::LinearProblem;
using ir::OpType;

constexpr int64_t kSide = 1000;

// ONNX pytorch-converted/test_MaxPool2d_stride_padding_dilation: X[1,1,1000,1000], kernel 60x80,
// dilations 10x10, strides 10x10, pads 10,20,10,20 -> Y[1,1,43,25]; one window spans 591 x 791
// input pixels (1.9 MB of f32).
ir::Graph dilated_max_pool() {
  ir::Graph g("maxpool");
  auto x = g.add_input("x", ir::DType::f32, {1, 1, kSide, kSide});
  ir::Attributes a{{"kernel_shape", std::vector<int64_t>{60, 80}},
                   {"dilations", std::vector<int64_t>{10, 10}},
                   {"strides", std::vector<int64_t>{10, 10}},
                   {"pads", std::vector<int64_t>{10, 20, 10, 20}}};
  g.add_output(g.add_node(OpType::MaxPool, "pool", {x}, a)[0]);
  return g;
}

// AveragePool with 400 x 400 windows (640 KB of f32 each) every 50 pixels -> Y[1,2,13,13].
ir::Graph wide_avg_pool() {
  ir::Graph g("avgpool");
  auto x = g.add_input("x", ir::DType::f32, {1, 2, kSide, kSide});
  ir::Attributes a{{"kernel_shape", std::vector<int64_t>{400, 400}},
                   {"strides", std::vector<int64_t>{50, 50}}};
  g.add_output(g.add_node(OpType::AveragePool, "pool", {x}, a)[0]);
  return g;
}

// The planner's problem for the max pool, as lower_pool builds it.
LinearProblem max_pool_problem() {
  ir::Graph g = dilated_max_pool();
  ir::WindowGeometry geo = ir::window_geometry(g.node(0), ir::Shape({1, 1, kSide, kSide}), nullptr,
                                               ir::WindowKind::pool);
  LinearProblem p;
  p.groups = 1;
  p.rows = static_cast<uint64_t>(geo.out_spatial());
  p.kvol = static_cast<uint64_t>(geo.kernel_volume());
  p.kernel = backends::ipu_emu::kernel_dims(geo);
  p.vector_path = true;
  p.has_b = false;
  p.input_pixels = backends::ipu_emu::window_input_pixels(geo);
  return p;
}

TEST(IpuPool, KernelSplitCutsRowsThenColumns) {
  using backends::ipu_emu::kernel_block;
  std::vector<uint64_t> k{60, 80};
  EXPECT_EQ(kernel_block(k, 1), k);
  EXPECT_EQ(kernel_block(k, 7), (std::vector<uint64_t>{9, 80}));  // 7 bands of <= 9 rows
  EXPECT_EQ(kernel_block(k, 60), (std::vector<uint64_t>{1, 80}));
  EXPECT_EQ(kernel_block(k, 120), (std::vector<uint64_t>{1, 40}));
  auto cands = backends::ipu_emu::kernel_split_candidates(k, 1472);
  EXPECT_TRUE(std::is_sorted(cands.begin(), cands.end()));
  EXPECT_EQ(cands.front(), 1u);
  EXPECT_LE(cands.back(), 1472u);
  for (uint32_t ks : cands) {
    // Every candidate cuts the kernel into exactly ks blocks.
    auto b = kernel_block(k, ks);
    EXPECT_EQ(backends::ipu_emu::ceil_div(60, b[0]) * backends::ipu_emu::ceil_div(80, b[1]), ks);
  }
}

TEST(IpuPool, PlannerSplitsAWindowThatCannotFitOneTile) {
  auto specs = models::ipu::preset("gc200");
  auto tiles = static_cast<uint32_t>(specs.tiles);
  LinearProblem p = max_pool_problem();
  LinearPlan split = backends::ipu_emu::plan_linear(specs, p, tiles, 0.6);
  EXPECT_GT(split.ks, 1u) << split.describe();
  EXPECT_TRUE(split.fits) << split.describe();
  EXPECT_LE(split.temps(), 0.6 * specs.tile_sram_bytes);
  EXPECT_GT(split.partials_bytes, 0u) << "a K split holds partials and their reduction buffer";
  // The K chunks (what the numerics sum in order) are contiguous runs of taps covering the kernel.
  auto bounds = backends::ipu_emu::k_chunks(p, split);
  ASSERT_EQ(bounds.size(), split.ks + 1u);
  EXPECT_EQ(bounds.front(), 0);
  EXPECT_EQ(bounds.back(), 60 * 80);
  EXPECT_TRUE(std::is_sorted(bounds.begin(), bounds.end()));
  // The same pool without the kernel split: one output's whole window (591 x 1031 pixels, its
  // row's share) is exchanged onto one tile, more than a tile holds.
  LinearProblem whole = p;
  whole.kernel.clear();
  LinearPlan one = backends::ipu_emu::plan_linear(specs, whole, tiles, 0.6);
  EXPECT_EQ(one.ks, 1u);
  EXPECT_FALSE(one.fits);
  EXPECT_GE(one.exchange_bytes, 591u * 791u * 4u);
  EXPECT_GT(one.temps(), specs.tile_sram_bytes);
  EXPECT_LT(split.temps() * 10, one.temps());
}

TEST(IpuPool, LargeWindowPoolsFitAndMatchCpu) {
  for (bool max : {true, false}) {
    ir::Graph g = max ? dilated_max_pool() : wide_avg_pool();
    Executable ipu = compile(g, Device("ipu-emu:gc200"), options());  // throws if out of memory
    Executable cpu = compile(g, Device("cpu"), {});
    const auto& r = ipu.compile_report();
    EXPECT_EQ(r.metrics.at("out_of_memory"), 0) << g.name();
    EXPECT_LE(r.metrics.at("max_tile_bytes"), 638976) << g.name();
    const auto& plan = r.tables.at("ipu_plans").rows.at(0);
    EXPECT_GT(plan[5], 1) << g.name() << ": expected a K split over the kernel";
    auto inputs = random_inputs(ipu.graph(), 3);
    RunOutput a = ipu.run(inputs), b = cpu.run(inputs);
    ASSERT_EQ(a.outputs[0].shape(), b.outputs[0].shape());
    if (max) {
      EXPECT_EQ(max_rel_diff(a.outputs[0], b.outputs[0]), 0.0) << "a maximum is exact";
    } else {
      EXPECT_LT(max_rel_diff(a.outputs[0], b.outputs[0]), 1e-5);
    }
    EXPECT_GT(a.report.cycles, 0u);
  }
}

TEST(IpuPool, HalfStorageMaxPoolSplitIsExact) {
  // fp16 storage: partial maxima stay fp16 and rounding is monotonic, so the split pool gives
  // exactly the cpu's maximum rounded to fp16.
  CompileOptions o = options();
  o.precision = "float16";
  Executable ipu = compile(dilated_max_pool(), Device("ipu-emu:gc200"), o);
  Executable cpu = compile(dilated_max_pool(), Device("cpu"), {});
  EXPECT_GT(ipu.compile_report().tables.at("ipu_plans").rows.at(0)[5], 1);
  auto inputs = random_inputs(ipu.graph(), 4);
  ir::HostTensor a = ipu.run(inputs).outputs[0], b = cpu.run(inputs).outputs[0];
  ASSERT_EQ(a.numel(), b.numel());
  for (int64_t i = 0; i < a.numel(); ++i)
    ASSERT_EQ(a.data<float>()[i], numeric::round_to_f16(b.data<float>()[i])) << i;
}

TEST(IpuPool, DepthwiseKSplitSumsPartialsInOrder) {
  // A depthwise convolution whose 63 x 63 kernel covers the whole 64 x 64 image: the planner
  // cuts the taps over tiles and the numerics sum the tiles' partial planes in chunk order.
  ir::Graph g = conv_graph(1, 2, 2, 64, 63, 1, 2);
  Executable ipu = compile(g, Device("ipu-emu:gc200"), options());
  Executable cpu = compile(g, Device("cpu"), {});
  const auto& plan = ipu.compile_report().tables.at("ipu_plans").rows.at(0);
  EXPECT_GT(plan[5], 1) << "expected a K split over the kernel's taps";
  auto inputs = random_inputs(ipu.graph(), 5);
  EXPECT_LT(max_rel_diff(ipu.run(inputs).outputs[0], cpu.run(inputs).outputs[0]), 1e-5);
}

}  // namespace
}  // namespace mimic
