#include "backends/ipu_emu/lowering.h"

#include <fmt/format.h>

#include "base/error.h"
#include "frontend/ir/recurrent.h"
#include "frontend/ir/recurrent_expand.h"

namespace mimic::backends::ipu_emu {

using ir::DType;
using ir::OpType;
using models::ipu::NumberFormat;

namespace {

// Smallest share of a linearly mapped tensor per tile (elements), like Poplar's mapping grain:
// tiny tensors stay on few tiles instead of paying exchange and code on all of them.
constexpr uint64_t kMinElementsPerTile = 64;

bool only_first_input_is_data(OpType op) {
  if (ir::is_reduce(op)) return true;
  switch (op) {
    case OpType::Reshape:
    case OpType::Expand:
    case OpType::Tile:
    case OpType::Slice:
    case OpType::Split:
    case OpType::Squeeze:
    case OpType::Unsqueeze:
    case OpType::Pad:
    case OpType::CumSum:
    case OpType::Clip:
      return true;
    default:
      return false;
  }
}

// Ops that only relabel their input's placement.
bool lowers_as_view(OpType op) {
  return ir::is_view_op(op) || op == OpType::Identity || op == OpType::Dropout;
}

bool is_matrix_op(OpType op) {
  return op == OpType::MatMul || op == OpType::Gemm || op == OpType::Conv ||
         op == OpType::ConvTranspose;
}

}  // namespace

uint32_t Labels::id(const std::string& name) {
  auto it = ids_.find(name);
  if (it != ids_.end()) return it->second;
  uint32_t id = static_cast<uint32_t>(names.size());
  names.push_back(name);
  ids_[name] = id;
  return id;
}

bool is_data_input(const ir::Graph& g, const ir::Node& n, int input) {
  if (!n.has_input(input)) return false;
  if (n.op == OpType::Range || n.op == OpType::ConstantOfShape) return false;
  if (only_first_input_is_data(n.op)) return input == 0;
  return true;
}

namespace {

// Recurrent layers run unrolled (frontend/ir/recurrent_expand.h): a planned matrix product per
// step, gates as vector vertices, when every op of the unrolling runs on the IPU; MaxPoolGrad runs
// as its window ops and Resize as matrix products (resize.h) the same way.
bool expansion_supported(const ir::Graph& g, const ir::Node& n, std::string* why) {
  std::string reason =
      ir::unrolled_unsupported_reason(g, n, [](const ir::Graph& one, const ir::Node& m) {
        std::string r = "not supported";
        return ipu_supports(one, m, &r) ? std::string() : r;
      });
  if (why && !reason.empty()) *why = reason;
  return reason.empty();
}

}  // namespace

// 64-bit integer graph inputs (class labels of a training step) are streamed as int32, as
// PopTorch converts int64 inputs; so are constants and reshaping views of either.
bool streamed_as_int32(const ir::Graph& g, ir::ValueId v) {
  const ir::Value& val = g.value(v);
  if (val.constant || val.producer < 0) return true;
  const ir::Node& p = g.node(val.producer);
  bool view = p.op == OpType::Unsqueeze || p.op == OpType::Squeeze || p.op == OpType::Reshape ||
              p.op == OpType::Flatten;
  return view && p.has_input(0) && streamed_as_int32(g, p.inputs[0]);
}

bool ipu_supports(const ir::Graph& g, const ir::Node& n, std::string* why) {
  auto decline = [why](std::string reason) {
    if (why) *why = std::move(reason);
    return false;
  };
  switch (n.op) {
    case OpType::Shape:
    case OpType::Size:
    case OpType::ArgMax:
    case OpType::ArgMin:
      return decline("64-bit integer results: the IPU has no int64");
    case OpType::LSTM:
    case OpType::GRU:
    case OpType::RNN:
    case OpType::MaxPoolGrad:
    case OpType::Resize:
      return expansion_supported(g, n, why);
    default:
      break;
  }
  for (int i = 0; i < n.num_inputs(); ++i) {
    if (!n.has_input(i)) continue;
    DType t = g.value(n.inputs[i]).type.dtype;
    bool data = is_data_input(g, n, i);
    if (t == DType::bf16 || t == DType::i8 || t == DType::f64)
      return decline(fmt::format("{} input: no bf16, int8 or float64 arithmetic on GC2/GC200",
                                 ir::dtype_name(t)));
    // 64-bit indices are streamed as int32 (as IPU frameworks do); other int64 data is not
    // supported.
    bool index =
        (n.op == OpType::Gather || n.op == OpType::GatherElements || n.op == OpType::ScatterND) &&
        i == 1;
    if (t == DType::i64 && data && !index && !streamed_as_int32(g, n.inputs[i]))
      return decline("i64 data input: the IPU has no int64");
  }
  for (ir::ValueId v : n.outputs) {
    DType t = g.value(v).type.dtype;
    bool int32 = t == DType::i64 && streamed_as_int32(g, v);
    if (t == DType::bf16 || t == DType::i8 || (t == DType::i64 && !int32) || t == DType::f64)
      return decline(fmt::format("{} output: not an IPU arithmetic type", ir::dtype_name(t)));
  }
  if (is_matrix_op(n.op) && !ir::is_floating(g.value(n.outputs[0]).type.dtype))
    return decline("integer matrix products");
  if (!lowers_as_view(n.op) && !lowerer_for(n))
    return decline(fmt::format("no IPU lowering or vertex cost for {}", ir::op_name(n.op)));
  return true;
}

NumberFormat value_format(const LowerContext& c, ir::ValueId v) {
  DType t = c.graph.value(v).type.dtype;
  if (t == DType::f16 || (t == DType::f32 && c.options.half_precision)) return NumberFormat::f16;
  return NumberFormat::f32;
}

uint64_t element_bytes(const LowerContext& c, ir::ValueId v) {
  switch (c.graph.value(v).type.dtype) {
    case DType::f32:
      return c.options.half_precision ? 2 : 4;
    case DType::f16:
    case DType::bf16:
      return 2;
    case DType::boolean:
    case DType::i8:
      return 1;
    default:
      return 4;  // i32, and i64 indices streamed as int32
  }
}

uint64_t value_bytes(const LowerContext& c, ir::ValueId v) {
  return static_cast<uint64_t>(c.shapes.at(v).numel()) * element_bytes(c, v);
}

uint32_t linear_tiles(const LowerContext& c, uint64_t elements) {
  uint64_t t = std::max<uint64_t>(1, ceil_div(elements, kMinElementsPerTile));
  return static_cast<uint32_t>(std::min<uint64_t>(t, c.cursor.tiles()));
}

Placement operand(LowerContext& c, LoweredOp& op, ir::ValueId v, TileSpan span) {
  if (c.placed.at(v)) return c.placement[v];
  Placement p = spread(c.ipu, span, value_bytes(c, v));
  c.placement[v] = p;
  c.placed[v] = true;
  if (c.graph.value(v).constant) op.stored.emplace_back(v, p);
  return p;
}

Placement locate(LowerContext& c, LoweredOp& op, ir::ValueId v) {
  if (c.placed.at(v)) return c.placement[v];
  return operand(c, op, v, c.cursor.take(linear_tiles(c, c.shapes[v].numel())));
}

void place_outputs(LowerContext& c, LoweredOp& op, const ir::Node& n, TileSpan span) {
  for (ir::ValueId v : n.outputs) {
    Placement p = spread(c.ipu, span, value_bytes(c, v));
    c.placement[v] = p;
    c.placed[v] = true;
    op.outputs.push_back(p);
  }
}

LowerFn lowerer_for(const ir::Node& n) {
  if (ir::is_reduce(n.op)) return lower_reduction;
  switch (n.op) {
    case OpType::MatMul:
    case OpType::Gemm:
      return lower_matmul;
    case OpType::Conv:
    case OpType::ConvTranspose:
      return lower_conv;
    case OpType::MaxPool:
    case OpType::AveragePool:
      return lower_pool;
    case OpType::GlobalAveragePool:
    case OpType::GlobalMaxPool:
    case OpType::Softmax:
    case OpType::LogSoftmax:
    case OpType::Hardmax:
    case OpType::LayerNormalization:
    case OpType::InstanceNormalization:
    case OpType::CumSum:
      return lower_reduction;
    case OpType::Transpose:
    case OpType::Concat:
    case OpType::Split:
    case OpType::Slice:
    case OpType::Gather:
    case OpType::GatherElements:
    case OpType::ScatterND:
    case OpType::Pad:
    case OpType::Tile:
    case OpType::Expand:
    case OpType::DepthToSpace:
    case OpType::SpaceToDepth:
    case OpType::Trilu:
    case OpType::EyeLike:
    case OpType::ConstantOfShape:
    case OpType::Range:
    case OpType::Constant:
      return lower_copy;
    default:
      return has_element_cost(n) ? lower_elementwise : nullptr;
  }
}

LoweredOp lower_node(LowerContext& c, int index) {
  const ir::Node& n = c.graph.node(index);
  LoweredOp op;
  if (lowers_as_view(n.op)) {
    Placement in = locate(c, op, n.inputs[0]);
    op.view = true;
    for (ir::ValueId v : n.outputs) {
      Placement p = in;
      p.total_bytes = value_bytes(c, v);
      p.bytes_per_tile = ceil_div(p.total_bytes, std::max<uint32_t>(p.span.count, 1));
      c.placement[v] = p;
      c.placed[v] = true;
      op.outputs.push_back(p);
    }
    op.plan = "view";
    op.node = index;
    return op;
  }
  op = lowerer_for(n)(c, n);
  op.node = index;
  return op;
}

}  // namespace mimic::backends::ipu_emu
