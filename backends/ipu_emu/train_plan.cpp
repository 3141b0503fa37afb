#include "backends/ipu_emu/train_plan.h"

#include <algorithm>

#include "frontend/ir/op_helpers.h"
#include "models/ipu/tile_costs.h"

namespace mimic::backends::ipu_emu {

using ir::StepPhase;
using ir::ValueRole;
using models::ipu::NumberFormat;
using models::ipu::Superstep;
using models::ipu::VertexClass;
using models::ipu::VertexWork;

bool is_training(const ir::Graph& g) {
  return std::any_of(g.nodes().begin(), g.nodes().end(), [](const ir::Node& n) {
    return n.phase == StepPhase::backward || n.phase == StepPhase::update;
  });
}

std::vector<bool> resident_values(const ir::Graph& g) {
  std::vector<bool> out(g.num_values(), false);
  if (!is_training(g)) return out;
  for (int v = 0; v < g.num_values(); ++v) {
    ValueRole r = g.value(v).role;
    out[v] = r == ValueRole::weight || r == ValueRole::optimizer_state || r == ValueRole::buffer;
  }
  for (ir::ValueId v : g.outputs()) {
    const ir::Value& val = g.value(v);
    if (val.producer >= 0 && val.type.shape.numel() > 1 &&
        g.node(val.producer).phase != StepPhase::loss)
      out[v] = true;
  }
  return out;
}

int64_t training_batch(const ir::Graph& g) {
  for (ir::ValueId v : g.inputs())
    if (g.value(v).role == ValueRole::data && g.value(v).type.shape.rank() > 0)
      return g.value(v).type.shape[0];
  return 1;
}

namespace {

int64_t prefix(const ir::Shape& s, int axis) {
  int64_t p = 1;
  for (int d = 0; d < axis; ++d) p *= s[d];
  return p;
}

// The batch axis of an output given an input's: the same dimension under right or left
// alignment (elementwise ops, broadcasting, reductions, windows), the matrix rows or columns of a
// MatMul, the permuted axis of a Transpose, and for reshapes the axis after the same outer block
// whose size is still a multiple of the batch.
int map_axis(const ir::Graph& g, const ir::Node& n, int input, int axis, ir::ValueId out,
             int64_t batch) {
  const ir::Shape& in = g.value(n.inputs[input]).type.shape;
  const ir::Shape& o = g.value(out).type.shape;
  int ri = in.rank(), ro = o.rank();
  switch (n.op) {
    case ir::OpType::Transpose: {
      std::vector<int64_t> perm = ir::resolve_perm(n, ri);
      for (int b = 0; b < ro && b < static_cast<int>(perm.size()); ++b)
        if (perm[b] == axis) return b;
      return -1;
    }
    case ir::OpType::MatMul: {  // [.., M, K] @ [.., K, N]; a vector operand drops its axis
      bool b_vector = g.value(n.inputs[1]).type.shape.rank() == 1;
      if (input == 0 && axis == ri - 1) return -1;               // K: contracted
      if (input == 1 && (ri == 1 || axis == ri - 2)) return -1;  // K: contracted
      if (input == 0 && b_vector) return axis;
      if (input == 0 && axis == ri - 2) return ro - 2;
      if (input == 1 && axis == ri - 1) return ro - 1;
      return ro - ri + axis >= 0 ? ro - ri + axis : -1;  // broadcast batch dimensions
    }
    case ir::OpType::Reshape:
    case ir::OpType::Flatten:
    case ir::OpType::Unsqueeze:
    case ir::OpType::Squeeze: {
      int64_t outer = prefix(in, axis);
      for (int b = 0; b < ro; ++b)
        if (prefix(o, b) == outer && o[b] % batch == 0) return b;
      return -1;
    }
    default:
      break;
  }
  int right = ro - ri + axis;
  if (right >= 0 && right < ro && o[right] == in[axis]) return right;
  if (axis < ro && o[axis] == in[axis]) return axis;
  return -1;
}

}  // namespace

std::vector<int> batch_axes(const ir::Graph& g, int64_t batch) {
  std::vector<int> axis(g.num_values(), -1);
  if (batch <= 1) return axis;
  auto splittable = [&](ir::ValueId v) {
    ValueRole r = g.value(v).role;
    return !g.value(v).constant && (r == ValueRole::data || r == ValueRole::activation);
  };
  for (ir::ValueId v : g.inputs()) {
    const ir::Shape& s = g.value(v).type.shape;
    if (g.value(v).role == ValueRole::data && s.rank() > 0 && s[0] == batch) axis[v] = 0;
  }
  for (const ir::Node& n : g.nodes()) {
    bool any = false;
    for (ir::ValueId out : n.outputs) {
      if (!splittable(out)) continue;
      for (int i = 0; i < n.num_inputs() && axis[out] < 0; ++i) {
        if (!n.has_input(i) || axis[n.inputs[i]] < 0) continue;
        any = true;
        axis[out] = map_axis(g, n, i, axis[n.inputs[i]], out, batch);
      }
      // The backward pass starts from the loss's scalar gradient broadcast back to [N, ...].
      const ir::Shape& s = g.value(out).type.shape;
      if (!any && axis[out] < 0 && s.rank() >= 2 && s[0] == batch) axis[out] = 0;
    }
  }
  return axis;
}

std::vector<uint32_t> training_stages(const ir::Graph& g, const std::vector<int>& nodes,
                                      const std::vector<uint32_t>& forward_stage) {
  constexpr uint32_t kNone = UINT32_MAX;
  std::vector<uint32_t> stage(nodes.size(), 0), value_stage(g.num_values(), kNone);
  std::vector<bool> anchored(g.num_values(), false);  // forward values and parameters
  auto forward = [&](const ir::Node& n) {
    return n.phase == StepPhase::forward || n.phase == StepPhase::loss;
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    const ir::Node& n = g.node(nodes[i]);
    if (!forward(n)) continue;
    stage[i] = forward_stage[i];
    for (ir::ValueId v : n.inputs)
      if (v != ir::kNoValue && g.value(v).producer < 0 && !g.value(v).constant)
        value_stage[v] = std::min(value_stage[v], stage[i]), anchored[v] = true;
    for (ir::ValueId v : n.outputs) value_stage[v] = stage[i], anchored[v] = true;
  }
  std::vector<bool> floating(nodes.size(), false);  // update nodes of step scalars only
  for (size_t i = 0; i < nodes.size(); ++i) {
    const ir::Node& n = g.node(nodes[i]);
    if (forward(n)) continue;
    uint32_t fwd = kNone, made = kNone;
    for (ir::ValueId v : n.inputs) {
      if (v == ir::kNoValue || value_stage[v] == kNone) continue;
      uint32_t& pick = anchored[v] ? fwd : made;
      pick = pick == kNone ? value_stage[v] : std::max(pick, value_stage[v]);
    }
    stage[i] = fwd != kNone ? fwd : made != kNone ? made : 0;
    floating[i] = fwd == kNone && made == kNone;
    for (ir::ValueId v : n.outputs) value_stage[v] = floating[i] ? kNone : stage[i];
  }
  // Scalars of the update follow their first reader (reverse order: chains resolve).
  for (size_t i = nodes.size(); i-- > 0;) {
    if (!floating[i]) continue;
    uint32_t first = kNone;
    for (ir::ValueId v : g.node(nodes[i]).outputs)
      for (size_t j = i + 1; j < nodes.size(); ++j)
        for (ir::ValueId in : g.node(nodes[j]).inputs)
          if (in == v) first = std::min(first, stage[j]);
    stage[i] = first == kNone ? 0 : first;
  }
  return stage;
}

Category base_category(const ir::Graph& g, ir::ValueId v) {
  const ir::Value& val = g.value(v);
  if (val.constant) return Category::weight;
  switch (val.role) {
    case ValueRole::data:
      return Category::data;
    case ValueRole::weight:
      return Category::weight;
    case ValueRole::gradient:
      return Category::gradient;
    case ValueRole::optimizer_state:
      return Category::optimizer_state;
    case ValueRole::buffer:
      return Category::buffer;
    case ValueRole::activation:
      break;
  }
  return Category::activation;
}

std::vector<ir::ValueId> stage_gradients(const ir::Graph& g, const std::vector<LoweredOp>& ops) {
  std::vector<ir::ValueId> out;
  for (const LoweredOp& op : ops)
    for (ir::ValueId v : g.node(op.node).outputs)
      if (g.value(v).role == ValueRole::gradient) out.push_back(v);
  return out;
}

Superstep accumulate_step(const models::ipu::IpuSpec& s, const std::vector<Placement>& grads,
                          NumberFormat format, uint32_t label) {
  uint32_t tiles = static_cast<uint32_t>(s.tiles);
  std::vector<uint64_t> bytes(tiles, 0);
  for (const Placement& p : grads)
    for_each_range(p.span, tiles, [&](uint32_t first, uint32_t count) {
      for (uint32_t t = first; t < first + count; ++t) bytes[t] += p.bytes_per_tile;
    });
  Superstep step;
  step.label = label;
  step.sync = models::ipu::SyncKind::internal;
  VertexWork add{VertexClass::vector, format, format, 1, 0};
  uint64_t element = models::ipu::format_bytes(format);
  for (uint32_t t = 0; t < tiles;) {
    uint32_t end = t + 1;
    while (end < tiles && bytes[end] == bytes[t]) ++end;
    if (bytes[t])
      step.compute.push_back({t, end - t,
                              models::ipu::split_over_workers(add, ceil_div(bytes[t], element), 1,
                                                              s.worker_contexts)});
    t = end;
  }
  return step;
}

Superstep stream_state_step(const models::ipu::IpuSpec& s, uint64_t bytes, bool load,
                            uint32_t label) {
  Superstep step;
  step.label = label;
  step.sync = models::ipu::SyncKind::internal;
  uint32_t tiles = static_cast<uint32_t>(s.tiles);
  uint64_t per_tile = ceil_div(bytes, tiles);
  (load ? step.host_to_device_bytes : step.device_to_host_bytes) = bytes;
  add_exchange(step.exchange, TileSpan{0, tiles}, tiles, load ? 0 : per_tile, load ? per_tile : 0);
  return step;
}

}  // namespace mimic::backends::ipu_emu
