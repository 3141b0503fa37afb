// Loss scaling for fp16 training (Micikevicius et al. 2018, "Mixed Precision Training"; PyTorch's
// torch.amp.GradScaler): the step differentiates loss * S, so small gradients of the backward pass
// stay above fp16's smallest subnormal (2^-24), then multiplies every gradient by 1/S before
// clipping and the update. A step whose unscaled gradients hold an inf or NaN is skipped: the
// parameters and optimizer state keep their values and the step count does not advance (as
// GradScaler skips optimizer.step()); BatchNorm running statistics still update, as in PyTorch.
//   fixed    S stays init_scale.
//   dynamic  S *= backoff_factor after a skipped step; S *= growth_factor after growth_interval
//            steps in a row without inf/NaN (GradScaler's defaults: 2^16, 0.5, 2, 2000).
// Where it matters: ipu-emu at precision float16 stores every tensor in fp16 (ipu_numerics.h).
#pragma once

#include <cstdint>
#include <string>

namespace mimic {

enum class LossScaleMode { none, fixed, dynamic };

struct LossScaleConfig {
  LossScaleMode mode = LossScaleMode::none;
  double init_scale = 65536.0;
  double growth_factor = 2.0, backoff_factor = 0.5;
  int64_t growth_interval = 2000;

  // InvalidArgument naming the field and value (init_scale <= 0, growth_factor <= 1, ...).
  void validate() const;
};

// "none", "dynamic" or a number (a fixed scale): what `mimic train --loss-scale` takes.
LossScaleConfig parse_loss_scale(const std::string& text);

// The host-side state of GradScaler: the current scale and the run of good steps.
class LossScaler {
 public:
  explicit LossScaler(const LossScaleConfig& config);
  double scale() const { return scale_; }
  // Records one step's outcome (found_inf: its gradients held an inf or NaN) and updates the scale.
  void update(bool found_inf);
  void set_scale(double scale, int64_t good_steps);
  int64_t good_steps() const { return good_steps_; }

 private:
  LossScaleConfig config_;
  double scale_;
  int64_t good_steps_ = 0;
};

}  // namespace mimic
