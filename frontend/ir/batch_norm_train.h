// Training-mode BatchNormalization written with primitive ops: the batch's mean and variance over
// every axis but the channel one normalize x. build_train_graph (frontend/api/train_graph.h)
// rewrites every BatchNormalization of a train step this way (and differentiates the composition
// with batch_norm_training_rule); compile() rewrites an inference graph's training_mode=1 ones
// (ONNX BatchNormalization-14/15 exported in training mode) the same way.
#pragma once

#include "frontend/ir/graph.h"
#include "frontend/ir/graph_builder.h"

namespace mimic::ir {

// How the batch variance is computed. two_pass: mean((x - mean)^2), as PyTorch does. one_pass:
// mean(x^2) - mean^2 (at least 0), from two sums one pass over x takes, as XLA's
// BatchNormExpander (xla/service/batchnorm_expander.cc) writes BatchNormTraining for every TPU
// framework (TensorFlow, PyTorch/XLA), Flax's BatchNorm does with use_fast_variance, and PopART's
// norm ops do unless SessionOptions::enableStableNorm (false by default) is set.
enum class BatchNormVariance { two_pass, one_pass };

// The values of one training-mode normalization; mean, var and rstd are shaped [1, C, 1, ...]
// (or [1, ..., C] channels last), var biased (divided by the element count per channel).
struct BatchStatistics {
  ValueId mean, centered, var, rstd, xhat, y;
};

// Batch statistics of BatchNormalization node `n` (its epsilon and layout) for input `x`, `scale`
// and `bias` of b's graph: y = (x - mean) * rstd * scale + bias, rstd = 1 / sqrt(var + epsilon).
BatchStatistics batch_norm_batch_statistics(GraphBuilder& b, const Node& n, ValueId x,
                                            ValueId scale, ValueId bias,
                                            BatchNormVariance variance);

// Whether `n` is a BatchNormalization with training_mode=1.
bool is_training_batch_norm(const Node& n);

// `g` (inferred, batch bound) with every training-mode BatchNormalization replaced by its batch
// statistics' ops (named "<node>/..."); `g` itself, moved, when it has none (every compile asks).
Graph expand_training_batch_norms(Graph g, BatchNormVariance variance);

}  // namespace mimic::ir
