// Elementwise kernels: unary maps, numpy-broadcast binary ops, variadic Max/Min/Sum/Mean, Where.
#include <fmt/format.h>
#include <algorithm>
#include <cmath>

#include "backends/cpu/int_math.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/tensor_iter.h"
#include "backends/cpu/threading.h"
#include "base/error.h"
#include "base/extrema.h"
#include "frontend/ir/unary_math.h"

namespace mimic::backends::cpu {
namespace {

using ir::DType;
using ir::OpType;

template <typename T>
T apply_integer(OpType op, T x) {
  switch (op) {
    case OpType::Abs:
      return x < 0 ? wrap_neg(x) : x;
    case OpType::Neg:
      return wrap_neg(x);
    case OpType::Sign:
      return static_cast<T>((x > 0) - (x < 0));
    case OpType::Relu:
      return x > 0 ? x : T(0);
    default:
      return x;
  }
}

template <typename T>
void unary_map(const KernelArgs& a) {
  const T* x = a.input(0).data<T>();
  T* y = a.output(0).data<T>();
  int64_t n = a.input(0).numel();
  OpType op = a.node.op;
  ir::UnaryAttrs attrs = ir::unary_attrs(a.node);
  if (op == OpType::Relu) {
#pragma omp parallel for simd if (n > parallel_threshold(32768))
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0 ? T(0) : x[i];
    return;
  }
#pragma omp parallel for if (n > parallel_threshold(8192)) schedule(static)
  for (int64_t i = 0; i < n; ++i) y[i] = ir::unary_float<T>(op, x[i], attrs);
}

template <typename T>
void unary_integer(const KernelArgs& a) {
  const T* x = a.input(0).data<T>();
  T* y = a.output(0).data<T>();
  for (int64_t i = 0; i < a.input(0).numel(); ++i) y[i] = apply_integer(a.node.op, x[i]);
}

void clip(const KernelArgs& a) {
  auto bound = [&](int i, double fallback) {
    if (!a.has_input(i)) return fallback;
    const ir::HostTensor& t = a.input(i);
    switch (t.dtype()) {
      case DType::f32:
        return static_cast<double>(t.data<float>()[0]);
      case DType::f64:
        return t.data<double>()[0];
      case DType::i64:
        return static_cast<double>(t.data<int64_t>()[0]);
      case DType::i32:
        return static_cast<double>(t.data<int32_t>()[0]);
      case DType::i8:
        return static_cast<double>(t.data<int8_t>()[0]);
      default:
        return fallback;
    }
  };
  double lo = bound(1, -INFINITY), hi = bound(2, INFINITY);
  const ir::HostTensor& x = a.input(0);
  ir::HostTensor& y = a.output(0);
  auto run = [&](auto* out, const auto* in) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(in)>>;
    for (int64_t i = 0; i < x.numel(); ++i) {
      double v = std::min(std::max(static_cast<double>(in[i]), lo), hi);
      out[i] = static_cast<T>(v);
    }
  };
  switch (x.dtype()) {
    case DType::f32:
      run(y.data<float>(), x.data<float>());
      break;
    case DType::f64:
      run(y.data<double>(), x.data<double>());
      break;
    case DType::i64:
      run(y.data<int64_t>(), x.data<int64_t>());
      break;
    case DType::i32:
      run(y.data<int32_t>(), x.data<int32_t>());
      break;
    case DType::i8:
      run(y.data<int8_t>(), x.data<int8_t>());
      break;
    default:
      throw UnsupportedOpError(fmt::format("Clip on {}", ir::dtype_name(x.dtype())));
  }
}

template <typename T>
void predicate(const KernelArgs& a) {
  const T* x = a.input(0).data<T>();
  bool* y = a.output(0).data<bool>();
  int64_t n = a.input(0).numel();
  if (a.node.op == OpType::IsNaN) {
    for (int64_t i = 0; i < n; ++i) y[i] = std::isnan(x[i]);
    return;
  }
  ir::UnaryAttrs attrs = ir::unary_attrs(a.node);
  bool pos = attrs.detect_positive, neg = attrs.detect_negative;
  for (int64_t i = 0; i < n; ++i)
    y[i] = std::isinf(x[i]) && ((x[i] > 0 && pos) || (x[i] < 0 && neg));
}

}  // namespace

void unary_kernel(const KernelArgs& a) {
  OpType op = a.node.op;
  if (op == OpType::Clip) return clip(a);
  if (op == OpType::IsNaN || op == OpType::IsInf)
    return a.input(0).dtype() == DType::f64 ? predicate<double>(a) : predicate<float>(a);
  if (op == OpType::Not) {
    const bool* x = a.input(0).data<bool>();
    bool* y = a.output(0).data<bool>();
    for (int64_t i = 0; i < a.input(0).numel(); ++i) y[i] = !x[i];
    return;
  }
  switch (a.input(0).dtype()) {
    case DType::f32:
      return unary_map<float>(a);
    case DType::f64:
      return unary_map<double>(a);
    case DType::i64:
      return unary_integer<int64_t>(a);
    case DType::i32:
      return unary_integer<int32_t>(a);
    case DType::i8:
      return unary_integer<int8_t>(a);
    default:
      throw UnsupportedOpError(
          fmt::format("{} on {}", ir::op_name(op), ir::dtype_name(a.input(0).dtype())));
  }
}

// ---- binary ----

namespace {

// Integer powers by repeated (wrapping) multiplication for non-negative integer exponents, as
// numpy computes them; other exponents go through double and saturate.
template <typename T>
T integer_pow(T base, double exponent) {
  if (exponent >= 0 && exponent < 64 && exponent == std::floor(exponent)) {
    T r = 1;
    for (int i = 0; i < static_cast<int>(exponent); ++i) r = wrap_mul(r, base);
    return r;
  }
  return saturate_cast<T>(std::pow(static_cast<double>(base), exponent));
}

template <typename T>
T arith(OpType op, T x, T y, bool fmod_mode) {
  switch (op) {
    case OpType::Add:
      return wrap_add(x, y);
    case OpType::Sub:
      return wrap_sub(x, y);
    case OpType::Mul:
      return wrap_mul(x, y);
    case OpType::Div:
      if constexpr (std::is_integral_v<T>)
        return y == 0 ? T(0) : int_div(x, y);
      else
        return x / y;
    case OpType::Max:
      return max_nan(x, y);
    case OpType::Min:
      return min_nan(x, y);
    case OpType::Mod:
      if constexpr (std::is_integral_v<T>) {
        if (y == 0) return T(0);
        T r = int_rem(x, y);
        if (fmod_mode) return r;
        return (r != 0 && ((r < 0) != (y < 0))) ? wrap_add(r, y) : r;
      } else {
        if (fmod_mode) return std::fmod(x, y);
        T r = std::fmod(x, y);
        return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
      }
    case OpType::PRelu:
      return x < 0 ? wrap_mul(x, y) : x;
    default:
      return x;
  }
}

template <typename T>
bool compare(OpType op, T x, T y) {
  switch (op) {
    case OpType::Equal:
      return x == y;
    case OpType::Greater:
      return x > y;
    case OpType::Less:
      return x < y;
    case OpType::GreaterOrEqual:
      return x >= y;
    case OpType::LessOrEqual:
      return x <= y;
    default:
      return false;
  }
}

bool is_comparison(OpType op) {
  return op == OpType::Equal || op == OpType::Greater || op == OpType::Less ||
         op == OpType::GreaterOrEqual || op == OpType::LessOrEqual;
}

// Runs fn(out_offset, a_offset, b_offset, count, a_step, b_step) over a broadcast of two operands.
// Work is split by rows of the merged inner dimension, and a long row (operands of one shape merge
// into a single row) into pieces of kPiece elements, so that every thread has a share.
template <typename Fn>
void for_each_broadcast(const ir::Shape& out, const ir::Shape& sa, const ir::Shape& sb, Fn fn) {
  constexpr int64_t kPiece = 16384;
  BroadcastPlan plan = plan_broadcast(out, {sa, sb});
  const int64_t outer = plan.outer(), inner = plan.inner();
  const int64_t sa_in = plan.strides[1].back(), sb_in = plan.strides[2].back();
  const int64_t pieces = outer >= 8 ? 1 : (inner + kPiece - 1) / kPiece;
  const int64_t length = (inner + pieces - 1) / std::max<int64_t>(pieces, 1);
#pragma omp parallel if (outer * inner > parallel_threshold(32768) && outer * pieces > 1)
  {
    std::vector<int64_t> off;  // per thread: rows of a small inner extent are many
#pragma omp for schedule(static)
    for (int64_t w = 0; w < outer * pieces; ++w) {
      plan.offsets(w / pieces, off);
      const int64_t begin = w % pieces * length, count = std::min(length, inner - begin);
      if (count > 0)
        fn(off[0] + begin, off[1] + begin * sa_in, off[2] + begin * sb_in, count, sa_in, sb_in);
    }
  }
}

template <typename T, typename R, typename Op>
void binary_loop(const KernelArgs& a, Op op) {
  const T* x = a.input(0).data<T>();
  const T* y = a.input(1).data<T>();
  R* z = a.output(0).data<R>();
  for_each_broadcast(a.output(0).shape(), a.input(0).shape(), a.input(1).shape(),
                     [&](int64_t zo, int64_t xo, int64_t yo, int64_t n, int64_t xs, int64_t ys) {
                       if (xs == 1 && ys == 1) {
                         for (int64_t i = 0; i < n; ++i) z[zo + i] = op(x[xo + i], y[yo + i]);
                       } else if (xs == 1 && ys == 0) {
                         T yv = y[yo];
                         for (int64_t i = 0; i < n; ++i) z[zo + i] = op(x[xo + i], yv);
                       } else if (xs == 0 && ys == 1) {
                         T xv = x[xo];
                         for (int64_t i = 0; i < n; ++i) z[zo + i] = op(xv, y[yo + i]);
                       } else {
                         for (int64_t i = 0; i < n; ++i)
                           z[zo + i] = op(x[xo + i * xs], y[yo + i * ys]);
                       }
                     });
}

template <typename T>
void binary_typed(const KernelArgs& a) {
  OpType op = a.node.op;
  bool fmod_mode = a.node.attrs.get_int("fmod", 0) != 0;
  if (is_comparison(op)) {
    binary_loop<T, bool>(a, [op](T x, T y) { return compare(op, x, y); });
    return;
  }
  switch (op) {
    case OpType::Add:
      binary_loop<T, T>(a, [](T x, T y) { return wrap_add(x, y); });
      return;
    case OpType::Sub:
      binary_loop<T, T>(a, [](T x, T y) { return wrap_sub(x, y); });
      return;
    case OpType::Mul:
      binary_loop<T, T>(a, [](T x, T y) { return wrap_mul(x, y); });
      return;
    default:
      binary_loop<T, T>(a, [op, fmod_mode](T x, T y) { return arith(op, x, y, fmod_mode); });
  }
}

void pow_kernel(const KernelArgs& a) {
  // The exponent may have another dtype: read it as double.
  ir::HostTensor exponent(ir::DType::f64, a.input(1).shape());
  const ir::HostTensor& e = a.input(1);
  double* ef = exponent.data<double>();
  for (int64_t i = 0; i < e.numel(); ++i) {
    switch (e.dtype()) {
      case DType::f32:
        ef[i] = e.data<float>()[i];
        break;
      case DType::f64:
        ef[i] = e.data<double>()[i];
        break;
      case DType::i64:
        ef[i] = static_cast<double>(e.data<int64_t>()[i]);
        break;
      case DType::i32:
        ef[i] = e.data<int32_t>()[i];
        break;
      case DType::i8:
        ef[i] = e.data<int8_t>()[i];
        break;
      default:
        throw UnsupportedOpError("Pow exponent dtype");
    }
  }
  const ir::HostTensor& b = a.input(0);
  auto run = [&](auto* z, const auto* x) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(x)>>;
    for_each_broadcast(a.output(0).shape(), b.shape(), exponent.shape(),
                       [&](int64_t zo, int64_t xo, int64_t yo, int64_t n, int64_t xs, int64_t ys) {
                         for (int64_t i = 0; i < n; ++i) {
                           double ev = ef[yo + i * ys];
                           if constexpr (std::is_floating_point_v<T>)
                             z[zo + i] =
                                 static_cast<T>(std::pow(static_cast<double>(x[xo + i * xs]), ev));
                           else
                             z[zo + i] = integer_pow(x[xo + i * xs], ev);
                         }
                       });
  };
  switch (b.dtype()) {
    case DType::f32:
      run(a.output(0).data<float>(), b.data<float>());
      break;
    case DType::f64:
      run(a.output(0).data<double>(), b.data<double>());
      break;
    case DType::i64:
      run(a.output(0).data<int64_t>(), b.data<int64_t>());
      break;
    case DType::i32:
      run(a.output(0).data<int32_t>(), b.data<int32_t>());
      break;
    default:
      throw UnsupportedOpError(fmt::format("Pow on {}", ir::dtype_name(b.dtype())));
  }
}

void logical(const KernelArgs& a) {
  OpType op = a.node.op;
  binary_loop<bool, bool>(a, [op](bool x, bool y) {
    return op == OpType::And ? (x && y) : op == OpType::Or ? (x || y) : (x != y);
  });
}

}  // namespace

void binary_kernel(const KernelArgs& a) {
  OpType op = a.node.op;
  if (op == OpType::Pow) return pow_kernel(a);
  if (op == OpType::And || op == OpType::Or || op == OpType::Xor) return logical(a);
  switch (a.input(0).dtype()) {
    case DType::f32:
      return binary_typed<float>(a);
    case DType::f64:
      return binary_typed<double>(a);
    case DType::i64:
      return binary_typed<int64_t>(a);
    case DType::i32:
      return binary_typed<int32_t>(a);
    case DType::i8:
      return binary_typed<int8_t>(a);
    case DType::boolean:
      if (op == OpType::Equal)
        return binary_loop<bool, bool>(a, [](bool x, bool y) { return x == y; });
      [[fallthrough]];
    default:
      throw UnsupportedOpError(
          fmt::format("{} on {}", ir::op_name(op), ir::dtype_name(a.input(0).dtype())));
  }
}

void variadic_kernel(const KernelArgs& a) {
  ir::HostTensor& out = a.output(0);
  OpType op = a.node.op;
  OpType pairwise = op == OpType::Max ? OpType::Max : op == OpType::Min ? OpType::Min : OpType::Add;
  auto run = [&](auto* z) {
    using T = std::remove_pointer_t<decltype(z)>;
    // Start from input 0 broadcast to the output, then fold the others in.
    strided_copy(z, a.input(0).raw(), out.shape().dims(),
                 broadcast_strides(a.input(0).shape(), out.shape()), 0, sizeof(T));
    for (size_t k = 1; k < a.in.size(); ++k) {
      const T* x = a.input(static_cast<int>(k)).template data<T>();
      for_each_broadcast(out.shape(), out.shape(), a.input(static_cast<int>(k)).shape(),
                         [&](int64_t zo, int64_t, int64_t xo, int64_t n, int64_t, int64_t xs) {
                           for (int64_t i = 0; i < n; ++i)
                             z[zo + i] = arith(pairwise, z[zo + i], x[xo + i * xs], false);
                         });
    }
    if (op == OpType::Mean)
      for (int64_t i = 0; i < out.numel(); ++i)
        z[i] = static_cast<T>(z[i] / static_cast<T>(a.in.size()));
  };
  switch (out.dtype()) {
    case DType::f32:
      run(out.data<float>());
      break;
    case DType::f64:
      run(out.data<double>());
      break;
    case DType::i64:
      run(out.data<int64_t>());
      break;
    case DType::i32:
      run(out.data<int32_t>());
      break;
    case DType::i8:
      run(out.data<int8_t>());
      break;
    default:
      throw UnsupportedOpError(
          fmt::format("{} on {}", ir::op_name(op), ir::dtype_name(out.dtype())));
  }
}

void where_kernel(const KernelArgs& a) {
  ir::HostTensor& out = a.output(0);
  size_t es = ir::dtype_size(out.dtype());
  BroadcastPlan plan =
      plan_broadcast(out.shape(), {a.input(0).shape(), a.input(1).shape(), a.input(2).shape()});
  const bool* c = a.input(0).data<bool>();
  const char* x = static_cast<const char*>(a.input(1).raw());
  const char* y = static_cast<const char*>(a.input(2).raw());
  char* z = static_cast<char*>(out.raw());
  std::vector<int64_t> off;
  for (int64_t o = 0; o < plan.outer(); ++o) {
    plan.offsets(o, off);
    for (int64_t i = 0; i < plan.inner(); ++i) {
      bool pick = c[off[1] + i * plan.strides[1].back()];
      const char* src = pick ? x + (off[2] + i * plan.strides[2].back()) * es
                             : y + (off[3] + i * plan.strides[3].back()) * es;
      std::memcpy(z + (off[0] + i) * es, src, es);
    }
  }
}

}  // namespace mimic::backends::cpu
