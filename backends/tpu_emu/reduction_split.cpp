#include "backends/tpu_emu/reduction_split.h"

#include <fmt/format.h>

#include "base/error.h"
#include "frontend/ir/op_helpers.h"
#include "frontend/ir/shape_inference.h"

namespace mimic::backends::tpu_emu {
namespace {

using ir::OpType;
using ir::ValueId;

// Blocks of adjacent reduced axes (size-1 axes join either side), innermost block first.
std::vector<std::vector<int64_t>> reduced_blocks(const ir::Graph& g, const ir::Node& n) {
  std::vector<bool> mask = ir::resolve_reduce_axes(g, n);
  const ir::Shape& x = g.value(n.inputs[0]).type.shape;
  std::vector<std::vector<int64_t>> blocks;
  bool open = false;
  for (int i = 0; i < x.rank(); ++i) {
    if (x[i] == 1) continue;
    if (!mask[i]) {
      open = false;
      continue;
    }
    if (!open) blocks.emplace_back();
    blocks.back().push_back(i);
    open = true;
  }
  return {blocks.rbegin(), blocks.rend()};
}

// The op that continues a split reduction after its first block.
OpType later_op(OpType op) {
  return op == OpType::ReduceSumSquare ? OpType::ReduceSum : op;
}

class Splitter {
 public:
  explicit Splitter(const ir::Graph& g)
      : g_(g), out_(g.name()), map_(g.num_values(), ir::kNoValue) {}

  ir::Graph run() {
    for (ValueId v : g_.inputs()) {
      const ir::Value& val = g_.value(v);
      map_[v] = out_.add_input(val.name, val.type.dtype, val.type.shape);
      out_.value(map_[v]).role = val.role;
    }
    for (int i = 0; i < g_.num_nodes(); ++i) {
      const ir::Node& n = g_.node(i);
      bool folded = true;  // constants by now: get() copies them where they are read
      for (ValueId v : n.outputs) folded = folded && g_.value(v).constant;
      if (folded) continue;
      if (splittable_reduction(g_, n))
        split(n);
      else
        copy(n);
    }
    for (ValueId v : g_.outputs()) out_.add_output(get(v));
    return std::move(out_);
  }

 private:
  ValueId get(ValueId v) {
    if (v == ir::kNoValue || map_[v] != ir::kNoValue) return v == ir::kNoValue ? v : map_[v];
    const ir::Value& val = g_.value(v);
    if (!val.constant)
      throw CompileError(
          fmt::format("split_reductions: value '{}' used before it is computed", val.name));
    map_[v] = out_.add_constant(val.name, *val.constant);
    out_.value(map_[v]).role = val.role;
    return map_[v];
  }

  // Appends a node and infers its outputs' types; returns its outputs.
  std::vector<ValueId> emit(OpType op, const std::string& name, const std::vector<ValueId>& in,
                            const ir::Attributes& attrs, int outputs,
                            const std::vector<std::string>& names, ir::StepPhase phase) {
    std::vector<ValueId> out = out_.add_node(op, name, in, attrs, outputs, names);
    out_.node(out_.num_nodes() - 1).phase = phase;
    ir::infer_node(out_, out_.num_nodes() - 1);
    return out;
  }

  void copy(const ir::Node& n) {
    std::vector<ValueId> in;
    std::vector<std::string> names;
    for (ValueId v : n.inputs) in.push_back(get(v));
    for (ValueId v : n.outputs) names.push_back(g_.value(v).name);
    std::vector<ValueId> out =
        emit(n.op, n.name, in, n.attrs, static_cast<int>(n.outputs.size()), names, n.phase);
    for (size_t k = 0; k < out.size(); ++k) {
      map_[n.outputs[k]] = out[k];
      out_.value(out[k]).role = g_.value(n.outputs[k]).role;
    }
  }

  // One reduction per block (keepdims, so the next block's axes keep their numbers), then the
  // original's keepdims by a Reshape to its output shape.
  void split(const ir::Node& n) {
    ValueId x = get(n.inputs[0]);
    const std::vector<std::vector<int64_t>> blocks = reduced_blocks(g_, n);
    ir::Attributes keep;
    keep.set("keepdims", int64_t{1});
    for (size_t b = 0; b < blocks.size(); ++b) {
      ir::HostTensor axes = ir::HostTensor::from(
          ir::Shape({static_cast<int64_t>(blocks[b].size())}), blocks[b].data());
      ValueId a = out_.add_constant(fmt::format("{}/axes{}", n.name, b), std::move(axes));
      x = emit(b == 0 ? n.op : later_op(n.op), fmt::format("{}/block{}", n.name, b), {x, a}, keep,
               1, {}, n.phase)[0];
    }
    const ir::Value& want = g_.value(n.outputs[0]);
    std::vector<int64_t> dims = want.type.shape.dims();
    ir::HostTensor shape =
        ir::HostTensor::from(ir::Shape({static_cast<int64_t>(dims.size())}), dims.data());
    ValueId s = out_.add_constant(n.name + "/shape", std::move(shape));
    map_[n.outputs[0]] = emit(OpType::Reshape, n.name, {x, s}, {}, 1, {want.name}, n.phase)[0];
    out_.value(map_[n.outputs[0]]).role = want.role;
  }

  const ir::Graph& g_;
  ir::Graph out_;
  std::vector<ValueId> map_;
};

}  // namespace

bool splittable_reduction(const ir::Graph& g, const ir::Node& n) {
  if (n.op != OpType::ReduceSum && n.op != OpType::ReduceMean && n.op != OpType::ReduceMax &&
      n.op != OpType::ReduceMin && n.op != OpType::ReduceSumSquare)
    return false;
  if (n.has_input(1) && !g.value(n.inputs[1]).constant) return false;
  if (g.value(n.inputs[0]).type.dtype != ir::DType::f32) return false;
  return reduced_blocks(g, n).size() >= 2;
}

std::optional<ir::Graph> split_reductions(const ir::Graph& g) {
  for (const ir::Node& n : g.nodes())
    if (splittable_reduction(g, n)) return Splitter(g).run();
  return std::nullopt;
}

}  // namespace mimic::backends::tpu_emu
