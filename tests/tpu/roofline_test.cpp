// Roofline behaviour on TPUv1 (S1): an MLP with ~200 MACs per weight byte is memory-bound (its
// weights stream from DDR3 at 34 GB/s), a large convolution is compute-bound, and MLP throughput
// rises with batch until the ridge point (~1350 MACs per weight byte) and then flattens. As in the
// paper's roofline, throughput is that of the layers (weights against compute); the host's PCIe
// transfers of the batch in and out are reported separately (host_dma) and not part of it.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "models/tpu/tpu_spec.h"
#include "tpu_test_util.h"

namespace mimic {
namespace {

// FLOP/s of the MatMul layers: their FLOPs over their device time.
double layer_flops_per_s(const backends::RunReport& r, uint64_t* cycles = nullptr) {
  double flops = 0, seconds = 0;
  uint64_t c = 0;
  for (const auto& op : r.ops)
    if (op.op_type.rfind("MatMul", 0) == 0) {
      flops += static_cast<double>(op.flops);
      seconds += op.device_seconds;
      c += op.cycles;
    }
  if (cycles) *cycles = c;
  return seconds > 0 ? flops / seconds : 0;
}

TEST(TpuRoofline, MlpAt200MacsPerWeightByteIsMemoryBoundOnV1) {
  // Batch 200: every int8 weight byte is used by 200 multiply-adds (MLP0 in S1 Table 1).
  auto r = tpu_test::run(tpu_test::mlp_graph(200, 1024, 3), "tpu-emu:v1",
                         tpu_test::options({}, "default", true))
               .report;
  double ridge = models::tpu::preset("v1").ridge_flops_per_byte();
  EXPECT_NEAR(r.ridge_intensity, ridge, 1);
  int matmuls = 0;
  for (const auto& op : r.ops) {
    if (op.op_type.rfind("MatMul", 0) != 0) continue;
    ++matmuls;
    EXPECT_EQ(op.bound, "memory") << op.node;
    EXPECT_NEAR(op.intensity, 400, 40) << op.node;  // 2 FLOP x 200 per weight byte
  }
  EXPECT_EQ(matmuls, 3);
  uint64_t layer_cycles = 0;
  double tput = layer_flops_per_s(r, &layer_cycles);
  EXPECT_GT(r.metrics.at("mxu_weight_stall_cycles"), 0.5 * static_cast<double>(layer_cycles));
  // Bounded by the weight stream: 34 GB/s x 400 FLOP/byte = 13.6 TFLOP/s, far below the 92 peak.
  EXPECT_LT(tput, 34e9 * 400 * 1.05);
  EXPECT_GT(tput, 34e9 * 400 * 0.6);
}

TEST(TpuRoofline, LargeConvolutionIsComputeBoundOnV1) {
  auto r = tpu_test::run(tpu_test::conv_graph(8, 256, 28, 256, true), "tpu-emu:v1",
                         tpu_test::options({}, "default", true))
               .report;
  ASSERT_EQ(r.ops.size(), 1u);
  EXPECT_EQ(r.ops[0].bound, "compute");
  EXPECT_GT(r.ops[0].intensity, r.ridge_intensity);
  EXPECT_GT(r.ops[0].utilization, 0.5);
}

// Three chained 256 -> 256 3x3 convolutions at 19x19, batch 8 (S1's CNN0 layers): each weight
// tile feeds 2,888 rows, far longer than the next tile's fetch, and the weight FIFO fetches the
// next layer's first tiles while the current layer runs (S1: Read_Weights is decoupled from the
// MatrixMultiply that waits on the previous layer's activations). Only the very first tile stalls.
TEST(TpuRoofline, ChainedConvolutionsFetchTheNextLayersWeightsAheadOnV1) {
  ir::Graph g("conv_chain");
  ir::ValueId x = g.add_input("x", ir::DType::f32, ir::Shape({8, 256, 19, 19}));
  ir::Attributes pads{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  for (int i = 0; i < 3; ++i) {
    auto w = g.add_constant(fmt::format("w{}", i),
                            tpu_test::random_tensor(ir::Shape({256, 256, 3, 3}), i + 1, 0.02f));
    x = g.add_node(ir::OpType::Conv, fmt::format("conv{}", i), {x, w}, pads)[0];
  }
  g.add_output(x);
  auto r = tpu_test::run(g, "tpu-emu:v1", tpu_test::options({}, "default", true)).report;
  // One 64 KiB tile over DDR3 at 34 GB/s and 700 MHz: ~1,350 cycles plus the access latency.
  double one_tile = 65536.0 / 34e9 * 700e6;
  EXPECT_GT(r.metrics.at("mxu_weight_stall_cycles"), 0.9 * one_tile);
  EXPECT_LT(r.metrics.at("mxu_weight_stall_cycles"), 1.2 * one_tile);
  EXPECT_EQ(r.bytes_moved.at("ddr3"), 2 * 3 * 9 * 65536) << "each row half re-reads its 9 tiles";
}

TEST(TpuRoofline, MlpThroughputRisesWithBatchUntilTheRidgeThenFlattens) {
  const int64_t batches[] = {64, 128, 256, 512, 1024, 2048, 4096};
  std::vector<double> tput;
  for (int64_t b : batches) {
    auto r = tpu_test::run(tpu_test::mlp_graph(b, 1024, 2), "tpu-emu:v1",
                           tpu_test::options({}, "default", true))
                 .report;
    tput.push_back(layer_flops_per_s(r));
  }
  double peak = models::tpu::preset("v1").peak_flops_per_s();
  std::string table;
  for (size_t i = 0; i < tput.size(); ++i)
    table += fmt::format(" b{}={:.1f}T", batches[i], tput[i] * 1e-12);
  // Below the ridge (1350 MACs/byte) doubling the batch nearly doubles throughput.
  for (size_t i = 1; i < 4; ++i) EXPECT_NEAR(tput[i] / tput[i - 1], 2.0, 0.3) << table;
  // Past it, throughput flattens near the peak.
  EXPECT_NEAR(tput[6] / tput[5], 1.0, 0.12) << table;
  EXPECT_GT(tput[6], 0.6 * peak) << table;
  EXPECT_LT(tput[3], 0.5 * peak) << table;
}

// S1's sensitivity study (sheet A.4): a 600x600 layer (LSTM1, batch 96) takes 9 steps on the
// 256x256 MXU, 18 us in all, bound by shifting 64 KiB weight tiles in from DDR3; on a 512x512 MXU
// it takes 4 steps of 4x the weights, 32 us, so a bigger array does not help.
TEST(TpuRoofline, V1WeightStepsMatchThePapersSensitivityStudy) {
  auto o = tpu_test::options({}, "default", true);
  auto small = tpu_test::run(tpu_test::matmul_graph(96, 600, 600), "tpu-emu:v1", o).report;
  EXPECT_NEAR(small.ops[0].device_seconds * 1e6, 18.0, 1.8);
  auto big_o = tpu_test::options({{"mxu.rows", "512"}, {"mxu.cols", "512"}}, "default", true);
  auto big = tpu_test::run(tpu_test::matmul_graph(96, 600, 600), "tpu-emu:v1", big_o).report;
  EXPECT_NEAR(big.ops[0].device_seconds * 1e6, 32.0, 3.2);
  EXPECT_GT(big.ops[0].device_seconds, small.ops[0].device_seconds);
}

}  // namespace
}  // namespace mimic
