// Learning-rate schedules, computed on the host: the lr is a graph input of the training step, so
// a schedule only changes the scalar fed each step. The formulas are the closed forms of PyTorch's
// torch.optim.lr_scheduler (the lr of step k is the scheduler's lr after k calls to step()):
//   constant     ConstantLR   base * (k < total_iters ? factor : 1)
//   step         StepLR       base * gamma^floor(k / step_size)
//   exponential  ExponentialLR base * gamma^k
//   linear       LinearLR     base * (start + (end - start) * min(k, total_iters) / total_iters)
//   cosine       CosineAnnealingLR  eta_min + (base - eta_min) (1 + cos(pi k / t_max)) / 2
// A schedule is a sequence of phases, as SequentialLR composes schedulers: the phase whose
// milestone is the last one <= k applies, with k counted from that milestone. Linear warmup then
// cosine decay (the BERT / ViT recipe) is {linear from `start_factor` over w steps, cosine over
// total - w steps from milestone w}: warmup_cosine() builds it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mimic {

enum class LrPhaseKind { constant, step, exponential, linear, cosine };

struct LrPhase {
  LrPhaseKind kind = LrPhaseKind::constant;
  int64_t milestone = 0;    // first step of this phase (0 for the first phase)
  double factor = 1.0;      // constant
  int64_t total_iters = 0;  // constant, linear
  int64_t step_size = 1;    // step
  double gamma = 0.1;       // step, exponential
  double start_factor = 1.0 / 3, end_factor = 1.0;  // linear (PyTorch's defaults)
  int64_t t_max = 1;                                // cosine
  double eta_min = 0.0;                             // cosine (an absolute lr)
};

struct LrSchedule {
  std::vector<LrPhase> phases;  // empty: the base lr every step

  // The lr of step k (0-based: the first step is k = 0).
  double lr_at(double base_lr, int64_t k) const;
  // InvalidArgument naming the phase and field (t_max <= 0, milestones out of order, ...).
  void validate() const;
};

LrPhaseKind parse_lr_phase(const std::string& name);  // constant|step|exponential|linear|cosine
// What `mimic train --schedule NAME --warmup-steps W` means over `total_steps`: NAME decays from
// step W on (cosine over total - W steps, linear to 0 over total - W steps, step every
// `step_size` steps), after a linear warmup from `warmup_start_factor` * base over W steps.
LrSchedule make_schedule(const std::string& name, int64_t total_steps, int64_t warmup_steps,
                         int64_t step_size = 30, double gamma = 0.1, double eta_min = 0.0,
                         double warmup_start_factor = 0.0);

}  // namespace mimic
