#include "frontend/api/lr_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace mimic {

namespace {

double phase_lr(const LrPhase& p, double base, int64_t k) {
  switch (p.kind) {
    case LrPhaseKind::constant:
      return base * (k < p.total_iters ? p.factor : 1.0);
    case LrPhaseKind::step:
      return base * std::pow(p.gamma, static_cast<double>(k / p.step_size));
    case LrPhaseKind::exponential:
      return base * std::pow(p.gamma, static_cast<double>(k));
    case LrPhaseKind::linear: {
      double t =
          static_cast<double>(std::min(k, p.total_iters)) / static_cast<double>(p.total_iters);
      return base * (p.start_factor + (p.end_factor - p.start_factor) * t);
    }
    case LrPhaseKind::cosine:
      return p.eta_min +
             (base - p.eta_min) *
                 (1 + std::cos(M_PI * static_cast<double>(k) / static_cast<double>(p.t_max))) / 2;
  }
  return base;
}

const char* phase_name(LrPhaseKind kind) {
  static const char* names[] = {"constant", "step", "exponential", "linear", "cosine"};
  return names[static_cast<int>(kind)];
}

}  // namespace

double LrSchedule::lr_at(double base_lr, int64_t k) const {
  if (phases.empty()) return base_lr;
  size_t i = 0;
  while (i + 1 < phases.size() && phases[i + 1].milestone <= k) ++i;
  return phase_lr(phases[i], base_lr, k - phases[i].milestone);
}

void LrSchedule::validate() const {
  for (size_t i = 0; i < phases.size(); ++i) {
    const LrPhase& p = phases[i];
    auto fail = [&](const char* field, double v, const char* why) {
      throw InvalidArgument(fmt::format("lr schedule: phase {} ({}): {} = {} {}", i,
                                        phase_name(p.kind), field, v, why));
    };
    if (i == 0 && p.milestone != 0) fail("milestone", p.milestone, "must be 0 for the first phase");
    if (i > 0 && p.milestone <= phases[i - 1].milestone)
      fail("milestone", p.milestone, "must be greater than the previous phase's");
    if (p.kind == LrPhaseKind::step && p.step_size <= 0)
      fail("step_size", p.step_size, "must be > 0");
    if (p.kind == LrPhaseKind::linear && p.total_iters <= 0)
      fail("total_iters", p.total_iters, "must be > 0");
    if (p.kind == LrPhaseKind::linear && !(p.start_factor >= 0))
      fail("start_factor", p.start_factor, "must be >= 0");
    if (p.kind == LrPhaseKind::constant && !(p.factor >= 0 && p.factor <= 1))
      fail("factor", p.factor, "must be in [0, 1]");
    if (p.kind == LrPhaseKind::cosine && p.t_max <= 0) fail("t_max", p.t_max, "must be > 0");
    if (p.kind == LrPhaseKind::cosine && !(p.eta_min >= 0))
      fail("eta_min", p.eta_min, "must be >= 0");
    if ((p.kind == LrPhaseKind::step || p.kind == LrPhaseKind::exponential) && !(p.gamma > 0))
      fail("gamma", p.gamma, "must be > 0");
  }
}

LrPhaseKind parse_lr_phase(const std::string& name) {
  for (int i = 0; i <= static_cast<int>(LrPhaseKind::cosine); ++i)
    if (name == phase_name(static_cast<LrPhaseKind>(i))) return static_cast<LrPhaseKind>(i);
  throw InvalidArgument(fmt::format(
      "unknown lr schedule '{}' (known: constant, step, exponential, linear, cosine)", name));
}

LrSchedule make_schedule(const std::string& name, int64_t total_steps, int64_t warmup_steps,
                         int64_t step_size, double gamma, double eta_min,
                         double warmup_start_factor) {
  LrPhaseKind kind = parse_lr_phase(name);
  if (warmup_steps < 0 || warmup_steps >= total_steps)
    throw InvalidArgument(fmt::format("lr schedule: warmup steps {} must be in [0, total steps {})",
                                      warmup_steps, total_steps));
  LrSchedule s;
  if (warmup_steps > 0) {
    LrPhase w;
    w.kind = LrPhaseKind::linear;
    w.start_factor = warmup_start_factor;
    w.total_iters = warmup_steps;
    s.phases.push_back(w);
  }
  LrPhase p;
  p.kind = kind;
  p.milestone = warmup_steps;
  int64_t decay = total_steps - warmup_steps;
  if (kind == LrPhaseKind::cosine) p.t_max = decay, p.eta_min = eta_min;
  if (kind == LrPhaseKind::linear) p.start_factor = 1.0, p.end_factor = 0.0, p.total_iters = decay;
  if (kind == LrPhaseKind::step || kind == LrPhaseKind::exponential)
    p.step_size = step_size, p.gamma = gamma;
  if (kind != LrPhaseKind::constant || warmup_steps > 0) s.phases.push_back(p);
  s.validate();
  return s;
}

}  // namespace mimic
