// Recurrent layers LSTM, GRU and RNN (ONNX opset 14 semantics): the attributes and dimensions of
// one node, parsed and checked once, shared by shape inference, flop counts and every backend so
// that they agree on gate order, direction, layout and activations.
//
// Gate order of W, R and B follows ONNX: LSTM iofc (peepholes P: iof), GRU zrh, RNN one gate.
// B holds [Wb, Rb] per direction. layout 0: X [seq, batch, input], Y [seq, dirs, batch, hidden],
// states [dirs, batch, hidden]; layout 1: X [batch, seq, input], Y [batch, seq, dirs, hidden],
// states [batch, dirs, hidden].
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "frontend/ir/graph.h"

namespace mimic::ir {

inline bool is_recurrent(OpType op) {
  return op == OpType::LSTM || op == OpType::GRU || op == OpType::RNN;
}

enum class RecurrentActivation {
  Relu,
  Tanh,
  Sigmoid,
  Affine,
  LeakyRelu,
  ThresholdedRelu,
  ScaledTanh,
  HardSigmoid,
  Elu,
  Softsign,
  Softplus
};

struct ActivationSpec {
  RecurrentActivation kind = RecurrentActivation::Sigmoid;
  float alpha = 0.0f, beta = 0.0f;
};

struct RecurrentSpec {
  OpType op = OpType::LSTM;
  int gates = 4;                      // LSTM 4, GRU 3, RNN 1
  int activations_per_direction = 3;  // LSTM f,g,h; GRU f,g; RNN f
  int num_directions = 1;
  bool reverse = false;  // direction "reverse" (one direction running backwards in time)
  int layout = 0;
  int64_t seq_length = 0, batch = 0, input_size = 0, hidden = 0;
  std::vector<ActivationSpec> activations;  // num_directions * activations_per_direction
  bool has_clip = false;
  float clip = 0.0f;
  bool input_forget = false;         // LSTM: forget gate = 1 - input gate
  bool linear_before_reset = false;  // GRU

  // Whether direction d walks the sequence from its last valid step to its first.
  bool backward(int d) const { return reverse || d == 1; }
  const ActivationSpec& activation(int direction, int which) const {
    return activations[direction * activations_per_direction + which];
  }
  // Shapes of Y and of the final states (Y_h, Y_c) for this layout.
  Shape y_shape() const;
  Shape state_shape() const;
};

// Parses node `n` (LSTM, GRU or RNN) given the shapes of X, W and R. Throws ShapeError with a
// message (without the node prefix) on any attribute or dimension that breaks the ONNX spec.
RecurrentSpec recurrent_spec(const Node& n, const Shape& x, const Shape& w, const Shape& r);
RecurrentSpec recurrent_spec(const Graph& g, const Node& n);

const char* activation_name(RecurrentActivation kind);

// Multiply-adds plus gate arithmetic of one recurrent node (0 for symbolic shapes).
int64_t recurrent_flops(const Graph& g, const Node& n);

// The activation functions of the ONNX recurrent ops' list (inline: called per gate element).
inline float apply_activation(const ActivationSpec& a, float x) {
  switch (a.kind) {
    case RecurrentActivation::Relu:
      return x < 0.0f ? 0.0f : x;
    case RecurrentActivation::Tanh:
      return std::tanh(x);
    case RecurrentActivation::Sigmoid:
      return 1.0f / (1.0f + std::exp(-x));
    case RecurrentActivation::Affine:
      return a.alpha * x + a.beta;
    case RecurrentActivation::LeakyRelu:
      return x >= 0.0f ? x : a.alpha * x;
    case RecurrentActivation::ThresholdedRelu:
      return x >= a.alpha ? x : 0.0f;
    case RecurrentActivation::ScaledTanh:
      return a.alpha * std::tanh(a.beta * x);
    case RecurrentActivation::HardSigmoid:
      return std::min(std::max(a.alpha * x + a.beta, 0.0f), 1.0f);
    case RecurrentActivation::Elu:
      return x >= 0.0f ? x : a.alpha * (std::exp(x) - 1.0f);
    case RecurrentActivation::Softsign:
      return x / (1.0f + std::fabs(x));
    case RecurrentActivation::Softplus:
      return x > 20.0f ? x : std::log1p(std::exp(x));
  }
  return x;
}

}  // namespace mimic::ir
