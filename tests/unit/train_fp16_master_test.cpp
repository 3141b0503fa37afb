// fp16 training on ipu-emu (backends/ipu_emu/half_storage.h): stochastic rounding is unbiased and
// lands on the two fp16 neighbours; with weights near 1 (fp16 ulp 2^-10) and SGD updates of about
// 1e-4 (under half an ulp), plain fp16 storage never moves the weights, fp32 master weights
// follow the cpu's f32 training, and stochastic rounding moves them on average.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "backends/ipu_emu/half_storage.h"
#include "base/error.h"
#include "base/numeric_formats.h"
#include "frontend/api/random.h"
#include "frontend/api/train.h"
#include "frontend/ir/graph_builder.h"

namespace mimic {
namespace {

using backends::ipu_emu::stochastic_round_f16;
using ir::DType;
using ir::Shape;

uint64_t draw(uint64_t i) {  // any well-mixed bits will do for the statistics below
  uint64_t x = i * 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 31)) * 0xBF58476D1CE4E5B9ull;
  return x ^ (x >> 29);
}

TEST(StochasticRounding, IsUnbiasedBetweenTheTwoNeighbours) {
  const float ulp = std::ldexp(1.0f, -10);
  for (float x : {1.0f + 0.3f * ulp, -1.0f - 0.7f * ulp, 3e-6f, 65000.3f}) {
    // fp16's step at x: 2^(exponent - 10) for normal values, 2^-24 for subnormal ones.
    double step = std::max(std::ldexp(1.0, std::ilogb(x) - 10), std::ldexp(1.0, -24));
    double sum = 0;
    const int n = 40000;
    for (int i = 0; i < n; ++i) {
      float r = stochastic_round_f16(x, draw(i));
      ASSERT_EQ(r, numeric::round_to_f16(r)) << "not an fp16 value: " << r;
      ASSERT_LT(std::fabs(double(r) - x), step) << "not a neighbour of " << x << ": " << r;
      sum += r;
    }
    EXPECT_NEAR(sum / n, x, 0.02 * step) << x;
  }
  EXPECT_EQ(stochastic_round_f16(1.5f, draw(1)), 1.5f);
  EXPECT_TRUE(std::isinf(stochastic_round_f16(INFINITY, draw(2))));
  EXPECT_TRUE(std::isnan(stochastic_round_f16(NAN, draw(3))));
}

// loss = mean((x W - t)^2) with W near 1 and lr so small that each update is ~1e-4.
struct NearOneModel {
  ir::HostTensor w = Random(3).tensor(DType::f32, Shape({16, 4}));
  ir::HostTensor x = Random(4).tensor(DType::f32, Shape({32, 16}));
  ir::HostTensor t = Random(5).tensor(DType::f32, Shape({32, 4}));
  ir::Graph graph;
  NearOneModel() {
    float* p = w.data<float>();
    for (int64_t i = 0; i < w.numel(); ++i) p[i] = numeric::round_to_f16(1.0f + 0.05f * p[i]);
    ir::GraphBuilder b(graph, "m");
    ir::ValueId in = graph.add_input("x", DType::f32, Shape({32, 16}));
    graph.add_output(b.op(ir::OpType::MatMul, {in, graph.add_constant("w", w)}));
  }
  // Sum of |W - W0| after `steps` SGD steps on `device` with ipu-emu `options`.
  double moved(const std::string& device, std::map<std::string, std::string> options, int steps,
               std::vector<float>* out = nullptr) {
    TrainOptions o;
    o.loss.kind = LossKind::mse;
    o.optimizer.lr = 2e-4;
    o.compile.options = std::move(options);
    if (device != "cpu") o.compile.precision = "float16";
    TrainStep step(graph, {{"w", w}}, Device(device), o);
    for (int s = 0; s < steps; ++s) step.step(x, t);
    const float* now = step.parameters().at(0).second.data<float>();
    double d = 0;
    for (int64_t i = 0; i < w.numel(); ++i) d += std::fabs(now[i] - w.data<float>()[i]);
    if (out) out->assign(now, now + w.numel());
    return d;
  }
};

TEST(Fp16Training, MasterWeightsKeepUpdatesFp16StorageLoses) {
  NearOneModel m;
  std::vector<float> cpu, master;
  double f32 = m.moved("cpu", {}, 8, &cpu);
  double plain = m.moved("ipu-emu:gc200", {}, 8);
  double kept = m.moved("ipu-emu:gc200", {{"master_weights", "float32"}}, 8, &master);
  double stochastic = m.moved("ipu-emu:gc200", {{"stochastic_rounding", "true"}}, 8);
  std::printf(
      "sum |W - W0| after 8 steps: cpu f32 %.6g, fp16 %.6g, fp32 master %.6g, stochastic %.6g\n",
      f32, plain, kept, stochastic);
  EXPECT_GT(f32, 1e-3);
  EXPECT_EQ(plain, 0.0) << "updates under half an fp16 ulp are lost in fp16 storage";
  EXPECT_NEAR(kept, f32, 0.1 * f32);
  double worst = 0;
  for (size_t i = 0; i < cpu.size(); ++i)
    worst = std::max(worst, double(std::fabs(cpu[i] - master[i])));
  EXPECT_LT(worst, 2e-4) << "the f32 master follows the cpu's weights";
  EXPECT_GT(stochastic, 0.3 * f32) << "stochastic rounding moves the weights on average";
  EXPECT_LT(stochastic, 3.0 * f32);
}

TEST(Fp16Training, OptionsNeedFloat16AndKnownValues) {
  NearOneModel m;
  TrainOptions o;
  o.loss.kind = LossKind::mse;
  o.compile.options = {{"master_weights", "float32"}};
  EXPECT_THROW(TrainStep(m.graph, {{"w", m.w}}, Device("ipu-emu:gc200"), o), InvalidArgument);
  o.compile.precision = "float16";
  o.compile.options = {{"master_weights", "bfloat16"}};
  try {
    TrainStep(m.graph, {{"w", m.w}}, Device("ipu-emu:gc200"), o);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("master_weights=bfloat16 must be float16 or float32"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace mimic
