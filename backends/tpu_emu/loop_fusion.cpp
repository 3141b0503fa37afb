#include "backends/tpu_emu/loop_fusion.h"

#include <algorithm>
#include <array>
#include <utility>

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

// Groups the loops that read each HBM value into sibling groups: the first of a group streams the
// value, the others read its tiles.
class SiblingPlanner {
 public:
  SiblingPlanner(const ir::Graph& g, const FusionPlan& plan, const std::vector<bool>& kept)
      : g_(g), plan_(plan), kept_(kept), seen_(g.num_nodes(), {-1, -1}) {}

  std::vector<std::vector<ir::ValueId>> run() {
    std::vector<std::vector<int>> readers(g_.num_values());
    for (int i = 0; i < g_.num_nodes(); ++i)
      if (is_loop(i))
        for (ir::ValueId v : g_.node(i).inputs)
          if (v != ir::kNoValue && reads_in_full(i, v)) readers[storage(v)].push_back(i);
    std::vector<std::vector<ir::ValueId>> shared(g_.num_nodes());
    for (ir::ValueId v = 0; v < g_.num_values(); ++v) {
      if (readers[v].size() < 2 || g_.value(v).constant || kept(v)) continue;
      readers[v].erase(std::unique(readers[v].begin(), readers[v].end()), readers[v].end());
      std::vector<std::vector<int>> groups;
      for (int r : readers[v]) {
        auto fits = [&](const std::vector<int>& group) {
          if (g_.node(group.front()).phase != g_.node(r).phase) return false;
          return std::none_of(group.begin(), group.end(),
                              [&](int a) { return reaches_through_hbm(a, r); });
        };
        auto it = std::find_if(groups.begin(), groups.end(), fits);
        if (it == groups.end()) {
          groups.push_back({r});
          continue;
        }
        it->push_back(r);
        for (ir::ValueId in : g_.node(r).inputs)
          if (in != ir::kNoValue && storage(in) == v &&
              std::find(shared[r].begin(), shared[r].end(), in) == shared[r].end())
            shared[r].push_back(in);
      }
    }
    return shared;
  }

 private:
  bool is_loop(int i) const {
    const ir::Node& n = g_.node(i);
    return plan_.group_of[i] < 0 && !is_folded(g_, n) &&
           (is_loop_elementwise(n) || n.op == OpType::Expand ||
            ir::op_class(n.op) == OpClass::reduce);
  }

  // The value a node's iteration space covers: a reduction's input, an elementwise op's output
  // shape (broadcast operands are read more than once, or partly, and are left alone).
  bool reads_in_full(int i, ir::ValueId v) const {
    const ir::Node& n = g_.node(i);
    if (ir::op_class(n.op) == OpClass::reduce) return n.inputs.front() == v;
    return g_.value(v).type.shape.numel() == g_.value(n.outputs.front()).type.shape.numel();
  }

  // The value whose storage v is (views share their source's).
  ir::ValueId storage(ir::ValueId v) const {
    for (int p = g_.value(v).producer;
         p >= 0 && ir::is_view_op(g_.node(p).op) && g_.node(p).has_input(0);
         p = g_.value(v).producer)
      v = g_.node(p).inputs[0];
    return v;
  }

  bool kept(ir::ValueId v) const {
    ir::ValueId s = storage(v);
    return static_cast<size_t>(s) < kept_.size() && kept_[s];
  }

  // Whether node `to` depends on node `from` through a value in HBM (from < to: nodes are in
  // topological order, so a path runs through nodes between them only). A path through values
  // kept on chip alone makes them one loop fusion, which reads each operand once.
  bool reaches_through_hbm(int from, int to) {
    ++query_;
    std::vector<std::pair<int, bool>> stack{{to, false}};
    while (!stack.empty()) {
      auto [i, through_hbm] = stack.back();
      stack.pop_back();
      for (ir::ValueId v : g_.node(i).inputs) {
        if (v == ir::kNoValue) continue;
        const int p = g_.value(v).producer;
        const bool hbm = through_hbm || !kept(v);
        if (p == from && hbm) return true;
        if (p <= from || seen_[p][hbm ? 1 : 0] == query_) continue;
        seen_[p][hbm ? 1 : 0] = query_;
        stack.push_back({p, hbm});
      }
    }
    return false;
  }

  const ir::Graph& g_;
  const FusionPlan& plan_;
  const std::vector<bool>& kept_;
  std::vector<std::array<int, 2>> seen_;  // per node and path kind: the query that saw it
  int query_ = 0;
};

}  // namespace

std::vector<bool> plan_loop_fusion(const ir::Graph& g, const FusionPlan& plan) {
  return LoopFusionPlanner(g, plan).run();
}

std::vector<std::vector<ir::ValueId>> plan_sibling_reads(const ir::Graph& g, const FusionPlan& plan,
                                                         const std::vector<bool>& kept_on_chip) {
  return SiblingPlanner(g, plan, kept_on_chip).run();
}

}  // namespace mimic::backends::tpu_emu
