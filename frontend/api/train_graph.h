// The training-step graph: from a forward graph whose parameters are constants, builds ONE graph
// computing forward, loss, backward (frontend/ir/autodiff.h) and the optimizer update, which every
// backend compiles like any other graph. Parameters, BatchNormalization running statistics and
// optimizer state become graph inputs and come back as outputs, so the caller owns them between
// steps. BatchNormalization runs in training mode: batch statistics (biased variance) normalize,
// and the running statistics update with PyTorch's convention running = (1 - m) running + m batch,
// with the unbiased variance, where m = 1 - the node's ONNX `momentum` (default 0.9, so m = 0.1).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "frontend/api/losses.h"
#include "frontend/api/optim.h"
#include "frontend/ir/batch_norm_train.h"
#include "frontend/ir/graph.h"

namespace mimic {

using NamedTensors = std::vector<std::pair<std::string, ir::HostTensor>>;

enum class TrainRole {
  data,
  target,
  lr,
  step,
  param,
  buffer,
  state,
  loss,
  dropout_mask,
  loss_scale,  // input: the f32 scale S of loss scaling (loss_scale.h)
  grads_check  // output: the sum of every unscaled gradient times 0 (0, or NaN on an inf/NaN)
};

// How a training BatchNormalization computes its batch variance (frontend/ir/batch_norm_train.h).
using BatchNormVariance = ir::BatchNormVariance;
// "one_pass" or "two_pass" (dashes too); "auto": none (the device's default, see TrainOptions).
// Anything else is an InvalidArgument naming it.
std::optional<BatchNormVariance> parse_batch_norm_variance(const std::string& name);

// One graph input or output of the step: its role and, for params/buffers/state/dropout masks, an
// index into TrainGraph::params / buffers / state / dropouts.
struct TrainSlot {
  TrainRole role;
  int index = 0;
};

struct TrainGraph {
  ir::Graph graph;
  std::vector<TrainSlot> inputs, outputs;           // parallel to graph.inputs() / graph.outputs()
  std::vector<std::string> params, buffers, state;  // names ("fc1.weight", "fc1.weight.exp_avg")
  std::vector<ir::TensorType> param_types, buffer_types, state_types;
  ir::TensorType output_type, target_type;  // the model's output and the loss target
  // Dropout in training mode: y = x * mask / (1 - ratio), the f32 0/1 mask an input the caller
  // draws each step (keep probability 1 - ratio), as torch.nn.Dropout in train() does.
  struct Dropout {
    ir::TensorType mask_type;
    double ratio;
  };
  std::vector<Dropout> dropouts;
};

// `params` are the model's named parameters, matched to the graph's constants by storage (a
// parameter the graph does not use is left out). Those feeding a BatchNormalization's mean or var
// are buffers (updated, not trained). The forward graph must have one output and a bound batch.
// Dropout nodes with a ratio > 0 get a mask input each (TrainRole::dropout_mask).
// With `loss_scaling`, the gradients are those of loss * S (S a graph input) times 1/S, and an
// output checks them for inf/NaN (TrainRole::loss_scale, TrainRole::grads_check).
// The trainable parameters of an imported model: its floating-point initializers (ir::Value::
// initializer) that some node reads where a parameter trains (not a shape, a Resize's scales,
// Dropout's ratio, Clip's bounds or Pad's value), by name, sharing storage with the graph so
// build_train_graph() matches them.
NamedTensors graph_parameters(const ir::Graph& g);

// Recurrent layers (LSTM, GRU, RNN) are unrolled into primitive ops (frontend/ir/
// recurrent_expand.h) before differentiation, so their gradients come from those ops' rules; a
// layer that cannot be unrolled is an UnsupportedOpError naming it and why.
TrainGraph build_train_graph(const ir::Graph& forward, const NamedTensors& params,
                             const LossConfig& loss, const OptimizerConfig& optimizer,
                             bool loss_scaling = false,
                             BatchNormVariance variance = BatchNormVariance::two_pass);

}  // namespace mimic
