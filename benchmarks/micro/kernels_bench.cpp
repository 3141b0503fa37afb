// Micro-benchmarks of the cpu backend's hot kernels and of the numeric-format conversions that the
// emulators apply to every operand. Run: build/benchmarks/micro_kernels --benchmark_out=...json
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "base/extrema.h"
#include "base/gemm.h"
#include "base/numeric_formats.h"
#include "frontend/api/compile.h"
#include "frontend/api/random.h"
#include "frontend/ir/graph_builder.h"
#include "frontend/ir/shape_inference.h"

namespace mimic {
namespace {

void BM_GemmF32(benchmark::State& state) {
  int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  Random rng(1);
  ir::HostTensor a = rng.tensor(ir::DType::f32, ir::Shape({m, k})),
                 b = rng.tensor(ir::DType::f32, ir::Shape({k, n}));
  ir::HostTensor c(ir::DType::f32, ir::Shape({m, n}));
  for (auto _ : state)
    gemm_f32(m, n, k, 1.0f, {a.data<float>(), k, false}, {b.data<float>(), n, false}, 0.0f,
             c.data<float>(), n);
  state.counters["GFLOP/s"] = benchmark::Counter(2e-9 * double(m) * double(n) * double(k),
                                                 benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_GemmF32)
    ->Args({512, 512, 512})
    ->Args({1024, 1024, 1024})
    ->Args({3136, 64, 576})
    ->Args({49, 512, 4608})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The cpu backend's MatMul node per dtype it runs (backends/cpu/kernels_linear.cpp): f32 on the
// Eigen GEMM; f16 and bf16 widened to f32 around that GEMM and rounded back (the conversions are
// part of the node's cost); i8 x i8 -> i32 with exact integer accumulation. Same shapes for every
// dtype so that GFLOP/s (2*M*N*K per run) compare directly. Named BM_MatMul/<dtype>/M:../N:../K:..
void BM_MatMul(benchmark::State& state, ir::DType dtype) {
  int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  Random rng(2);
  ir::Graph g;
  auto a = g.add_input("a", dtype, ir::Shape({m, k}));
  auto b = g.add_input("b", dtype, ir::Shape({k, n}));
  g.add_output(g.add_node(ir::OpType::MatMul, "mm", {a, b})[0]);
  ir::infer_shapes(g);
  std::vector<ir::HostTensor> in{rng.tensor(dtype, ir::Shape({m, k})),
                                 rng.tensor(dtype, ir::Shape({k, n}))};
  for (auto _ : state) benchmark::DoNotOptimize(backends::cpu::run_node(g, g.node(0), in));
  state.SetLabel(std::string(ir::dtype_name(dtype)) + " -> " +
                 ir::dtype_name(g.value(g.outputs()[0]).type.dtype));
  state.counters["GFLOP/s"] = benchmark::Counter(2e-9 * double(m) * double(n) * double(k),
                                                 benchmark::Counter::kIsIterationInvariantRate);
}
const bool kMatMulRegistered = [] {
  const int64_t shapes[][3] = {
      {512, 512, 512}, {1024, 1024, 1024}, {3136, 64, 576}, {8, 1000, 2048}};
  for (ir::DType t : {ir::DType::f32, ir::DType::f16, ir::DType::bf16, ir::DType::i8}) {
    auto* b = benchmark::RegisterBenchmark((std::string("BM_MatMul/") + ir::dtype_name(t)).c_str(),
                                           BM_MatMul, t);
    for (const auto& s : shapes) b->Args({s[0], s[1], s[2]});
    b->ArgNames({"M", "N", "K"})->Unit(benchmark::kMillisecond)->UseRealTime();
  }
  return true;
}();

// A 3x3 convolution of ResNet-50's layer1 at batch 8, both layouts.
void BM_Conv3x3(benchmark::State& state) {
  bool nhwc = state.range(0) != 0;
  Random rng(3);
  ir::Shape xs = nhwc ? ir::Shape({8, 56, 56, 64}) : ir::Shape({8, 64, 56, 56});
  ir::Graph g;
  auto x = g.add_input("x", ir::DType::f32, xs);
  auto w = g.add_constant("w", rng.tensor(ir::DType::f32, ir::Shape({64, 64, 3, 3})));
  g.add_output(g.add_node(ir::OpType::Conv, "conv", {x, w},
                          {{"pads", std::vector<int64_t>{1, 1, 1, 1}},
                           {"layout", std::string(nhwc ? "NHWC" : "NCHW")}})[0]);
  ir::infer_shapes(g);
  std::vector<ir::HostTensor> in{rng.tensor(ir::DType::f32, xs), *g.value(w).constant};
  for (auto _ : state) benchmark::DoNotOptimize(backends::cpu::run_node(g, g.node(0), in));
  state.SetLabel(nhwc ? "NHWC" : "NCHW");
  state.counters["GFLOP/s"] = benchmark::Counter(2e-9 * 8 * 56 * 56 * 64 * 64 * 9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Conv3x3)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// Runs graph `g` on the cpu backend with loop fusion on or off, `bytes` of inputs per iteration.
void run_with_fusion(benchmark::State& state, const ir::Graph& g, bool fusion, int64_t bytes) {
  CompileOptions o;
  o.options["fusion"] = fusion ? "on" : "off";
  Executable exe = compile(g, "cpu", o);
  std::vector<ir::HostTensor> in = random_inputs(exe.graph(), 4, 10);
  for (auto _ : state) benchmark::DoNotOptimize(exe.run(in));
  state.SetLabel(fusion ? "fusion=on" : "fusion=off");
  state.SetBytesProcessed(state.iterations() * bytes);
}

// Training-mode BatchNormalization as the train graph writes it (batch statistics, normalize,
// scale, shift, Relu) on ResNet-50's layer1 at batch 8, on the cpu fast path with loop fusion
// off (0) and on (1): the statistics' reductions, the centered values and the normalization.
void BM_BatchNormTrain(benchmark::State& state) {
  const bool fusion = state.range(0) != 0;
  const ir::Shape xs({8, 256, 56, 56});
  ir::Graph g("bn_train");
  ir::ValueId x = g.add_input("x", ir::DType::f32, xs);
  ir::ValueId gamma = g.add_input("gamma", ir::DType::f32, ir::Shape({1, 256, 1, 1}));
  ir::GraphBuilder b(g, "bn");
  ir::ValueId mean = b.reduce_mean(x, {0, 2, 3}, true);
  ir::ValueId xc = b.sub(x, mean);
  ir::ValueId var = b.reduce_mean(b.mul(xc, xc), {0, 2, 3}, true);
  ir::ValueId rstd = b.op(ir::OpType::Reciprocal,
                          {b.op(ir::OpType::Sqrt, {b.add(var, b.scalar(1e-5, ir::DType::f32))})});
  ir::ValueId xhat = b.mul(xc, rstd);
  g.add_output(xhat);  // saved for the gradient
  g.add_output(b.op(ir::OpType::Relu, {b.add(b.mul(xhat, gamma), b.scalar(0.1, ir::DType::f32))}));
  run_with_fusion(state, g, fusion, xs.numel() * 4);
}
BENCHMARK(BM_BatchNormTrain)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// A BatchNorm statistic of an NCHW activation: one channel's sum over the batch and the plane
// (arg 0), and the sum of a product of two such tensors, as BatchNorm's gradient takes (arg 1).
void BM_ChannelSum(benchmark::State& state) {
  const bool product = state.range(0) != 0;
  const ir::Shape xs({8, 256, 56, 56});
  ir::Graph g("channel_sum");
  ir::ValueId x = g.add_input("x", ir::DType::f32, xs);
  ir::GraphBuilder b(g, "sum");
  if (product) x = b.mul(x, g.add_input("y", ir::DType::f32, xs));
  g.add_output(b.reduce_sum(x, {0, 2, 3}, true));
  Executable exe = compile(g, "cpu", CompileOptions{});
  std::vector<ir::HostTensor> in = random_inputs(exe.graph(), 4, 10);
  for (auto _ : state) benchmark::DoNotOptimize(exe.run(in));
  state.SetLabel(product ? "sum(x*y)" : "sum(x)");
  state.SetBytesProcessed(state.iterations() * xs.numel() * 4 * (product ? 2 : 1));
}
BENCHMARK(BM_ChannelSum)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// GELU's gradient as autodiff writes it (Erf and Exp in one loop-fused group, the vectorized
// transcendental functions) on BERT-base's FFN activation at batch 8 ([8 x 128, 3072]), with loop
// fusion off (0: the reference kernels' scalar functions) and on (1).
void BM_FusedGeluGrad(benchmark::State& state) {
  const bool fusion = state.range(0) != 0;
  const ir::Shape xs({8 * 128, 3072});
  ir::Graph g("gelu_grad");
  ir::ValueId x = g.add_input("x", ir::DType::f32, xs);
  ir::ValueId dy = g.add_input("dy", ir::DType::f32, xs);
  ir::GraphBuilder b(g, "t");
  ir::ValueId cdf = b.scale(
      b.add(b.op(ir::OpType::Erf, {b.scale(x, 0.7071067811865476)}), b.scalar(1.0, ir::DType::f32)),
      0.5);
  ir::ValueId pdf =
      b.scale(b.op(ir::OpType::Exp, {b.scale(b.mul(x, x), -0.5)}), 0.3989422804014327);
  g.add_output(b.mul(dy, b.add(cdf, b.mul(x, pdf))));
  run_with_fusion(state, g, fusion, xs.numel() * 4 * 2);
}
BENCHMARK(BM_FusedGeluGrad)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// The cost of propagating NaN, in one run: the cpu's Relu and max-fold loops (max over leading
// axes: the max-pool gradient's reduction) with the comparisons they had, which dropped a NaN
// (arg 0), and with the NaN-propagating ones they have now (arg 1: `x < 0 ? 0 : x`, max_nan).
void BM_NanPropagatingMax(benchmark::State& state) {
  const bool propagating = state.range(0) != 0;
  const int64_t n = 1 << 22, rows = 8, run = n / rows;
  std::vector<float> x(n), y(n), folded(run);
  Random rng(3);
  ir::HostTensor t = rng.tensor(ir::DType::f32, ir::Shape({n}));
  std::copy(t.data<float>(), t.data<float>() + n, x.begin());
  for (auto _ : state) {
    if (propagating) {
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0 ? 0.0f : x[i];
      std::fill(folded.begin(), folded.end(), -INFINITY);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < run; ++j) folded[j] = max_nan(folded[j], x[r * run + j]);
    } else {
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0 ? x[i] : 0.0f;
      std::fill(folded.begin(), folded.end(), -INFINITY);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < run; ++j)
          folded[j] = folded[j] < x[r * run + j] ? x[r * run + j] : folded[j];
    }
    benchmark::DoNotOptimize(y.data());
    benchmark::DoNotOptimize(folded.data());
    benchmark::ClobberMemory();
  }
  state.SetLabel(propagating ? "NaN-propagating" : "NaN-dropping (before)");
  state.SetItemsProcessed(state.iterations() * n * 2);
}
BENCHMARK(BM_NanPropagatingMax)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

// A Sigmoid-Mul chain (SiLU as autodiff writes it) on [8 x 128, 3072] with loop fusion off (0) and
// on (1): the fused loop's packet logistic, now with its scan for the far tail (x < -80).
void BM_FusedSigmoid(benchmark::State& state) {
  const ir::Shape xs({8 * 128, 3072});
  ir::Graph g("silu");
  ir::ValueId x = g.add_input("x", ir::DType::f32, xs);
  ir::GraphBuilder b(g, "t");
  g.add_output(b.mul(x, b.op(ir::OpType::Sigmoid, {x})));
  run_with_fusion(state, g, state.range(0) != 0, xs.numel() * 4 * 2);
}
BENCHMARK(BM_FusedSigmoid)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_RoundToBf16(benchmark::State& state) {
  std::vector<float> v(1 << 20);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 1.0001f;
  for (auto _ : state) {
    numeric::round_to_bf16(v.data(), v.size());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(v.size()));
}
BENCHMARK(BM_RoundToBf16);

void BM_RoundToF16(benchmark::State& state) {
  std::vector<float> v(1 << 20);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 60000) * 1.0001f;
  for (auto _ : state) {
    numeric::round_to_f16(v.data(), v.size());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(v.size()));
}
BENCHMARK(BM_RoundToF16);

void BM_SplitBf16ThreeWay(benchmark::State& state) {
  std::vector<float> v(1 << 18), hi(v.size()), mid(v.size()), lo(v.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.37f;
  for (auto _ : state) {
    for (size_t i = 0; i < v.size(); ++i) {
      numeric::Bf16Split s = numeric::split_bf16(v[i]);
      hi[i] = s.hi;
      mid[i] = s.mid;
      lo[i] = s.lo;
    }
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(v.size()));
}
BENCHMARK(BM_SplitBf16ThreeWay);

}  // namespace
}  // namespace mimic

BENCHMARK_MAIN();
