// Optimizers as IR update subgraphs, one per parameter, with PyTorch's formulas (torch.optim,
// single-tensor, non-capturable paths):
//   SGD   d = g + wd p; buf = momentum buf + d (dampening 0; buf starts at 0, which equals
//         PyTorch's first-step clone); d = nesterov ? d + momentum buf : buf; p -= lr d.
//   Adam  g += wd p; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
//         p -= (lr / (1 - b1^t)) m / (sqrt(v) / sqrt(1 - b2^t) + eps).
//   AdamW p *= 1 - lr wd, then Adam's update without the gradient's weight decay.
//   LAMB  (You et al. 2019, "Large Batch Optimization for Deep Learning", as NVIDIA apex's
//         FusedLAMB with adam_w_mode and use_nvlamb=False computes it): Adam's m and v;
//         u = (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) + wd p;
//         r = ||p|| / ||u|| per parameter tensor, 1 where either norm is 0, and 1 for every
//         parameter when wd = 0 (apex applies the trust ratio only to decayed parameters);
//         p -= lr r u. apex's own global-norm clipping (max_grad_norm 1.0 by default) is
//         max_grad_norm here, off unless set.
// The learning rate and the step count t are graph inputs (f32 scalars), so one compiled step
// serves every step and a schedule. Optional clipping by global norm follows
// torch.nn.utils.clip_grad_norm_: g *= min(1, max_norm / (||g||_2 + 1e-6)) over all gradients.
#pragma once

#include <string>
#include <vector>

#include "frontend/ir/graph_builder.h"

namespace mimic {

enum class OptimizerKind { sgd, adam, adamw, lamb };

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::sgd;
  double lr = 0.01;
  double momentum = 0.0;  // sgd
  bool nesterov = false;  // sgd
  double weight_decay = 0.0;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // adam, adamw, lamb
  double max_grad_norm = 0.0;                     // > 0 clips gradients by global norm

  // InvalidArgument naming the field and value (negative lr, betas outside [0, 1), ...).
  void validate() const;
};

OptimizerKind parse_optimizer(const std::string& name);  // sgd | adam | adamw | lamb
const char* optimizer_name(OptimizerKind kind);
// Names of the per-parameter state tensors (shaped like the parameter), in input order.
std::vector<std::string> optimizer_slots(const OptimizerConfig& o);

struct ParamUpdate {
  ir::ValueId param;
  std::vector<ir::ValueId> state;  // one per slot
};

// Scales every gradient by the global-norm clip factor (when max_grad_norm > 0).
std::vector<ir::ValueId> append_grad_clip(ir::GraphBuilder& b, const OptimizerConfig& o,
                                          const std::vector<ir::ValueId>& grads);
// The updated parameter and state of one parameter; `lr` and `step` are f32 scalars.
ParamUpdate append_update(ir::GraphBuilder& b, const OptimizerConfig& o, ir::ValueId param,
                          ir::ValueId grad, const std::vector<ir::ValueId>& state, ir::ValueId lr,
                          ir::ValueId step);

}  // namespace mimic
