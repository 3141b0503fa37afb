// Loss scaling (loss_scale.h): GradScaler's dynamic rule, steps skipped on inf/NaN gradients
// (forced with a batch whose gradients overflow f32), scaling that cancels out on cpu, and the fp16
// case it exists for: on ipu-emu:gc200 at float16, a model whose activation gradients fall below
// fp16's smallest subnormal never moves without scaling and trains with dynamic scaling (whose
// first step, at 2^16 = inf in fp16, is skipped and halves the scale, as GradScaler's would).
#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"
#include "frontend/api/random.h"
#include "frontend/api/train.h"
#include "frontend/ir/graph_builder.h"

namespace mimic {
namespace {

using ir::DType;
using ir::Shape;

TEST(LossScaler, FollowsGradScalerDefaults) {
  LossScaleConfig c = parse_loss_scale("dynamic");
  c.growth_interval = 3;
  LossScaler s(c);
  EXPECT_EQ(s.scale(), 65536.0);
  s.update(true);
  EXPECT_EQ(s.scale(), 32768.0);
  s.update(false);
  s.update(false);
  EXPECT_EQ(s.scale(), 32768.0);
  s.update(false);
  EXPECT_EQ(s.scale(), 65536.0);
  s.update(false);
  s.update(true);  // an overflow resets the run of good steps
  s.update(false);
  s.update(false);
  EXPECT_EQ(s.scale(), 32768.0);
  LossScaler fixed(parse_loss_scale("128"));
  fixed.update(true);
  EXPECT_EQ(fixed.scale(), 128.0);
  EXPECT_THROW(parse_loss_scale("-1"), InvalidArgument);
  EXPECT_THROW(parse_loss_scale("big"), InvalidArgument);
}

// y = c * (x @ W): with c = 1e-4 and |x| ~ 1000, dL/d(x W) is ~1e-9 (below fp16's 6e-8) while
// dL/dW = x^T dL/d(x W) summed over the batch is ~1e-5.
struct TinyGradModel {
  ir::HostTensor w = Random(3).tensor(DType::f32, Shape({16, 4}));
  ir::Graph graph;
  ir::HostTensor x = Random(4).tensor(DType::f32, Shape({64, 16}));
  ir::HostTensor t = Random(5).tensor(DType::f32, Shape({64, 4}));
  TinyGradModel() {
    float* p = w.data<float>();
    for (int64_t i = 0; i < w.numel(); ++i) p[i] *= 0.01f;
    float* px = x.data<float>();
    for (int64_t i = 0; i < x.numel(); ++i) px[i] *= 1000.0f;
    ir::HostTensor w_true = Random(6).tensor(DType::f32, Shape({16, 4}));  // t = c x W_true
    float* pt = t.data<float>();
    for (int n = 0; n < 64; ++n)
      for (int o = 0; o < 4; ++o) {
        double y = 0;
        for (int i = 0; i < 16; ++i) y += double(px[n * 16 + i]) * w_true.data<float>()[i * 4 + o];
        pt[n * 4 + o] = static_cast<float>(1e-6 * y);
      }
    ir::GraphBuilder b(graph, "m");
    ir::ValueId in = graph.add_input("x", DType::f32, Shape({64, 16}));
    ir::ValueId wv = graph.add_constant("w", w);
    graph.add_output(b.scale(b.op(ir::OpType::MatMul, {in, wv}), 1e-4));
  }
  // The f32 mse loss of weights `wt`, on the host.
  double loss(const ir::HostTensor& wt) const {
    const float *pw = wt.data<float>(), *px = x.data<float>(), *pt = t.data<float>();
    double sum = 0;
    for (int n = 0; n < 64; ++n)
      for (int o = 0; o < 4; ++o) {
        double y = 0;
        for (int i = 0; i < 16; ++i) y += double(px[n * 16 + i]) * pw[i * 4 + o];
        double d = 1e-4 * y - pt[n * 4 + o];
        sum += d * d;
      }
    return sum / 256;
  }
};

TrainOptions sgd_mse(double lr) {
  TrainOptions o;
  o.loss.kind = LossKind::mse;
  o.optimizer.lr = lr;
  return o;
}

TEST(TrainStep, OverflowSkipsTheStepAndBacksOff) {
  TinyGradModel m;
  TrainOptions o = sgd_mse(1.0);
  o.optimizer.momentum = 0.9;
  o.loss_scale = parse_loss_scale("dynamic");
  TrainStep step(m.graph, {{"w", m.w}}, Device("cpu"), o);
  ir::HostTensor bad = m.x.clone();
  bad.data<float>()[5] = 1e30f;  // x^T dL/dy overflows f32 (inf, and NaN where inf meets 0)
  step.step(bad, m.t);
  EXPECT_EQ(step.skipped_steps(), 1);
  EXPECT_EQ(step.steps_taken(), 0);
  EXPECT_EQ(step.loss_scale(), 32768.0);
  const float* w = step.parameters().at(0).second.data<float>();
  for (int64_t i = 0; i < m.w.numel(); ++i) ASSERT_EQ(w[i], m.w.data<float>()[i]);
  for (const auto& [name, v] : step.state_dict())
    if (name == "w.momentum_buffer") {
      for (int64_t i = 0; i < v.numel(); ++i) ASSERT_EQ(v.data<float>()[i], 0.0f) << name;
    }
  step.step(m.x, m.t);
  EXPECT_EQ(step.steps_taken(), 1);
  EXPECT_EQ(step.skipped_steps(), 1);
  EXPECT_LT(m.loss(step.parameters().at(0).second), m.loss(m.w));
}

TEST(TrainStep, LossScalingCancelsOutInF32) {
  TinyGradModel m;
  TrainOptions plain = sgd_mse(0.5), scaled = sgd_mse(0.5);
  scaled.loss_scale = parse_loss_scale("1024");
  TrainStep a(m.graph, {{"w", m.w}}, Device("cpu"), plain);
  TrainStep b(m.graph, {{"w", m.w}}, Device("cpu"), scaled);
  for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(a.step(m.x, m.t), b.step(m.x, m.t));
  const float *wa = a.parameters().at(0).second.data<float>(),
              *wb = b.parameters().at(0).second.data<float>();
  for (int64_t i = 0; i < m.w.numel(); ++i) EXPECT_NEAR(wa[i], wb[i], 1e-6 * std::fabs(wa[i]));
  EXPECT_EQ(b.state_dict().back().first, "loss_scale.good_steps");
}

TEST(TrainStepIpuFp16, GradientsUnderflowWithoutScalingAndTrainWithIt) {
  TinyGradModel m;
  TrainOptions o = sgd_mse(100.0);
  o.compile.precision = "float16";
  TrainStep plain(m.graph, {{"w", m.w}}, Device("ipu-emu:gc200"), o);
  o.loss_scale = parse_loss_scale("dynamic");
  TrainStep scaled(m.graph, {{"w", m.w}}, Device("ipu-emu:gc200"), o);
  plain.step(m.x, m.t);
  ir::HostTensor w_plain1 = plain.parameters().at(0).second;  // w rounded to fp16
  for (int i = 0; i < 6; ++i) {
    if (i > 0) plain.step(m.x, m.t);
    scaled.step(m.x, m.t);
  }
  ir::HostTensor w_plain = plain.parameters().at(0).second,
                 w_scaled = scaled.parameters().at(0).second;
  double l0 = m.loss(m.w), l_plain = m.loss(w_plain), l_scaled = m.loss(w_scaled);
  std::cout << "fp16 mse after 6 steps: " << l0 << " -> " << l_plain << " unscaled, " << l_scaled
            << " with dynamic scaling (scale now " << scaled.loss_scale() << ", "
            << scaled.skipped_steps() << " skipped)\n";
  EXPECT_GT(scaled.last_report().cycles, 0u);  // ran on the emulated IPU
  EXPECT_EQ(scaled.skipped_steps(), 1);        // 2^16 rounds to inf in fp16
  EXPECT_EQ(scaled.loss_scale(), 32768.0);
  for (int64_t i = 0; i < m.w.numel(); ++i)
    ASSERT_EQ(w_plain.data<float>()[i], w_plain1.data<float>()[i]) << "unscaled fp16 moved w " << i;
  EXPECT_GT(l_plain, 0.95 * l0);
  EXPECT_LT(l_scaled, 0.8 * l0);
}

}  // namespace
}  // namespace mimic
