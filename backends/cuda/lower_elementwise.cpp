// Lowering of unary, binary, variadic, Where and Cast nodes to the elementwise kernels.
#include <fmt/format.h>
#include <cmath>

#include "backends/cuda/lowerer.h"
#include "base/error.h"

namespace mimic::backends::cuda {
namespace {

using ir::DType;
using ir::OpType;

bool is_variadic(OpType op) {
  return op == OpType::Max || op == OpType::Min || op == OpType::Sum || op == OpType::Mean;
}

bool int_type(DType t) {
  return t == DType::i8 || t == DType::i32 || t == DType::i64;
}

std::string check_unary(const ir::Graph& g, const ir::Node& n) {
  DType t = g.value(n.inputs[0]).type.dtype;
  OpType op = n.op;
  if (op == OpType::Cast) return "";
  if (op == OpType::Clip) {
    for (int i = 1; i < 3; ++i)
      if (n.has_input(i) && !g.value(n.inputs[i]).constant)
        return "Clip bounds that are not constants";
    return t == DType::boolean ? dtype_reason(n, t) : "";
  }
  if (is_float_type(t)) return op == OpType::Not ? dtype_reason(n, t) : "";
  if (int_type(t))
    return op == OpType::Abs || op == OpType::Neg || op == OpType::Sign || op == OpType::Relu
               ? ""
               : dtype_reason(n, t);
  return op == OpType::Not ? "" : dtype_reason(n, t);
}

std::string check_binary(const ir::Graph& g, const ir::Node& n) {
  DType a = g.value(n.inputs[0]).type.dtype, b = g.value(n.inputs[1]).type.dtype;
  OpType op = n.op;
  if (op == OpType::And || op == OpType::Or || op == OpType::Xor) return "";
  if (a == DType::boolean) return op == OpType::Equal ? "" : dtype_reason(n, a);
  if (op == OpType::Pow) {
    if (!(is_float_type(a) || a == DType::i32 || a == DType::i64)) return dtype_reason(n, a);
    if (b == DType::boolean) return "Pow with a bool exponent";
  } else if (!is_float_type(a) && !int_type(a)) {
    return dtype_reason(n, a);
  }
  const ir::Shape& out = g.value(n.outputs[0]).type.shape;
  StridedLayout l =
      broadcast_layout(out, {g.value(n.inputs[0]).type.shape, g.value(n.inputs[1]).type.shape});
  return l.rank() <= kMaxDims ? "" : fmt::format("broadcast over {} dims", l.rank());
}

std::string check_variadic(const ir::Graph& g, const ir::Node& n) {
  if (n.num_inputs() > kMaxVariadic)
    return fmt::format("{} inputs (kernels take {})", n.num_inputs(), kMaxVariadic);
  DType t = g.value(n.inputs[0]).type.dtype;
  if (!is_float_type(t) && !int_type(t)) return dtype_reason(n, t);
  std::vector<ir::Shape> shapes;
  for (ir::ValueId v : n.inputs) shapes.push_back(g.value(v).type.shape);
  StridedLayout l = broadcast_layout(g.value(n.outputs[0]).type.shape, shapes);
  return l.rank() <= kMaxDims ? "" : fmt::format("broadcast over {} dims", l.rank());
}

UnaryParams unary_params(const Lowerer& l, const ir::Node& n) {
  UnaryParams p{};
  p.op = n.op;
  p.in_dt = to_dt(l.in_type(n, 0).dtype);
  p.out_dt = to_dt(l.out_type(n, 0).dtype);
  p.n = l.out_type(n, 0).shape.numel();
  p.attrs = ir::unary_attrs(n);
  if (n.op == OpType::Clip) {
    const ir::HostTensor* lo = l.constant(n, 1);
    const ir::HostTensor* hi = l.constant(n, 2);
    p.lo = lo ? ir::element_as_double(*lo, 0) : -INFINITY;
    p.hi = hi ? ir::element_as_double(*hi, 0) : INFINITY;
  }
  return p;
}

void lower_binary(Lowerer& l, const ir::Node& n) {
  const ir::Shape& out = l.out_type(n, 0).shape;
  const ir::Shape& sa = l.in_type(n, 0).shape;
  const ir::Shape& sb = l.in_type(n, 1).shape;
  BinaryParams p{};
  p.op = n.op;
  p.a_dt = to_dt(l.in_type(n, 0).dtype);
  p.b_dt = to_dt(l.in_type(n, 1).dtype);
  p.out_dt = to_dt(l.out_type(n, 0).dtype);
  p.fmod_mode = n.attrs.get_int("fmod", 0) != 0;
  p.n = out.numel();
  p.same = sa == out && sb == out;
  StridedLayout lay = broadcast_layout(out, {sa, sb});
  p.rank = lay.rank();
  for (int d = 0; d < lay.rank(); ++d) {
    p.size[d] = lay.size[d];
    p.stride_a[d] = lay.strides[1][d];
    p.stride_b[d] = lay.strides[2][d];
  }
  BufRef a = l.in(n, 0), b = l.in(n, 1);
  l.emit(BinaryInstr{p, a, b, l.out(n, 0)});
}

void lower_variadic(Lowerer& l, const ir::Node& n) {
  const ir::Shape& out = l.out_type(n, 0).shape;
  std::vector<ir::Shape> shapes;
  for (int i = 0; i < n.num_inputs(); ++i) shapes.push_back(l.in_type(n, i).shape);
  StridedLayout lay = broadcast_layout(out, shapes);
  VariadicParams p{};
  p.op = n.op;
  p.dt = to_dt(l.out_type(n, 0).dtype);
  p.count = n.num_inputs();
  p.n = out.numel();
  p.rank = lay.rank();
  for (int d = 0; d < lay.rank(); ++d) {
    p.size[d] = lay.size[d];
    for (int k = 0; k < p.count; ++k) p.stride[k][d] = lay.strides[k + 1][d];
  }
  VariadicInstr instr{p, {}, {}};
  for (int i = 0; i < n.num_inputs(); ++i) instr.inputs.push_back(l.in(n, i));
  instr.y = l.out(n, 0);
  l.emit(std::move(instr));
}

void lower_where(Lowerer& l, const ir::Node& n) {
  const ir::Shape& out = l.out_type(n, 0).shape;
  StridedLayout lay =
      broadcast_layout(out, {l.in_type(n, 0).shape, l.in_type(n, 1).shape, l.in_type(n, 2).shape});
  WhereParams p{};
  p.esize = esize_of(l.out_type(n, 0).dtype);
  p.n = out.numel();
  p.rank = lay.rank();
  for (int d = 0; d < lay.rank(); ++d) {
    p.size[d] = lay.size[d];
    p.stride_c[d] = lay.strides[1][d];
    p.stride_x[d] = lay.strides[2][d];
    p.stride_y[d] = lay.strides[3][d];
  }
  BufRef c = l.in(n, 0), x = l.in(n, 1), y = l.in(n, 2);
  l.emit(WhereInstr{p, c, x, y, l.out(n, 0)});
}

}  // namespace

std::string check_elementwise(const ir::Graph& g, const ir::Node& n) {
  if (n.op == OpType::Where) {
    const ir::Shape& out = g.value(n.outputs[0]).type.shape;
    StridedLayout l =
        broadcast_layout(out, {g.value(n.inputs[0]).type.shape, g.value(n.inputs[1]).type.shape,
                               g.value(n.inputs[2]).type.shape});
    return l.rank() <= kMaxDims ? "" : fmt::format("broadcast over {} dims", l.rank());
  }
  if (is_variadic(n.op)) return check_variadic(g, n);
  if (ir::is_binary_elementwise(n.op)) return check_binary(g, n);
  return check_unary(g, n);
}

void lower_elementwise(Lowerer& l, const ir::Node& n) {
  if (n.op == OpType::Where) return lower_where(l, n);
  if (is_variadic(n.op)) return lower_variadic(l, n);
  if (ir::is_binary_elementwise(n.op)) return lower_binary(l, n);
  if (n.op == OpType::Cast) {
    CastParams p{to_dt(l.in_type(n, 0).dtype), to_dt(l.out_type(n, 0).dtype),
                 l.out_type(n, 0).shape.numel()};
    BufRef x = l.in(n, 0);
    l.emit(CastInstr{p, x, l.out(n, 0)});
    return;
  }
  UnaryParams p = unary_params(l, n);
  BufRef x = l.in(n, 0);
  l.emit(UnaryInstr{p, x, l.out(n, 0)});
}

}  // namespace mimic::backends::cuda
