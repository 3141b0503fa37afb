#include "backends/tpu_emu/loop_fusion.h"

#include "backends/common.h"

namespace mimic::backends::tpu_emu {

bool is_loop_elementwise(const ir::Node& n) {
  ir::OpClass k = ir::op_class(n.op);
  return (k == ir::OpClass::unary || k == ir::OpClass::binary || k == ir::OpClass::nary) &&
         n.op != ir::OpType::Dropout && n.op != ir::OpType::Identity;
}

namespace {

using ir::OpClass;
using ir::OpType;

class LoopFusionPlanner {
 public:
  LoopFusionPlanner(const ir::Graph& g, const FusionPlan& plan)
      : g_(g), plan_(plan), readers_(g.num_values()), is_output_(g.num_values(), false) {
    for (int i = 0; i < g.num_nodes(); ++i)
      for (ir::ValueId v : g.node(i).inputs)
        if (v != ir::kNoValue) readers_[v].push_back(i);
    for (ir::ValueId v : g.outputs()) is_output_[v] = true;
  }

  std::vector<bool> run() const {
    std::vector<bool> kept(g_.num_values(), false);
    for (int i = 0; i < g_.num_nodes(); ++i) {
      const ir::Node& n = g_.node(i);
      if (!in_loop(i) || !(is_loop_elementwise(n) || n.op == OpType::Expand)) continue;
      for (ir::ValueId v : n.outputs)
        if (v != ir::kNoValue && !g_.value(v).constant) kept[v] = readers_fuse(v, n.phase);
    }
    return kept;
  }

 private:
  // Node i runs on its own (not in a matrix-unit group, not folded at compile time).
  bool in_loop(int i) const { return plan_.group_of[i] < 0 && !is_folded(g_, g_.node(i)); }

  // Every reader of v (through views of it) is an elementwise op, a broadcast or a reduction of
  // `phase`, and neither v nor a view of it is a graph output.
  bool readers_fuse(ir::ValueId v, ir::StepPhase phase) const {
    if (is_output_[v] || readers_[v].empty()) return false;
    for (int r : readers_[v]) {
      const ir::Node& n = g_.node(r);
      if (n.phase != phase || !in_loop(r)) return false;
      if (ir::is_view_op(n.op)) {
        if (!readers_fuse(n.outputs[0], phase)) return false;
        continue;
      }
      OpClass k = ir::op_class(n.op);
      if (!is_loop_elementwise(n) && n.op != OpType::Expand && k != OpClass::reduce) return false;
    }
    return true;
  }

  const ir::Graph& g_;
  const FusionPlan& plan_;
  std::vector<std::vector<int>> readers_;
  std::vector<bool> is_output_;
};

}  // namespace

std::vector<bool> plan_loop_fusion(const ir::Graph& g, const FusionPlan& plan) {
  return LoopFusionPlanner(g, plan).run();
}

}  // namespace mimic::backends::tpu_emu
