// Cases: unary, binary, variadic, Where, Clip, Cast.
#include <cmath>
#include <limits>

#include "tests/conformance/op_cases_util.h"

namespace mimic::testing {
namespace {

using ir::DType;
using ir::OpType;
using ir::Shape;
using A = ir::Attributes;

struct UnaryDomain {
  OpType op;
  double lo, hi;
  A attrs;
};

void unary_cases(std::vector<OpCase>& out) {
  std::vector<UnaryDomain> float_ops = {
      {OpType::Abs, -3, 3, {}},
      {OpType::Neg, -3, 3, {}},
      {OpType::Exp, -4, 4, {}},
      {OpType::Log, 0.05, 6, {}},
      {OpType::Sqrt, 0, 6, {}},
      {OpType::Reciprocal, 0.3, 3, {}},
      {OpType::Floor, -4, 4, {}},
      {OpType::Ceil, -4, 4, {}},
      {OpType::Round, -4, 4, {}},
      {OpType::Sign, -2, 2, {}},
      {OpType::Sin, -6, 6, {}},
      {OpType::Cos, -6, 6, {}},
      {OpType::Tan, -1.3, 1.3, {}},
      {OpType::Asin, -0.99, 0.99, {}},
      {OpType::Acos, -0.99, 0.99, {}},
      {OpType::Atan, -5, 5, {}},
      {OpType::Sinh, -3, 3, {}},
      {OpType::Cosh, -3, 3, {}},
      {OpType::Asinh, -5, 5, {}},
      {OpType::Acosh, 1, 6, {}},
      {OpType::Atanh, -0.95, 0.95, {}},
      {OpType::Erf, -3, 3, {}},
      {OpType::Sigmoid, -9, 9, {}},
      {OpType::Tanh, -4, 4, {}},
      {OpType::Relu, -2, 2, {}},
      {OpType::Softplus, -6, 24, {}},
      {OpType::Softsign, -4, 4, {}},
      {OpType::LeakyRelu, -2, 2, {{"alpha", 0.2}}},
      {OpType::Elu, -3, 2, {{"alpha", 0.7}}},
      {OpType::Selu, -3, 2, {}},
      {OpType::Celu, -3, 2, {{"alpha", 1.5}}},
      {OpType::HardSigmoid, -5, 5, {{"alpha", 0.3}, {"beta", 0.4}}},
      {OpType::HardSwish, -5, 5, {}},
      {OpType::ThresholdedRelu, -2, 2, {{"alpha", 0.5}}},
      {OpType::Gelu, -4, 4, {}},
      {OpType::Shrink, -2, 2, {{"lambd", 0.3}, {"bias", 0.1}}},
  };
  for (const UnaryDomain& u : float_ops) {
    CaseBuilder b(std::string(ir::op_name(u.op)) + "/f32");
    b.op(u.op, {b.in(DType::f32, Shape({3, 7}), u.lo, u.hi)}, u.attrs);
    out.push_back(b.done());
  }
  {
    CaseBuilder b("Gelu/tanh_f32");
    b.op(OpType::Gelu, {b.in(DType::f32, Shape({4, 9}), -4, 4)},
         {{"approximate", std::string("tanh")}});
    out.push_back(b.done());
  }
  {
    CaseBuilder b("Round/halves_to_even");
    b.op(
        OpType::Round,
        {b.in_data(f32_tensor(Shape({8}), {-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 3.5f, -3.49f}))});
    out.push_back(b.done());
  }
  for (DType t : {DType::f16, DType::bf16})
    for (OpType op :
         {OpType::Relu, OpType::Gelu, OpType::Sigmoid, OpType::Exp, OpType::Tanh, OpType::Sqrt}) {
      CaseBuilder b(std::string(ir::op_name(op)) + "/" + ir::dtype_name(t));
      b.op(op, {b.in(t, Shape({5, 6}), op == OpType::Sqrt ? 0 : -3, 3)});
      out.push_back(b.done());
    }
  for (DType t : {DType::i8, DType::i32, DType::i64})
    for (OpType op : {OpType::Abs, OpType::Neg, OpType::Sign, OpType::Relu}) {
      CaseBuilder b(std::string(ir::op_name(op)) + "/" + ir::dtype_name(t));
      b.op(op, {b.in(t, Shape({4, 5}), -100, 100)});
      out.push_back(b.done());
    }
  {
    CaseBuilder b("Not/bool");
    b.op(OpType::Not, {b.in(DType::boolean, Shape({3, 5}))});
    out.push_back(b.done());
  }
  float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  ir::HostTensor specials = f32_tensor(Shape({6}), {1.0f, inf, -inf, nan, 0.0f, -2.0f});
  {
    CaseBuilder b("IsNaN/f32");
    b.op(OpType::IsNaN, {b.in_data(specials)});
    out.push_back(b.done());
  }
  for (int64_t neg : {1, 0}) {
    CaseBuilder b(neg ? "IsInf/f32" : "IsInf/positive_only");
    b.op(OpType::IsInf, {b.in_data(specials)}, {{"detect_negative", neg}});
    out.push_back(b.done());
  }
  {
    CaseBuilder b("Clip/f32_min_max");
    b.op(OpType::Clip, {b.in(DType::f32, Shape({4, 6})), b.f32_scalar(-0.5f), b.f32_scalar(0.7f)});
    out.push_back(b.done());
  }
  {
    CaseBuilder b("Clip/f32_max_only");
    b.op(OpType::Clip, {b.in(DType::f32, Shape({4, 6})), ir::kNoValue, b.f32_scalar(0.25f)});
    out.push_back(b.done());
  }
  {
    CaseBuilder b("Clip/i64");
    b.op(OpType::Clip,
         {b.in(DType::i64, Shape({10}), -100, 100), b.constant(i64_tensor(Shape(), {0})),
          b.constant(i64_tensor(Shape(), {50}))});
    out.push_back(b.done());
  }
  {
    CaseBuilder b("Clip/bf16");
    ir::HostTensor lo = b.random(DType::bf16, Shape(), -0.5, -0.5),
                   hi = b.random(DType::bf16, Shape(), 0.75, 0.75);
    b.op(OpType::Clip, {b.in(DType::bf16, Shape({3, 4})), b.constant(lo), b.constant(hi)});
    out.push_back(b.done());
  }
}

void cast_cases(std::vector<OpCase>& out) {
  struct Pair {
    DType from, to;
    double lo, hi;
  };
  std::vector<Pair> pairs = {
      {DType::f32, DType::f16, -70000, 70000}, {DType::f32, DType::bf16, -3, 3},
      {DType::f16, DType::f32, -3, 3},         {DType::bf16, DType::f32, -3, 3},
      {DType::f32, DType::i32, -50, 50},       {DType::f32, DType::i64, -50, 50},
      {DType::f32, DType::i8, -100, 100},      {DType::i64, DType::f32, -1000, 1000},
      {DType::i32, DType::i64, -1000, 1000},   {DType::i64, DType::i32, -1000, 1000},
      {DType::boolean, DType::f32, 0, 1},      {DType::f32, DType::boolean, -1, 1},
      {DType::f16, DType::bf16, -3, 3},        {DType::i8, DType::f16, -100, 100},
      {DType::f32, DType::f32, -1, 1}};
  for (const Pair& p : pairs) {
    CaseBuilder b(fmt::format("Cast/{}_to_{}", ir::dtype_name(p.from), ir::dtype_name(p.to)));
    ir::ValueId x = p.to == DType::boolean ? b.in(p.from, Shape({4, 5}), p.lo, p.hi, true)
                                           : b.in(p.from, Shape({4, 5}), p.lo, p.hi);
    b.op(OpType::Cast, {x}, {{"to", std::string(ir::dtype_name(p.to))}});
    b.data_movement();
    out.push_back(b.done());
  }
}

void binary_cases(std::vector<OpCase>& out) {
  struct Bin {
    OpType op;
    double alo, ahi, blo, bhi;
    bool integral;
  };
  std::vector<Bin> float_ops = {
      {OpType::Add, -2, 2, -2, 2, false},       {OpType::Sub, -2, 2, -2, 2, false},
      {OpType::Mul, -2, 2, -2, 2, false},       {OpType::Div, -2, 2, 0.5, 2, false},
      {OpType::Pow, 0.2, 3, -2, 2, false},      {OpType::Mod, -6, 6, 0.5, 2.5, false},
      {OpType::Equal, -3, 3, -3, 3, true},      {OpType::Greater, -3, 3, -3, 3, true},
      {OpType::Less, -3, 3, -3, 3, true},       {OpType::GreaterOrEqual, -3, 3, -3, 3, true},
      {OpType::LessOrEqual, -3, 3, -3, 3, true}};
  for (const Bin& o : float_ops) {
    CaseBuilder b(std::string(ir::op_name(o.op)) + "/f32_broadcast");
    b.op(o.op, {b.in(DType::f32, Shape({2, 3, 1, 5}), o.alo, o.ahi, o.integral),
                b.in(DType::f32, Shape({4, 1}), o.blo, o.bhi, o.integral)});
    out.push_back(b.done());
  }
  {
    CaseBuilder b("Mod/f32_negative_divisor_fmod");
    b.op(OpType::Mod,
         {b.in(DType::f32, Shape({3, 4}), -6, 6), b.in(DType::f32, Shape({3, 4}), -2.5, -0.5)},
         {{"fmod", int64_t{1}}});
    out.push_back(b.done());
  }
  {
    CaseBuilder b("Mod/f32_negative_divisor");
    b.op(OpType::Mod,
         {b.in(DType::f32, Shape({3, 4}), -6, 6), b.in(DType::f32, Shape({3, 4}), -2.5, -0.5)});
    out.push_back(b.done());
  }
  {
    CaseBuilder b("Add/f32_same_shape");
    b.op(OpType::Add, {b.in(DType::f32, Shape({4, 5})), b.in(DType::f32, Shape({4, 5}))});
    out.push_back(b.done());
  }
  {
    CaseBuilder b("Mul/f32_scalar");
    b.op(OpType::Mul, {b.in(DType::f32, Shape({3, 4})), b.f32_scalar(1.5f)});
    out.push_back(b.done());
  }
  {
    CaseBuilder b("PRelu/f32_channel_slope");
    b.op(OpType::PRelu, {b.in(DType::f32, Shape({2, 3, 4, 4})),
                         b.random_constant(DType::f32, Shape({3, 1, 1}), 0, 0.5)});
    out.push_back(b.done());
  }
  for (DType t : {DType::f16, DType::bf16})
    for (OpType op : {OpType::Add, OpType::Mul, OpType::Div}) {
      CaseBuilder b(std::string(ir::op_name(op)) + "/" + ir::dtype_name(t) + "_broadcast");
      b.op(op, {b.in(t, Shape({2, 3, 4})), b.in(t, Shape({3, 1}), 0.5, 2)});
      out.push_back(b.done());
    }
  for (DType t : {DType::i8, DType::i32, DType::i64}) {
    for (OpType op : {OpType::Add, OpType::Sub, OpType::Mul, OpType::Div, OpType::Mod,
                      OpType::Greater, OpType::Equal}) {
      CaseBuilder b(std::string(ir::op_name(op)) + "/" + ir::dtype_name(t));
      b.op(op, {b.in(t, Shape({3, 6}), -60, 60), b.in(t, Shape({6}), -7, 7)});
      out.push_back(b.done());
    }
    CaseBuilder b(std::string("Mod/") + ir::dtype_name(t) + "_fmod");
    b.op(OpType::Mod, {b.in(t, Shape({3, 6}), -60, 60), b.in(t, Shape({6}), -7, 7)},
         {{"fmod", int64_t{1}}});
    out.push_back(b.done());
  }
  {
    CaseBuilder b("Pow/f32_base_i64_exponent");
    b.op(OpType::Pow, {b.in(DType::f32, Shape({3, 4})), b.constant(i64_tensor(Shape(), {3}))});
    out.push_back(b.done());
  }
  {
    CaseBuilder b("Pow/i64_base_f32_exponent");
    b.op(OpType::Pow, {b.in(DType::i64, Shape({3, 4}), -6, 6), b.f32_scalar(3.0f)});
    out.push_back(b.done());
  }
  for (OpType op : {OpType::And, OpType::Or, OpType::Xor, OpType::Equal}) {
    CaseBuilder b(std::string(ir::op_name(op)) + "/bool");
    b.op(op, {b.in(DType::boolean, Shape({3, 4})), b.in(DType::boolean, Shape({4}))});
    out.push_back(b.done());
  }
}

void variadic_cases(std::vector<OpCase>& out) {
  for (OpType op : {OpType::Max, OpType::Min, OpType::Sum, OpType::Mean}) {
    CaseBuilder b(std::string(ir::op_name(op)) + "/f32_three_broadcast");
    b.op(op, {b.in(DType::f32, Shape({2, 1, 4})), b.in(DType::f32, Shape({3, 1})),
              b.in(DType::f32, Shape({4}))});
    out.push_back(b.done());
  }
  {
    CaseBuilder b("Sum/i32_two");
    b.op(OpType::Sum,
         {b.in(DType::i32, Shape({3, 4}), -100, 100), b.in(DType::i32, Shape({3, 4}), -100, 100)});
    out.push_back(b.done());
  }
  {
    CaseBuilder b("Max/bf16_single");
    b.op(OpType::Max, {b.in(DType::bf16, Shape({3, 4}))});
    out.push_back(b.done());
  }
  {
    CaseBuilder b("Mean/f16_two");
    b.op(OpType::Mean, {b.in(DType::f16, Shape({3, 4})), b.in(DType::f16, Shape({1, 4}))});
    out.push_back(b.done());
  }
  for (DType t : {DType::f32, DType::i64}) {
    CaseBuilder b(std::string("Where/") + ir::dtype_name(t));
    b.op(OpType::Where, {b.in(DType::boolean, Shape({2, 1, 4})), b.in(t, Shape({3, 1}), -50, 50),
                         b.in(t, Shape({4}), -50, 50)});
    b.data_movement();
    out.push_back(b.done());
  }
}

}  // namespace

void add_elementwise_cases(std::vector<OpCase>& out) {
  unary_cases(out);
  cast_cases(out);
  binary_cases(out);
  variadic_cases(out);
}

}  // namespace mimic::testing
