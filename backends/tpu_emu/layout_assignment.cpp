#include "backends/tpu_emu/layout_assignment.h"

#include <algorithm>
#include <cstring>

#include "frontend/ir/nn_geometry.h"
#include "frontend/ir/op_helpers.h"
#include "frontend/ir/shape_inference.h"

namespace mimic::backends::tpu_emu {
namespace {

using ir::kNoValue;
using ir::OpType;
using ir::ValueId;

const std::vector<int64_t> kToChannelsLast{0, 2, 3, 1};
const std::vector<int64_t> kToChannelsFirst{0, 3, 1, 2};

bool is_window_op(OpType op) {
  return op == OpType::Conv || op == OpType::ConvTranspose || op == OpType::MaxPool ||
         op == OpType::AveragePool || op == OpType::GlobalAveragePool ||
         op == OpType::GlobalMaxPool || op == OpType::BatchNormalization ||
         op == OpType::MaxPoolGrad;
}

// Copies rank-4 data of shape `s` into the order `perm` (any dtype).
ir::HostTensor permuted(const ir::HostTensor& t, const std::vector<int64_t>& perm) {
  const ir::Shape& s = t.shape();
  std::vector<int64_t> dims{s[perm[0]], s[perm[1]], s[perm[2]], s[perm[3]]};
  ir::HostTensor out(t.dtype(), ir::Shape(dims));
  int64_t stride[4] = {s[1] * s[2] * s[3], s[2] * s[3], s[3], 1};
  size_t eb = ir::dtype_size(t.dtype());
  const auto* src = static_cast<const unsigned char*>(t.raw());
  auto* dst = static_cast<unsigned char*>(out.raw());
  int64_t i = 0;
  for (int64_t a = 0; a < dims[0]; ++a)
    for (int64_t b = 0; b < dims[1]; ++b)
      for (int64_t c = 0; c < dims[2]; ++c)
        for (int64_t d = 0; d < dims[3]; ++d, ++i) {
          int64_t at =
              a * stride[perm[0]] + b * stride[perm[1]] + c * stride[perm[2]] + d * stride[perm[3]];
          std::memcpy(dst + i * eb, src + at * eb, eb);
        }
  return out;
}

ir::Shape permuted(const ir::Shape& s, const std::vector<int64_t>& perm) {
  return ir::Shape({s[perm[0]], s[perm[1]], s[perm[2]], s[perm[3]]});
}

class LayoutRewriter {
 public:
  // `deliver` flags the graph inputs that arrive channels-last.
  LayoutRewriter(const ir::Graph& g, std::vector<bool> deliver)
      : g_(g), out_(g.name()), map_(g.num_values()), first_uses_(g.num_values(), 0) {
    result_.inputs_channels_last = std::move(deliver);
  }

  LayoutAssignment run() {
    for (size_t i = 0; i < g_.inputs().size(); ++i) {
      ValueId v = g_.inputs()[i];
      const ir::TensorType& t = g_.value(v).type;
      bool last = result_.inputs_channels_last[i];
      ir::Shape shape = last ? permuted(t.shape, kToChannelsLast) : t.shape;
      ValueId in = out_.add_input(g_.value(v).name, t.dtype, shape);
      out_.value(in).role = g_.value(v).role;
      (last ? map_[v].last : map_[v].first) = in;
    }
    for (const ir::Node& n : g_.nodes()) {
      if (is_folded(n)) continue;
      phase_ = n.phase;
      if (!rewrite_window(n) && !rewrite_elementwise(n) && !rewrite_concat(n) &&
          !rewrite_reduce(n) && !rewrite_expand(n) && !rewrite_transpose(n) && !rewrite_slice(n))
        copy(n);
    }
    for (ValueId v : g_.outputs()) {
      bool last = map_[v].first == kNoValue && map_[v].last != kNoValue;
      result_.outputs_channels_last.push_back(last);
      out_.add_output(last ? map_[v].last : channels_first(v));
    }
    ir::infer_shapes(out_);
    result_.graph = std::move(out_);
    return std::move(result_);
  }

  // Graph inputs read only by channels-last consumers: they can arrive channels-last.
  std::vector<bool> read_only_channels_last() const {
    std::vector<bool> out;
    for (ValueId v : g_.inputs())
      out.push_back(rank(v) == 4 && first_uses_[v] == 0 && map_[v].last != kNoValue);
    return out;
  }

 private:
  // Per old value: its channels-first and channels-last versions in the new graph (either may be
  // absent until a consumer asks for it).
  struct Mapped {
    ValueId first = kNoValue, last = kNoValue;
  };

  bool is_folded(const ir::Node& n) const {
    for (ValueId v : n.outputs)
      if (!g_.value(v).constant) return false;
    return n.op != OpType::Constant;
  }
  bool is_constant(ValueId v) const { return g_.value(v).constant != nullptr; }
  int rank(ValueId v) const { return g_.value(v).type.shape.rank(); }
  bool has_channels_last(ValueId v) const { return map_[v].last != kNoValue; }

  // x (the new value of old value `old`) in the order `perm`: a Reshape when only size-1 dims
  // move, else a Transpose.
  ValueId relayout(ValueId x, ValueId old, const std::vector<int64_t>& perm,
                   const std::string& name) {
    const ir::Shape& s = g_.value(old).type.shape;
    if ((s[1] == 1 || s[2] * s[3] == 1) && !s.is_symbolic()) {
      ir::Shape target = perm == kToChannelsLast ? permuted(s, perm) : s;
      ir::HostTensor dims(ir::DType::i64, ir::Shape({4}));
      for (int i = 0; i < 4; ++i) dims.data<int64_t>()[i] = target[i];
      ValueId shape = out_.add_constant(name + ".shape", dims);
      return added(out_.add_node(OpType::Reshape, out_.unique_node_name(name), {x, shape})[0]);
    }
    ++result_.transposes;
    return added(
        out_.add_node(OpType::Transpose, out_.unique_node_name(name), {x}, {{"perm", perm}})[0]);
  }

  // A relayout node takes the phase of the node it serves (roles and phases survive the rewrite:
  // the HBM plan and the phase report read them).
  ValueId added(ValueId v) {
    out_.node(out_.num_nodes() - 1).phase = phase_;
    return v;
  }

  ValueId channels_first(ValueId v) {
    Mapped& m = map_[v];
    if (m.first != kNoValue) return m.first;
    if (is_constant(v)) return m.first = out_.add_constant(g_.value(v).name, *g_.value(v).constant);
    return m.first = relayout(m.last, v, kToChannelsFirst, g_.value(v).name + ".to_nchw");
  }

  ValueId channels_last(ValueId v) {
    Mapped& m = map_[v];
    if (m.last != kNoValue) return m.last;
    if (is_constant(v))
      return m.last = out_.add_constant(g_.value(v).name + ".nhwc",
                                        permuted(*g_.value(v).constant, kToChannelsLast));
    return m.last = relayout(channels_first(v), v, kToChannelsLast, g_.value(v).name + ".to_nhwc");
  }

  // An input of a rewritten node: channels-last for activations, as given for parameters.
  ValueId input(ValueId v, bool as_channels_last) {
    if (v == kNoValue) return kNoValue;
    if (as_channels_last) return channels_last(v);
    ++first_uses_[v];
    return channels_first(v);
  }

  void emit(const ir::Node& n, std::vector<ValueId> inputs, ir::Attributes attrs,
            bool result_channels_last) {
    std::vector<std::string> names;
    for (ValueId v : n.outputs) names.push_back(g_.value(v).name);
    auto outs = out_.add_node(n.op, n.name, std::move(inputs), std::move(attrs),
                              static_cast<int>(n.outputs.size()), names);
    out_.node(out_.num_nodes() - 1).phase = n.phase;
    for (size_t i = 0; i < outs.size(); ++i) {
      out_.value(outs[i]).role = g_.value(n.outputs[i]).role;
      (result_channels_last ? map_[n.outputs[i]].last : map_[n.outputs[i]].first) = outs[i];
    }
  }

  void copy(const ir::Node& n) {
    std::vector<ValueId> inputs;
    for (ValueId v : n.inputs) inputs.push_back(input(v, false));
    emit(n, std::move(inputs), n.attrs, false);
  }

  // A Transpose of a value that exists channels-last reads that version, its permutation composed
  // with the relayout (a weight gradient's transposes of x and dy then read the layout their
  // producers wrote, and the gradient reads them in place); the result is as the graph wrote it.
  bool rewrite_transpose(const ir::Node& n) {
    if (n.op != OpType::Transpose || rank(n.inputs[0]) != 4 || !has_channels_last(n.inputs[0]))
      return false;
    std::vector<int64_t> perm = ir::resolve_perm(n, 4);
    for (int64_t& p : perm) p = kToChannelsFirst[p];
    ir::Attributes attrs = n.attrs;
    attrs.set("perm", perm);
    emit(n, {channels_last(n.inputs[0])}, std::move(attrs), false);
    return true;
  }

  // A Slice with constant bounds of a value that exists channels-last slices that version (its
  // axes renumbered; a weight gradient's crop of x); the result is channels-last too.
  bool rewrite_slice(const ir::Node& n) {
    if (n.op != OpType::Slice || rank(n.inputs[0]) != 4 || !has_channels_last(n.inputs[0]) ||
        !n.has_input(3))
      return false;
    for (size_t i = 1; i < n.inputs.size(); ++i)
      if (n.has_input(static_cast<int>(i)) && !is_constant(n.inputs[i])) return false;
    ir::HostTensor axes = g_.value(n.inputs[3]).constant->clone();
    if (axes.dtype() != ir::DType::i64) return false;
    const int64_t to_last[4] = {0, 3, 1, 2};  // NCHW axis -> its NHWC position
    for (int64_t i = 0; i < axes.numel(); ++i) {
      int64_t& a = axes.data<int64_t>()[i];
      a = to_last[a < 0 ? a + 4 : a];
    }
    std::vector<ValueId> inputs{channels_last(n.inputs[0])};
    for (size_t i = 1; i < n.inputs.size(); ++i)
      inputs.push_back(i == 3 ? out_.add_constant(g_.value(n.inputs[3]).name + ".nhwc", axes)
                              : input(n.inputs[i], false));
    emit(n, std::move(inputs), n.attrs, true);
    return true;
  }

  bool rewrite_window(const ir::Node& n) {
    if (!is_window_op(n.op) || n.outputs.size() != 1 || ir::is_channels_last(n) ||
        rank(n.inputs[0]) != 4)
      return false;
    // MaxPoolGrad's Y and dY are activations like X; the other ops' further inputs are parameters.
    const bool activations = n.op == OpType::MaxPoolGrad;
    std::vector<ValueId> inputs{channels_last(n.inputs[0])};
    for (size_t i = 1; i < n.inputs.size(); ++i) inputs.push_back(input(n.inputs[i], activations));
    ir::Attributes attrs = n.attrs;
    attrs.set("layout", std::string("NHWC"));
    emit(n, std::move(inputs), std::move(attrs), true);
    ++result_.channels_last;
    return true;
  }

  // An input an elementwise op can read channels-last: a channels-last activation, a rank-4
  // constant (relaid at compile time), a one-element constant, or a per-channel value [N, C, 1, 1]
  // (a training step's batch statistics: relaid by a Reshape, no data moves).
  bool follows(ValueId v) const {
    if (v == kNoValue) return true;
    if (is_constant(v)) return rank(v) == 4 || g_.value(v).constant->numel() == 1;
    if (has_channels_last(v)) return true;
    const ir::Shape& s = g_.value(v).type.shape;
    return s.rank() == 4 && !s.is_symbolic() && s[2] * s[3] == 1;
  }

  bool rewrite_elementwise(const ir::Node& n) {
    bool unary = ir::is_unary_elementwise(n.op);
    bool binary = ir::is_binary_elementwise(n.op) || ir::op_class(n.op) == ir::OpClass::nary;
    if ((!unary && !binary) || n.outputs.size() != 1 || rank(n.outputs[0]) != 4) return false;
    bool any_channels_last = false;
    for (int i = 0; i < (unary ? 1 : n.num_inputs()); ++i) {
      if (!follows(n.inputs[i])) return false;
      any_channels_last |= n.inputs[i] != kNoValue && has_channels_last(n.inputs[i]);
    }
    if (!any_channels_last) return false;
    std::vector<ValueId> inputs;
    for (int i = 0; i < n.num_inputs(); ++i) {
      ValueId v = n.inputs[i];
      bool relaid = (binary || i == 0) && v != kNoValue && (!is_constant(v) || rank(v) == 4);
      inputs.push_back(input(v, relaid));
    }
    emit(n, std::move(inputs), n.attrs, true);
    return true;
  }

  // A constant i64 vector input of the new graph.
  ValueId ints(const std::string& name, const std::vector<int64_t>& values) {
    ir::HostTensor t(ir::DType::i64, ir::Shape({static_cast<int64_t>(values.size())}));
    for (size_t i = 0; i < values.size(); ++i) t.data<int64_t>()[i] = values[i];
    return out_.add_constant(name, t);
  }

  // A reduction of a channels-last activation over constant axes reduces the same elements
  // channels-last (axis a of [N,C,H,W] is kToChannelsFirst's position of it). Its result stays
  // channels-last with keepdims, and is the same tensor without it when the kept axes keep their
  // order (not C with H or W).
  bool rewrite_reduce(const ir::Node& n) {
    if (!ir::is_reduce(n.op) || rank(n.inputs[0]) != 4 || !has_channels_last(n.inputs[0]) ||
        !n.has_input(1) || !is_constant(n.inputs[1]))
      return false;
    std::vector<bool> reduced = ir::resolve_reduce_axes(g_, n);
    const bool keep = n.attrs.get_int("keepdims", 1) != 0;
    if (!keep && !reduced[1] && (!reduced[2] || !reduced[3])) return false;
    const int64_t position[4] = {0, 3, 1, 2};  // of NCHW axis a in NHWC
    std::vector<int64_t> axes;
    for (int a = 0; a < 4; ++a)
      if (reduced[a]) axes.push_back(position[a]);
    std::sort(axes.begin(), axes.end());
    std::vector<ValueId> inputs{channels_last(n.inputs[0]), ints(n.name + ".axes_nhwc", axes)};
    emit(n, std::move(inputs), n.attrs, keep);
    return true;
  }

  // Expand of a channels-last or per-channel value to a rank-4 constant shape: the same broadcast
  // of the channels-last value to the permuted shape.
  bool rewrite_expand(const ir::Node& n) {
    if (n.op != OpType::Expand || rank(n.outputs[0]) != 4 || rank(n.inputs[0]) != 4 ||
        !is_constant(n.inputs[1]) || !follows(n.inputs[0]) || is_constant(n.inputs[0]))
      return false;
    const ir::Shape& s = g_.value(n.inputs[0]).type.shape;
    if (!has_channels_last(n.inputs[0]) && s[1] == 1) return false;  // nothing per channel
    const ir::HostTensor& shape = *g_.value(n.inputs[1]).constant;
    if (shape.dtype() != ir::DType::i64 || shape.numel() != 4) return false;
    std::vector<int64_t> dims(4);
    for (int i = 0; i < 4; ++i) dims[i] = shape.data<int64_t>()[kToChannelsLast[i]];
    std::vector<ValueId> inputs{channels_last(n.inputs[0]), ints(n.name + ".shape_nhwc", dims)};
    emit(n, std::move(inputs), n.attrs, true);
    return true;
  }

  bool rewrite_concat(const ir::Node& n) {
    if (n.op != OpType::Concat || rank(n.outputs[0]) != 4) return false;
    int64_t axis = n.attrs.get_int("axis", 0);
    if (axis != 1 && axis != -3) return false;
    for (ValueId v : n.inputs)
      if (is_constant(v) || !has_channels_last(v)) return false;
    std::vector<ValueId> inputs;
    for (ValueId v : n.inputs) inputs.push_back(channels_last(v));
    ir::Attributes attrs = n.attrs;
    attrs.set("axis", int64_t{3});
    emit(n, std::move(inputs), std::move(attrs), true);
    return true;
  }

  const ir::Graph& g_;
  ir::Graph out_;
  ir::StepPhase phase_ = ir::StepPhase::forward;  // of the node being rewritten
  std::vector<Mapped> map_;
  std::vector<int> first_uses_;  // channels-first reads of each value by rewritten or copied nodes
  LayoutAssignment result_;
};

bool needs_assignment(const ir::Graph& g) {
  for (const ir::Node& n : g.nodes())
    if (is_window_op(n.op) && n.outputs.size() == 1 && !ir::is_channels_last(n) &&
        g.value(n.inputs[0]).type.shape.rank() == 4 && !g.value(n.outputs[0]).constant)
      return true;
  return false;
}

}  // namespace

LayoutAssignment assign_channels_last(const ir::Graph& g) {
  std::vector<bool> none(g.inputs().size(), false);
  if (!needs_assignment(g)) return {g, 0, 0, none, std::vector<bool>(g.outputs().size(), false)};
  LayoutRewriter probe(g, none);
  LayoutAssignment first = probe.run();
  std::vector<bool> deliver = probe.read_only_channels_last();
  if (deliver == none) return first;
  return LayoutRewriter(g, deliver).run();
}

ir::HostTensor to_channels_last(const ir::HostTensor& t) {
  return permuted(t, kToChannelsLast);
}

ir::HostTensor to_channels_first(const ir::HostTensor& t) {
  return permuted(t, kToChannelsFirst);
}

}  // namespace mimic::backends::tpu_emu
