#include "frontend/ir/graph_rewrite.h"

#include <fmt/format.h>

#include "base/error.h"
#include "frontend/ir/shape_inference.h"

namespace mimic::ir {

void NodeRewrite::keep_role(ValueId from, ValueId to) const {
  out.value(to).role = source.value(from).role;
  out.value(to).initializer = source.value(from).initializer;
}

namespace {

// Copies node `n` as it is, its outputs typed as in the source (for the expansions' builders).
void copy_node(NodeRewrite& r, const Node& n, const std::vector<ValueId>& inputs) {
  std::vector<std::string> names;
  for (ValueId v : n.outputs) names.push_back(r.source.value(v).name);
  std::vector<ValueId> outs =
      r.out.add_node(n.op, n.name, inputs, n.attrs, static_cast<int>(n.outputs.size()), names);
  for (size_t k = 0; k < outs.size(); ++k) {
    r.map[n.outputs[k]] = outs[k];
    r.out.value(outs[k]).type = r.source.value(n.outputs[k]).type;
    r.out.value(outs[k]).typed = r.source.value(n.outputs[k]).typed;
    r.keep_role(n.outputs[k], outs[k]);
  }
}

}  // namespace

Graph rewrite_nodes(const Graph& g, const std::vector<bool>& pick, const NodeExpansion& expand,
                    std::vector<ValueId>* value_map) {
  Graph out(g.name());
  std::vector<ValueId> map(g.num_values(), kNoValue);
  NodeRewrite r{out, g, map};
  for (ValueId v : g.inputs()) {
    map[v] = out.add_input(g.value(v).name, g.value(v).type.dtype, g.value(v).type.shape);
    r.keep_role(v, map[v]);
  }
  auto get = [&](ValueId v) {
    if (v == kNoValue || map[v] != kNoValue) return v == kNoValue ? kNoValue : map[v];
    if (!g.value(v).constant)
      throw CompileError(
          fmt::format("rewriting graph '{}': value '{}' is used before it is computed", g.name(),
                      g.value(v).name));
    map[v] = out.add_constant(g.value(v).name, *g.value(v).constant);
    r.keep_role(v, map[v]);
    return map[v];
  };
  for (int i = 0; i < g.num_nodes(); ++i) {
    const Node& n = g.node(i);
    bool folded = true;
    for (ValueId v : n.outputs) folded = folded && g.value(v).constant;
    if (folded) continue;
    std::vector<ValueId> inputs;
    for (ValueId v : n.inputs) inputs.push_back(get(v));
    const int first_new = out.num_nodes();
    if (i < static_cast<int>(pick.size()) && pick[i])
      expand(r, n, inputs);
    else
      copy_node(r, n, inputs);
    for (int k = first_new; k < out.num_nodes(); ++k) out.node(k).phase = n.phase;
  }
  for (ValueId v : g.outputs()) {
    ValueId copy = get(v);
    // An expanded node's result takes the name of the output it replaces (a graph output keeps
    // its ONNX name; its builder named it "<node>/<Op>").
    if (out.value(copy).producer >= 0 && out.value(copy).name != g.value(v).name &&
        g.value(v).producer >= 0 && pick[g.value(v).producer])
      out.value(copy).name = g.value(v).name;
    out.add_output(copy);
  }
  infer_shapes(out);
  if (value_map) *value_map = std::move(map);
  return out;
}

}  // namespace mimic::ir
