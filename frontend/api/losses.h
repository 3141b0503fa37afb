// Training losses as IR subgraphs, with PyTorch's definitions and mean reduction:
//   cross_entropy    logits [N, C], class indices i64 [N]; optional label smoothing and
//                    ignore_index (the mean runs over the targets not ignored), as
//                    torch.nn.functional.cross_entropy;
//   mse              output and target of one shape: mean((y - t)^2);
//   bce_with_logits  output and target of one shape: mean(max(x,0) - x t + log(1 + exp(-|x|))),
//                    the stable form torch.nn.BCEWithLogitsLoss uses.
#pragma once

#include <cstdint>
#include <string>

#include "frontend/ir/graph_builder.h"

namespace mimic {

enum class LossKind { cross_entropy, mse, bce_with_logits };

struct LossConfig {
  LossKind kind = LossKind::cross_entropy;
  double label_smoothing = 0.0;  // cross_entropy only, in [0, 1]
  int64_t ignore_index = -100;   // cross_entropy only
};

// "cross_entropy" | "mse" | "bce_with_logits"; InvalidArgument listing them otherwise.
LossKind parse_loss(const std::string& name);
const char* loss_name(LossKind kind);

// The target type the loss expects for a model output of type `output`; InvalidArgument when the
// output does not suit the loss (cross_entropy needs [N, C] logits).
ir::TensorType loss_target_type(const LossConfig& loss, const ir::TensorType& output);
// Checks a target tensor before a step: type (shape, dtype) and, for cross_entropy, every label
// in [0, C) or equal to ignore_index. InvalidArgument naming the first offending value.
void check_loss_target(const LossConfig& loss, const ir::TensorType& output,
                       const ir::HostTensor& target);
// Appends the scalar (rank-0) mean loss of `output` against `target`.
ir::ValueId append_loss(ir::GraphBuilder& b, const LossConfig& loss, ir::ValueId output,
                        ir::ValueId target);

}  // namespace mimic
