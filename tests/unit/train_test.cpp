// TrainStep on cpu: optimizer updates against hand-computed PyTorch formulas on a linear model
// (where the gradient has a closed form), a CNN that trains with BatchNorm in training mode,
// checkpoints, and one-line errors for bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "base/error.h"
#include "frontend/api/npz.h"
#include "frontend/api/random.h"
#include "frontend/api/train.h"
#include "train_test_util.h"

namespace mimic {
namespace {

using ir::DType;
using ir::Shape;

using train_test::kIn;
using train_test::kN;
using train_test::kOut;
using train_test::linear_grad;
using train_test::LinearSetup;

void expect_weights(const TrainStep& s, const std::vector<double>& want) {
  const float* got = s.parameters().at(0).second.data<float>();
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-5 * std::max(1.0, std::fabs(want[i])));
}

TEST(TrainStep, SgdMomentumNesterovWeightDecayFollowPyTorch) {
  LinearSetup s;
  TrainOptions o;
  o.loss.kind = LossKind::mse;
  o.optimizer = {OptimizerKind::sgd, 0.1, 0.9, true, 0.01};
  TrainStep step(s.model, s.x.type(), Device("cpu"), o);
  std::vector<double> w = s.w0(), buf(w.size(), 0.0);
  for (int k = 0; k < 3; ++k) {
    std::vector<double> g = linear_grad(w, s.x.data<float>(), s.t.data<float>());
    step.step(s.x, s.t);
    for (size_t i = 0; i < w.size(); ++i) {
      double d = g[i] + 0.01 * w[i];
      buf[i] = 0.9 * buf[i] + d;
      w[i] -= 0.1 * (d + 0.9 * buf[i]);
    }
    expect_weights(step, w);
  }
}

TEST(TrainStep, AdamAndAdamWFollowPyTorch) {
  for (OptimizerKind kind : {OptimizerKind::adam, OptimizerKind::adamw}) {
    LinearSetup s;
    TrainOptions o;
    o.loss.kind = LossKind::mse;
    o.optimizer.kind = kind;
    o.optimizer.lr = 0.05;
    o.optimizer.weight_decay = 0.1;
    TrainStep step(s.model, s.x.type(), Device("cpu"), o);
    std::vector<double> w = s.w0(), m(w.size(), 0.0), v(w.size(), 0.0);
    for (int k = 1; k <= 3; ++k) {
      std::vector<double> g = linear_grad(w, s.x.data<float>(), s.t.data<float>());
      step.step(s.x, s.t);
      for (size_t i = 0; i < w.size(); ++i) {
        if (kind == OptimizerKind::adamw)
          w[i] *= 1 - 0.05 * 0.1;
        else
          g[i] += 0.1 * w[i];
        m[i] = 0.9 * m[i] + 0.1 * g[i];
        v[i] = 0.999 * v[i] + 0.001 * g[i] * g[i];
        double denom = std::sqrt(v[i]) / std::sqrt(1 - std::pow(0.999, k)) + 1e-8;
        w[i] -= 0.05 / (1 - std::pow(0.9, k)) * m[i] / denom;
      }
      expect_weights(step, w);
    }
  }
}

TEST(TrainStep, GradientClippingScalesToTheGlobalNorm) {
  LinearSetup s;
  TrainOptions o;
  o.loss.kind = LossKind::mse;
  o.optimizer.lr = 1.0;
  o.optimizer.max_grad_norm = 1e-3;
  TrainStep step(s.model, s.x.type(), Device("cpu"), o);
  std::vector<double> w = s.w0(), g = linear_grad(w, s.x.data<float>(), s.t.data<float>());
  double norm = 0;
  for (double v : g) norm += v * v;
  norm = std::sqrt(norm);
  step.step(s.x, s.t);
  for (size_t i = 0; i < w.size(); ++i) w[i] -= g[i] * 1e-3 / (norm + 1e-6);
  expect_weights(step, w);
}

std::shared_ptr<nn::Sequential> small_cnn() {
  auto m = std::make_shared<nn::Sequential>();
  m->push_back(std::make_shared<nn::Conv2d>(3, 6, 3, 1, 1, 1, true, "NCHW", 1, nn::Init{1}));
  m->push_back(std::make_shared<nn::BatchNorm2d>(6));
  m->push_back(std::make_shared<nn::ReLU>());
  m->push_back(std::make_shared<nn::MaxPool2d>(2, 2));
  m->push_back(std::make_shared<nn::Flatten>());
  m->push_back(std::make_shared<nn::Linear>(6 * 4 * 4, 5, true, nn::Init{2}));
  return m;
}

TEST(TrainStep, CnnWithBatchNormTrainsAndUpdatesRunningStatistics) {
  auto model = small_cnn();
  TrainOptions o;
  o.optimizer = {OptimizerKind::sgd, 0.05, 0.9};
  ir::TensorType in{DType::f32, Shape({8, 3, 8, 8})};
  TrainStep step(*model, in, Device("cpu"), o);
  ir::HostTensor x = Random(5).tensor(DType::f32, in.shape);
  ir::HostTensor y = Random(6).tensor(DType::i64, Shape({8}), 5);
  float first = step.step(x, y), last = first;
  for (int i = 0; i < 30; ++i) last = step.step(x, y);
  EXPECT_LT(last, 0.2f * first) << "first " << first << " last " << last;
  NamedTensors p = step.parameters();
  auto find = [&](const std::string& n) {
    for (auto& [name, t] : p)
      if (name == n) return t;
    ADD_FAILURE() << "no " << n;
    return ir::HostTensor();
  };
  // Running mean moved from 0 towards the batch mean; running var from 1.
  EXPECT_NE(find("1.running_mean").data<float>()[0], 0.0f);
  EXPECT_NE(find("1.running_var").data<float>()[0], 1.0f);
  EXPECT_EQ(step.steps_taken(), 31);
}

TEST(TrainStep, CheckpointRoundTripRestoresTheNextStep) {
  LinearSetup s;
  TrainOptions o;
  o.loss.kind = LossKind::mse;
  o.optimizer.kind = OptimizerKind::adamw;
  TrainStep a(s.model, s.x.type(), Device("cpu"), o), b(s.model, s.x.type(), Device("cpu"), o);
  a.step(s.x, s.t);
  std::string path = ::testing::TempDir() + "/train_ckpt.npz";
  a.save(path);
  b.load(path);
  EXPECT_EQ(b.steps_taken(), 1);
  EXPECT_EQ(a.step(s.x, s.t), b.step(s.x, s.t));
  EXPECT_EQ(a.state_dict().size(), 4u);  // weight, exp_avg, exp_avg_sq, optimizer.step
  EXPECT_THROW(b.load_state_dict({{"nope", s.x}}), InvalidArgument);
  EXPECT_THROW(b.load_state_dict({{"weight", s.x}}), InvalidArgument);  // wrong shape
  std::FILE* f = std::fopen(path.c_str(), "wb");
  std::fputs("not a zip", f);
  std::fclose(f);
  EXPECT_THROW(b.load(path), IoError);
}

template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(TrainStep, BadInputsAreOneLineErrors) {
  nn::Linear model(kIn, 4, true, nn::Init{1});
  ir::TensorType in{DType::f32, Shape({kN, kIn})};
  TrainOptions o;
  TrainStep step(model, in, Device("cpu"), o);
  ir::HostTensor x = Random(1).tensor(DType::f32, in.shape);
  std::vector<int64_t> labels{0, 1, 4, 2};
  ir::HostTensor y = ir::HostTensor::from(Shape({kN}), labels.data());
  EXPECT_EQ(error_of([&] { step.step(x, y); }),
            "cross_entropy loss: label 4 at index 2 is outside [0, 4) (ignore_index -100)");
  ir::HostTensor short_y = ir::HostTensor::from(Shape({2}), labels.data());
  EXPECT_EQ(error_of([&] { step.step(x, short_y); }),
            "cross_entropy loss: target is i64[2], expected i64[4] for model output f32[4,4]");
  o.optimizer.lr = -0.1;
  EXPECT_EQ(error_of([&] { TrainStep(model, in, Device("cpu"), o); }),
            "optimizer: lr = -0.1 must be a finite number >= 0");
  EXPECT_EQ(error_of([&] { step.set_lr(-1); }), "optimizer: lr = -1 must be a finite number >= 0");
}

TEST(TrainStep, MissingGradientRuleNamesTheOpAndNode) {
  ir::Graph g("scatter_model");
  ir::ValueId x = g.add_input("input", DType::f32, Shape({2, 3}));
  std::vector<float> w0(9, 0.5f), zeros(3, 0.0f);
  std::vector<int64_t> row{0};
  ir::HostTensor w = ir::HostTensor::from(Shape({3, 3}), w0.data());
  ir::ValueId wv = g.add_constant("w", w);
  auto h = g.add_node(ir::OpType::MatMul, "fc", {x, wv});
  ir::ValueId indices = g.add_constant("row", ir::HostTensor::from(Shape({1, 1}), row.data()));
  ir::ValueId updates = g.add_constant("zeros", ir::HostTensor::from(Shape({1, 3}), zeros.data()));
  auto y = g.add_node(ir::OpType::ScatterND, "clear_row", {h[0], indices, updates},
                      {{"reduction", std::string("mul")}});
  g.add_output(y[0]);
  TrainOptions o;
  EXPECT_EQ(error_of([&] {
              TrainStep(g, {{"w", w}}, Device("cpu"), o);
            }),
            "autodiff: node 'clear_row' (ScatterND): no gradient rule for ScatterND with reduction "
            "'mul'");
}

// x = ones [8, 16], W = ones [16, 8]: every output is 16 before dropout, 32 or 0 after (ratio
// 0.5, kept values scaled by 2), so the MSE against zeros is 1024 * (kept fraction).
float dropout_loss(uint64_t seed, int steps) {
  ir::Graph g("dropout_model");
  ir::ValueId x = g.add_input("input", DType::f32, Shape({8, 16}));
  std::vector<float> ones(16 * 8, 1.0f);
  ir::HostTensor w = ir::HostTensor::from(Shape({16, 8}), ones.data());
  float ratio = 0.5f;
  auto h = g.add_node(ir::OpType::MatMul, "fc", {x, g.add_constant("w", w)});
  auto y = g.add_node(ir::OpType::Dropout, "drop",
                      {h[0], g.add_constant("ratio", ir::HostTensor::from(Shape(), &ratio))});
  g.add_output(y[0]);
  TrainOptions o;
  o.loss.kind = LossKind::mse;
  o.optimizer.lr = 0.0;
  o.seed = seed;
  TrainStep step(g, {{"w", w}}, Device("cpu"), o);
  ir::HostTensor xs = ir::HostTensor::from(Shape({8, 16}), ones.data());
  ir::HostTensor t(DType::f32, Shape({8, 8}));
  float loss = 0;
  for (int i = 0; i < steps; ++i) loss = step.step(xs, t);
  return loss;
}

TEST(TrainStep, DropoutMasksAreSeededPerStepAndScaled) {
  float l1 = dropout_loss(7, 1);
  double kept = l1 / 1024.0;
  EXPECT_GT(kept, 0.25);
  EXPECT_LT(kept, 0.75);
  EXPECT_NEAR(kept * 64, std::round(kept * 64), 1e-3);  // a whole number of kept outputs
  EXPECT_EQ(dropout_loss(7, 1), l1);                    // same seed, same step: same mask
  EXPECT_NE(dropout_loss(7, 2), l1);                    // the next step draws a new mask
  EXPECT_NE(dropout_loss(8, 1), l1);
}

TEST(Npz, WritesWhatItReads) {
  std::vector<int64_t> iv{1, -2, 3};
  std::vector<float> fv{0.5f, -1.25f, 3, 4, 5, 6};
  NamedTensors t{{"a.b", ir::HostTensor::from(Shape({3}), iv.data())},
                 {"w", ir::HostTensor::from(Shape({2, 3}), fv.data())},
                 {"s", ir::HostTensor::from(Shape(), fv.data())}};
  std::string path = ::testing::TempDir() + "/t.npz";
  write_npz(path, t);
  NamedTensors back = read_npz(path);
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[0].first, "a.b");
  EXPECT_EQ(back[0].second.data<int64_t>()[1], -2);
  EXPECT_EQ(back[1].second.shape(), Shape({2, 3}));
  EXPECT_EQ(back[1].second.data<float>()[1], -1.25f);
  EXPECT_EQ(back[2].second.shape().rank(), 0);
}

}  // namespace
}  // namespace mimic
