// A linear model whose training step has a closed form, shared by the TrainStep tests: y = x @ W
// (no bias) with an MSE loss, x and targets drawn from fixed seeds.
#pragma once

#include <cmath>
#include <memory>
#include <vector>

#include "frontend/api/nn.h"
#include "frontend/api/random.h"
#include "frontend/api/train.h"

namespace mimic::train_test {

// A small classifier with every kind of layer a CNN train step has: conv, BatchNorm, ReLU, max
// pool, flatten, two linear layers; input [N, 3, 8, 8], 10 classes.
inline std::shared_ptr<nn::Sequential> small_cnn() {
  auto m = std::make_shared<nn::Sequential>();
  m->push_back(std::make_shared<nn::Conv2d>(3, 8, 3, 1, 1, 1, true, "NCHW", 1, nn::Init{1}));
  m->push_back(std::make_shared<nn::BatchNorm2d>(8));
  m->push_back(std::make_shared<nn::ReLU>());
  m->push_back(std::make_shared<nn::MaxPool2d>(2, 2));
  m->push_back(std::make_shared<nn::Flatten>());
  m->push_back(std::make_shared<nn::Linear>(8 * 4 * 4, 32, true, nn::Init{2}));
  m->push_back(std::make_shared<nn::ReLU>());
  m->push_back(std::make_shared<nn::Linear>(32, 10, true, nn::Init{3}));
  return m;
}

constexpr int64_t kN = 4, kIn = 3, kOut = 2;

// loss = mean((x W - t)^2): dL/dW = 2/(N*Out) x^T (x W - t).
inline std::vector<double> linear_grad(const std::vector<double>& w, const float* x,
                                       const float* t) {
  std::vector<double> g(kIn * kOut, 0.0);
  for (int64_t n = 0; n < kN; ++n)
    for (int64_t o = 0; o < kOut; ++o) {
      double y = 0;
      for (int64_t i = 0; i < kIn; ++i) y += x[n * kIn + i] * w[i * kOut + o];
      double d = 2.0 * (y - t[n * kOut + o]) / (kN * kOut);
      for (int64_t i = 0; i < kIn; ++i) g[i * kOut + o] += x[n * kIn + i] * d;
    }
  return g;
}

struct LinearSetup {
  nn::Linear model{kIn, kOut, false, nn::Init{3}};
  ir::HostTensor x = Random(1).tensor(ir::DType::f32, ir::Shape({kN, kIn}));
  ir::HostTensor t = Random(2).tensor(ir::DType::f32, ir::Shape({kN, kOut}));
  // The initial weights.
  std::vector<double> w0() {
    const float* p = model.weight.host().data<float>();
    return std::vector<double>(p, p + kIn * kOut);
  }
  // The weights a step holds now.
  static std::vector<double> weights(const TrainStep& s) {
    const float* p = s.parameters().at(0).second.data<float>();
    return std::vector<double>(p, p + kIn * kOut);
  }
};

}  // namespace mimic::train_test
