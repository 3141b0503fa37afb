// Shape inference: reshapes, slicing, gathering, padding and constant producers.
#include <fmt/format.h>
#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "frontend/ir/op_helpers.h"
#include "frontend/ir/resize.h"
#include "frontend/ir/shape_inference.h"

namespace mimic::ir::infer {
namespace {

int64_t known_product(const std::vector<int64_t>& dims, int& symbols) {
  int64_t p = 1;
  for (int64_t d : dims) {
    if (d == kBatch)
      ++symbols;
    else
      p = checked_mul(p, d, "shape");
  }
  return p;
}

// A 1-D integer tensor of parameters (shape, repeats, axes, pads, starts, ...).
void expect_int_vector(InferContext& c, int i,
                       std::initializer_list<DType> allowed = {DType::i32, DType::i64}) {
  if (!c.has_input(i)) return;
  c.expect_dtype(i, allowed);
  c.expect_rank_between(i, 1, 1);
}

}  // namespace

void reshape(InferContext& c) {
  expect_int_vector(c, 1);
  const Shape& in = c.shape(0);
  std::vector<int64_t> target = c.ints(1);
  bool allow_zero = c.attrs().get_int("allowzero", 0) != 0;
  int infer_at = -1;
  std::vector<int64_t> out(target.size());
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t t = target[i];
    if (t == 0 && !allow_zero) {
      if (static_cast<int>(i) >= in.rank())
        c.fail(
            fmt::format("shape [{}] copies dim {} that does not exist", fmt::join(target, ","), i));
      out[i] = in[i];
    } else if (t == -1) {
      if (infer_at >= 0)
        c.fail(fmt::format("shape [{}] has more than one -1", fmt::join(target, ",")));
      infer_at = static_cast<int>(i);
      out[i] = 1;
    } else if (t < 0) {
      c.fail(fmt::format("shape [{}] has invalid dim {}", fmt::join(target, ","), t));
    } else {
      out[i] = t;
    }
  }
  int in_symbols = 0, out_symbols = 0;
  int64_t in_known = known_product(in.dims(), in_symbols);
  int64_t out_known = known_product(out, out_symbols);
  std::string bad = fmt::format("cannot reshape {} to [{}]", in.str(), fmt::join(target, ","));
  if (in_symbols == out_symbols) {
    if (infer_at >= 0) {
      if (out_known == 0 || in_known % out_known != 0) c.fail(bad);
      out[infer_at] = in_known / out_known;
    } else if (in_known != out_known) {
      c.fail(bad);
    }
  } else if (in_symbols == 1 && out_symbols == 0 && infer_at >= 0 && in_known == out_known) {
    out[infer_at] = kBatch;
  } else {
    c.fail(bad + " (the batch dimension must stay a dimension of its own; bind the batch first)");
  }
  c.set_output(0, c.dtype(0), Shape(out));
}

void flatten(InferContext& c) {
  const Shape& in = c.shape(0);
  // ONNX Flatten's axis is in [-rank, rank]; a negative axis counts from the end (axis + rank).
  int64_t a = c.attrs().get_int("axis", 1);
  if (a < -in.rank() || a > in.rank())
    c.fail(fmt::format("axis {} is out of range for rank {}", a, in.rank()));
  int axis = static_cast<int>(a < 0 ? a + in.rank() : a);
  int s1 = 0, s2 = 0;
  int64_t outer = known_product({in.dims().begin(), in.dims().begin() + axis}, s1);
  int64_t inner = known_product({in.dims().begin() + axis, in.dims().end()}, s2);
  if (s2 > 0 || (s1 > 0 && outer != 1))
    c.fail(
        "flattening would merge the symbolic batch into another dimension; bind the batch first");
  c.set_output(0, c.dtype(0), Shape({s1 ? kBatch : outer, inner}));
}

void transpose(InferContext& c) {
  const Shape& in = c.shape(0);
  std::vector<int64_t> perm = resolve_perm(c.node(), in.rank());
  std::vector<int64_t> out;
  for (int64_t p : perm) out.push_back(in[p]);
  c.set_output(0, c.dtype(0), Shape(out));
}

void concat(InferContext& c) {
  c.expect_rank_at_least(0, 1);
  Shape out = c.shape(0);
  int axis = normalize_axis(c.attrs().require_int("axis"), out.rank(), c.node().name + " axis");
  for (int i = 1; i < c.num_inputs(); ++i) {
    c.expect_same_dtype(0, i);
    const Shape& s = c.shape(i);
    if (s.rank() != out.rank())
      c.fail(fmt::format("input {} has rank {}, input 0 has {}", i, s.rank(), out.rank()));
    for (int d = 0; d < s.rank(); ++d)
      if (d != axis && s[d] != out[d])
        c.fail(
            fmt::format("input {} differs from input 0 in dim {} ({} vs {})", i, d, s[d], out[d]));
    if (s[axis] == kBatch || out[axis] == kBatch)
      c.fail("cannot concatenate along the symbolic batch axis");
    out[axis] += s[axis];
  }
  c.set_output(0, c.dtype(0), out);
}

void split(InferContext& c) {
  c.expect_rank_at_least(0, 1);
  expect_int_vector(c, 1);
  std::vector<int64_t> sizes = resolve_split(c.graph(), c.node());
  int axis = normalize_axis(c.attrs().get_int("axis", 0), c.shape(0).rank(), "split axis");
  for (size_t i = 0; i < sizes.size(); ++i) {
    Shape s = c.shape(0);
    s[axis] = sizes[i];
    c.set_output(static_cast<int>(i), c.dtype(0), s);
  }
}

void slice(InferContext& c) {
  for (int i = 1; i < c.num_inputs(); ++i) expect_int_vector(c, i, {DType::i32, DType::i64});
  for (int i = 2; i < c.num_inputs(); ++i)
    if (c.has_input(i) && c.dtype(i) != c.dtype(1)) c.expect_same_dtype(1, i);
  SliceSpec spec = resolve_slice(c.graph(), c.node());
  c.set_output(0, c.dtype(0), Shape(spec.length));
}

void gather(InferContext& c) {
  c.expect_dtype(1, {DType::i32, DType::i64});
  const Shape& data = c.shape(0);
  c.expect_rank_at_least(0, 1);
  int axis = normalize_axis(c.attrs().get_int("axis", 0), data.rank(), c.node().name + " axis");
  int64_t dim = data[axis];
  if (c.constant(1) && dim != kBatch)
    for (int64_t k : c.ints(1))
      if (k < -dim || k >= dim)
        c.fail(fmt::format("index {} is out of range for axis {} of size {}", k, axis, dim));
  std::vector<int64_t> out(data.dims().begin(), data.dims().begin() + axis);
  for (int64_t d : c.shape(1).dims()) out.push_back(d);
  for (int i = axis + 1; i < data.rank(); ++i) out.push_back(data[i]);
  c.set_output(0, c.dtype(0), Shape(out));
}

void gather_elements(InferContext& c) {
  c.expect_dtype(1, {DType::i32, DType::i64});
  if (c.shape(0).rank() != c.shape(1).rank()) c.fail("data and indices must have the same rank");
  c.expect_rank_at_least(0, 1);
  int axis =
      normalize_axis(c.attrs().get_int("axis", 0), c.shape(0).rank(), c.node().name + " axis");
  // Every index addresses data at its own position outside `axis` (onnxruntime's bound).
  for (int d = 0; d < c.shape(0).rank(); ++d)
    if (d != axis && c.shape(1)[d] > c.shape(0)[d])
      c.fail(fmt::format("indices dim {} is {}, larger than data's {}", d, c.shape(1)[d],
                         c.shape(0)[d]));
  c.set_output(0, c.dtype(0), c.shape(1));
}

// ScatterND (opset 16): indices [..., k] address k-dim slices of data; updates hold one slice per
// index tuple. Indices may be negative (counted from the end, as onnxruntime accepts).
void scatter_nd(InferContext& c) {
  c.expect_dtype(1, {DType::i64});
  c.expect_same_dtype(0, 2);
  c.expect_rank_at_least(0, 1);
  c.expect_rank_at_least(1, 1);
  std::string reduction = c.attrs().get_string("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul")
    c.fail(fmt::format("reduction '{}' must be none, add or mul", reduction));
  const Shape &data = c.shape(0), &idx = c.shape(1);
  int64_t k = idx[idx.rank() - 1];
  if (k < 1 || k > data.rank())
    c.fail(fmt::format("indices' last dim is {}; it must be between 1 and data's rank {}", k,
                       data.rank()));
  std::vector<int64_t> want(idx.dims().begin(), idx.dims().end() - 1);
  for (int d = static_cast<int>(k); d < data.rank(); ++d) want.push_back(data[d]);
  if (c.shape(2) != Shape(want))
    c.fail(fmt::format("updates are {}, expected {} (indices {} into data {})", c.shape(2).str(),
                       Shape(want).str(), idx.str(), data.str()));
  if (const HostTensor* t = c.constant(1))
    for (int64_t i = 0; i < t->numel(); ++i) {
      int64_t dim = data[static_cast<int>(i % k)], v = t->data<int64_t>()[i];
      if (dim != kBatch && (v < -dim || v >= dim))
        c.fail(fmt::format("index {} is out of range for axis {} of size {}", v, i % k, dim));
    }
  c.set_output(0, c.dtype(0), data);
}

void squeeze(InferContext& c) {
  expect_int_vector(c, 1);
  const Shape& in = c.shape(0);
  std::vector<int64_t> axes = resolve_squeeze_axes(c.graph(), c.node());
  std::vector<int64_t> out;
  for (int i = 0; i < in.rank(); ++i) {
    bool listed = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (listed && in[i] != 1) c.fail(fmt::format("cannot squeeze axis {} of size {}", i, in[i]));
    if (listed || (axes.empty() && in[i] == 1)) continue;
    out.push_back(in[i]);
  }
  c.set_output(0, c.dtype(0), Shape(out));
}

void unsqueeze(InferContext& c) {
  expect_int_vector(c, 1);
  const Shape& in = c.shape(0);
  std::vector<int64_t> axes = resolve_squeeze_axes(c.graph(), c.node());
  std::vector<int64_t> out;
  size_t next_in = 0, next_axis = 0;
  for (int i = 0; i < in.rank() + static_cast<int>(axes.size()); ++i) {
    if (next_axis < axes.size() && axes[next_axis] == i) {
      out.push_back(1);
      ++next_axis;
    } else {
      out.push_back(in[next_in++]);
    }
  }
  c.set_output(0, c.dtype(0), Shape(out));
}

void pad(InferContext& c) {
  std::string mode = c.attrs().get_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    c.fail(fmt::format("unknown pad mode '{}'", mode));
  expect_int_vector(c, 1);
  expect_int_vector(c, 3, {DType::i32, DType::i64});
  c.expect_scalar(2);
  PadSpec spec = resolve_pads(c.graph(), c.node());
  Shape out = c.shape(0);
  for (int i = 0; i < out.rank(); ++i) {
    if (out[i] == kBatch) {
      if (spec.before[i] || spec.after[i]) c.fail("cannot pad the symbolic batch axis");
      continue;
    }
    if (mode != "constant" && out[i] == 0 && (spec.before[i] > 0 || spec.after[i] > 0))
      c.fail(fmt::format("{} padding of an empty axis {} has nothing to copy", mode, i));
    if (mode == "reflect" && (spec.before[i] >= out[i] || spec.after[i] >= out[i]))
      c.fail(fmt::format("reflect padding of {} on axis {} needs a dimension larger than the pad",
                         std::max(spec.before[i], spec.after[i]), i));
    out[i] = checked_add(out[i], checked_add(spec.before[i], spec.after[i], "pads"),
                         c.node().name + " pads");
    if (out[i] < 0) c.fail(fmt::format("pads crop axis {} below size 0", i));
  }
  if (c.has_input(2)) c.expect_same_dtype(0, 2);
  c.set_output(0, c.dtype(0), out);
}

void tile(InferContext& c) {
  expect_int_vector(c, 1);
  std::vector<int64_t> repeats = c.ints(1);
  Shape out = c.shape(0);
  if (static_cast<int>(repeats.size()) != out.rank())
    c.fail(fmt::format("repeats has {} values for rank {}", repeats.size(), out.rank()));
  for (int i = 0; i < out.rank(); ++i) {
    if (repeats[i] < 0) c.fail("repeats must be non-negative");
    if (out[i] == kBatch && repeats[i] != 1) c.fail("cannot tile the symbolic batch axis");
    if (out[i] != kBatch) out[i] = checked_mul(out[i], repeats[i], c.node().name + " repeats");
  }
  c.set_output(0, c.dtype(0), out);
}

void expand(InferContext& c) {
  expect_int_vector(c, 1);
  Shape target(c.ints(1));
  for (int64_t d : target.dims())
    if (d < 0) c.fail(fmt::format("shape {} has a negative size", target.str()));
  Shape out;
  try {
    out = broadcast_shapes(c.shape(0), target, "Expand");
  } catch (const ShapeError&) {
    c.fail(fmt::format("cannot expand {} to {}", c.shape(0).str(), target.str()));
  }
  c.set_output(0, c.dtype(0), out);
}

void shape(InferContext& c) {
  int rank = c.shape(0).rank();
  int64_t start = c.attrs().get_int("start", 0), end = c.attrs().get_int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  c.set_output(0, DType::i64, Shape({std::max<int64_t>(0, end - start)}));
}

void size(InferContext& c) {
  c.set_output(0, DType::i64, Shape());
}

void constant_of_shape(InferContext& c) {
  expect_int_vector(c, 0);
  std::vector<int64_t> dims = c.ints(0);
  for (int64_t d : dims)
    if (d < 0) c.fail("shape values must be non-negative");
  const HostTensor* value = c.attrs().get_tensor("value");
  if (value && value->numel() != 1)
    c.fail(fmt::format("attribute value must hold one element, holds {} ({})", value->numel(),
                       value->type().str()));
  c.set_output(0, value ? value->dtype() : DType::f32, Shape(dims));
}

void constant(InferContext& c) {
  const HostTensor* value = c.attrs().get_tensor("value");
  if (!value) c.fail("attribute 'value' (a tensor) is required");
  c.set_output(0, value->dtype(), value->shape());
}

void range(InferContext& c) {
  c.expect_dtype(0, {DType::f32, DType::f64, DType::i32, DType::i64});
  for (int i = 0; i < 3; ++i) {
    if (c.shape(i).rank() != 0 && c.shape(i).numel() != 1)
      c.fail("start, limit and delta must be scalars");
    c.expect_same_dtype(0, i);
  }
  auto start = constant_scalar(c.graph(), c.node(), 0);
  auto limit = constant_scalar(c.graph(), c.node(), 1);
  auto delta = constant_scalar(c.graph(), c.node(), 2);
  if (!start || !limit || !delta) c.fail("start, limit and delta must be constants");
  if (*delta == 0) c.fail("delta must not be 0");
  double count = std::ceil((*limit - *start) / *delta);
  if (!std::isfinite(count) && !(count < 0))
    c.fail(fmt::format("start {}, limit {} and delta {} give no finite length", *start, *limit,
                       *delta));
  if (count > static_cast<double>(kMaxElements))
    c.fail(fmt::format("{} elements are too many", count));
  int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
  c.set_output(0, c.dtype(0), Shape({n}));
}

void depth_to_space(InferContext& c) {
  c.string_attr("mode", "DCR", {"DCR", "CRD"});
  const Shape& in = c.shape(0);
  int64_t b = c.attrs().require_int("blocksize");
  if (in.rank() != 4 || b <= 0 || b > (1 << 20) || in[1] % (b * b) != 0)
    c.fail(
        fmt::format("needs NCHW input with channels divisible by blocksize^2 (blocksize {})", b));
  c.set_output(0, c.dtype(0),
               Shape({in[0], in[1] / (b * b), checked_mul(in[2], b, "height"),
                      checked_mul(in[3], b, "width")}));
}

// ONNX Resize: floating-point data; the output shape from the constant scales or sizes.
void resize(InferContext& c) {
  if (!is_floating(c.dtype(0)))
    throw UnsupportedOpError(fmt::format("{}: Resize of {} data is not supported (floating point)",
                                         describe(c.graph(), c.node()), dtype_name(c.dtype(0))),
                             {"Resize (integer data)"});
  c.set_output(0, c.dtype(0), resize_output_shape(c.graph(), c.node(), c.shape(0)));
}

void space_to_depth(InferContext& c) {
  const Shape& in = c.shape(0);
  int64_t b = c.attrs().require_int("blocksize");
  if (in.rank() != 4 || b <= 0 || b > (1 << 20) || in[2] % b != 0 || in[3] % b != 0)
    c.fail(fmt::format("needs NCHW input with H and W divisible by blocksize {}", b));
  c.set_output(0, c.dtype(0),
               Shape({in[0], checked_mul(in[1], b * b, "channels"), in[2] / b, in[3] / b}));
}

// ONNX Trilu: the last two axes are the matrices; k is an optional int64 scalar.
void trilu(InferContext& c) {
  c.expect_rank_at_least(0, 2);
  c.int_attr("upper", 1, 0, 1);
  if (c.has_input(1)) {
    c.expect_dtype(1, {DType::i32, DType::i64});
    c.expect_scalar(1);
  }
  c.set_output(0, c.dtype(0), c.shape(0));
}

// ONNX CumSum: axis is an int32/int64 scalar in [-rank, rank - 1].
void cumsum(InferContext& c) {
  c.expect_dtype(0, {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i32, DType::i64});
  c.expect_rank_at_least(0, 1);
  c.expect_dtype(1, {DType::i32, DType::i64});
  c.expect_scalar(1);
  c.int_attr("exclusive", 0, 0, 1);
  c.int_attr("reverse", 0, 0, 1);
  if (c.constant(1)) normalize_axis(c.ints(1).at(0), c.shape(0).rank(), "CumSum axis");
  c.set_output(0, c.dtype(0), c.shape(0));
}

void eye_like(InferContext& c) {
  if (c.shape(0).rank() != 2) c.fail("input must be 2-D");
  std::string name = c.attrs().get_string("dtype", "");
  DType t = c.dtype(0);
  if (!name.empty()) {
    auto parsed = parse_dtype(name);
    if (!parsed) c.fail(fmt::format("unknown dtype '{}'", name));
    t = *parsed;
  }
  c.set_output(0, t, c.shape(0));
}

}  // namespace mimic::ir::infer
