#include "frontend/api/loss_scale.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

#include "base/error.h"

namespace mimic {

void LossScaleConfig::validate() const {
  auto fail = [](const char* field, double v, const char* why) {
    throw InvalidArgument(fmt::format("loss scaling: {} = {} {}", field, v, why));
  };
  if (mode == LossScaleMode::none) return;
  if (!(init_scale > 0) || !std::isfinite(init_scale))
    fail("init_scale", init_scale, "must be a finite number > 0");
  if (!(growth_factor > 1)) fail("growth_factor", growth_factor, "must be > 1");
  if (!(backoff_factor > 0 && backoff_factor < 1))
    fail("backoff_factor", backoff_factor, "must be in (0, 1)");
  if (growth_interval <= 0)
    fail("growth_interval", static_cast<double>(growth_interval), "must be > 0");
}

LossScaleConfig parse_loss_scale(const std::string& text) {
  LossScaleConfig c;
  if (text == "none" || text.empty()) return c;
  if (text == "dynamic") {
    c.mode = LossScaleMode::dynamic;
    return c;
  }
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0')
    throw InvalidArgument(fmt::format(
        "loss scaling: '{}' is not 'none', 'dynamic' or a number (a fixed scale)", text));
  c.mode = LossScaleMode::fixed;
  c.init_scale = v;
  c.validate();
  return c;
}

LossScaler::LossScaler(const LossScaleConfig& config) : config_(config), scale_(config.init_scale) {
  config_.validate();
}

void LossScaler::update(bool found_inf) {
  if (config_.mode != LossScaleMode::dynamic) return;
  if (found_inf) {
    scale_ *= config_.backoff_factor;
    good_steps_ = 0;
  } else if (++good_steps_ == config_.growth_interval) {
    scale_ *= config_.growth_factor;
    good_steps_ = 0;
  }
}

void LossScaler::set_scale(double scale, int64_t good_steps) {
  if (!(scale > 0))
    throw InvalidArgument(fmt::format("loss scaling: scale = {} must be > 0", scale));
  scale_ = scale;
  good_steps_ = good_steps;
}

}  // namespace mimic
