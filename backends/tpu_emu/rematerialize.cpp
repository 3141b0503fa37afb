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

// u is a broadcast operand or a scalar beside an output of v's size (at most an eighth of it, and
// smaller): a copy of v's producer reads it as it is.
bool small_beside(const ir::Graph& g, ValueId u, ValueId v) {
  const int64_t small = g.value(u).type.shape.numel(), large = g.value(v).type.shape.numel();
  return small * 8 <= large && small < large;
}

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
    for (size_t k = 0; ok && k < g_.node(p).inputs.size(); ++k) {
      const ValueId u = g_.node(p).inputs[k];
      ok = u == kNoValue || g_.value(u).constant || small_beside(g_, u, v) || in_hbm(u) ||
           recomputable(u);
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

// Which late reads (loop_fusion.h's plan_late_reads) XLA serves by fusing a copy of the value's
// producer into the reader. Its InstructionFusion (xla/service/instruction_fusion.cc) duplicates a
// producer into several consumer fusions when the producer is not expensive (IsExpensive: add,
// subtract, multiply, compare, select, maximum, convert, broadcast are cheap; divide, exp, log,
// sqrt, rsqrt, tanh, logistic, erf, power are not) and is effectively at most unary (one operand
// as large as its output, the others broadcasts or scalars) or reads no more than it writes
// (ComputeGloballyUnfusible); otherwise the value is written to HBM once and read back.
class DuplicationPlanner {
 public:
  DuplicationPlanner(const ir::Graph& g, bool bf16_chip)
      : g_(g), kept_(plan_loop_fusion(g, plan_fusion(g, bf16_chip))), known_(g.num_values(), 0) {}

  // Per node: the kept values it reads a copy of.
  std::vector<std::vector<ValueId>> run() {
    std::vector<std::vector<ValueId>> late = plan_late_reads(g_, kept_);
    for (auto& reads : late)
      reads.erase(
          std::remove_if(reads.begin(), reads.end(), [&](ValueId v) { return !duplicable(v); }),
          reads.end());
    return late;
  }

  // Input u of v's producer is recomputed by v's copy too: kept on chip and large (the others, in
  // HBM or small beside v, are read as they are).
  bool in_chain(ValueId u, ValueId v) const {
    return u != kNoValue && !g_.value(u).constant && kept_[u] && !small_beside(g_, u, v);
  }

 private:
  static bool cheap_op(OpType op) {
    switch (op) {
      case OpType::Add:
      case OpType::Sub:
      case OpType::Mul:
      case OpType::Neg:
      case OpType::Abs:
      case OpType::Max:
      case OpType::Min:
      case OpType::Relu:
      case OpType::Where:
      case OpType::Greater:
      case OpType::Less:
      case OpType::GreaterOrEqual:
      case OpType::LessOrEqual:
      case OpType::Equal:
      case OpType::Not:
      case OpType::And:
      case OpType::Or:
      case OpType::Cast:
      case OpType::Expand:
      case OpType::Clip:
      case OpType::Floor:
      case OpType::Ceil:
      case OpType::Sign:
        return true;
      default:
        return false;
    }
  }

  // v's producer, and the kept values it reads, can be copied into another fusion. Memoized in
  // known_ (0: unknown, 1: yes, 2: no).
  bool duplicable(ValueId v) {
    if (known_[v]) return known_[v] == 1;
    const ir::Node& p = g_.node(g_.value(v).producer);
    int64_t large = 0, read = 0;
    for (ValueId u : p.inputs) {
      if (u == kNoValue || g_.value(u).constant) continue;
      read += g_.value(u).type.shape.numel();
      large += small_beside(g_, u, v) ? 0 : 1;
    }
    bool ok = cheap_op(p.op) && (large <= 1 || read <= g_.value(v).type.shape.numel());
    for (size_t k = 0; ok && k < p.inputs.size(); ++k)
      ok = !in_chain(p.inputs[k], v) || duplicable(p.inputs[k]);
    known_[v] = ok ? 1 : 2;
    return ok;
  }

  const ir::Graph& g_;
  std::vector<bool> kept_;
  std::vector<uint8_t> known_;
};

// Copies g node by node; backward readers of a recomputed value read its backward copy, and a
// late reader of a duplicated value reads a copy of it made just before the reader.
class RematerializationRewriter {
 public:
  RematerializationRewriter(const ir::Graph& g, std::vector<bool> recompute,
                            std::vector<std::vector<ValueId>> late = {},
                            const DuplicationPlanner* duplication = nullptr)
      : g_(g),
        out_(g.name()),
        recompute_(std::move(recompute)),
        late_(std::move(late)),
        duplication_(duplication),
        map_(g.num_values(), kNoValue),
        copy_(g.num_values(), kNoValue),
        duplicate_(g.num_values(), kNoValue) {}

  ir::Graph run() {
    for (ValueId v : g_.inputs()) {
      const ir::Value& in = g_.value(v);
      map_[v] = out_.add_input(in.name, in.type.dtype, in.type.shape);
      out_.value(map_[v]).role = in.role;
      out_.value(map_[v]).initializer = in.initializer;
    }
    for (int i = 0; i < g_.num_nodes(); ++i) {
      const ir::Node& n = g_.node(i);
      if (is_folded(g_, n)) continue;
      std::vector<ValueId> inputs;
      for (ValueId v : n.inputs) inputs.push_back(late_read(i, v) ? duplicate(v) : input(n, v));
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
  bool late_read(int i, ValueId v) const {
    return v != kNoValue && !late_.empty() &&
           std::find(late_[i].begin(), late_[i].end(), v) != late_[i].end();
  }

  // What node n reads for v: the backward copy of a recomputed value, else v's value in the copy.
  ValueId input(const ir::Node& n, ValueId v) {
    return n.phase == StepPhase::backward && v != kNoValue && recompute_[v] ? copy(v) : mapped(v);
  }

  // v's value in the copy (constants, folded ones included, added on first use).
  ValueId mapped(ValueId v) {
    if (v == kNoValue) return v;
    if (map_[v] == kNoValue) map_[v] = out_.add_constant(g_.value(v).name, *g_.value(v).constant);
    return map_[v];
  }

  // v's producer copied into the current place, named "<node><suffix>", in `phase`, reading
  // `read(u)` for each input u.
  template <typename Read>
  ValueId copy_producer(ValueId v, const char* suffix, StepPhase phase, Read read) {
    const ir::Node& p = g_.node(g_.value(v).producer);
    std::vector<ValueId> inputs;
    for (ValueId u : p.inputs) inputs.push_back(read(u));
    auto outs = out_.add_node(p.op, out_.unique_node_name(p.name + suffix), std::move(inputs),
                              p.attrs, 1, {out_.unique_name(g_.value(v).name + suffix)});
    out_.node(out_.num_nodes() - 1).phase = phase;
    out_.value(outs[0]).role = g_.value(v).role;
    return outs[0];
  }

  // v's backward copy: its producer copied, reading the copies of recomputed inputs.
  ValueId copy(ValueId v) {
    if (copy_[v] != kNoValue) return copy_[v];
    return copy_[v] = copy_producer(v, ".remat", StepPhase::backward, [&](ValueId u) {
             return u != kNoValue && recompute_[u] ? copy(u) : mapped(u);
           });
  }

  // v's copy for its late readers: its producer copied, with the kept values it reads.
  ValueId duplicate(ValueId v) {
    if (duplicate_[v] != kNoValue) return duplicate_[v];
    const ir::Node& p = g_.node(g_.value(v).producer);
    return duplicate_[v] = copy_producer(v, ".dup", p.phase, [&](ValueId u) {
             return duplication_->in_chain(u, v) ? duplicate(u) : input(p, u);
           });
  }

  const ir::Graph& g_;
  ir::Graph out_;
  std::vector<bool> recompute_;
  std::vector<std::vector<ValueId>> late_;
  const DuplicationPlanner* duplication_;
  std::vector<ValueId> map_, copy_, duplicate_;
};

}  // namespace

ir::Graph rematerialize_cheap_values(const ir::Graph& g, bool bf16_chip, int* count,
                                     int* duplicated) {
  std::vector<bool> recompute = Planner(g, bf16_chip).run();
  *count = static_cast<int>(std::count(recompute.begin(), recompute.end(), true));
  *duplicated = 0;
  ir::Graph out =
      *count > 0 ? RematerializationRewriter(g, std::move(recompute)).run() : ir::Graph();
  // A copy can have late readers of its own (the backward copy of a normalized value, read after
  // the reductions of the gradient): a few rounds reach them.
  for (int round = 0; round < 4; ++round) {
    const ir::Graph& current = *count + *duplicated > 0 ? out : g;
    DuplicationPlanner planner(current, bf16_chip);
    std::vector<std::vector<ValueId>> late = planner.run();
    int reads = 0;
    for (const auto& r : late) reads += static_cast<int>(r.size());
    if (reads == 0) break;
    *duplicated += reads;
    ir::Graph next =
        RematerializationRewriter(current, std::vector<bool>(current.num_values(), false),
                                  std::move(late), &planner)
            .run();
    out = std::move(next);
  }
  return out;  // empty when nothing was rewritten: the caller compiles `g` itself
}

}  // namespace mimic::backends::tpu_emu
