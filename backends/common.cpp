#include "backends/common.h"

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
