#include "frontend/api/optim.h"

#include <fmt/format.h>

#include <cmath>

#include "base/error.h"

namespace mimic {

using ir::OpType;
using ir::ValueId;

void OptimizerConfig::validate() const {
  auto fail = [](const char* field, double v, const char* why) {
    throw InvalidArgument(fmt::format("optimizer: {} = {} {}", field, v, why));
  };
  if (!(lr >= 0) || !std::isfinite(lr)) fail("lr", lr, "must be a finite number >= 0");
  if (!(momentum >= 0)) fail("momentum", momentum, "must be >= 0");
  if (nesterov && momentum <= 0) fail("momentum", momentum, "must be > 0 with nesterov");
  if (!(weight_decay >= 0)) fail("weight_decay", weight_decay, "must be >= 0");
  if (!(beta1 >= 0 && beta1 < 1)) fail("beta1", beta1, "must be in [0, 1)");
  if (!(beta2 >= 0 && beta2 < 1)) fail("beta2", beta2, "must be in [0, 1)");
  if (!(eps >= 0)) fail("eps", eps, "must be >= 0");
  if (!(max_grad_norm >= 0))
    fail("max_grad_norm", max_grad_norm, "must be >= 0 (0 disables clipping)");
}

OptimizerKind parse_optimizer(const std::string& name) {
  if (name == "sgd") return OptimizerKind::sgd;
  if (name == "adam") return OptimizerKind::adam;
  if (name == "adamw") return OptimizerKind::adamw;
  if (name == "lamb") return OptimizerKind::lamb;
  throw InvalidArgument(
      fmt::format("unknown optimizer '{}' (known: sgd, adam, adamw, lamb)", name));
}

const char* optimizer_name(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::sgd:
      return "sgd";
    case OptimizerKind::adam:
      return "adam";
    case OptimizerKind::adamw:
      return "adamw";
    case OptimizerKind::lamb:
      return "lamb";
  }
  return "?";
}

std::vector<std::string> optimizer_slots(const OptimizerConfig& o) {
  if (o.kind == OptimizerKind::sgd)
    return o.momentum > 0 ? std::vector<std::string>{"momentum_buffer"}
                          : std::vector<std::string>{};
  return {"exp_avg", "exp_avg_sq"};
}

std::vector<ValueId> append_grad_clip(ir::GraphBuilder& b, const OptimizerConfig& o,
                                      const std::vector<ValueId>& grads) {
  if (o.max_grad_norm <= 0 || grads.empty()) return grads;
  ValueId total = ir::kNoValue;
  for (ValueId g : grads) {
    std::vector<int64_t> axes(b.shape(g).rank());
    for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int64_t>(i);
    ValueId sq = b.mul(g, g);
    ValueId s = axes.empty() ? sq : b.reduce_sum(sq, axes, false);
    total = total == ir::kNoValue ? s : b.add(total, s);
  }
  ValueId norm = b.op(OpType::Sqrt, {total});
  ValueId coef =
      b.div(b.scalar_like(o.max_grad_norm, norm), b.add(norm, b.scalar_like(1e-6, norm)));
  coef = b.op(OpType::Min, {coef, b.scalar_like(1.0, coef)});
  std::vector<ValueId> out;
  for (ValueId g : grads) out.push_back(b.mul(g, coef));
  return out;
}

namespace {

ParamUpdate sgd(ir::GraphBuilder& b, const OptimizerConfig& o, ValueId p, ValueId g,
                const std::vector<ValueId>& state, ValueId lr) {
  ValueId d = o.weight_decay > 0 ? b.add(g, b.scale(p, o.weight_decay)) : g;
  ParamUpdate u;
  if (o.momentum > 0) {
    ValueId buf = b.add(b.scale(state.at(0), o.momentum), d);
    u.state.push_back(buf);
    d = o.nesterov ? b.add(d, b.scale(buf, o.momentum)) : buf;
  }
  u.param = b.sub(p, b.mul(lr, d));
  return u;
}

ParamUpdate adam(ir::GraphBuilder& b, const OptimizerConfig& o, ValueId p, ValueId g,
                 const std::vector<ValueId>& state, ValueId lr, ValueId step) {
  ValueId one = b.scalar_like(1.0, step);
  if (o.kind == OptimizerKind::adamw && o.weight_decay > 0)
    p = b.mul(p, b.sub(one, b.scale(lr, o.weight_decay)));
  if (o.kind == OptimizerKind::adam && o.weight_decay > 0) g = b.add(g, b.scale(p, o.weight_decay));
  ValueId m = b.add(b.scale(state.at(0), o.beta1), b.scale(g, 1.0 - o.beta1));
  ValueId v = b.add(b.scale(state.at(1), o.beta2), b.scale(b.mul(g, g), 1.0 - o.beta2));
  ValueId bc1 = b.sub(one, b.op(OpType::Pow, {b.scalar_like(o.beta1, step), step}));
  ValueId bc2 = b.sub(one, b.op(OpType::Pow, {b.scalar_like(o.beta2, step), step}));
  ValueId step_size = b.div(lr, bc1);
  ValueId denom =
      b.add(b.div(b.op(OpType::Sqrt, {v}), b.op(OpType::Sqrt, {bc2})), b.scalar_like(o.eps, v));
  return {b.sub(p, b.mul(step_size, b.div(m, denom))), {m, v}};
}

ValueId l2_norm(ir::GraphBuilder& b, ValueId x) {
  std::vector<int64_t> axes(b.shape(x).rank());
  for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int64_t>(i);
  ValueId sq = b.mul(x, x);
  return b.op(OpType::Sqrt, {axes.empty() ? sq : b.reduce_sum(sq, axes, false)});
}

ParamUpdate lamb(ir::GraphBuilder& b, const OptimizerConfig& o, ValueId p, ValueId g,
                 const std::vector<ValueId>& state, ValueId lr, ValueId step) {
  ValueId one = b.scalar_like(1.0, step);
  ValueId m = b.add(b.scale(state.at(0), o.beta1), b.scale(g, 1.0 - o.beta1));
  ValueId v = b.add(b.scale(state.at(1), o.beta2), b.scale(b.mul(g, g), 1.0 - o.beta2));
  ValueId bc1 = b.sub(one, b.op(OpType::Pow, {b.scalar_like(o.beta1, step), step}));
  ValueId bc2 = b.sub(one, b.op(OpType::Pow, {b.scalar_like(o.beta2, step), step}));
  ValueId denom = b.add(b.op(OpType::Sqrt, {b.div(v, bc2)}), b.scalar_like(o.eps, v));
  ValueId u = b.div(b.div(m, bc1), denom);
  ValueId rate = lr;
  if (o.weight_decay > 0) {
    u = b.add(u, b.scale(p, o.weight_decay));
    ValueId pn = l2_norm(b, p), un = l2_norm(b, u), zero = b.scalar_like(0.0, pn);
    ValueId ratio = b.div(pn, b.op(OpType::Max, {un, b.scalar_like(1e-30, un)}));
    ValueId one_r = b.scalar_like(1.0, pn);
    ratio = b.op(OpType::Where, {b.op(OpType::Greater, {un, zero}), ratio, one_r});
    ratio = b.op(OpType::Where, {b.op(OpType::Greater, {pn, zero}), ratio, one_r});
    rate = b.mul(lr, b.cast(ratio, b.dtype(lr)));
  }
  return {b.sub(p, b.mul(rate, u)), {m, v}};
}

}  // namespace

ParamUpdate append_update(ir::GraphBuilder& b, const OptimizerConfig& o, ValueId param,
                          ValueId grad, const std::vector<ValueId>& state, ValueId lr,
                          ValueId step) {
  if (o.kind == OptimizerKind::sgd) return sgd(b, o, param, grad, state, lr);
  if (o.kind == OptimizerKind::lamb) return lamb(b, o, param, grad, state, lr, step);
  return adam(b, o, param, grad, state, lr, step);
}

}  // namespace mimic
