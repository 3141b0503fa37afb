// Shape inference: matrix products, convolutions, pools and reductions.
#include <fmt/format.h>
#include <algorithm>

#include "base/error.h"
#include "frontend/ir/nn_geometry.h"
#include "frontend/ir/op_helpers.h"
#include "frontend/ir/shape_inference.h"

namespace mimic::ir::infer {
namespace {

void expect_float_or_i8(InferContext& c, int i) {
  if (!is_floating(c.dtype(i)) && c.dtype(i) != DType::i8)
    c.fail(fmt::format("input {} is {}, expected a floating-point (or i8) tensor", i,
                       dtype_name(c.dtype(i))));
}

Shape output_of_window(const WindowGeometry& g, int64_t channels) {
  std::vector<int64_t> dims{g.batch};
  if (!g.channels_last) dims.push_back(channels);
  for (int64_t d : g.out_size) dims.push_back(d);
  if (g.channels_last) dims.push_back(channels);
  return Shape(dims);
}

WindowGeometry geometry(InferContext& c, WindowKind kind) {
  try {
    return window_geometry(c.node(), c.shape(0), kind == WindowKind::pool ? nullptr : &c.shape(1),
                           kind);
  } catch (const ShapeError& e) {
    std::string msg = e.what();
    auto pos = msg.find("): ");
    c.fail(pos == std::string::npos ? msg : msg.substr(pos + 3));
  }
}

void check_bias(InferContext& c, int64_t channels) {
  if (!c.has_input(2)) return;
  if (c.shape(2).rank() != 1 || c.shape(2)[0] != channels)
    c.fail(fmt::format("bias must have shape [{}]", channels));
  if (c.dtype(0) == DType::i8)
    c.expect_dtype(2, {DType::i8, DType::i32});
  else
    c.expect_same_dtype(0, 2);
}

void check_flag(InferContext& c, const char* name) {
  c.int_attr(name, 0, 0, 1);
}

}  // namespace

void matmul(InferContext& c) {
  expect_float_or_i8(c, 0);
  c.expect_same_dtype(0, 1);
  Shape a = c.shape(0), b = c.shape(1);
  if (a.rank() == 0 || b.rank() == 0) c.fail("MatMul inputs must have rank >= 1");
  bool a_vec = a.rank() == 1, b_vec = b.rank() == 1;
  if (a_vec) a = Shape({1, a[0]});
  if (b_vec) b = Shape({b[0], 1});
  int64_t k = a.dim(-1);
  if (k != b.dim(-2) || k == kBatch)
    c.fail(fmt::format("inner dimensions differ: {} x {}", c.shape(0).str(), c.shape(1).str()));
  Shape batch_a(std::vector<int64_t>(a.dims().begin(), a.dims().end() - 2));
  Shape batch_b(std::vector<int64_t>(b.dims().begin(), b.dims().end() - 2));
  Shape batch;
  try {
    batch = broadcast_shapes(batch_a, batch_b, "MatMul");
  } catch (const ShapeError&) {
    c.fail(
        fmt::format("batch dimensions {} and {} do not broadcast", batch_a.str(), batch_b.str()));
  }
  std::vector<int64_t> dims = batch.dims();
  if (!a_vec) dims.push_back(a.dim(-2));
  if (!b_vec) dims.push_back(b.dim(-1));
  DType out = c.dtype(0) == DType::i8 ? DType::i32 : c.dtype(0);
  c.set_output(0, out, Shape(dims));
}

void gemm(InferContext& c) {
  expect_float_or_i8(c, 0);
  c.expect_same_dtype(0, 1);
  const Shape& a = c.shape(0);
  const Shape& b = c.shape(1);
  if (a.rank() != 2 || b.rank() != 2) c.fail("Gemm inputs A and B must be 2-D");
  bool ta = c.int_attr("transA", 0, 0, 1) != 0, tb = c.int_attr("transB", 0, 0, 1) != 0;
  c.float_attr("alpha", 1.0, -1e30, 1e30);
  c.float_attr("beta", 1.0, -1e30, 1e30);
  int64_t m = ta ? a[1] : a[0], ka = ta ? a[0] : a[1];
  int64_t kb = tb ? b[1] : b[0], n = tb ? b[0] : b[1];
  if (ka != kb || ka == kBatch)
    c.fail(fmt::format("inner dimensions differ (K={} vs K={}) with transA={} transB={}", ka, kb,
                       ta, tb));
  Shape out({m, n});
  if (c.has_input(2)) {
    c.expect_same_dtype(0, 2);
    if (!broadcasts_to(c.shape(2), out))
      c.fail(fmt::format("C of shape {} does not broadcast to {}", c.shape(2).str(), out.str()));
  }
  c.set_output(0, c.dtype(0), out);
}

void conv(InferContext& c) {
  expect_float_or_i8(c, 0);
  c.expect_same_dtype(0, 1);
  WindowGeometry g = geometry(c, WindowKind::conv);
  check_bias(c, g.out_channels);
  DType out = c.dtype(0) == DType::i8 ? DType::i32 : c.dtype(0);
  c.set_output(0, out, output_of_window(g, g.out_channels));
}

void conv_transpose(InferContext& c) {
  expect_float_or_i8(c, 0);
  c.expect_same_dtype(0, 1);
  WindowGeometry g = geometry(c, WindowKind::conv_transpose);
  check_bias(c, g.out_channels);
  c.set_output(0, c.dtype(0), output_of_window(g, g.out_channels));
}

void pool(InferContext& c) {
  expect_float_or_i8(c, 0);
  if (c.attrs().get_ints("kernel_shape").empty()) c.fail("attribute kernel_shape is required");
  check_flag(c, "ceil_mode");
  check_flag(c, "count_include_pad");
  check_flag(c, "storage_order");
  WindowGeometry g = geometry(c, WindowKind::pool);
  c.set_output(0, c.dtype(0), output_of_window(g, g.in_channels));
}

// MaxPoolGrad(X, Y, dY), f32: Y and dY have the shape MaxPool gives X; dX has X's.
void max_pool_grad(InferContext& c) {
  if (c.dtype(0) != DType::f32)
    c.fail(fmt::format("X is {}, MaxPoolGrad takes f32", dtype_name(c.dtype(0))));
  pool(c);
  const Shape pooled = c.outputs().at(0).shape;
  for (int i = 1; i < 3; ++i) {
    if (c.dtype(i) != c.dtype(0))
      c.fail(fmt::format("input {} is {}, X is {}", i, dtype_name(c.dtype(i)),
                         dtype_name(c.dtype(0))));
    if (c.shape(i) != pooled)
      c.fail(fmt::format("input {} has shape {}, the pool of X has {}", i, c.shape(i).str(),
                         pooled.str()));
  }
  c.set_output(0, c.dtype(0), c.shape(0));
}

void global_pool(InferContext& c) {
  expect_float_or_i8(c, 0);
  c.expect_rank_at_least(0, 3);
  Shape s = c.shape(0);
  bool last = is_channels_last(c.node());
  for (int i = last ? 1 : 2; i < s.rank() - (last ? 1 : 0); ++i) s[i] = 1;
  c.set_output(0, c.dtype(0), s);
}

void reduce(InferContext& c) {
  if (c.dtype(0) == DType::boolean) c.fail("cannot reduce a bool tensor");
  check_flag(c, "keepdims");
  check_flag(c, "noop_with_empty_axes");
  if (c.has_input(1)) {
    c.expect_dtype(1, {DType::i32, DType::i64});
    c.expect_rank_between(1, 1, 1);
  }
  std::vector<bool> reduced = resolve_reduce_axes(c.graph(), c.node());
  bool keep = c.attrs().get_int("keepdims", 1) != 0;
  std::vector<int64_t> dims;
  const Shape& s = c.shape(0);
  for (int i = 0; i < s.rank(); ++i) {
    if (!reduced[i])
      dims.push_back(s[i]);
    else if (keep)
      dims.push_back(1);
  }
  c.set_output(0, c.dtype(0), Shape(dims));
}

void arg_reduce(InferContext& c) {
  if (c.dtype(0) == DType::boolean) c.fail("cannot take ArgMax/ArgMin of a bool tensor");
  c.expect_rank_at_least(0, 1);
  check_flag(c, "keepdims");
  check_flag(c, "select_last_index");
  const Shape& s = c.shape(0);
  int axis = normalize_axis(c.attrs().get_int("axis", 0), s.rank(), c.node().name + " axis");
  bool keep = c.attrs().get_int("keepdims", 1) != 0;
  std::vector<int64_t> dims;
  for (int i = 0; i < s.rank(); ++i) {
    if (i != axis)
      dims.push_back(s[i]);
    else if (keep)
      dims.push_back(1);
  }
  c.set_output(0, DType::i64, Shape(dims));
}

}  // namespace mimic::ir::infer
