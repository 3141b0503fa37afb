#include "backends/common.h"

#include <fmt/format.h>

#include <cmath>

#include "base/error.h"

namespace mimic::backends {

std::string node_shapes(const ir::Graph& g, const ir::Node& n) {
  std::string s;
  for (ir::ValueId v : n.inputs) {
    if (!s.empty()) s += " ";
    s += v == ir::kNoValue ? "-" : g.value(v).type.str();
  }
  s += " ->";
  for (ir::ValueId v : n.outputs) s += " " + g.value(v).type.str();
  return s;
}

bool is_folded(const ir::Graph& g, const ir::Node& n) {
  for (ir::ValueId v : n.outputs)
    if (!g.value(v).constant) return false;
  return true;
}

void Executable::set_carries(std::vector<Carry> carries, std::vector<ir::HostTensor> initial) {
  carries_ = std::move(carries);
  carried_.clear();
  for (const ir::HostTensor& t : initial) carried_.push_back(t.clone());
}

RunResult Executable::run_carried(const std::vector<ir::HostTensor>& inputs, sim::EventSink& sink) {
  std::vector<ir::HostTensor> all = inputs;
  for (size_t i = 0; i < carries_.size(); ++i) all[carries_[i].input] = carried_[i];
  RunResult r = run(all, sink);
  for (size_t i = 0; i < carries_.size(); ++i) {
    const Carry& c = carries_[i];
    if (carry_guard_passes(r.outputs, c.guard)) carried_[i] = r.outputs[c.output];
  }
  for (const Carry& c : carries_) r.outputs[c.output] = ir::HostTensor();
  return r;
}

ir::HostTensor Executable::read_carry(size_t carry) {
  return carried_.at(carry).clone();
}

void Executable::write_carry(size_t carry, const ir::HostTensor& value) {
  carried_.at(carry) = value.clone();
}

bool carry_guard_passes(const std::vector<ir::HostTensor>& outputs, int guard) {
  if (guard < 0) return true;
  const ir::HostTensor& g = outputs.at(guard);
  if (g.numel() != 1 || g.dtype() != ir::DType::f32)
    throw RuntimeError(fmt::format("carry guard: output {} is {}, not one f32", guard,
                                   g.defined() ? g.type().str() : "undefined"));
  return std::isfinite(g.data<float>()[0]);
}

int64_t RunReport::total_flops() const {
  int64_t total = 0;
  for (const auto& op : ops) total += op.flops;
  return total;
}

int RunReport::fallback_count() const {
  int n = 0;
  for (const auto& op : ops) n += op.fallback ? 1 : 0;
  return n;
}

}  // namespace mimic::backends
