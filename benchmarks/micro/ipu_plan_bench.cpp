// Planning time of the ipu-emu compiler per ResNet-50 layer: lowering one Conv (or the FC Gemm)
// onto a GC200's tiles (backends/ipu_emu lower_node: plan_linear's search over group/row/column/K
// splits costed with the model's formulas, then operand placement and the layer's supersteps).
// Batch 8, float32, default options (memory proportion 0.6), as benchmarks/ipu uses.
// Each iteration starts from a fresh lowering context with only the layer's input placed, as
// when the layer is the first one of a stage; the context's setup (a few small vectors) is timed
// with the plan and is negligible beside it.
// Planning is single-threaded: times are CPU time of the benchmark thread.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <string>
#include <vector>

#include "backends/ipu_emu/ipu_options.h"
#include "backends/ipu_emu/lowering.h"
#include "frontend/ir/graph.h"
#include "frontend/ir/host_tensor.h"
#include "frontend/ir/shape_inference.h"
#include "models/ipu/ipu_spec.h"

namespace mimic {
namespace {

using backends::ipu_emu::Labels;
using backends::ipu_emu::LowerContext;
using backends::ipu_emu::LoweredOp;
using backends::ipu_emu::Placement;
using backends::ipu_emu::TileCursor;

constexpr int64_t kBatch = 8;

struct Layer {
  std::string name;
  int64_t c, hw, m, kernel, stride;  // in channels, input size, out channels, kernel, stride
  bool fc = false;
};

// The distinct kinds of ResNet-50 layers: the 7x7 stem, each stage's 3x3, 1x1 reduce and expand,
// the strided 1x1 downsample, and the FC.
const std::vector<Layer> kLayers = {
    {"stem_7x7_s2", 3, 224, 64, 7, 2},
    {"l1_1x1_reduce", 256, 56, 64, 1, 1},
    {"l1_3x3", 64, 56, 64, 3, 1},
    {"l1_1x1_expand", 64, 56, 256, 1, 1},
    {"l2_3x3", 128, 28, 128, 3, 1},
    {"l2_1x1_expand", 128, 28, 512, 1, 1},
    {"l2_downsample_1x1_s2", 256, 56, 512, 1, 2},
    {"l3_3x3", 256, 14, 256, 3, 1},
    {"l3_1x1_reduce", 1024, 14, 256, 1, 1},
    {"l3_1x1_expand", 256, 14, 1024, 1, 1},
    {"l4_3x3", 512, 7, 512, 3, 1},
    {"l4_1x1_expand", 512, 7, 2048, 1, 1},
    {"fc", 2048, 1, 1000, 1, 1, true},
};

ir::Graph layer_graph(const Layer& l) {
  ir::Graph g;
  if (l.fc) {
    auto x = g.add_input("x", ir::DType::f32, ir::Shape({kBatch, l.c}));
    auto w = g.add_constant("w", ir::HostTensor(ir::DType::f32, ir::Shape({l.m, l.c})));
    auto b = g.add_constant("b", ir::HostTensor(ir::DType::f32, ir::Shape({l.m})));
    g.add_output(g.add_node(ir::OpType::Gemm, l.name, {x, w, b}, {{"transB", int64_t{1}}})[0]);
  } else {
    auto x = g.add_input("x", ir::DType::f32, ir::Shape({kBatch, l.c, l.hw, l.hw}));
    auto w = g.add_constant(
        "w", ir::HostTensor(ir::DType::f32, ir::Shape({l.m, l.c, l.kernel, l.kernel})));
    int64_t pad = l.kernel / 2;
    g.add_output(g.add_node(ir::OpType::Conv, l.name, {x, w},
                            {{"pads", std::vector<int64_t>{pad, pad, pad, pad}},
                             {"strides", std::vector<int64_t>{l.stride, l.stride}}})[0]);
  }
  ir::infer_shapes(g);
  return g;
}

void BM_IpuPlanLayer(benchmark::State& state, size_t layer) {
  const Layer& l = kLayers.at(layer);
  const models::ipu::IpuSpec specs = models::ipu::preset("gc200");
  const backends::ipu_emu::IpuOptions options;
  const ir::Graph g = layer_graph(l);
  std::vector<ir::Shape> shapes;
  for (int v = 0; v < g.num_values(); ++v) shapes.push_back(g.value(v).type.shape);
  const ir::ValueId x = g.inputs().at(0);
  const uint32_t tiles = static_cast<uint32_t>(specs.tiles);
  LoweredOp last;
  for (auto _ : state) {
    Labels labels;
    LowerContext c{specs, options, g, shapes, {}, {}, TileCursor(tiles), 0, &labels, 0};
    c.placement.assign(g.num_values(), Placement{});
    c.placed.assign(g.num_values(), false);
    c.placement[x] = backends::ipu_emu::spread(
        0, c.cursor.take(backends::ipu_emu::linear_tiles(c, shapes[x].numel())),
        backends::ipu_emu::value_bytes(c, x));
    c.placed[x] = true;
    last = backends::ipu_emu::lower_node(c, 0);
    benchmark::DoNotOptimize(last.steps.data());
  }
  state.SetLabel(last.plan);
  state.counters["plan_tiles"] = double(last.plan_tiles);
  state.counters["est_cycles"] = double(last.est_cycles);
  state.counters["supersteps"] = double(last.steps.size());
}
// One benchmark per layer, named after it.
const bool kRegistered = [] {
  for (size_t i = 0; i < kLayers.size(); ++i)
    benchmark::RegisterBenchmark(("BM_IpuPlanLayer/" + kLayers[i].name).c_str(), BM_IpuPlanLayer, i)
        ->Unit(benchmark::kMicrosecond);
  return true;
}();

}  // namespace
}  // namespace mimic

BENCHMARK_MAIN();
