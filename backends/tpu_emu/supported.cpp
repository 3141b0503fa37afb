// Which graph nodes the TPU can run; the rest fall back to the cpu backend (placement.cpp).
#include <fmt/format.h>
#include <algorithm>
#include <set>

#include "backends/tpu_emu/fusion.h"
#include "backends/tpu_emu/reduction_split.h"
#include "backends/tpu_emu/tpu_compiler.h"
#include "frontend/ir/nn_geometry.h"
#include "frontend/ir/op_helpers.h"
#include "frontend/ir/recurrent.h"
#include "frontend/ir/recurrent_expand.h"

namespace mimic::backends::tpu_emu {

using ir::OpType;

namespace {

bool is_float(ir::DType t) {
  return t == ir::DType::f32 || t == ir::DType::bf16;
}

bool constant_f32(const ir::Graph& g, const ir::Node& n, int i) {
  if (!n.has_input(i)) return true;
  const ir::Value& v = g.value(n.inputs[i]);
  return v.constant && v.constant->dtype() == ir::DType::f32;
}

// 1-D (run as 2-D ones) and 2-D windows.
bool window_2d(const ir::Graph& g, const ir::Node& n) {
  int rank = g.value(n.inputs[0]).type.shape.rank();
  return rank == 3 || rank == 4;
}

bool window_3d(const ir::Graph& g, const ir::Node& n) {
  return g.value(n.inputs[0]).type.shape.rank() == 5;
}

// Conv/ConvTranspose weights: constant f32 ones are relaid at compile time, runtime ones by a copy
// kernel every run (lower_matmul.cpp). The bias is a constant f32, or, with runtime weights (a
// training step's), a runtime f32 one that the GEMM's epilogue reads (conv_bias).
bool weights_ok(const ir::Graph& g, const ir::Node& n) {
  const bool runtime_weights = !g.value(n.inputs[1]).constant;
  const bool runtime_bias = runtime_weights && n.has_input(2) && !g.value(n.inputs[2]).constant &&
                            g.value(n.inputs[2]).type.dtype == ir::DType::f32;
  return (runtime_weights || constant_f32(g, n, 1)) && (constant_f32(g, n, 2) || runtime_bias);
}

// Reduced axes (ignoring size-1 dimensions) must form one contiguous block.
bool contiguous_reduction(const ir::Graph& g, const ir::Node& n) {
  std::vector<bool> mask = ir::resolve_reduce_axes(g, n);
  const ir::Shape& x = g.value(n.inputs[0]).type.shape;
  int first = -1, last = -1;
  for (int i = 0; i < x.rank(); ++i)
    if (mask[i] && x[i] != 1) {
      if (first < 0) first = i;
      last = i;
    }
  // Only axes of size 1 reduced (a batch of 1's bias gradient): a reduction of extent 1.
  if (first < 0) return std::find(mask.begin(), mask.end(), true) != mask.end();
  for (int i = first; i <= last; ++i)
    if (!mask[i] && x[i] != 1) return false;
  return true;
}

bool batch_ok(const ir::Shape& s, int64_t batch, int64_t matrix) {
  return s.rank() <= 2 || s.numel() / matrix == 1 || s.numel() / matrix == batch;
}

bool matmul_ok(const ir::Graph& g, const ir::Node& n, std::string* why) {
  const ir::Shape& a = g.value(n.inputs[0]).type.shape;
  const ir::Shape& b = g.value(n.inputs[1]).type.shape;
  const ir::Shape& y = g.value(n.outputs[0]).type.shape;
  bool b_constant = g.value(n.inputs[1]).constant != nullptr;
  if (b_constant && b.rank() <= 2) return constant_f32(g, n, 1);
  if (a.rank() < 2 || b.rank() < 2) {
    if (why) *why = "batched matrix-vector products";
    return false;
  }
  int64_t batch = 1;
  for (int i = 0; i + 2 < y.rank(); ++i) batch *= y[i];
  if (!batch_ok(a, batch, a.dim(-2) * a.dim(-1)) || !batch_ok(b, batch, b.dim(-2) * b.dim(-1))) {
    if (why) *why = "partially broadcast batch dimensions";
    return false;
  }
  return true;
}

// Gemm: any C that broadcasts to [M, N] (lower_gemm_c); A/B transposes and alpha in the GEMM.
bool gemm_ok(const ir::Graph& g, const ir::Node& n, std::string* why) {
  for (int i : {0, 1})
    if (g.value(n.inputs[i]).constant && !constant_f32(g, n, i)) {
      if (why) *why = "Gemm operand constants that are not f32";
      return false;
    }
  return true;
}

bool is_movement(OpType op) {
  return op == OpType::Reshape || op == OpType::Flatten || op == OpType::Squeeze ||
         op == OpType::Unsqueeze || op == OpType::Identity || op == OpType::Transpose ||
         op == OpType::Concat || op == OpType::Slice || op == OpType::Split || op == OpType::Expand;
}

bool is_logical(OpType op) {
  return op == OpType::And || op == OpType::Or || op == OpType::Xor || op == OpType::Not;
}

bool makes_bool(OpType op) {
  return is_logical(op) || op == OpType::Equal || op == OpType::Less || op == OpType::LessOrEqual ||
         op == OpType::Greater || op == OpType::GreaterOrEqual || op == OpType::IsNaN ||
         op == OpType::IsInf || op == OpType::Cast || is_movement(op);
}

// One input of a binary node is a constant of at most 2^24 in magnitude.
bool constant_offset(const ir::Graph& g, const ir::Node& n) {
  for (int i = 0; i < n.num_inputs(); ++i) {
    if (!n.has_input(i) || !g.value(n.inputs[i]).constant) continue;
    const ir::HostTensor& c = *g.value(n.inputs[i]).constant;
    if (c.dtype() != ir::DType::i64 && c.dtype() != ir::DType::i32) continue;
    bool small = true;
    for (int64_t k = 0; k < c.numel(); ++k) {
      int64_t v = c.dtype() == ir::DType::i64 ? c.data<int64_t>()[k] : c.data<int32_t>()[k];
      small = small && v <= (int64_t{1} << 24) && v >= -(int64_t{1} << 24);
    }
    if (small) return true;
  }
  return false;
}

bool is_comparison(OpType op) {
  return op == OpType::Equal || op == OpType::Less || op == OpType::LessOrEqual ||
         op == OpType::Greater || op == OpType::GreaterOrEqual;
}

// Whether output `v` of `n` may have dtype `t`: float data everywhere; bool masks from
// comparisons, logic, casts and data movement; integers from ArgMax/ArgMin, casts of floats and
// data movement of integers (a copy creates no value beyond the +-2^24 its source was checked
// against: graph inputs at run time, constants at compile time).
bool output_ok(const ir::Graph& g, const ir::Node& n, ir::DType t) {
  if (is_float(t)) return true;
  if (t == ir::DType::boolean) return makes_bool(n.op);
  if (t != ir::DType::i32 && t != ir::DType::i64) return false;
  if (n.op == OpType::ArgMax || n.op == OpType::ArgMin) return true;
  if (is_movement(n.op)) return n.has_input(0) && g.value(n.inputs[0]).type.dtype == t;
  // Where selects (no new value); index arithmetic adds a constant offset (an embedding
  // gradient's negative-index wrap, ids + vocab): exact while the sums stay within 2^24, as
  // the fp32 lanes hold them.
  if (n.op == OpType::Where) return true;
  if (n.op == OpType::Add || n.op == OpType::Sub) return constant_offset(g, n);
  // float -> int truncates exactly; bool -> int is 0/1. Integer sources could exceed 2^24.
  return n.op == OpType::Cast && g.value(n.inputs[0]).type.dtype != ir::DType::i32 &&
         g.value(n.inputs[0]).type.dtype != ir::DType::i64;
}

// Whether runtime input i of `n` may have dtype `t` (constants of any chip dtype are parameters or
// data converted at compile time). Integers enter as gather indices, compared (class labels
// against class ids: a loss's one-hot mask) and moved; bool only as masks.
bool input_ok(const ir::Node& n, int i, ir::DType t) {
  if (is_float(t)) return true;
  if (t == ir::DType::boolean)
    return is_logical(n.op) || is_movement(n.op) || n.op == OpType::Cast ||
           (n.op == OpType::Where && i == 0);
  if (t == ir::DType::i32 || t == ir::DType::i64)
    return ((n.op == OpType::Gather || n.op == OpType::ScatterND) && i == 1) ||
           is_comparison(n.op) || is_movement(n.op) || (n.op == OpType::Where && i > 0) ||
           n.op == OpType::Add || n.op == OpType::Sub;
  return false;
}

bool dtypes_ok(const ir::Graph& g, const ir::Node& n, std::string* why) {
  for (ir::ValueId v : n.outputs)
    if (v != ir::kNoValue && !output_ok(g, n, g.value(v).type.dtype)) {
      if (why) *why = fmt::format("{} outputs", ir::dtype_name(g.value(v).type.dtype));
      return false;
    }
  for (int i = 0; i < n.num_inputs(); ++i) {
    if (!n.has_input(i)) continue;
    const ir::Value& v = g.value(n.inputs[i]);
    if (v.constant ? v.type.dtype == ir::DType::f16 || v.type.dtype == ir::DType::f64 ||
                         v.type.dtype == ir::DType::i8
                   : !input_ok(n, i, v.type.dtype)) {
      if (why) *why = fmt::format("{} input '{}'", ir::dtype_name(v.type.dtype), v.name);
      return false;
    }
  }
  return true;
}

// Recurrent layers run unrolled (frontend/ir/recurrent_expand.h) when every op of the unrolling
// runs on the TPU: the input projection on the matrix units, one matrix product per step, the
// gates on the vector unit. A 3-D MaxPoolGrad runs as its window ops the same way.
bool expansion_ok(const ir::Graph& g, const ir::Node& n, std::string* why) {
  std::string reason =
      ir::unrolled_unsupported_reason(g, n, [](const ir::Graph& one, const ir::Node& m) {
        std::string r = "no TPU lowering";
        return supports_node(one, m, &r) ? std::string() : r;
      });
  if (why && !reason.empty()) *why = reason;
  return reason.empty();
}

bool all_float_data(const ir::Graph& g, const ir::Node& n) {
  for (int i = 0; i < n.num_inputs(); ++i)
    if (n.has_input(i) && !is_float(g.value(n.inputs[i]).type.dtype)) return false;
  return true;
}

// 1-D and 2-D convolutions, channels-first 3-D ones as 2-D GEMMs over the depth-unfolded input
// (lower_matmul.cpp); depthwise ones on the vector unit (lower_vector.cpp), with constant or
// runtime f32 weights and a constant bias.
bool conv_ok(const ir::Graph& g, const ir::Node& n, std::string* why) {
  if (!(window_2d(g, n) || (window_3d(g, n) && !ir::is_channels_last(n))) || !weights_ok(g, n) ||
      g.value(n.inputs[0]).constant) {
    if (why) *why = "only 1-D, 2-D and channels-first 3-D convolutions with f32 weights";
    return false;
  }
  if (is_depthwise(g, n) && (g.value(n.inputs[1]).type.shape[1] != 1 || !constant_f32(g, n, 2) ||
                             g.value(n.inputs[1]).type.dtype != ir::DType::f32)) {
    if (why) *why = "depthwise convolutions with a runtime bias or non-f32 weights";
    return false;
  }
  return true;
}

// A stride-1 Conv over the dilated input (lower_matmul.cpp).
bool conv_transpose_ok(const ir::Graph& g, const ir::Node& n, std::string* why) {
  if (!window_2d(g, n) || !weights_ok(g, n) || g.value(n.inputs[0]).constant) {
    if (why) *why = "only 1-D and 2-D ConvTranspose with f32 weights";
    return false;
  }
  return true;
}

// Mean and InvStdDev outputs too (lower_select.cpp).
bool layer_norm_ok(const ir::Graph& g, const ir::Node& n) {
  const ir::Shape& x = g.value(n.inputs[0]).type.shape;
  int axis = ir::normalize_axis(n.attrs.get_int("axis", -1), x.rank(), "axis");
  int64_t inner = x.product(axis, x.rank());
  for (int i : {1, 2})
    if (n.has_input(i) && g.value(n.inputs[i]).type.shape.numel() != inner) return false;
  return true;
}

bool pad_ok(const ir::Graph& g, const ir::Node& n, std::string* why) {
  if (n.attrs.get_string("mode", "constant") != "constant") return false;
  if (n.has_input(2)) {
    const auto& fill = g.value(n.inputs[2]);
    // The fill value is baked into the fill kernel: a runtime or non-f32 value stays on the host.
    if (!fill.constant || fill.constant->numel() != 1 || fill.type.dtype != ir::DType::f32) {
      if (why) *why = "Pad fill value that is not a constant f32 scalar";
      return false;
    }
  }
  ir::PadSpec p = ir::resolve_pads(g, n);
  for (size_t i = 0; i < p.before.size(); ++i)
    if (p.before[i] < 0 || p.after[i] < 0) return false;
  return true;
}

bool reduction_ok(const ir::Graph& g, const ir::Node& n, std::string* why) {
  if (contiguous_reduction(g, n) || splittable_reduction(g, n)) return true;
  if (why) *why = "reductions over non-adjacent axes (split only for f32 sum/mean/max/min)";
  return false;
}

// ScatterND of whole rows (indices [count, 1]) that writes or adds float data (lower_select.cpp).
bool scatter_nd_ok(const ir::Graph& g, const ir::Node& n, std::string* why) {
  const ir::Shape& ids = g.value(n.inputs[1]).type.shape;
  std::string reduction = n.attrs.get_string("reduction", "none");
  bool ok = ids.rank() == 2 && ids[1] == 1 && ids.numel() < kExactIntegerLimit &&
            (reduction == "none" || reduction == "add") &&
            is_float(g.value(n.inputs[0]).type.dtype) && is_float(g.value(n.inputs[2]).type.dtype);
  if (!ok && why) *why = "ScatterND other than whole rows of float data written or added";
  return ok;
}

// Ops the TPU lowers whatever their attributes (Cast: dtypes_ok admitted the pair).
bool always_supported(OpType op) {
  static const std::set<OpType> ops{OpType::Softmax,     OpType::LogSoftmax, OpType::Reshape,
                                    OpType::Flatten,     OpType::Squeeze,    OpType::Unsqueeze,
                                    OpType::Identity,    OpType::Transpose,  OpType::Concat,
                                    OpType::Slice,       OpType::Split,      OpType::Expand,
                                    OpType::Cast,        OpType::Equal,      OpType::Less,
                                    OpType::LessOrEqual, OpType::Greater,    OpType::GreaterOrEqual,
                                    OpType::And,         OpType::Or,         OpType::Xor,
                                    OpType::Not};
  return ops.count(op) > 0;
}

}  // namespace

// Besides what every backend without a kernel expands: instance normalization (GroupNorm's
// export) as reductions and vector ops, DepthToSpace and SpaceToDepth as a reshape, a transpose
// and a reshape, as XLA emits them.
bool runs_unrolled(const ir::Graph& g, const ir::Node& n) {
  if (n.op == OpType::MaxPoolGrad) return !window_2d(g, n);
  return ir::can_expand(n.op);
}

bool supports_node(const ir::Graph& g, const ir::Node& n, std::string* why) {
  if (runs_unrolled(g, n)) return expansion_ok(g, n, why);
  if (!dtypes_ok(g, n, why)) return false;
  if (always_supported(n.op)) return true;
  if (ir::is_reduce(n.op)) return reduction_ok(g, n, why);
  models::tpu::VectorFunc f;
  float p0, p1;
  switch (n.op) {
    case OpType::Conv:
      return conv_ok(g, n, why);
    case OpType::ConvTranspose:
      return conv_transpose_ok(g, n, why);
    case OpType::MatMul:
      return matmul_ok(g, n, why);
    case OpType::Gemm:
      return gemm_ok(g, n, why);
    case OpType::BatchNormalization:
      return n.outputs.size() == 1 && g.value(n.inputs[0]).type.shape.rank() >= 2 &&
             constant_f32(g, n, 1) && constant_f32(g, n, 2) && constant_f32(g, n, 3) &&
             constant_f32(g, n, 4);
    case OpType::LayerNormalization:
      return layer_norm_ok(g, n);
    case OpType::MaxPoolGrad:  // 1-D and 2-D (3-D ones run unrolled)
      return true;
    case OpType::MaxPool:
    case OpType::AveragePool:  // 3-D ones as two 2-D passes (lower_vector.cpp)
      return n.outputs.size() == 1 &&
             (window_2d(g, n) || (window_3d(g, n) && !ir::is_channels_last(n)));
    case OpType::GlobalAveragePool:
    case OpType::GlobalMaxPool:
      return g.value(n.inputs[0]).type.shape.rank() >= 3;
    case OpType::Dropout:
      return n.outputs.size() == 1;
    case OpType::Pad:
      return pad_ok(g, n, why);
    case OpType::Max:
    case OpType::Min:
    case OpType::Sum:
    case OpType::Mean:
    case OpType::Where:
    case OpType::Mod:
    case OpType::IsNaN:
    case OpType::IsInf:
    case OpType::ArgMax:
    case OpType::ArgMin:
      return n.num_inputs() >= 1 && n.num_inputs() <= 16;
    case OpType::Clip:
      return all_float_data(g, n);
    case OpType::Gather:
      return g.value(n.inputs[1]).type.shape.numel() < kExactIntegerLimit;
    case OpType::ScatterND:
      return scatter_nd_ok(g, n, why);
    default:
      if (binary_func(n.op, &f)) return n.num_inputs() == 2;
      if (unary_func(g, n, &f, &p0, &p1)) return true;
      if (why) *why = "no TPU lowering";
      return false;
  }
}

}  // namespace mimic::backends::tpu_emu
