// Several IPUs and precision: a model too big for one IPU fits on four with pipelining and beats
// the best single-IPU throughput; replication splits the batch and pays an all-reduce when weights
// update; sharded and replicated programs compute what the cpu computes; fp16 partials change a
// long-K matmul the way fp16 accumulation does.
#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"
#include "base/numeric_formats.h"
#include "frontend/api/random.h"
#include "tests/ipu/ipu_test_util.h"

namespace mimic {
namespace {

using namespace ipu_test;

// Compiles (timing only) and runs on zero inputs; returns the report, or nothing on out of memory.
std::optional<backends::RunReport> timing_run(const ir::Graph& g, int64_t batch,
                                              const std::string& ipus) {
  CompileOptions o = options({{"num_ipus", ipus}}, batch);
  o.timing_only = true;
  try {
    Executable e = compile(g, Device("ipu-emu:gc200"), o);
    return e.run({ir::HostTensor(ir::DType::f32, e.graph().input_type(0).shape)}).report;
  } catch (const OutOfMemoryError&) {
    return std::nullopt;
  }
}

TEST(IpuScaling, PipeliningFitsWhatOneIpuCannotAndIsFaster) {
  // Six 4096 x 4096 fp32 layers: 403 MB of weights (274 KB per tile of one IPU) plus activations.
  ir::Graph g = wide_mlp(4096, 6);
  const int64_t big = 1024;
  EXPECT_FALSE(timing_run(g, big, "1")) << "batch 1024 must not fit on one IPU";
  auto four = timing_run(g, big, "4");
  ASSERT_TRUE(four) << "batch 1024 must fit on four IPUs with pipelining";
  EXPECT_EQ(four->metrics.at("stages"), 4);
  EXPECT_EQ(four->metrics.at("micro_batches"), 8);
  EXPECT_GT(four->bytes_moved.at("ipu_link"), 0);
  int used_ipus = 0;
  for (const auto& u : four->units) used_ipus += u.kind == "compute" && u.busy_cycles > 0;
  EXPECT_EQ(used_ipus, 4);
  // The best one IPU can do: the largest batch that fits.
  std::optional<backends::RunReport> one;
  int64_t fitting = 0;
  for (int64_t b = big / 2; b >= 16 && !one; b /= 2)
    if ((one = timing_run(g, b, "1"))) fitting = b;
  ASSERT_TRUE(one);
  double one_sps = one->metrics.at("samples_per_second"),
         four_sps = four->metrics.at("samples_per_second");
  EXPECT_GT(four_sps, 1.3 * one_sps)
      << "one IPU at batch " << fitting << ": " << one_sps << " samples/s";
  EXPECT_DOUBLE_EQ(four_sps, big / four->device_seconds);
}

TEST(IpuScaling, ShardedAndReplicatedProgramsComputeLikeTheCpu) {
  ir::Graph g = conv_stack(8, 16, 4);
  CompileOptions co;
  co.batch = 8;
  auto inputs = random_inputs(compile(g, Device("cpu"), co).graph(), 5);
  auto want = compile(g, Device("cpu"), co).run(inputs).outputs[0];
  for (auto opts : std::vector<std::map<std::string, std::string>>{
           {{"num_ipus", "2"}},
           {{"num_ipus", "2"}, {"replication_factor", "2"}},
           {{"num_ipus", "4"}, {"replication_factor", "2"}, {"micro_batches", "2"}}}) {
    Executable e = compile(g, Device("ipu-emu:gc200"), options(opts, 8));
    RunOutput out = e.run(inputs);
    EXPECT_LT(max_rel_diff(out.outputs[0], want), 1e-5) << opts.at("num_ipus");
    EXPECT_EQ(out.report.metrics.at("num_ipus"), std::stod(opts.at("num_ipus")));
  }
}

TEST(IpuScaling, ReplicationSplitsTheBatchAndAllReducesWeights) {
  ir::Graph g = wide_mlp(1024, 4);
  auto run = [&](std::map<std::string, std::string> opts) {
    CompileOptions o = options(opts, 256);
    o.timing_only = true;
    Executable e = compile(g, Device("ipu-emu:gc200"), o);
    return e.run({ir::HostTensor(ir::DType::f32, e.graph().input_type(0).shape)}).report;
  };
  backends::RunReport one = run({}), two = run({{"num_ipus", "2"}, {"replication_factor", "2"}});
  backends::RunReport train =
      run({{"num_ipus", "2"}, {"replication_factor", "2"}, {"weight_update", "true"}});
  EXPECT_EQ(two.metrics.at("replicas"), 2);
  // Each replica computes half the batch; both stream over the one shared PCIe link.
  EXPECT_LT(two.metrics.at("compute_cycles"), 0.6 * one.metrics.at("compute_cycles"));
  EXPECT_GT(two.metrics.at("samples_per_second"), one.metrics.at("samples_per_second"));
  EXPECT_EQ(two.bytes_moved.at("host"), one.bytes_moved.at("host"));
  // Ring all-reduce of 16 MiB of weights over the IPU-Links: 2 (R - 1) steps.
  EXPECT_GT(train.cycles, two.cycles);
  EXPECT_GE(train.bytes_moved.at("ipu_link"), 2 * 4 * 1024 * 1024 * 4 / 2);
  EXPECT_EQ(two.bytes_moved.count("ipu_link") ? two.bytes_moved.at("ipu_link") : 0, 0);
  // Bad batch splits are named.
  CompileOptions bad = options({{"num_ipus", "4"}, {"replication_factor", "4"}}, 6);
  try {
    compile(g, Device("ipu-emu:gc200"), bad);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("batch 6"), std::string::npos) << e.what();
  }
}

TEST(IpuScaling, HalfPartialsChangeALongKMatmul) {
  const int64_t m = 4, k = 16384, n = 4;
  ir::Graph g("long_k");
  Random rng(3);
  ir::HostTensor w(ir::DType::f32, {k, n}), x(ir::DType::f32, {m, k});
  for (int64_t i = 0; i < k * n; ++i)
    w.data<float>()[i] = numeric::round_to_f16(static_cast<float>(rng.uniform()));
  for (int64_t i = 0; i < m * k; ++i)
    x.data<float>()[i] = numeric::round_to_f16(static_cast<float>(rng.uniform()));
  auto xi = g.add_input("x", ir::DType::f32, {m, k});
  g.add_output(g.add_node(ir::OpType::MatMul, "mm", {xi, g.add_constant("w", w)})[0]);
  auto run = [&](const char* half) {
    CompileOptions o = options({{"enable_half_partials", half}});
    o.precision = "float16";
    Executable e = compile(g, Device("ipu-emu:gc200"), o);
    return std::make_pair(e.run({x}), e.compile_report().tables.at("ipu_plans").rows.at(0)[5]);
  };
  auto fp32 = run("false").first;
  auto [fp16, k_split] = run("true");
  ASSERT_GE(k_split, 16) << "a 16384-long K is split over many tiles";
  EXPECT_EQ(fp16.report.precision, "float16 (half partials)");
  // Reference in double; the same fp16 accumulation emulated in the plan's chunk order.
  int64_t chunk = (k + static_cast<int64_t>(k_split) - 1) / static_cast<int64_t>(k_split);
  double err_float = 0, err_half = 0, err_emulated = 0, ulp_max = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double ref = 0;
      float acc = 0;
      for (int64_t c0 = 0; c0 < k; c0 += chunk) {
        double part = 0;
        for (int64_t q = c0; q < std::min(k, c0 + chunk); ++q)
          part += double(x.data<float>()[i * k + q]) * w.data<float>()[q * n + j];
        ref += part;
        float p16 = numeric::round_to_f16(static_cast<float>(part));
        acc = c0 == 0 ? p16 : numeric::round_to_f16(acc + p16);
      }
      double ulp = std::ldexp(1.0, std::ilogb(ref) - 10);  // fp16 spacing at |ref|
      ulp_max = std::max(ulp_max, ulp);
      err_float =
          std::max(err_float, std::fabs(fp32.outputs[0].data<float>()[i * n + j] - ref) / ulp);
      err_half =
          std::max(err_half, std::fabs(fp16.outputs[0].data<float>()[i * n + j] - ref) / ulp);
      err_emulated =
          std::max(err_emulated, std::fabs(fp16.outputs[0].data<float>()[i * n + j] - acc) / ulp);
    }
  EXPECT_LE(err_float, 0.5 + 1e-3) << "fp32 partials: only the final rounding to fp16";
  EXPECT_LE(err_emulated, 1.0) << "fp16 partials accumulate chunk by chunk in the plan's K order";
  EXPECT_GT(err_half, 2.0) << "fp16 accumulation over " << k_split
                           << " chunks drifts by several ulps";
  EXPECT_GT(err_half, 4 * err_float);
  // fp16 partials also run the AMP's faster fp16 mode (gc200: 64 vs 32 MACs per cycle).
  EXPECT_LT(fp16.report.ops.at(0).cycles, fp32.report.ops.at(0).cycles);
}

}  // namespace
}  // namespace mimic
