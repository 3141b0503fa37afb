#include "backends/tpu_emu/rematerialize.h"

#include <algorithm>

#include "backends/common.h"
#include "backends/tpu_emu/fusion.h"
#include "backends/tpu_emu/loop_fusion.h"
#include "frontend/ir/shape_inference.h"

namespace mimic::backends::tpu_emu {

namespace {

using ir::kNoValue;
using ir::OpClass;
using ir::OpType;
using ir::StepPhase;
using ir::ValueId;

// Which values of g are recomputed, decided in node order (a value's inputs first).
class Planner {
 public:
  Planner(const ir::Graph& g, bool bf16_chip)
      : g_(g),
        plan_(plan_fusion(g, bf16_chip)),
        readers_(g.num_values()),
        output_(g.num_values(), false),
        recompute_(g.num_values(), false),
        known_(g.num_values(), 0) {
    for (int i = 0; i < g.num_nodes(); ++i)
      for (ValueId v : g.node(i).inputs)
        if (v != kNoValue) readers_[v].push_back(i);
    for (ValueId v : g.outputs()) output_[v] = true;
  }

  std::vector<bool> run() {
    for (int i = 0; i < g_.num_nodes(); ++i) {
      const ir::Node& n = g_.node(i);
      if (n.phase == StepPhase::forward && n.outputs.size() == 1 && read_back(i) &&
          recomputable(n.outputs[0]))
        mark(n.outputs[0]);
    }
    return recompute_;
  }

 private:
  // An elementwise op or a broadcast outside the matrix-unit fusions.
  bool cheap(int i) const {
    const ir::Node& n = g_.node(i);
    return plan_.group_of[i] < 0 && !is_folded(g_, n) &&
           (is_loop_elementwise(n) || n.op == OpType::Expand);
  }

  // A reader loop fusion can keep a value on chip for.
  bool fusable_reader(int r) const {
    return cheap(r) || (ir::op_class(g_.node(r).op) == OpClass::reduce && plan_.group_of[r] < 0);
  }

  // Value u lives in HBM in the forward pass: a graph input, or made or read by something loop
  // fusion does not keep it on chip for (a matrix unit, another phase, a graph output).
  bool in_hbm(ValueId u) const {
    const int p = g_.value(u).producer;
    if (p < 0 || !cheap(p) || output_[u]) return true;
    for (int r : readers_[u])
      if (g_.node(r).phase != g_.node(p).phase || !fusable_reader(r)) return true;
    return false;
  }

  // v can be computed again from values in HBM, small ones and other such values: a forward
  // value of a cheap op. Memoized in known_ (0: unknown, 1: yes, 2: no).
  bool recomputable(ValueId v) {
    if (known_[v]) return known_[v] == 1;
    const int p = g_.value(v).producer;
    bool ok = p >= 0 && g_.node(p).outputs.size() == 1 && g_.node(p).phase == StepPhase::forward &&
              !output_[v] && cheap(p);
    const int64_t numel = g_.value(v).type.shape.numel();
    for (size_t k = 0; ok && k < g_.node(p).inputs.size(); ++k) {
      const ValueId u = g_.node(p).inputs[k];
      ok = u == kNoValue || g_.value(u).constant || g_.value(u).type.shape.numel() * 8 <= numel ||
           in_hbm(u) || recomputable(u);
    }
    known_[v] = ok ? 1 : 2;
    return ok;
  }

  // Marks v and the values its copy must recompute with it (those not in HBM).
  void mark(ValueId v) {
    if (recompute_[v]) return;
    recompute_[v] = true;
    for (ValueId u : g_.node(g_.value(v).producer).inputs)
      if (u != kNoValue && !g_.value(u).constant && known_[u] == 1 && !in_hbm(u)) mark(u);
  }

  // Node i's value is read by the backward pass, only by readers loop fusion keeps it on chip for.
  bool read_back(int i) const {
    bool backward = false;
    for (int r : readers_[g_.node(i).outputs[0]]) {
      if (g_.node(r).phase == StepPhase::forward) continue;
      if (g_.node(r).phase != StepPhase::backward || !fusable_reader(r)) return false;
      backward = true;
    }
    return backward;
  }

  const ir::Graph& g_;
  FusionPlan plan_;
  std::vector<std::vector<int>> readers_;
  std::vector<bool> output_, recompute_;
  std::vector<uint8_t> known_;
};

// Copies g node by node; backward readers of a recomputed value read its backward copy.
class Rewriter {
 public:
  Rewriter(const ir::Graph& g, std::vector<bool> recompute)
      : g_(g),
        out_(g.name()),
        recompute_(std::move(recompute)),
        map_(g.num_values(), kNoValue),
        copy_(g.num_values(), kNoValue) {}

  ir::Graph run() {
    for (ValueId v : g_.inputs()) {
      const ir::Value& in = g_.value(v);
      map_[v] = out_.add_input(in.name, in.type.dtype, in.type.shape);
      out_.value(map_[v]).role = in.role;
      out_.value(map_[v]).initializer = in.initializer;
    }
    for (const ir::Node& n : g_.nodes()) {
      if (is_folded(g_, n)) continue;
      std::vector<ValueId> inputs;
      for (ValueId v : n.inputs)
        inputs.push_back(
            n.phase == StepPhase::backward && v != kNoValue && recompute_[v] ? copy(v) : mapped(v));
      std::vector<std::string> names;
      for (ValueId o : n.outputs) names.push_back(g_.value(o).name);
      auto outs = out_.add_node(n.op, n.name, std::move(inputs), n.attrs,
                                static_cast<int>(n.outputs.size()), names);
      out_.node(out_.num_nodes() - 1).phase = n.phase;
      for (size_t k = 0; k < outs.size(); ++k) {
        map_[n.outputs[k]] = outs[k];
        out_.value(outs[k]).role = g_.value(n.outputs[k]).role;
      }
    }
    for (ValueId v : g_.outputs()) out_.add_output(mapped(v));
    ir::infer_shapes(out_);
    return std::move(out_);
  }

 private:
  // v's value in the copy (constants, folded ones included, added on first use).
  ValueId mapped(ValueId v) {
    if (v == kNoValue) return v;
    if (map_[v] == kNoValue) map_[v] = out_.add_constant(g_.value(v).name, *g_.value(v).constant);
    return map_[v];
  }

  // v's backward copy: its producer copied, reading the copies of recomputed inputs.
  ValueId copy(ValueId v) {
    if (copy_[v] != kNoValue) return copy_[v];
    const ir::Node& p = g_.node(g_.value(v).producer);
    std::vector<ValueId> inputs;
    for (ValueId u : p.inputs)
      inputs.push_back(u != kNoValue && recompute_[u] ? copy(u) : mapped(u));
    auto outs = out_.add_node(p.op, out_.unique_node_name(p.name + ".remat"), std::move(inputs),
                              p.attrs, 1, {out_.unique_name(g_.value(v).name + ".remat")});
    out_.node(out_.num_nodes() - 1).phase = StepPhase::backward;
    out_.value(outs[0]).role = g_.value(v).role;
    return copy_[v] = outs[0];
  }

  const ir::Graph& g_;
  ir::Graph out_;
  std::vector<bool> recompute_;
  std::vector<ValueId> map_, copy_;
};

}  // namespace

ir::Graph rematerialize_cheap_values(const ir::Graph& g, bool bf16_chip, int* count) {
  std::vector<bool> recompute = Planner(g, bf16_chip).run();
  *count = static_cast<int>(std::count(recompute.begin(), recompute.end(), true));
  if (*count == 0) return ir::Graph();  // the caller compiles `g` itself
  return Rewriter(g, std::move(recompute)).run();
}

}  // namespace mimic::backends::tpu_emu
