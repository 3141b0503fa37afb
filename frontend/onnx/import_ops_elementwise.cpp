// Converters of elementwise ONNX ops: unary maps, Clip, Cast/CastLike, Dropout (inference),
// binary ops with the pre-opset-7 `broadcast`/`axis` form, PRelu, variadic ops and Where.
#include <fmt/format.h>
#include <limits>

#include "base/error.h"
#include "frontend/onnx/import_context.h"
#include "frontend/onnx/onnx_tensor.h"

namespace mimic::onnx_import {
namespace {

using ir::OpType;

// Binary ops before opset 7 broadcast B onto A only with broadcast=1, aligning B's first dim with
// A's `axis`; numpy aligns trailing dims, so B gets trailing size-1 dims where the two differ.
void binary(NodeConverter& c, OpType op) {
  ir::ValueId a = c.input(0), b = c.input(1);
  if (c.version() < 7 && c.attr_int("broadcast", 0) != 0 && c.has_attr("axis")) {
    auto ra = c.rank_of(a), rb = c.rank_of(b);
    if (!ra || !rb)
      c.unsupported("legacy broadcast with 'axis' on inputs whose rank is unknown at import");
    int64_t axis = c.attr_int("axis", 0);
    if (axis < 0) axis += *ra;
    int64_t trailing = *ra - axis - *rb;
    if (axis < 0 || trailing < 0)
      c.malformed(fmt::format("broadcast axis {} does not fit B of rank {} into A of rank {}",
                              c.attr_int("axis", 0), *rb, *ra));
    if (trailing > 0) {
      std::vector<int64_t> axes;
      for (int64_t i = 0; i < trailing; ++i) axes.push_back(*rb + i);
      b = c.emit_internal(OpType::Unsqueeze, "broadcast",
                          {b, c.constant_ints("broadcast_axes", axes)})[0];
    }
  }
  c.emit(op, {a, b}, c.attributes({"broadcast", "axis", "consumed_inputs"}));
}

// PRelu before opset 7 applies a slope of shape [C] along the channel axis (axis 1).
void prelu(NodeConverter& c) {
  ir::ValueId x = c.input(0), slope = c.input(1);
  auto tx = c.type_of(x), ts = c.type_of(slope);
  if (c.version() < 7 && tx && ts && tx->shape.rank() > 2 && ts->shape.rank() == 1 &&
      ts->shape[0] != 1 && ts->shape[0] == tx->shape[1]) {
    std::vector<int64_t> axes;
    for (int i = 1; i < tx->shape.rank() - 1; ++i) axes.push_back(i);
    slope = c.emit_internal(OpType::Unsqueeze, "slope",
                            {slope, c.constant_ints("slope_axes", axes)})[0];
  }
  c.emit(OpType::PRelu, {x, slope}, {});
}

// Clip before opset 11 takes min/max as attributes; they become scalar inputs of x's dtype.
void clip(NodeConverter& c) {
  if (c.version() >= 11) return direct(OpType::Clip)(c);
  ir::ValueId x = c.input(0);
  ir::DType dtype = c.type_of(x) ? c.type_of(x)->dtype : ir::DType::f32;
  ir::ValueId lo = ir::kNoValue, hi = ir::kNoValue;
  if (c.has_attr("min")) lo = c.constant_scalar("min", dtype, c.attr_float("min", 0));
  if (c.has_attr("max")) hi = c.constant_scalar("max", dtype, c.attr_float("max", 0));
  std::vector<ir::ValueId> inputs{x, lo, hi};
  while (inputs.size() > 1 && inputs.back() == ir::kNoValue) inputs.pop_back();
  c.emit(OpType::Clip, inputs, {});
}

ir::DType cast_target(NodeConverter& c, int32_t to) {
  auto dtype = dtype_from_onnx(to);
  if (!dtype) c.unsupported(fmt::format("a cast to {}", onnx_dtype_name(to)));
  return *dtype;
}

void cast(NodeConverter& c) {
  if (!c.has_attr("to")) c.malformed("attribute 'to' is required");
  ir::DType to = cast_target(c, static_cast<int32_t>(c.attr_int("to", 0)));
  c.emit(OpType::Cast, {c.input(0)}, {{"to", std::string(ir::dtype_name(to))}});
}

// CastLike is Cast to the (static) dtype of its second input.
void cast_like(NodeConverter& c) {
  auto target = c.type_of(c.input(1));
  if (!target) c.unsupported("a target whose dtype is unknown at import");
  c.emit(OpType::Cast, {c.input(0)}, {{"to", std::string(ir::dtype_name(target->dtype))}});
}

// Identity of an initializer is an initializer of its own: PyTorch's export writes parameters of
// equal values (a fresh BatchNorm's running_var and weight, all ones) as one initializer and
// Identity copies of it, and training must keep them apart (running statistics are buffers).
void identity(NodeConverter& c) {
  ir::ValueId x = c.input(0);
  if (c.is_initializer(x) && c.has_output(0))
    c.initializer_output(0, c.constant_of(x)->clone());
  else
    c.emit(OpType::Identity, {x}, {}, 0, 1);
}

// Dropout in inference mode is the identity, and a mask of ones when asked for (bool from opset
// 10, the input's type before). In training mode (Dropout-12/13 with a constant true
// training_mode, what torch.onnx.export writes with TrainingMode.TRAINING) it stays an IR Dropout
// with its ratio and training_mode inputs: a train step draws its mask each step, and compile()
// refuses to run it outside one (a random mask every run).
void dropout(NodeConverter& c) {
  ir::ValueId x = c.input(0);
  if (c.version() >= 12 && c.input(2) != ir::kNoValue) {
    const ir::HostTensor* training = c.constant_of(c.input(2));
    if (!training || training->dtype() != ir::DType::boolean || training->numel() != 1)
      c.unsupported("a training_mode input that is not a constant bool");
    if (c.input(1) != ir::kNoValue && !c.constant_of(c.input(1)))
      c.unsupported("a ratio input that is not a constant");
    if (training->data<bool>()[0])
      return c.emit(OpType::Dropout, {x, c.input(1), c.input(2)}, c.attributes({"seed"}));
  }
  c.emit(OpType::Identity, {x}, {}, 0, 1);
  if (!c.has_output(1)) return;
  auto tx = c.type_of(x);
  ir::DType mask_type = c.version() >= 10 ? ir::DType::boolean : (tx ? tx->dtype : ir::DType::f32);
  ir::HostTensor one(mask_type, ir::Shape({1}));
  switch (mask_type) {
    case ir::DType::boolean:
      one.data<bool>()[0] = true;
      break;
    case ir::DType::f32:
      one.data<float>()[0] = 1.0f;
      break;
    case ir::DType::f64:
      one.data<double>()[0] = 1.0;
      break;
    default:
      c.unsupported(fmt::format("a {} mask", ir::dtype_name(mask_type)));
  }
  ir::ValueId shape = c.emit_internal(OpType::Shape, "shape", {x})[0];
  c.emit(OpType::ConstantOfShape, {shape}, {{"value", one}}, 1, 1);
}

}  // namespace

void add_elementwise_converters(std::map<std::string, Converter>& t) {
  for (OpType op : {OpType::Abs,
                    OpType::Neg,
                    OpType::Exp,
                    OpType::Log,
                    OpType::Sqrt,
                    OpType::Reciprocal,
                    OpType::Floor,
                    OpType::Ceil,
                    OpType::Round,
                    OpType::Sign,
                    OpType::Sin,
                    OpType::Cos,
                    OpType::Tan,
                    OpType::Asin,
                    OpType::Acos,
                    OpType::Atan,
                    OpType::Sinh,
                    OpType::Cosh,
                    OpType::Asinh,
                    OpType::Acosh,
                    OpType::Atanh,
                    OpType::Erf,
                    OpType::Sigmoid,
                    OpType::Tanh,
                    OpType::Relu,
                    OpType::Softplus,
                    OpType::Softsign,
                    OpType::Not,
                    OpType::IsNaN,
                    OpType::IsInf,
                    OpType::LeakyRelu,
                    OpType::Elu,
                    OpType::Selu,
                    OpType::Celu,
                    OpType::HardSigmoid,
                    OpType::HardSwish,
                    OpType::ThresholdedRelu,
                    OpType::Shrink})
    t[ir::op_name(op)] = direct(op, {"consumed_inputs"});
  for (OpType op : {OpType::Add, OpType::Sub, OpType::Mul, OpType::Div, OpType::Pow, OpType::Mod,
                    OpType::Equal, OpType::Greater, OpType::Less, OpType::GreaterOrEqual,
                    OpType::LessOrEqual, OpType::And, OpType::Or, OpType::Xor})
    t[ir::op_name(op)] = [op](NodeConverter& c) { binary(c, op); };
  for (OpType op : {OpType::Max, OpType::Min, OpType::Sum, OpType::Mean, OpType::Where})
    t[ir::op_name(op)] = direct(op, {"consumed_inputs"});
  t["PRelu"] = prelu;
  t["Identity"] = identity;
  t["Clip"] = clip;
  t["Cast"] = cast;
  t["CastLike"] = cast_like;
  t["Dropout"] = dropout;
}

}  // namespace mimic::onnx_import
