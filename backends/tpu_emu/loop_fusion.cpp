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
      : g_(g), plan_(plan), kept_(kept), fusion_(g.num_nodes()), seen_(g.num_nodes(), -1) {
    for (int i = 0; i < g.num_nodes(); ++i) fusion_[i] = i;
    // A kept value joins its producer and its readers in one loop fusion.
    for (int i = 0; i < g.num_nodes(); ++i)
      for (ir::ValueId v : g.node(i).inputs)
        if (v != ir::kNoValue && g.value(v).producer >= 0 && this->kept(v))
          fusion_[find(i)] = find(g.value(v).producer);
    members_.resize(g.num_nodes());
    for (int i = 0; i < g.num_nodes(); ++i) members_[find(i)].push_back(i);
  }

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
          return std::none_of(group.begin(), group.end(), [&](int a) { return dependent(a, r); });
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
  int find(int i) {
    while (fusion_[i] != i) i = fusion_[i] = fusion_[fusion_[i]];
    return i;
  }

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

  // Whether the loop fusions of nodes a and b (a < b) cannot be one multi-output fusion: they are
  // different fusions and one depends on the other (a path between them runs through HBM). One
  // loop fusion reads each operand once: (x - mean) * x streams x once.
  bool dependent(int a, int b) {
    const int fa = find(a), fb = find(b);
    return fa != fb && (reaches(fa, fb) || reaches(fb, fa));
  }

  // Whether a node of fusion `to` depends on a node of fusion `from` (walking back from `to`'s
  // nodes; nodes are in topological order, so the path runs through nodes after from's first).
  bool reaches(int from, int to) {
    ++query_;
    const int first = members_[from].front();
    std::vector<int> stack(members_[to].begin(), members_[to].end());
    while (!stack.empty()) {
      const int i = stack.back();
      stack.pop_back();
      for (ir::ValueId v : g_.node(i).inputs) {
        const int p = v == ir::kNoValue ? -1 : g_.value(v).producer;
        if (p < first || seen_[p] == query_) continue;
        if (find(p) == from) return true;
        seen_[p] = query_;
        stack.push_back(p);
      }
    }
    return false;
  }

  const ir::Graph& g_;
  const FusionPlan& plan_;
  const std::vector<bool>& kept_;
  std::vector<int> fusion_;                // union-find over nodes: their loop fusion
  std::vector<std::vector<int>> members_;  // per fusion root, its nodes in order
  std::vector<int> seen_;                  // per node: the query that saw it
  int query_ = 0;
};

// Finds, per node, the kept values it reads after a fusion barrier that depends on them.
class LateReadFinder {
 public:
  LateReadFinder(const ir::Graph& g, const std::vector<bool>& kept)
      : g_(g), kept_(kept), seen_(g.num_nodes(), {-1, -1}) {}

  std::vector<std::vector<ir::ValueId>> run() {
    std::vector<std::vector<ir::ValueId>> late(g_.num_nodes());
    for (int r = 0; r < g_.num_nodes(); ++r)
      for (ir::ValueId v : g_.node(r).inputs)
        if (v != ir::kNoValue && static_cast<size_t>(v) < kept_.size() && kept_[v] &&
            std::find(late[r].begin(), late[r].end(), v) == late[r].end() &&
            reads_after_barrier(v, r))
          late[r].push_back(v);
    return late;
  }

 private:
  // A node a loop fusion cannot run through: anything but an elementwise op, a broadcast or a view.
  bool barrier(int i) const {
    const ir::Node& n = g_.node(i);
    return !is_loop_elementwise(n) && n.op != OpType::Expand && !ir::is_view_op(n.op);
  }

  // Whether node r depends on v through a barrier (walking back from r; nodes are in topological
  // order, so the path runs through nodes after v's producer only).
  bool reads_after_barrier(ir::ValueId v, int r) {
    ++query_;
    const int p = g_.value(v).producer;
    std::vector<std::pair<int, bool>> stack{{r, false}};
    while (!stack.empty()) {
      auto [i, crossed] = stack.back();
      stack.pop_back();
      for (ir::ValueId u : g_.node(i).inputs) {
        if (u == ir::kNoValue) continue;
        if (u == v) {
          if (crossed) return true;
          continue;
        }
        const int q = g_.value(u).producer;
        if (q <= p) continue;
        const bool c = crossed || barrier(q);
        if (seen_[q][c ? 1 : 0] == query_) continue;
        seen_[q][c ? 1 : 0] = query_;
        stack.push_back({q, c});
      }
    }
    return false;
  }

  const ir::Graph& g_;
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

std::vector<std::vector<ir::ValueId>> plan_late_reads(const ir::Graph& g,
                                                      const std::vector<bool>& kept_on_chip) {
  return LateReadFinder(g, kept_on_chip).run();
}

std::vector<std::vector<ir::ValueId>> write_back_late_reads(const ir::Graph& g,
                                                            std::vector<bool>& kept_on_chip,
                                                            int* written) {
  std::vector<std::vector<ir::ValueId>> late = plan_late_reads(g, kept_on_chip);
  std::vector<bool> late_read(g.num_values(), false);
  for (const auto& reads : late)
    for (ir::ValueId v : reads) late_read[v] = true;
  std::vector<std::vector<ir::ValueId>> on_chip(g.num_nodes());
  *written = 0;
  for (ir::ValueId v = 0; v < g.num_values(); ++v) {
    if (!late_read[v]) continue;
    kept_on_chip[v] = false;
    ++*written;
  }
  for (int r = 0; r < g.num_nodes(); ++r)
    for (ir::ValueId v : g.node(r).inputs)
      if (v != ir::kNoValue && late_read[v] &&
          std::find(late[r].begin(), late[r].end(), v) == late[r].end() &&
          std::find(on_chip[r].begin(), on_chip[r].end(), v) == on_chip[r].end())
        on_chip[r].push_back(v);
  return on_chip;
}

}  // namespace mimic::backends::tpu_emu
