// Reductions (Reduce*, ArgMax/ArgMin) and CumSum. Reduced axes are moved last with one strided
// copy when needed, so a reduction runs over contiguous rows; f32 sums, means, maxima and minima
// whose kept axes are innermost fold whole rows in place instead.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backends/cpu/int_math.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/tensor_iter.h"
#include "backends/cpu/threading.h"
#include "base/error.h"
#include "base/extrema.h"
#include "frontend/ir/op_helpers.h"

namespace mimic::backends::cpu {
namespace {

using ir::OpType;

// The input viewed as [outer, inner] rows with the selected axes last (copied if necessary).
struct Rows {
  ir::HostTensor data;
  int64_t outer = 1, inner = 1;
};

Rows rows_with_axes_last(const ir::HostTensor& t, const std::vector<bool>& reduced) {
  const ir::Shape& s = t.shape();
  std::vector<int64_t> perm, dims, src;
  std::vector<int64_t> strides = ir::contiguous_strides(s);
  Rows r;
  for (int pass = 0; pass < 2; ++pass)
    for (int d = 0; d < s.rank(); ++d)
      if (reduced[d] == (pass == 1)) {
        perm.push_back(d);
        dims.push_back(s[d]);
        src.push_back(strides[d]);
        (pass ? r.inner : r.outer) *= s[d];
      }
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i)
    identity = identity && perm[i] == static_cast<int64_t>(i);
  if (identity) {
    r.data = t;
    return r;
  }
  r.data = ir::HostTensor(t.dtype(), ir::Shape(dims));
  strided_copy(r.data.raw(), t.raw(), dims, src, 0, ir::dtype_size(t.dtype()));
  return r;
}

// Floating-point reduction of one row, accumulated in double (T is float or double).
template <typename T>
double reduce_row(OpType op, const T* x, int64_t n) {
  double acc;
  switch (op) {
    case OpType::ReduceMax:
      acc = -INFINITY;
      for (int64_t i = 0; i < n; ++i) acc = max_nan<double>(acc, x[i]);
      return acc;
    case OpType::ReduceMin:
      acc = INFINITY;
      for (int64_t i = 0; i < n; ++i) acc = min_nan<double>(acc, x[i]);
      return acc;
    case OpType::ReduceProd:
      acc = 1;
      for (int64_t i = 0; i < n; ++i) acc *= x[i];
      return acc;
    case OpType::ReduceL1:
      acc = 0;
      for (int64_t i = 0; i < n; ++i) acc += std::fabs(x[i]);
      return acc;
    case OpType::ReduceL2:
    case OpType::ReduceSumSquare:
      acc = 0;
      for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(x[i]) * x[i];
      return op == OpType::ReduceL2 ? std::sqrt(acc) : acc;
    case OpType::ReduceLogSumExp: {
      double mx = -INFINITY;
      for (int64_t i = 0; i < n; ++i) mx = std::max<double>(mx, x[i]);
      if (std::isinf(mx)) return mx;
      acc = 0;
      for (int64_t i = 0; i < n; ++i) acc += std::exp(x[i] - mx);
      return mx + std::log(acc);
    }
    default:
      acc = 0;
      for (int64_t i = 0; i < n; ++i) acc += x[i];
      if (op == OpType::ReduceMean) return n ? acc / n : NAN;
      if (op == OpType::ReduceLogSum) return std::log(acc);
      return acc;
  }
}

// Integer reductions accumulate in int64 with wrap-around (numpy's behaviour on overflow).
template <typename T>
T reduce_row_integer(OpType op, const T* x, int64_t n) {
  int64_t acc = op == OpType::ReduceProd ? 1 : 0;
  if (op == OpType::ReduceMax) acc = std::numeric_limits<T>::min();
  if (op == OpType::ReduceMin) acc = std::numeric_limits<T>::max();
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = x[i];
    switch (op) {
      case OpType::ReduceMax:
        acc = std::max<int64_t>(acc, v);
        break;
      case OpType::ReduceMin:
        acc = std::min<int64_t>(acc, v);
        break;
      case OpType::ReduceProd:
        acc = wrap_mul(acc, v);
        break;
      case OpType::ReduceL1:
        acc = wrap_add(acc, v < 0 ? wrap_neg(v) : v);
        break;
      case OpType::ReduceSumSquare:
        acc = wrap_add(acc, wrap_mul(v, v));
        break;
      default:
        acc = wrap_add(acc, v);
    }
  }
  if (op == OpType::ReduceMean && n) acc /= n;
  return static_cast<T>(acc);
}

// The input's axes with neighbours of the same kind (reduced or kept) merged and size-1 axes
// dropped, each with its element stride.
struct Axis {
  int64_t size, stride;
  bool reduced;
};

std::vector<Axis> merged_axes(const ir::Shape& s, const std::vector<bool>& reduced) {
  std::vector<Axis> axes;
  std::vector<int64_t> strides = ir::contiguous_strides(s);
  for (int d = 0; d < s.rank(); ++d) {
    if (s[d] == 1) continue;
    if (!axes.empty() && axes.back().reduced == reduced[d])
      axes.back() = {axes.back().size * s[d], strides[d], reduced[d]};
    else
      axes.push_back({s[d], strides[d], reduced[d]});
  }
  return axes;
}

// Offsets of every combination of the axes of one kind (row-major, the last excluded if
// `skip_last`), i.e. the order the permuted copy of rows_with_axes_last would visit them.
std::vector<int64_t> combination_offsets(const std::vector<Axis>& axes, bool reduced,
                                         bool skip_last) {
  std::vector<int64_t> offsets{0};
  for (size_t i = 0; i + (skip_last ? 1 : 0) < axes.size(); ++i) {
    if (axes[i].reduced != reduced) continue;
    std::vector<int64_t> next;
    next.reserve(offsets.size() * axes[i].size);
    for (int64_t base : offsets)
      for (int64_t k = 0; k < axes[i].size; ++k) next.push_back(base + k * axes[i].stride);
    offsets = std::move(next);
  }
  return offsets;
}

// Sum of a contiguous run in double, as four interleaved partial sums (one chain of dependent
// additions would bound it at one element per add latency). A double holds the sum of floats
// exactly while their exponents span under 29 bits, so the order changes nothing but extremes.
double sum_run(const float* row, int64_t n) {
  double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    a0 += row[j];
    a1 += row[j + 1];
    a2 += row[j + 2];
    a3 += row[j + 3];
  }
  for (; j < n; ++j) a0 += row[j];
  return (a0 + a1) + (a2 + a3);
}

// Kept axes innermost (a channels-last reduction over the batch and spatial axes): the reduced
// combinations split into a fixed number of chunks, each summed in double into its own row of
// partial sums, the chunks then added in order. The chunk count depends on the shape alone, so the
// result is the same on any number of threads.
void sum_kept_inner(const std::vector<int64_t>& kept, const std::vector<int64_t>& over, int64_t run,
                    double divisor, const RunSource& source, float* y) {
  const int64_t rows = static_cast<int64_t>(kept.size()),
                combos = static_cast<int64_t>(over.size());
  const int64_t chunks = rows * combos * run > 65536 ? std::min<int64_t>(combos, 16) : 1;
  const int64_t per = (combos + chunks - 1) / chunks;
  std::vector<double> partial(static_cast<size_t>(rows * chunks * run), 0.0);
#pragma omp parallel for collapse(2) if (chunks > 1 || \
                                         rows * combos * run > parallel_threshold(65536))
  for (int64_t k = 0; k < rows; ++k)
    for (int64_t c = 0; c < chunks; ++c) {
      std::vector<float> scratch;
      double* acc = partial.data() + (k * chunks + c) * run;
      for (int64_t o = c * per; o < std::min(combos, (c + 1) * per); ++o) {
        const float* row = source(kept[k] + over[o], run, scratch);
        for (int64_t j = 0; j < run; ++j) acc[j] += row[j];
      }
    }
  for (int64_t k = 0; k < rows; ++k)
    for (int64_t j = 0; j < run; ++j) {
      double sum = 0;
      for (int64_t c = 0; c < chunks; ++c) sum += partial[(k * chunks + c) * run + j];
      y[k * run + j] = static_cast<float>(sum / divisor);
    }
}

// Max or min of f32 over leading axes, the kept axes innermost (a window axis in front, as the
// max-pool gradient reduces): each output row folds the reduced rows in place, with no permuted
// copy, in chunks along the row split over threads. The comparisons are reduce_row's, so a NaN is
// skipped and the values are the same.
template <bool kMax>
void extremum_kept_inner(const std::vector<Axis>& axes, const float* x, float* y) {
  const int64_t run = axes.back().size;
  const std::vector<int64_t> kept = combination_offsets(axes, false, true);
  const std::vector<int64_t> over = combination_offsets(axes, true, false);
  const int64_t rows = static_cast<int64_t>(kept.size()), chunk = 4096;
  const int64_t chunks = (run + chunk - 1) / chunk;
#pragma omp parallel for collapse(2) if (rows * run * static_cast <int64_t>(over.size()) > \
                                         parallel_threshold(65536))
  for (int64_t k = 0; k < rows; ++k)
    for (int64_t c = 0; c < chunks; ++c) {
      float* out = y + k * run;
      const int64_t begin = c * chunk, end = std::min(run, begin + chunk);
      for (int64_t j = begin; j < end; ++j) out[j] = kMax ? -INFINITY : INFINITY;
      for (int64_t o : over) {
        const float* row = x + kept[k] + o;
        for (int64_t j = begin; j < end; ++j)
          out[j] = kMax ? max_nan(out[j], row[j]) : min_nan(out[j], row[j]);
      }
    }
}

// Whether extremum_kept_inner runs the reduction: f32 max or min, some axis reduced, the
// innermost axis kept.
bool extremum_in_place(OpType op, const ir::HostTensor& in, const std::vector<bool>& reduced,
                       float* y) {
  if (in.dtype() != ir::DType::f32 || in.numel() == 0 ||
      (op != OpType::ReduceMax && op != OpType::ReduceMin))
    return false;
  std::vector<Axis> axes = merged_axes(in.shape(), reduced);
  if (axes.size() < 2 || axes.back().reduced) return false;
  if (op == OpType::ReduceMax)
    extremum_kept_inner<true>(axes, in.data<float>(), y);
  else
    extremum_kept_inner<false>(axes, in.data<float>(), y);
  return true;
}

}  // namespace

// Each output accumulates in double over the reduced combinations; the innermost contiguous run is
// one loop (summed by sum_run into one output when it is reduced, added across a row of outputs
// when it is kept, see sum_kept_inner).
void sum_in_place(OpType op, const ir::Shape& shape, const std::vector<bool>& reduced,
                  const RunSource& source, float* y) {
  std::vector<Axis> axes = merged_axes(shape, reduced);
  const bool last_reduced = !axes.empty() && axes.back().reduced;
  const int64_t run = axes.empty() ? 1 : axes.back().size;
  std::vector<int64_t> kept = combination_offsets(axes, false, !last_reduced);
  std::vector<int64_t> over = combination_offsets(axes, true, last_reduced);
  const int64_t count = static_cast<int64_t>(over.size()) * (last_reduced ? run : 1);
  const double divisor = op == OpType::ReduceMean ? static_cast<double>(count) : 1.0;
  if (!last_reduced) return sum_kept_inner(kept, over, run, divisor, source, y);
  const int64_t rows = static_cast<int64_t>(kept.size());
#pragma omp parallel for if (shape.numel() > parallel_threshold(65536))
  for (int64_t k = 0; k < rows; ++k) {
    std::vector<float> scratch;
    double acc = 0;
    for (int64_t off : over) acc += sum_run(source(kept[k] + off, run, scratch), run);
    y[k] = static_cast<float>(acc / divisor);
  }
}

void reduce_kernel(const KernelArgs& a) {
  std::vector<bool> reduced = ir::resolve_reduce_axes(a.graph, a.node);
  OpType op = a.node.op;
  ir::HostTensor& out = a.output(0);
  if (out.dtype() == ir::DType::f32 && a.input(0).numel() > 0 &&
      (op == OpType::ReduceSum || op == OpType::ReduceMean))
    return sum_in_place(
        op, a.input(0).shape(), reduced,
        [x = a.input(0).data<float>()](int64_t at, int64_t, std::vector<float>&) { return x + at; },
        out.data<float>());
  if (out.dtype() == ir::DType::f32 &&
      extremum_in_place(op, a.input(0), reduced, out.data<float>()))
    return;
  Rows r = rows_with_axes_last(a.input(0), reduced);
  switch (out.dtype()) {
    case ir::DType::f32: {
      const float* x = r.data.data<float>();
      float* y = out.data<float>();
#pragma omp parallel for if (r.outer * r.inner > parallel_threshold(65536))
      for (int64_t o = 0; o < r.outer; ++o)
        y[o] = static_cast<float>(reduce_row(op, x + o * r.inner, r.inner));
      return;
    }
    case ir::DType::f64:
      for (int64_t o = 0; o < r.outer; ++o)
        out.data<double>()[o] = reduce_row(op, r.data.data<double>() + o * r.inner, r.inner);
      return;
    case ir::DType::i64:
      for (int64_t o = 0; o < r.outer; ++o)
        out.data<int64_t>()[o] =
            reduce_row_integer(op, r.data.data<int64_t>() + o * r.inner, r.inner);
      return;
    case ir::DType::i32:
      for (int64_t o = 0; o < r.outer; ++o)
        out.data<int32_t>()[o] =
            reduce_row_integer(op, r.data.data<int32_t>() + o * r.inner, r.inner);
      return;
    default:
      throw UnsupportedOpError(
          fmt::format("{} on {}", ir::op_name(op), ir::dtype_name(out.dtype())));
  }
}

void arg_reduce_kernel(const KernelArgs& a) {
  const ir::Shape& s = a.input(0).shape();
  int axis = ir::normalize_axis(a.node.attrs.get_int("axis", 0), s.rank(), "axis");
  std::vector<bool> reduced(s.rank(), false);
  reduced[axis] = true;
  Rows r = rows_with_axes_last(a.input(0), reduced);
  bool is_max = a.node.op == OpType::ArgMax;
  bool last = a.node.attrs.get_int("select_last_index", 0) != 0;
  int64_t* y = a.output(0).data<int64_t>();
  auto run = [&](const auto* x) {
    for (int64_t o = 0; o < r.outer; ++o) {
      const auto* row = x + o * r.inner;
      int64_t best = 0;
      for (int64_t i = 1; i < r.inner; ++i) {
        bool better = is_max ? (last ? row[i] >= row[best] : row[i] > row[best])
                             : (last ? row[i] <= row[best] : row[i] < row[best]);
        if (better) best = i;
      }
      y[o] = best;
    }
  };
  switch (r.data.dtype()) {
    case ir::DType::f32:
      run(r.data.data<float>());
      break;
    case ir::DType::f64:
      run(r.data.data<double>());
      break;
    case ir::DType::i64:
      run(r.data.data<int64_t>());
      break;
    case ir::DType::i32:
      run(r.data.data<int32_t>());
      break;
    case ir::DType::i8:
      run(r.data.data<int8_t>());
      break;
    default:
      throw UnsupportedOpError("ArgMax/ArgMin dtype");
  }
}

void cumsum_kernel(const KernelArgs& a) {
  const ir::Shape& s = a.input(0).shape();
  std::vector<int64_t> axis_values = ir::constant_ints(a.graph, a.node, 1);
  if (axis_values.size() != 1)
    throw ShapeError(fmt::format("{}: axis must be one value", ir::describe(a.graph, a.node)));
  int axis = ir::normalize_axis(axis_values[0], s.rank(), "CumSum axis");
  bool exclusive = a.node.attrs.get_int("exclusive", 0) != 0;
  bool reverse = a.node.attrs.get_int("reverse", 0) != 0;
  int64_t outer = s.product(0, axis), dim = s[axis], inner = s.product(axis + 1, s.rank());
  // Floats accumulate in double, integers exactly in their own type (wrapping on overflow).
  auto run = [&](auto* y, const auto* x) {
    using T = std::remove_pointer_t<decltype(y)>;
    using Acc = std::conditional_t<std::is_integral_v<T>, T, double>;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        Acc acc = 0;
        for (int64_t k = 0; k < dim; ++k) {
          int64_t d = reverse ? dim - 1 - k : k;
          int64_t off = (o * dim + d) * inner + i;
          Acc v = x[off];
          if (!exclusive) acc = wrap_add(acc, v);
          y[off] = static_cast<T>(acc);
          if (exclusive) acc = wrap_add(acc, v);
        }
      }
  };
  switch (a.input(0).dtype()) {
    case ir::DType::f32:
      run(a.output(0).data<float>(), a.input(0).data<float>());
      break;
    case ir::DType::f64:
      run(a.output(0).data<double>(), a.input(0).data<double>());
      break;
    case ir::DType::i64:
      run(a.output(0).data<int64_t>(), a.input(0).data<int64_t>());
      break;
    case ir::DType::i32:
      run(a.output(0).data<int32_t>(), a.input(0).data<int32_t>());
      break;
    default:
      throw UnsupportedOpError("CumSum dtype");
  }
}

}  // namespace mimic::backends::cpu
