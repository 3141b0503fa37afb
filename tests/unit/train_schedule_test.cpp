// Learning-rate schedules (lr_schedule.h) against PyTorch's lr sequences, a TrainStep fed by a
// schedule, and LAMB's update in the cases with a closed form (trust ratio, zero weights, wd = 0).
#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"
#include "frontend/api/random.h"
#include "frontend/api/train.h"
#include "train_test_util.h"

namespace mimic {
namespace {

using ir::DType;
using ir::Shape;

TEST(LrSchedule, WarmupThenCosineMatchesPyTorchSequentialLR) {
  // torch: SequentialLR([LinearLR(start_factor=0.25, total_iters=3),
  //                      CosineAnnealingLR(T_max=7, eta_min=0.001)], milestones=[3]), lr 0.1.
  const double want[] = {0.025,     0.05,      0.075,     0.1,       0.0950980,
                         0.0813627, 0.0615148, 0.0394852, 0.0196373, 0.0059020};
  LrSchedule s = make_schedule("cosine", 10, 3, 30, 0.1, 0.001, 0.25);
  for (int k = 0; k < 10; ++k) EXPECT_NEAR(s.lr_at(0.1, k), want[k], 1e-7) << "step " << k;
}

TEST(LrSchedule, StepExponentialLinearConstant) {
  LrSchedule step = make_schedule("step", 10, 0, 3, 0.5);  // torch StepLR(step_size=3, gamma=0.5)
  const double want[] = {0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.0125};
  for (int k = 0; k < 10; ++k) EXPECT_NEAR(step.lr_at(0.1, k), want[k], 1e-12);
  LrSchedule exp = make_schedule("exponential", 10, 0, 1, 0.9);
  EXPECT_NEAR(exp.lr_at(2.0, 3), 2.0 * 0.729, 1e-12);
  LrSchedule lin = make_schedule("linear", 10, 2);  // warmup from 0 over 2, then 1 -> 0 over 8
  EXPECT_DOUBLE_EQ(lin.lr_at(1.0, 0), 0.0);
  EXPECT_DOUBLE_EQ(lin.lr_at(1.0, 1), 0.5);
  EXPECT_DOUBLE_EQ(lin.lr_at(1.0, 2), 1.0);
  EXPECT_DOUBLE_EQ(lin.lr_at(1.0, 6), 0.5);
  EXPECT_DOUBLE_EQ(lin.lr_at(1.0, 10), 0.0);
  EXPECT_DOUBLE_EQ(make_schedule("constant", 10, 0).lr_at(0.3, 7), 0.3);
  LrSchedule c;
  c.phases.push_back({LrPhaseKind::constant, 0, 0.5, 4});  // torch ConstantLR(factor=0.5, 4)
  EXPECT_DOUBLE_EQ(c.lr_at(0.2, 3), 0.1);
  EXPECT_DOUBLE_EQ(c.lr_at(0.2, 4), 0.2);
}

TEST(LrSchedule, BadSchedulesNameTheField) {
  EXPECT_THROW(make_schedule("cosine", 10, 10), InvalidArgument);
  EXPECT_THROW(make_schedule("poly", 10, 0), InvalidArgument);
  LrSchedule s;
  s.phases.push_back({LrPhaseKind::cosine});
  s.phases[0].t_max = 0;
  try {
    s.validate();
    FAIL() << "t_max = 0 accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("t_max = 0"), std::string::npos) << e.what();
  }
}

using train_test::kIn;
using train_test::kOut;
using train_test::linear_grad;
using Linear = train_test::LinearSetup;

void expect_near(const std::vector<double>& got, const std::vector<double>& want) {
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-5 * std::max(1.0, std::fabs(want[i]))) << "weight " << i;
}

TEST(TrainStep, FollowsTheScheduleEachStep) {
  Linear s;
  TrainOptions o;
  o.loss.kind = LossKind::mse;
  o.optimizer.lr = 0.2;
  o.schedule = make_schedule("step", 10, 0, 1, 0.5);
  TrainStep step(s.model, s.x.type(), Device("cpu"), o);
  std::vector<double> w = s.weights(step);
  for (int k = 0; k < 3; ++k) {
    EXPECT_DOUBLE_EQ(step.lr(), 0.2 * std::pow(0.5, k));
    std::vector<double> g = linear_grad(w, s.x.data<float>(), s.t.data<float>());
    step.step(s.x, s.t);
    for (size_t i = 0; i < w.size(); ++i) w[i] -= 0.2 * std::pow(0.5, k) * g[i];
    expect_near(s.weights(step), w);
  }
}

// One LAMB step from weights w with weight decay wd: m_hat = g, v_hat = g^2, so
// u = g / (|g| + eps) + wd w and the trust ratio is ||w|| / ||u|| (1 when either is 0 or wd = 0).
std::vector<double> lamb_first_step(const std::vector<double>& w, const std::vector<double>& g,
                                    double lr, double wd, double eps) {
  std::vector<double> u(w.size());
  double wn = 0, un = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    u[i] = g[i] / (std::fabs(g[i]) + eps) + wd * w[i];
    wn += w[i] * w[i];
    un += u[i] * u[i];
  }
  double ratio = wd > 0 && wn > 0 && un > 0 ? std::sqrt(wn) / std::sqrt(un) : 1.0;
  std::vector<double> out(w.size());
  for (size_t i = 0; i < w.size(); ++i) out[i] = w[i] - lr * ratio * u[i];
  return out;
}

TEST(TrainStep, LambFirstStepHasTheClosedForm) {
  for (double wd : {0.0, 0.01, 0.5}) {
    for (bool zero_weights : {false, true}) {
      Linear s;
      TrainOptions o;
      o.loss.kind = LossKind::mse;
      o.optimizer.kind = OptimizerKind::lamb;
      o.optimizer.lr = 0.1;
      o.optimizer.weight_decay = wd;
      o.optimizer.eps = 1e-6;
      TrainStep step(s.model, s.x.type(), Device("cpu"), o);
      if (zero_weights)
        step.load_state_dict({{"weight", ir::HostTensor(DType::f32, Shape({kIn, kOut}))}});
      std::vector<double> w = s.weights(step);
      std::vector<double> g = linear_grad(w, s.x.data<float>(), s.t.data<float>());
      step.step(s.x, s.t);
      SCOPED_TRACE(testing::Message() << "wd " << wd << " zero weights " << zero_weights);
      expect_near(s.weights(step), lamb_first_step(w, g, 0.1, wd, 1e-6));
    }
  }
}

}  // namespace
}  // namespace mimic
