#include "frontend/ir/liveness.h"

#include <algorithm>
#include <numeric>

namespace mimic::ir {
namespace {

int64_t value_bytes(const Graph& g, ValueId v) {
  const TensorType& t = g.value(v).type;
  return std::max<int64_t>(0, t.shape.numel()) * static_cast<int64_t>(dtype_size(t.dtype));
}

bool read_by_backward(const Graph& g, ValueId v) {
  for (const Node& n : g.nodes())
    if (n.phase == StepPhase::backward &&
        std::find(n.inputs.begin(), n.inputs.end(), v) != n.inputs.end())
      return true;
  return false;
}

}  // namespace

std::string memory_category(const Graph& g, ValueId v) {
  const Value& val = g.value(v);
  if (val.role != ValueRole::activation) return role_name(val.role);
  if (val.constant) return "weights";
  if (val.producer < 0) return "inputs";
  if (g.node(val.producer).phase == StepPhase::forward && read_by_backward(g, v))
    return "saved_activations";
  return role_name(val.role);
}

MemoryProfile profile_memory(const Graph& g, const std::vector<int>& order) {
  std::vector<int> steps = order;
  if (steps.empty()) {
    steps.resize(g.num_nodes());
    std::iota(steps.begin(), steps.end(), 0);
  }
  const int end = static_cast<int>(steps.size());
  std::vector<int> step_of(g.num_nodes(), -1), first(g.num_values(), -1), last(g.num_values(), -2);
  for (int s = 0; s < end; ++s) step_of[steps[s]] = s;
  for (int s = 0; s < end; ++s) {
    const Node& n = g.node(steps[s]);
    for (ValueId v : n.outputs) first[v] = last[v] = s;
    for (ValueId v : n.inputs)
      if (v != kNoValue) last[v] = std::max(last[v], s);
  }
  for (ValueId v : g.outputs()) last[v] = end;
  std::vector<int64_t> delta(end + 2, 0);  // delta[s + 1]: change at step s (index 0: before)
  for (ValueId v = 0; v < g.num_values(); ++v) {
    if (last[v] < -1 || !g.value(v).typed) continue;
    const int64_t b = value_bytes(g, v);
    delta[first[v] + 1] += b;
    if (last[v] + 2 < end + 2) delta[last[v] + 2] -= b;
  }
  MemoryProfile p;
  int64_t live = 0;
  for (int s = -1; s < end; ++s) {
    live += delta[s + 1];
    if (live > p.peak_bytes) p.peak_bytes = live, p.peak_step = s;
  }
  for (ValueId v = 0; v < g.num_values(); ++v)
    if (last[v] >= -1 && g.value(v).typed && first[v] <= p.peak_step && last[v] >= p.peak_step)
      p.live_at_peak.push_back(v);
  std::stable_sort(p.live_at_peak.begin(), p.live_at_peak.end(),
                   [&](ValueId a, ValueId b) { return value_bytes(g, a) > value_bytes(g, b); });
  for (ValueId v : p.live_at_peak) p.bytes_by_category[memory_category(g, v)] += value_bytes(g, v);
  return p;
}

}  // namespace mimic::ir
