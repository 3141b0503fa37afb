// Data movement: views, transposes, concatenation, slicing, gathering, padding, tiling, casts.
// These work on raw elements of any dtype (most through one strided copy).
#include <fmt/format.h>
#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "backends/cpu/int_math.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/tensor_iter.h"
#include "backends/cpu/threading.h"
#include "base/error.h"
#include "base/numeric_formats.h"
#include "frontend/ir/op_helpers.h"
#include "frontend/ir/resize.h"

namespace mimic::backends::cpu {
namespace {

using ir::DType;

size_t esize(const ir::HostTensor& t) {
  return ir::dtype_size(t.dtype());
}

int64_t index_at(const ir::HostTensor& t, int64_t i) {
  return t.dtype() == DType::i64 ? t.data<int64_t>()[i] : t.data<int32_t>()[i];
}

}  // namespace

void view_kernel(const KernelArgs& a) {
  a.output(0) = a.input(0).reshaped(a.output(0).shape());
}

void transpose_kernel(const KernelArgs& a) {
  const ir::Shape& s = a.input(0).shape();
  std::vector<int64_t> perm = ir::resolve_perm(a.node, s.rank());
  std::vector<int64_t> strides = ir::contiguous_strides(s), src(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) src[i] = strides[perm[i]];
  strided_copy(a.output(0).raw(), a.input(0).raw(), a.output(0).shape().dims(), src, 0,
               esize(a.input(0)));
}

void concat_kernel(const KernelArgs& a) {
  ir::HostTensor& out = a.output(0);
  int axis = ir::normalize_axis(a.node.attrs.get_int("axis", 0), out.shape().rank(), "axis");
  int64_t outer = out.shape().product(0, axis),
          inner = out.shape().product(axis + 1, out.shape().rank());
  size_t es = esize(out);
  int64_t out_row = out.shape()[axis] * inner * es, offset = 0;
  char* dst = static_cast<char*>(out.raw());
  for (size_t k = 0; k < a.in.size(); ++k) {
    const ir::HostTensor& t = *a.in[k];
    int64_t row = t.shape()[axis] * inner * es;
    const char* src = static_cast<const char*>(t.raw());
    for (int64_t o = 0; o < outer; ++o) std::memcpy(dst + o * out_row + offset, src + o * row, row);
    offset += row;
  }
}

void split_kernel(const KernelArgs& a) {
  const ir::HostTensor& in = a.input(0);
  int axis = ir::normalize_axis(a.node.attrs.get_int("axis", 0), in.shape().rank(), "axis");
  int64_t outer = in.shape().product(0, axis),
          inner = in.shape().product(axis + 1, in.shape().rank());
  size_t es = esize(in);
  int64_t in_row = in.shape()[axis] * inner * es, offset = 0;
  const char* src = static_cast<const char*>(in.raw());
  for (size_t k = 0; k < a.out.size(); ++k) {
    ir::HostTensor& t = *a.out[k];
    int64_t row = t.shape()[axis] * inner * es;
    char* dst = static_cast<char*>(t.raw());
    for (int64_t o = 0; o < outer; ++o) std::memcpy(dst + o * row, src + o * in_row + offset, row);
    offset += row;
  }
}

void slice_kernel(const KernelArgs& a) {
  ir::SliceSpec spec = ir::resolve_slice(a.graph, a.node);
  const ir::Shape& s = a.input(0).shape();
  std::vector<int64_t> strides = ir::contiguous_strides(s), src(s.rank());
  int64_t offset = 0;
  for (int d = 0; d < s.rank(); ++d) {
    offset += spec.start[d] * strides[d];
    src[d] = spec.step[d] * strides[d];
  }
  strided_copy(a.output(0).raw(), a.input(0).raw(), spec.length, src, offset, esize(a.input(0)));
}

void gather_kernel(const KernelArgs& a) {
  const ir::HostTensor& data = a.input(0);
  const ir::HostTensor& idx = a.input(1);
  int axis = ir::normalize_axis(a.node.attrs.get_int("axis", 0), data.shape().rank(), "axis");
  int64_t outer = data.shape().product(0, axis), dim = data.shape()[axis];
  int64_t inner = data.shape().product(axis + 1, data.shape().rank());
  size_t row = inner * esize(data);
  const char* src = static_cast<const char*>(data.raw());
  char* dst = static_cast<char*>(a.output(0).raw());
  int64_t count = idx.numel();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < count; ++i) {
      int64_t k = index_at(idx, i);
      if (k < 0) k += dim;
      if (k < 0 || k >= dim)
        throw RuntimeError(fmt::format("{}: index {} is out of range for axis {} of size {}",
                                       ir::describe(a.graph, a.node), index_at(idx, i), axis, dim));
      std::memcpy(dst + (o * count + i) * row, src + (o * dim + k) * row, row);
    }
}

void gather_elements_kernel(const KernelArgs& a) {
  const ir::HostTensor& data = a.input(0);
  const ir::HostTensor& idx = a.input(1);
  const ir::Shape& is = idx.shape();
  int axis = ir::normalize_axis(a.node.attrs.get_int("axis", 0), data.shape().rank(), "axis");
  std::vector<int64_t> dstrides = ir::contiguous_strides(data.shape());
  size_t es = esize(data);
  const char* src = static_cast<const char*>(data.raw());
  char* dst = static_cast<char*>(a.output(0).raw());
  int64_t dim = data.shape()[axis];
  for (int d = 0; d < is.rank(); ++d)
    assert(d == axis || is[d] <= data.shape()[d]);  // infer::gather_elements
  for (int64_t i = 0; i < idx.numel(); ++i) {
    int64_t rem = i, off = 0;
    for (int d = is.rank() - 1; d >= 0; --d) {
      int64_t c = rem % is[d];
      rem /= is[d];
      if (d == axis) {
        c = index_at(idx, i);
        if (c < 0) c += dim;
        if (c < 0 || c >= dim)
          throw RuntimeError(fmt::format("{}: index out of range", ir::describe(a.graph, a.node)));
      }
      off += c * dstrides[d];
    }
    std::memcpy(dst + i * es, src + off * es, es);
  }
}

namespace {

// Applies ScatterND's reduction to `n` elements of type T: dst[i] = reduce(dst[i], src[i]).
template <typename T>
void scatter_reduce(T* dst, const T* src, int64_t n, const std::string& reduction) {
  for (int64_t i = 0; i < n; ++i) {
    if (reduction == "add")
      dst[i] = static_cast<T>(dst[i] + src[i]);
    else if (reduction == "mul")
      dst[i] = static_cast<T>(dst[i] * src[i]);
    else
      dst[i] = src[i];
  }
}

void scatter_slice(ir::HostTensor& out, int64_t at, const ir::HostTensor& upd, int64_t from,
                   int64_t n, const std::string& reduction) {
  switch (out.dtype()) {
    case DType::f32:
      return scatter_reduce(out.data<float>() + at, upd.data<float>() + from, n, reduction);
    case DType::f64:
      return scatter_reduce(out.data<double>() + at, upd.data<double>() + from, n, reduction);
    case DType::i32:
      return scatter_reduce(out.data<int32_t>() + at, upd.data<int32_t>() + from, n, reduction);
    case DType::i64:
      return scatter_reduce(out.data<int64_t>() + at, upd.data<int64_t>() + from, n, reduction);
    case DType::i8:
      return scatter_reduce(out.data<int8_t>() + at, upd.data<int8_t>() + from, n, reduction);
    case DType::boolean:
      return scatter_reduce(out.data<bool>() + at, upd.data<bool>() + from, n, reduction);
    default:
      throw RuntimeError(fmt::format("ScatterND on {}: the executor widens 16-bit floats to f32",
                                     ir::dtype_name(out.dtype())));
  }
}

}  // namespace

// ScatterND: the output starts as data; each index tuple of the last indices axis addresses a slice
// of data's trailing dims, replaced by (or reduced with) the matching slice of updates, in order.
void scatter_nd_kernel(const KernelArgs& a) {
  const ir::HostTensor &data = a.input(0), &idx = a.input(1), &upd = a.input(2);
  ir::HostTensor& out = a.output(0);
  std::memcpy(out.raw(), data.raw(), data.nbytes());
  const ir::Shape& ds = data.shape();
  int k = static_cast<int>(idx.shape()[idx.shape().rank() - 1]);
  std::vector<int64_t> strides = ir::contiguous_strides(ds);
  int64_t slice = k < ds.rank() ? strides[k - 1] : 1;
  std::string reduction = a.node.attrs.get_string("reduction", "none");
  for (int64_t t = 0; t < idx.numel() / k; ++t) {
    int64_t at = 0;
    for (int d = 0; d < k; ++d) {
      int64_t v = idx.data<int64_t>()[t * k + d];
      if (v < 0) v += ds[d];
      if (v < 0 || v >= ds[d])
        throw RuntimeError(fmt::format("{}: index {} is out of range for axis {} of size {}",
                                       ir::describe(a.graph, a.node),
                                       idx.data<int64_t>()[t * k + d], d, ds[d]));
      at += v * strides[d];
    }
    scatter_slice(out, at, upd, t * slice, slice, reduction);
  }
}

namespace {

// The input coordinate an output coordinate `c` (already shifted by the leading pad) reads along an
// axis of size n, or -1 for the constant fill.
int64_t pad_source(int64_t c, int64_t n, const std::string& mode) {
  if (c >= 0 && c < n) return c;
  if (mode == "constant" || n == 0) return -1;
  if (mode == "edge") return c < 0 ? 0 : n - 1;
  if (mode == "wrap") return ((c % n) + n) % n;
  int64_t period = 2 * (n - 1);  // reflect, without repeating the edge
  c = period == 0 ? 0 : ((c % period) + period) % period;
  return c >= n ? period - c : c;
}

}  // namespace

// Row by row: each output row (every axis but the last) reads one input row or is all fill; along
// the last axis the inside is one memcpy and only the padded ends are resolved element by element.
void pad_kernel(const KernelArgs& a) {
  ir::PadSpec spec = ir::resolve_pads(a.graph, a.node);
  std::string mode = a.node.attrs.get_string("mode", "constant");
  const ir::HostTensor& in = a.input(0);
  ir::HostTensor& out = a.output(0);
  const ir::Shape &is = in.shape(), &os = out.shape();
  const int rank = os.rank();
  if (out.numel() == 0) return;
  const size_t es = esize(in);
  std::vector<char> fill(es, 0);
  if (a.has_input(2) && a.input(2).numel() > 0) std::memcpy(fill.data(), a.input(2).raw(), es);
  const char* src = static_cast<const char*>(in.raw());
  char* dst = static_cast<char*>(out.raw());
  if (rank == 0) {
    std::memcpy(dst, src, es);
    return;
  }
  const std::vector<int64_t> istr = ir::contiguous_strides(is);
  const int64_t width = os[rank - 1], in_width = is[rank - 1], before = spec.before[rank - 1];
  // The inside of a row: output [lo, hi) reads input [lo - before, hi - before).
  const int64_t lo = std::clamp<int64_t>(before, 0, width);
  const int64_t hi = std::clamp<int64_t>(before + in_width, lo, width);
  const int64_t rows = out.numel() / width;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t rem = r, row_off = 0;
    bool inside = true;
    for (int d = rank - 2; d >= 0; --d) {
      int64_t c = pad_source(rem % os[d] - spec.before[d], is[d], mode);
      rem /= os[d];
      if (c < 0) inside = false;
      row_off += c * istr[d];
    }
    char* row = dst + r * width * es;
    if (!inside) {
      for (int64_t i = 0; i < width; ++i) std::memcpy(row + i * es, fill.data(), es);
      continue;
    }
    const char* in_row = src + row_off * es;
    std::memcpy(row + lo * es, in_row + (lo - before) * es, (hi - lo) * es);
    for (int64_t i = 0; i < width; ++i) {
      if (i == lo) i = hi;
      if (i >= width) break;
      int64_t c = pad_source(i - before, in_width, mode);
      std::memcpy(row + i * es, c < 0 ? fill.data() : in_row + c * es, es);
    }
  }
}

void tile_kernel(const KernelArgs& a) {
  // View the output as [r0, d0, r1, d1, ...] reading the input with stride 0 on the r axes.
  const ir::Shape& s = a.input(0).shape();
  std::vector<int64_t> repeats = ir::constant_ints(a.graph, a.node, 1);
  std::vector<int64_t> strides = ir::contiguous_strides(s), dims, src;
  for (int d = 0; d < s.rank(); ++d) {
    dims.push_back(repeats[d]);
    src.push_back(0);
    dims.push_back(s[d]);
    src.push_back(strides[d]);
  }
  strided_copy(a.output(0).raw(), a.input(0).raw(), dims, src, 0, esize(a.input(0)));
}

void expand_kernel(const KernelArgs& a) {
  const ir::Shape& out = a.output(0).shape();
  strided_copy(a.output(0).raw(), a.input(0).raw(), out.dims(),
               broadcast_strides(a.input(0).shape(), out), 0, esize(a.input(0)));
}

void shape_kernel(const KernelArgs& a) {
  const ir::Shape& s = a.input(0).shape();
  int64_t* y = a.output(0).data<int64_t>();
  if (a.node.op == ir::OpType::Size) {
    y[0] = s.numel();
    return;
  }
  int64_t start = a.node.attrs.get_int("start", 0);
  if (start < 0) start = std::max<int64_t>(0, start + s.rank());
  for (int64_t i = 0; i < a.output(0).numel(); ++i) y[i] = s[static_cast<int>(start + i)];
}

void constant_kernel(const KernelArgs& a) {
  ir::HostTensor& out = a.output(0);
  const ir::HostTensor* value = a.node.attrs.get_tensor("value");
  assert(a.node.op == ir::OpType::Constant || !value ||
         value->numel() == 1);  // infer::constant_of_shape
  if (a.node.op == ir::OpType::Constant) {
    out = *value;
    return;
  }
  if (!value) return;  // ConstantOfShape defaults to f32 zeros
  size_t es = esize(out);
  char* dst = static_cast<char*>(out.raw());
  for (int64_t i = 0; i < out.numel(); ++i) std::memcpy(dst + i * es, value->raw(), es);
}

void range_kernel(const KernelArgs& a) {
  ir::HostTensor& out = a.output(0);
  auto run = [&](auto* y) {
    using T = std::remove_pointer_t<decltype(y)>;
    T start = a.input(0).data<T>()[0], delta = a.input(2).data<T>()[0];
    for (int64_t i = 0; i < out.numel(); ++i)
      y[i] = wrap_add(start, wrap_mul(static_cast<T>(i), delta));
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
    default:
      throw UnsupportedOpError("Range dtype");
  }
}

void space_depth_kernel(const KernelArgs& a) {
  // Both are a reshape to 6-D, a transpose and a reshape back: one strided copy.
  const ir::Shape& in = a.input(0).shape();
  int64_t b = a.node.attrs.require_int("blocksize");
  int64_t n = in[0], c = in[1], h = in[2], w = in[3];
  std::vector<int64_t> dims, src;
  if (a.node.op == ir::OpType::DepthToSpace) {
    int64_t co = c / (b * b);
    bool crd = a.node.attrs.get_string("mode", "DCR") == "CRD";
    // Input viewed as DCR [n, b1, b2, co, h, w] or CRD [n, co, b1, b2, h, w]; output [n, co, h, b1,
    // w, b2].
    int64_t s_b1 = crd ? b * h * w : b * co * h * w, s_b2 = crd ? h * w : co * h * w;
    int64_t s_co = crd ? b * b * h * w : h * w;
    dims = {n, co, h, b, w, b};
    src = {c * h * w, s_co, w, s_b1, 1, s_b2};
  } else {
    // Output [n, b1, b2, c, h/b, w/b] from input [n, c, h/b, b1, w/b, b2].
    int64_t ho = h / b, wo = w / b;
    dims = {n, b, b, c, ho, wo};
    src = {c * h * w, w, 1, h * w, b * w, b};
  }
  strided_copy(a.output(0).raw(), a.input(0).raw(), dims, src, 0, esize(a.input(0)));
}

namespace {

// One axis of a resize: y[o, j, k] = sum over taps of w * x[o, index, k] ([outer, axis, inner]).
template <typename T>
std::vector<T> resize_axis(const std::vector<T>& x, const ir::Shape& shape, int axis,
                           const std::vector<ir::ResizeTap>& taps) {
  int64_t outer = 1, inner = 1, in = shape[axis], out = static_cast<int64_t>(taps.size());
  for (int i = 0; i < axis; ++i) outer *= shape[i];
  for (int i = axis + 1; i < shape.rank(); ++i) inner *= shape[i];
  std::vector<T> y(static_cast<size_t>(outer * out * inner));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < out; ++j) {
      const ir::ResizeTap& t = taps[j];
      T* dst = &y[(o * out + j) * inner];
      for (int64_t k = 0; k < inner; ++k) {
        double sum = 0;
        for (size_t m = 0; m < t.index.size(); ++m)
          sum += t.weight[m] * static_cast<double>(x[(o * in + t.index[m]) * inner + k]);
        dst[k] = static_cast<T>(sum);
      }
    }
  return y;
}

template <typename T>
void resize_typed(const KernelArgs& a, const ir::ResizeSpec& s) {
  const ir::HostTensor& x = a.input(0);
  std::vector<T> data(x.data<T>(), x.data<T>() + x.numel());
  ir::Shape shape = s.input;
  for (int axis = 0; axis < shape.rank(); ++axis) {
    if (ir::resize_axis_is_identity(s, axis)) continue;
    data = resize_axis(data, shape, axis, ir::resize_taps(s, axis));
    std::vector<int64_t> dims = shape.dims();
    dims[axis] = s.output[axis];
    shape = ir::Shape(dims);
  }
  std::copy(data.begin(), data.end(), a.output(0).data<T>());
}

}  // namespace

// The ONNX reference's taps (resize.h), one axis at a time, accumulated in double.
void resize_kernel(const KernelArgs& a) {
  ir::ResizeSpec s = ir::resize_spec(a.graph, a.node);
  if (a.input(0).dtype() == ir::DType::f64)
    resize_typed<double>(a, s);
  else
    resize_typed<float>(a, s);
}

void trilu_kernel(const KernelArgs& a) {
  const ir::Shape& s = a.input(0).shape();
  assert(s.rank() >= 2);  // infer::trilu
  std::vector<int64_t> kv = ir::constant_ints(a.graph, a.node, 1, {0});
  int64_t k = kv.empty() ? 0 : kv[0];
  bool upper = a.node.attrs.get_int("upper", 1) != 0;
  int64_t rows = s.rank() >= 2 ? s.dim(-2) : 1, cols = s.dim(-1);
  int64_t mats = (rows * cols != 0) ? s.numel() / (rows * cols) : 0;
  size_t es = esize(a.input(0));
  const char* src = static_cast<const char*>(a.input(0).raw());
  char* dst = static_cast<char*>(a.output(0).raw());
  std::memset(dst, 0, a.output(0).nbytes());
  for (int64_t m = 0; m < mats; ++m)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        bool keep = upper ? (j - i >= k) : (j - i <= k);
        int64_t off = (m * rows + i) * cols + j;
        if (keep) std::memcpy(dst + off * es, src + off * es, es);
      }
}

void eye_like_kernel(const KernelArgs& a) {
  ir::HostTensor& out = a.output(0);
  int64_t k = a.node.attrs.get_int("k", 0), rows = out.shape()[0], cols = out.shape()[1];
  if (k >= cols || k <= -rows) return;  // the diagonal misses the matrix (and i + k stays in range)
  for (int64_t i = 0; i < rows; ++i) {
    int64_t j = i + k;
    if (j < 0 || j >= cols) continue;
    int64_t off = i * cols + j;
    switch (out.dtype()) {
      case DType::f32:
        out.data<float>()[off] = 1.0f;
        break;
      case DType::f16:
        out.data<ir::Float16>()[off].bits = numeric::f32_to_f16(1.0f);
        break;
      case DType::bf16:
        out.data<ir::BFloat16>()[off].bits = numeric::f32_to_bf16(1.0f);
        break;
      case DType::i8:
        out.data<int8_t>()[off] = 1;
        break;
      case DType::i32:
        out.data<int32_t>()[off] = 1;
        break;
      case DType::i64:
        out.data<int64_t>()[off] = 1;
        break;
      case DType::boolean:
        out.data<bool>()[off] = true;
        break;
      case DType::f64:
        out.data<double>()[off] = 1.0;
        break;
    }
  }
}

// ---- Cast: through double, with the 16-bit float formats rounded to nearest even ----

namespace {

template <typename T>
T saturate_integer(double v) {
  return saturate_cast<T>(std::trunc(v));
}

void store(ir::HostTensor& t, int64_t i, double v, int64_t exact_int, bool use_exact) {
  switch (t.dtype()) {
    case DType::f32:
      t.data<float>()[i] = static_cast<float>(v);
      break;
    case DType::f16:
      t.data<ir::Float16>()[i].bits = numeric::f32_to_f16(static_cast<float>(v));
      break;
    case DType::bf16:
      t.data<ir::BFloat16>()[i].bits = numeric::f32_to_bf16(static_cast<float>(v));
      break;
    case DType::i8:
      t.data<int8_t>()[i] =
          use_exact ? static_cast<int8_t>(exact_int) : saturate_integer<int8_t>(v);
      break;
    case DType::i32:
      t.data<int32_t>()[i] =
          use_exact ? static_cast<int32_t>(exact_int) : saturate_integer<int32_t>(v);
      break;
    case DType::i64:
      t.data<int64_t>()[i] = use_exact ? exact_int : saturate_integer<int64_t>(v);
      break;
    case DType::boolean:
      t.data<bool>()[i] = v != 0;
      break;
    case DType::f64:
      t.data<double>()[i] = v;
      break;
  }
}

// One conversion as the generic path computes it (through double, integers exact, floats
// truncated and saturated into integers, anything nonzero true), for In and Out of the 8-, 32- and
// 64-bit types, in a loop the compiler vectorizes.
template <typename Out, typename In>
Out convert(In v) {
  if constexpr (std::is_same_v<Out, bool>)
    return v != In(0);
  else if constexpr (std::is_floating_point_v<Out>)
    return static_cast<Out>(static_cast<double>(v));  // i64 -> f32 rounds once through double
  else if constexpr (!std::is_floating_point_v<In>)
    return static_cast<Out>(v);
  else
    return saturate_integer<Out>(static_cast<double>(v));
}

template <typename In>
bool typed_cast_from(const In* x, ir::HostTensor& out, int64_t n) {
  auto loop = [&](auto* y) {
    using Out = std::remove_pointer_t<decltype(y)>;
#pragma omp parallel for simd if (n > parallel_threshold(65536))
    for (int64_t i = 0; i < n; ++i) y[i] = convert<Out>(x[i]);
    return true;
  };
  switch (out.dtype()) {
    case DType::f32:
      return loop(out.data<float>());
    case DType::f64:
      return loop(out.data<double>());
    case DType::i8:
      return loop(out.data<int8_t>());
    case DType::i32:
      return loop(out.data<int32_t>());
    case DType::i64:
      return loop(out.data<int64_t>());
    case DType::boolean:
      return loop(out.data<bool>());
    default:
      return false;
  }
}

// False when either side is a 16-bit float (those go through the generic path).
bool typed_cast(const ir::HostTensor& in, ir::HostTensor& out) {
  const int64_t n = in.numel();
  switch (in.dtype()) {
    case DType::f32:
      return typed_cast_from(in.data<float>(), out, n);
    case DType::f64:
      return typed_cast_from(in.data<double>(), out, n);
    case DType::i8:
      return typed_cast_from(in.data<int8_t>(), out, n);
    case DType::i32:
      return typed_cast_from(in.data<int32_t>(), out, n);
    case DType::i64:
      return typed_cast_from(in.data<int64_t>(), out, n);
    case DType::boolean:
      return typed_cast_from(in.data<bool>(), out, n);
    default:
      return false;
  }
}

}  // namespace

void cast_kernel(const KernelArgs& a) {
  const ir::HostTensor& in = a.input(0);
  ir::HostTensor& out = a.output(0);
  if (in.dtype() == out.dtype()) {
    std::memcpy(out.raw(), in.raw(), in.nbytes());
    return;
  }
  int64_t n = in.numel();
  if (in.dtype() == DType::f32 && out.dtype() == DType::f16)
    return numeric::f32_to_f16(in.data<float>(), reinterpret_cast<uint16_t*>(out.raw()), n);
  if (in.dtype() == DType::f16 && out.dtype() == DType::f32)
    return numeric::f16_to_f32(reinterpret_cast<const uint16_t*>(in.raw()), out.data<float>(), n);
  if (in.dtype() == DType::f32 && out.dtype() == DType::bf16)
    return numeric::f32_to_bf16(in.data<float>(), reinterpret_cast<uint16_t*>(out.raw()), n);
  if (in.dtype() == DType::bf16 && out.dtype() == DType::f32)
    return numeric::bf16_to_f32(reinterpret_cast<const uint16_t*>(in.raw()), out.data<float>(), n);
  if (typed_cast(in, out)) return;
  bool exact = ir::is_integer(in.dtype()) || in.dtype() == DType::boolean;
  for (int64_t i = 0; i < n; ++i) {
    int64_t iv = in.dtype() == DType::i64 ? in.data<int64_t>()[i] : 0;
    double v = ir::element_as_double(in, i);
    if (exact && in.dtype() != DType::i64)
      iv = static_cast<int64_t>(v);  // an integer or bool: in range
    store(out, i, v, iv, exact);
  }
}

}  // namespace mimic::backends::cpu
