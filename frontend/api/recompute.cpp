#include "frontend/api/recompute.h"

#include <fmt/format.h>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "base/error.h"

namespace mimic {
namespace {

using ir::ValueId;

bool is_matrix_op(ir::OpType op) {
  return op == ir::OpType::Conv || op == ir::OpType::ConvTranspose || op == ir::OpType::MatMul ||
         op == ir::OpType::Gemm;
}

// Chen et al.'s checkpoints: the forward values that are, alone, all the activations crossing a
// point of the forward pass as the forward pass itself reads them (articulation points of its
// graph: a block's output), every ceil(sqrt(k))-th of
// the k found, so about sqrt(k) segments each recomputed whole before its backward. Values kept
// anyway (graph outputs, such as BatchNorm's running statistics) are not counted as crossing.
std::vector<ValueId> articulation_checkpoints(const ir::Graph& g, const std::vector<int>& forward) {
  const int n = static_cast<int>(forward.size());
  std::unordered_map<int, int> position;  // node -> index in `forward`
  for (int i = 0; i < n; ++i) position[forward[i]] = i;
  std::unordered_set<ValueId> outputs(g.outputs().begin(), g.outputs().end());
  std::unordered_map<ValueId, int> last_read;  // n: read by the loss
  for (int node = 0; node < g.num_nodes(); ++node) {
    const ir::StepPhase phase = g.node(node).phase;
    if (phase != ir::StepPhase::forward && phase != ir::StepPhase::loss) continue;
    auto at = position.find(node);
    for (ValueId v : g.node(node).inputs) {
      if (v == ir::kNoValue || g.value(v).producer < 0 || outputs.count(v)) continue;
      if (!position.count(g.value(v).producer)) continue;
      int& r = last_read[v];
      r = std::max(r, at == position.end() ? n : at->second);
    }
  }
  // Crossing the gap after forward position i: produced at or before i, read after it.
  std::vector<int64_t> count(n + 1, 0), id_sum(n + 1, 0);
  for (const auto& [v, r] : last_read) {
    int p = position.at(g.value(v).producer);
    count[p] += 1, id_sum[p] += v;
    count[std::min(r, n)] -= 1, id_sum[std::min(r, n)] -= v;
  }
  std::vector<ValueId> single;
  int64_t c = 0, ids = 0;
  for (int i = 0; i + 1 < n; ++i) {
    c += count[i], ids += id_sum[i];
    if (c == 1 && (single.empty() || single.back() != ids)) single.push_back(ValueId(ids));
  }
  const size_t every = std::max<size_t>(1, size_t(std::ceil(std::sqrt(double(single.size())))));
  std::vector<ValueId> picked;
  for (size_t i = every - 1; i < single.size(); i += every) picked.push_back(single[i]);
  return picked;
}

// The outputs of the forward nodes named in `names`.
std::vector<ValueId> named_checkpoints(const ir::Graph& g, const std::vector<int>& forward,
                                       const std::vector<std::string>& names) {
  std::unordered_map<std::string, int> by_name;
  for (int n : forward) by_name.emplace(g.node(n).name, n);
  std::vector<ValueId> out;
  for (const std::string& name : names) {
    auto it = by_name.find(name);
    if (it == by_name.end())
      throw InvalidArgument(fmt::format(
          "recompute checkpoint '{}' is not a node of the forward pass ({} nodes, e.g. '{}')", name,
          forward.size(), forward.empty() ? "" : g.node(forward[forward.size() / 2]).name));
    const ir::Node& n = g.node(it->second);
    out.insert(out.end(), n.outputs.begin(), n.outputs.end());
  }
  return out;
}

// The forward values the backward pass reads from memory instead of recomputing.
std::unordered_set<ValueId> kept_values(const ir::Graph& g, Recompute mode,
                                        const std::vector<std::string>& checkpoints) {
  std::unordered_set<ValueId> kept(g.outputs().begin(), g.outputs().end());
  std::vector<int> forward;
  for (int n = 0; n < g.num_nodes(); ++n)
    if (g.node(n).phase == ir::StepPhase::forward) forward.push_back(n);
  if (mode == Recompute::checkpoints) {
    for (int n : forward)
      if (is_matrix_op(g.node(n).op))
        kept.insert(g.node(n).outputs.begin(), g.node(n).outputs.end());
    return kept;
  }
  for (ValueId v : checkpoints.empty() ? articulation_checkpoints(g, forward)
                                       : named_checkpoints(g, forward, checkpoints))
    kept.insert(v);
  return kept;
}

// Copies a graph node by node into a new graph, emitting recomputed forward nodes just before
// the first backward node that needs them.
class Rewriter {
 public:
  Rewriter(const ir::Graph& src, std::unordered_set<ValueId> kept)
      : src_(src), kept_(std::move(kept)), dst_(src.name()) {}

  ir::Graph run() {
    for (ValueId v : src_.inputs()) {
      const ir::Value& val = src_.value(v);
      map_[v] = dst_.add_input(val.name, val.type.dtype, val.type.shape);
      dst_.value(map_[v]).role = val.role;
    }
    for (int n = 0; n < src_.num_nodes(); ++n) {
      const ir::Node& node = src_.node(n);
      std::vector<ValueId> in;
      for (ValueId v : node.inputs)
        in.push_back(node.phase == ir::StepPhase::backward && recomputable(v) ? recomputed(v)
                                                                              : mapped(v));
      copy_node(node, in, node.name, node.phase, map_);
    }
    for (ValueId v : src_.outputs()) dst_.add_output(mapped(v));
    return std::move(dst_);
  }
  int added() const { return added_; }

 private:
  bool recomputable(ValueId v) const {
    if (v == ir::kNoValue || kept_.count(v)) return false;
    const ir::Value& val = src_.value(v);
    return val.producer >= 0 && !val.constant &&
           src_.node(val.producer).phase == ir::StepPhase::forward;
  }

  ValueId mapped(ValueId v) {
    if (v == ir::kNoValue) return v;
    auto it = map_.find(v);
    if (it != map_.end()) return it->second;
    const ir::Value& val = src_.value(v);
    if (!val.constant)
      throw ShapeError(fmt::format("recompute: value '{}' is used before defined", val.name));
    ValueId c = dst_.add_constant(val.name, ir::HostTensor());
    ir::Value& copy = dst_.value(c);
    copy.constant = val.constant;
    copy.type = val.type;
    copy.initializer = val.initializer;
    return map_[v] = c;
  }

  // v's value recomputed from kept values (its producer cloned, and recursively its inputs').
  ValueId recomputed(ValueId v) {
    auto it = again_.find(v);
    if (it != again_.end()) return it->second;
    const ir::Node& node = src_.node(src_.value(v).producer);
    std::vector<ValueId> in;
    for (ValueId u : node.inputs) in.push_back(recomputable(u) ? recomputed(u) : mapped(u));
    copy_node(node, in, "recompute/" + node.name, ir::StepPhase::backward, again_);
    ++added_;
    return again_.at(v);
  }

  void copy_node(const ir::Node& node, const std::vector<ValueId>& in, const std::string& name,
                 ir::StepPhase phase, std::unordered_map<ValueId, ValueId>& into) {
    std::vector<std::string> names;
    for (ValueId v : node.outputs)
      names.push_back(&into == &map_ ? src_.value(v).name : "recompute/" + src_.value(v).name);
    std::vector<ValueId> out =
        dst_.add_node(node.op, name, in, node.attrs, static_cast<int>(node.outputs.size()), names);
    dst_.node(dst_.num_nodes() - 1).phase = phase;
    for (size_t i = 0; i < out.size(); ++i) {
      const ir::Value& from = src_.value(node.outputs[i]);
      ir::Value& to = dst_.value(out[i]);
      to.type = from.type;
      to.typed = from.typed;
      to.constant = from.constant;
      to.role = from.role;
      into[node.outputs[i]] = out[i];
    }
  }

  const ir::Graph& src_;
  std::unordered_set<ValueId> kept_;
  ir::Graph dst_;
  std::unordered_map<ValueId, ValueId> map_, again_;  // original copies, recomputed copies
  int added_ = 0;
};

}  // namespace

Recompute parse_recompute(const std::string& name) {
  if (name == "none") return Recompute::none;
  if (name == "checkpoints") return Recompute::checkpoints;
  if (name == "full") return Recompute::full;
  throw InvalidArgument(fmt::format("recompute '{}' is not one of none, checkpoints, full", name));
}

const char* recompute_name(Recompute mode) {
  switch (mode) {
    case Recompute::none:
      return "none";
    case Recompute::checkpoints:
      return "checkpoints";
    case Recompute::full:
      return "full";
  }
  return "none";
}

int apply_recompute(TrainGraph& t, Recompute mode, const std::vector<std::string>& checkpoints) {
  if (!checkpoints.empty() && mode != Recompute::full)
    throw InvalidArgument(
        fmt::format("recompute checkpoints ({} named) need recompute 'full', not '{}'",
                    checkpoints.size(), recompute_name(mode)));
  if (mode == Recompute::none) return 0;
  Rewriter r(t.graph, kept_values(t.graph, mode, checkpoints));
  t.graph = r.run();
  return r.added();
}

}  // namespace mimic
