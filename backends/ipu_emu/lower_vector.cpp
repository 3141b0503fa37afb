// Lowering of ops that run on the tiles' vector datapaths: elementwise ops where their input
// lives, reductions (local, then across tiles when reduced rows straddle tiles) and data movement
// (exchange into a new placement, then on-tile copies). Per-element costs follow the shape of
// popops' estimators (instructions per vector of elements, or per element for transcendental
// functions); the per-op instruction counts are inferred, not published.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>

#include "backends/ipu_emu/lowering.h"
#include "frontend/ir/nn_geometry.h"
#include "frontend/ir/op_helpers.h"
#include "models/ipu/tile_costs.h"

namespace mimic::backends::ipu_emu {

using ir::OpType;
using models::ipu::NumberFormat;
using models::ipu::Superstep;
using models::ipu::SyncKind;
using models::ipu::VertexClass;
using models::ipu::VertexWork;

namespace {

std::string label_of(OpType op) {
  std::string s = ir::op_name(op);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return s;
}

// Vector cost of one output element: transcendental functions are not vectorized; the rest take
// `cycles` instructions per vector of elements [inferred]. Nothing for an op without a cost here:
// the IPU declines it (has_element_cost), it is never priced by default.
bool one_of(OpType op, std::initializer_list<OpType> ops) {
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

std::optional<VertexWork> element_cost(const ir::Node& n, NumberFormat f) {
  using O = OpType;
  VertexWork v{VertexClass::vector, f, f, 1, 0};
  if (one_of(n.op,
             {O::Relu,        O::Abs,  O::Neg, O::Floor, O::Ceil,    O::Round, O::Sign,
              O::Add,         O::Sub,  O::Mul, O::Equal, O::Greater, O::Less,  O::GreaterOrEqual,
              O::LessOrEqual, O::And,  O::Or,  O::Xor,   O::Not,     O::IsNaN, O::IsInf,
              O::Cast,        O::Where}))
    return v;
  if (one_of(n.op,
             {O::Exp,   O::Log,   O::Tanh, O::Sigmoid, O::Erf,  O::Gelu, O::Softplus, O::Sin,
              O::Cos,   O::Tan,   O::Asin, O::Acos,    O::Atan, O::Sinh, O::Cosh,     O::Asinh,
              O::Acosh, O::Atanh, O::Pow,  O::Elu,     O::Selu, O::Celu})) {
    v.cls = VertexClass::transcendental;
    return v;
  }
  switch (n.op) {
    case OpType::Div:
    case OpType::Sqrt:
    case OpType::Reciprocal:
    case OpType::Mod:
      v.cycles_per_vector = 4;
      return v;
    case OpType::BatchNormalization:
    case OpType::PRelu:
    case OpType::LeakyRelu:
    case OpType::Clip:
    case OpType::Shrink:
    case OpType::ThresholdedRelu:
      v.cycles_per_vector = 2;
      return v;
    case OpType::HardSigmoid:
    case OpType::HardSwish:
    case OpType::Softsign:
      v.cycles_per_vector = 3;
      return v;
    case OpType::LRN:
      v.cycles_per_vector = static_cast<uint32_t>(2 + n.attrs.get_int("size", 1));
      return v;
    case OpType::Sum:
    case OpType::Max:
    case OpType::Min:
    case OpType::Mean:
      v.cycles_per_vector =
          static_cast<uint32_t>(std::max(1, n.num_inputs() - (n.op == OpType::Mean ? 0 : 1)));
      return v;
    default:
      return std::nullopt;
  }
}

Superstep new_step(LowerContext& c, const std::string& label) {
  Superstep s;
  s.op = c.op_index;
  s.label = c.labels->id(label);
  s.sync = SyncKind::internal;
  return s;
}

uint64_t step_cycles(const LowerContext& c, const Superstep& s) {
  uint64_t x = 0, t = 0;
  for (const auto& g : s.exchange)
    x = std::max(x, models::ipu::exchange_cycles(c.specs, g.send_bytes, g.recv_bytes));
  for (const auto& g : s.compute)
    t = std::max(t, models::ipu::tile_compute_cycles(c.specs, g.vertices));
  return c.specs.internal_sync_cycles + x + t;
}

void finish(LowerContext& c, LoweredOp& op) {
  for (const auto& s : op.steps) op.est_cycles += step_cycles(c, s);
}

// The placed non-constant data input with the most bytes (-1 if none).
ir::ValueId home_input(const LowerContext& c, const ir::Node& n) {
  ir::ValueId best = ir::kNoValue;
  for (int i = 0; i < n.num_inputs(); ++i) {
    ir::ValueId v = n.inputs[i];
    if (!is_data_input(c.graph, n, i) || !c.placed[v] || c.graph.value(v).constant) continue;
    if (best == ir::kNoValue || value_bytes(c, v) > value_bytes(c, best)) best = v;
  }
  return best;
}

}  // namespace

bool has_element_cost(const ir::Node& n) {
  return element_cost(n, NumberFormat::f32).has_value();
}

LoweredOp lower_elementwise(LowerContext& c, const ir::Node& n) {
  LoweredOp op;
  ir::ValueId out = n.outputs[0];
  uint64_t out_elems = c.shapes[out].numel();
  ir::ValueId home = home_input(c, n);
  bool same_size =
      home != ir::kNoValue && static_cast<uint64_t>(c.shapes[home].numel()) == out_elems;
  TileSpan span = same_size ? c.placement[home].span : c.cursor.take(linear_tiles(c, out_elems));
  uint64_t per_tile = ceil_div(out_elems, span.count);
  Superstep s = new_step(c, label_of(n.op));
  uint64_t recv = 0;
  uint32_t tiles = c.cursor.tiles();
  for (int i = 0; i < n.num_inputs(); ++i) {
    ir::ValueId v = n.inputs[i];
    if (!is_data_input(c.graph, n, i) || (v == home && same_size)) continue;
    Placement p = operand(c, op, v, span);
    uint64_t elems = c.shapes[v].numel();
    bool local = p.span.first == span.first && p.span.count == span.count && elems == out_elems;
    if (local) continue;
    // Each tile receives the slice its outputs read (all of a small broadcast operand at most);
    // holders multicast their share once.
    recv += std::min<uint64_t>(elems, per_tile) * element_bytes(c, v);
    add_exchange(s.exchange, p.span, tiles, p.bytes_per_tile, 0);
  }
  add_exchange(s.exchange, span, tiles, 0, recv);
  VertexWork v = *element_cost(n, value_format(c, n.inputs[0]));
  add_compute(s.compute, span, tiles,
              models::ipu::split_over_workers(v, per_tile, 1, c.specs.worker_contexts));
  op.steps.push_back(std::move(s));
  op.temp_span = span;
  op.temp_exchange = recv;
  place_outputs(c, op, n, span);
  op.plan = fmt::format("{} on {} tiles", label_of(n.op), span.count);
  finish(c, op);
  return op;
}

namespace {

// Whether the reduced axes are the innermost ones (one contiguous run per output position).
bool innermost(const std::vector<bool>& axes) {
  size_t first = std::find(axes.begin(), axes.end(), true) - axes.begin();
  return std::all_of(axes.begin() + std::min(first, axes.size()), axes.end(),
                     [](bool a) { return a; });
}

// Partial results a tile holding `per_tile` consecutive elements of the row-major tensor keeps
// after reducing them locally: one per output position its run touches. Reduced axes that are
// not innermost (BatchNorm's statistics over N, H, W of NCHW) leave runs of `inner` reduced
// elements per position.
uint64_t local_partials(const ir::Shape& shape, const std::vector<bool>& axes, uint64_t reduced,
                        uint64_t per_tile, bool contiguous) {
  if (contiguous) return std::max<uint64_t>(1, per_tile / std::max<uint64_t>(reduced, 1));
  uint64_t inner = 1;
  for (int d = shape.rank() - 1; d >= 0 && axes[d]; --d) inner *= static_cast<uint64_t>(shape[d]);
  uint64_t positions = static_cast<uint64_t>(shape.numel()) / std::max<uint64_t>(reduced, 1);
  return std::min({per_tile, std::max<uint64_t>(positions, 1), ceil_div(per_tile, inner) + 1});
}

}  // namespace

namespace {

// Which axes a reduction reduces (or normalizes over, or scans along), and whether its output has
// its input's shape (normalizations).
std::vector<bool> reduced_axes(const LowerContext& c, const ir::Node& n, int rank,
                               bool* same_shape) {
  std::vector<bool> axes(rank, false);
  *same_shape = true;
  switch (n.op) {
    case OpType::GlobalAveragePool:
    case OpType::GlobalMaxPool:
    case OpType::InstanceNormalization: {
      bool last = ir::is_channels_last(n);
      for (int d = last ? 1 : 2; d < (last ? rank - 1 : rank); ++d) axes[d] = true;
      *same_shape = n.op == OpType::InstanceNormalization;
      break;
    }
    case OpType::Softmax:
    case OpType::LogSoftmax:
    case OpType::Hardmax:
    case OpType::CumSum: {
      int64_t axis = n.op == OpType::CumSum ? ir::constant_ints(c.graph, n, 1, {0}).at(0)
                                            : n.attrs.get_int("axis", -1);
      axes[ir::normalize_axis(axis, rank, ir::describe(c.graph, n))] = true;
      break;
    }
    case OpType::LayerNormalization: {
      int a = ir::normalize_axis(n.attrs.get_int("axis", -1), rank, ir::describe(c.graph, n));
      for (int d = a; d < rank; ++d) axes[d] = true;
      break;
    }
    default:
      axes = ir::resolve_reduce_axes(c.graph, n);
      *same_shape = false;
      break;
  }
  return axes;
}

}  // namespace

LoweredOp lower_reduction(LowerContext& c, const ir::Node& n) {
  LoweredOp op;
  ir::ValueId in = n.inputs[0];
  const ir::Shape& shape = c.shapes[in];
  int rank = shape.rank();
  Placement pin = locate(c, op, in);
  bool same_shape = true;
  std::vector<bool> axes = reduced_axes(c, n, rank, &same_shape);
  uint64_t reduced = 1, per_tile = pin.bytes_per_tile / std::max<uint64_t>(element_bytes(c, in), 1);
  for (int d = 0; d < rank; ++d)
    if (axes[d]) reduced *= shape[d];
  bool contiguous = innermost(axes);
  uint64_t partials = local_partials(shape, axes, reduced, per_tile, contiguous);
  bool cross = !(contiguous && reduced <= per_tile);
  NumberFormat f = value_format(c, in);
  uint32_t tiles = c.cursor.tiles();
  bool exp =
      n.op == OpType::Softmax || n.op == OpType::LogSoftmax || n.op == OpType::ReduceLogSumExp;
  // Local pass: reduce (and exponentiate) the tile's own elements.
  Superstep local = new_step(c, label_of(n.op));
  VertexWork v{exp ? VertexClass::transcendental : VertexClass::vector, f, f, same_shape ? 2u : 1u,
               0};
  add_compute(local.compute, pin.span, tiles,
              models::ipu::split_over_workers(v, per_tile, 1, c.specs.worker_contexts));
  op.steps.push_back(std::move(local));
  uint64_t stat_bytes = 4;  // partial statistics are fp32
  if (same_shape) {
    Superstep apply = new_step(c, label_of(n.op) + " apply");
    if (cross)
      add_exchange(apply.exchange, pin.span, tiles, partials * stat_bytes, partials * stat_bytes);
    VertexWork a{VertexClass::vector, f, f, n.op == OpType::LayerNormalization ? 3u : 2u, 0};
    add_compute(apply.compute, pin.span, tiles,
                models::ipu::split_over_workers(a, per_tile, 1, c.specs.worker_contexts));
    op.steps.push_back(std::move(apply));
    op.temp_span = pin.span;
    op.temp_exchange = cross ? partials * stat_bytes : 0;
    place_outputs(c, op, n, pin.span);
  } else if (!cross) {
    place_outputs(c, op, n, pin.span);
  } else {
    uint64_t out_elems = c.shapes[n.outputs[0]].numel();
    TileSpan span = c.cursor.take(linear_tiles(c, out_elems));
    uint64_t total = partials * pin.span.count;
    uint64_t recv = ceil_div(total, span.count) * stat_bytes;
    Superstep combine = new_step(c, label_of(n.op) + " combine");
    add_exchange(combine.exchange, pin.span, tiles, partials * stat_bytes, 0);
    add_exchange(combine.exchange, span, tiles, 0, recv);
    VertexWork r{VertexClass::vector, NumberFormat::f32, NumberFormat::f32, 1, 0};
    add_compute(combine.compute, span, tiles,
                models::ipu::split_over_workers(r, ceil_div(total, span.count), 1,
                                                c.specs.worker_contexts));
    op.steps.push_back(std::move(combine));
    op.temp_span = span;
    op.temp_exchange = recv;
    place_outputs(c, op, n, span);
  }
  op.plan = fmt::format("{} over {} elements{}", label_of(n.op), reduced,
                        cross ? " across tiles" : " within tiles");
  finish(c, op);
  return op;
}

LoweredOp lower_copy(LowerContext& c, const ir::Node& n) {
  LoweredOp op;
  uint64_t out_bytes = 0, largest = 0;
  for (ir::ValueId v : n.outputs) {
    out_bytes += value_bytes(c, v);
    largest = std::max<uint64_t>(largest, c.shapes[v].numel());
  }
  TileSpan span = c.cursor.take(linear_tiles(c, largest));
  uint64_t recv = ceil_div(out_bytes, span.count);
  uint32_t tiles = c.cursor.tiles();
  Superstep s = new_step(c, label_of(n.op));
  for (int i = 0; i < n.num_inputs(); ++i) {
    ir::ValueId v = n.inputs[i];
    if (!is_data_input(c.graph, n, i)) continue;
    Placement p = locate(c, op, v);
    // A gather reads only the rows it returns; other copies read their whole input.
    uint64_t send = n.op == OpType::Gather && i == 0
                        ? std::min(p.bytes_per_tile, ceil_div(out_bytes, p.span.count))
                        : p.bytes_per_tile;
    add_exchange(s.exchange, p.span, tiles, send, 0);
  }
  add_exchange(s.exchange, span, tiles, 0, recv);
  VertexWork v{VertexClass::copy, NumberFormat::f32, NumberFormat::f32, 1, 0};
  add_compute(s.compute, span, tiles,
              models::ipu::split_over_workers(v, recv, 1, c.specs.worker_contexts));
  op.steps.push_back(std::move(s));
  place_outputs(c, op, n, span);
  op.plan = fmt::format("{} to {} tiles", label_of(n.op), span.count);
  finish(c, op);
  return op;
}

}  // namespace mimic::backends::ipu_emu
