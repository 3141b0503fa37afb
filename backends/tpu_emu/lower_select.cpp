// Lowering of the vector-unit ops beyond arithmetic maps: comparisons and logic (bool results held
// as 0/1 in the fp32 lanes, as XLA's PRED vectors are masks on the VPU), Where and Clip with
// runtime bounds (selects), variadic Sum/Mean/Max/Min (one loop fusion over all operands, as XLA
// fuses the chain of binary ops), Cast (bf16 rounding on store, truncation toward zero for integer
// targets, != 0 for bool), ArgMax/ArgMin (a reduction that carries the index, XLA's variadic
// reduce), Mod, IsNaN/IsInf/Not, LayerNormalization's Mean and InvStdDev outputs, ScatterND of rows
// and Gather (embedding lookups: one DMA per gathered row, XLA's dynamic-slice gather on TPU),
// MaxPoolGrad (XLA's SelectAndScatter).
//
// Integer values (indices, casts, ArgMax results) live in fp32 lanes and are exact up to 2^24
// (kExactIntegerLimit); supports_node() only admits integer data where that holds by construction
// (indices of tensors that fit memory, truncated floats) or is checked on the way in (graph inputs
// of integer type are checked by the backend when they are sent).
#include <fmt/format.h>
#include <cmath>
#include <utility>

#include "backends/tpu_emu/fusion.h"
#include "backends/tpu_emu/layout.h"
#include "backends/tpu_emu/lowering.h"
#include "base/error.h"
#include "frontend/ir/nn_geometry.h"
#include "frontend/ir/op_helpers.h"

namespace mimic::backends::tpu_emu {

using namespace models::tpu;
using ir::OpType;

namespace {

// One elementwise kernel over the output's dims with numpy broadcasting of every input.
void elementwise(Context& c, const ir::Node& n, VectorFunc f, const std::vector<int32_t>& inputs,
                 float p0 = 0, float p1 = 0, VectorFunc activation = VectorFunc::identity,
                 float activation_p0 = 0) {
  const std::vector<int64_t> out_dims = c.g.value(n.outputs[0]).type.shape.dims();
  VectorDesc d;
  d.func = f;
  d.p0 = p0;
  d.p1 = p1;
  d.in = inputs;
  d.dims = out_dims;
  for (int32_t x : d.in) d.in_strides.push_back(broadcast_strides(c.p.tensors[x].dims, out_dims));
  d.out = c.produce(n.outputs[0]);
  d.epi.store = c.store_rounding(n.outputs[0]);
  d.epi.activation = activation;
  d.epi.p0 = activation_p0;
  emit_vector_desc(c, n, std::move(d), dims_product(out_dims), 0);
}

bool compare_func(OpType op, VectorFunc* f) {
  switch (op) {
    case OpType::Equal:
      *f = VectorFunc::equal;
      return true;
    case OpType::Less:
      *f = VectorFunc::less;
      return true;
    case OpType::LessOrEqual:
      *f = VectorFunc::less_equal;
      return true;
    case OpType::Greater:
      *f = VectorFunc::greater;
      return true;
    case OpType::GreaterOrEqual:
      *f = VectorFunc::greater_equal;
      return true;
    case OpType::And:
      *f = VectorFunc::logical_and;
      return true;
    case OpType::Or:
      *f = VectorFunc::logical_or;
      return true;
    case OpType::Xor:
      *f = VectorFunc::logical_xor;
      return true;
    default:
      return false;
  }
}

// Cast between the chip's dtypes: floats round on store, integers truncate, bool tests != 0.
VectorFunc cast_func(ir::DType from, ir::DType to) {
  if (to == ir::DType::boolean) return VectorFunc::nonzero;
  bool int_target = to == ir::DType::i32 || to == ir::DType::i64;
  bool float_source = from == ir::DType::f32 || from == ir::DType::bf16;
  return int_target && float_source ? VectorFunc::trunc : VectorFunc::identity;
}

// ArgMax/ArgMin over one axis: [outer, axis, inner] -> [outer, inner] indices.
void lower_arg_reduce(Context& c, const ir::Node& n) {
  VectorDesc d;
  d.func = n.op == OpType::ArgMax ? VectorFunc::arg_max : VectorFunc::arg_min;
  d.p0 = n.attrs.get_int("select_last_index", 0) != 0 ? 1.0f : 0.0f;
  d.in = {c.tensor(n.inputs[0])};
  // A copy: producing a tensor may move p.tensors.
  const std::vector<int64_t> x = c.p.tensors[d.in[0]].dims;
  int axis =
      ir::normalize_axis(n.attrs.get_int("axis", 0), static_cast<int>(x.size()), "ArgMax axis");
  d.outer = dims_product(x, 0, axis);
  d.axis = x[axis];
  d.inner = dims_product(x, axis + 1, x.size());
  d.out = c.produce(n.outputs[0]);
  const int64_t rows = d.outer * d.inner;
  emit_vector_desc(c, n, std::move(d), rows, 0);
}

// Gather along `axis`: output rows (outer, index) copy `inner` contiguous elements each, one DMA
// run per row from the table's home to the output's (the indices are read first, on chip).
void lower_gather(Context& c, const ir::Node& n) {
  VectorDesc d;
  d.func = VectorFunc::gather;
  d.in = {c.tensor(n.inputs[0]), c.tensor(n.inputs[1])};
  // A copy: producing a tensor may move p.tensors.
  const std::vector<int64_t> x = c.p.tensors[d.in[0]].dims;
  int axis =
      ir::normalize_axis(n.attrs.get_int("axis", 0), static_cast<int>(x.size()), "Gather axis");
  d.outer = dims_product(x, 0, axis);
  d.axis = x[axis];
  d.inner = dims_product(x, axis + 1, x.size());
  const int64_t count = c.p.tensors[d.in[1]].numel();
  d.p0 = static_cast<float>(count);
  d.out = c.produce(n.outputs[0]);
  d.epi.store = c.store_rounding(n.outputs[0]);
  int32_t kid = c.add_kernel(vector_kernel(d));
  VectorTiling t;
  t.rows = d.outer * count;
  t.output = d.out;
  const double row_bytes = static_cast<double>(
      round_up(std::max<int64_t>(d.inner, 1), c.spec.vpu.lanes) * c.element_bytes(d.out));
  t.output_bytes_per_row = row_bytes;
  t.inputs = {d.in[0], d.in[1]};
  t.input_bytes_per_row = {row_bytes, static_cast<double>(c.element_bytes(d.in[1]))};
  t.vector_instruction = false;
  t.runs_per_row = 1;
  emit_vector_kernel(c, n, kid, t);
}

// ScatterND of rows (indices [count, 1]) over data [axis, inner], written or added: each output row
// is data's row, then the update rows aimed at it. Modeled: data and output stream once; the
// indices and update rows are spread over the output rows (their average share each).
void lower_scatter_nd(Context& c, const ir::Node& n) {
  VectorDesc d;
  d.func = VectorFunc::scatter;
  d.in = {c.tensor(n.inputs[0]), c.tensor(n.inputs[1]), c.tensor(n.inputs[2])};
  const std::vector<int64_t> x = c.p.tensors[d.in[0]].dims;
  d.axis = x[0];
  d.inner = dims_product(x, 1, x.size());
  const int64_t count = c.p.tensors[d.in[1]].numel();
  d.p0 = static_cast<float>(count);
  d.p1 = n.attrs.get_string("reduction", "none") == "add" ? 1.0f : 0.0f;
  d.out = c.produce(n.outputs[0]);
  d.epi.store = c.store_rounding(n.outputs[0]);
  int32_t kid = c.add_kernel(vector_kernel(d));
  VectorTiling t;
  t.rows = std::max<int64_t>(d.axis, 1);
  t.output = d.out;
  const double row_bytes = static_cast<double>(
      round_up(std::max<int64_t>(d.inner, 1), c.spec.vpu.lanes) * c.element_bytes(d.out));
  const double share = static_cast<double>(count) / static_cast<double>(t.rows);
  t.output_bytes_per_row = row_bytes;
  t.inputs = {d.in[0], d.in[1], d.in[2]};
  t.input_bytes_per_row = {row_bytes, c.element_bytes(d.in[1]) * share, row_bytes * share};
  t.elements_per_row = static_cast<double>(d.inner) * (1.0 + share);
  emit_vector_kernel(c, n, kid, t);
}

// Variadic Sum/Mean/Max/Min: one fused loop over all operands (Mean scales by 1/k on store).
void lower_variadic(Context& c, const ir::Node& n) {
  std::vector<int32_t> in;
  for (int i = 0; i < n.num_inputs(); ++i)
    if (n.has_input(i)) in.push_back(c.tensor(n.inputs[i]));
  VectorFunc f = n.op == OpType::Max   ? VectorFunc::max
                 : n.op == OpType::Min ? VectorFunc::min
                                       : VectorFunc::add;
  if (in.size() == 1) f = VectorFunc::identity;
  if (n.op == OpType::Mean)
    elementwise(c, n, f, in, 0, 0, VectorFunc::scale, 1.0f / static_cast<float>(in.size()));
  else
    elementwise(c, n, f, in);
}

// Clip with runtime bounds: a select against each present bound.
void lower_clip(Context& c, const ir::Node& n) {
  int32_t x = c.tensor(n.inputs[0]);
  bool lo = n.has_input(1), hi = n.has_input(2);
  if (lo && hi)
    elementwise(c, n, VectorFunc::clamp, {x, c.tensor(n.inputs[1]), c.tensor(n.inputs[2])});
  else if (lo)
    elementwise(c, n, VectorFunc::max, {x, c.tensor(n.inputs[1])});
  else
    elementwise(c, n, VectorFunc::min, {x, c.tensor(n.inputs[2])});
}

}  // namespace

// LayerNormalization's optional Mean and InvStdDev outputs ([outer dims, 1...]): reductions over
// the normalized axes, fused by XLA into the normalization's loop; here separate kernels that
// each read the input once more.
void lower_layer_norm_stats(Context& c, const ir::Node& n) {
  // A copy: producing a tensor may move p.tensors.
  const std::vector<int64_t> x = c.p.tensors[c.tensor(n.inputs[0])].dims;
  int axis = ir::normalize_axis(n.attrs.get_int("axis", -1), static_cast<int>(x.size()),
                                "LayerNormalization axis");
  for (int o = 1; o <= 2 && o < static_cast<int>(n.outputs.size()); ++o) {
    if (n.outputs[o] == ir::kNoValue) continue;
    VectorDesc d;
    d.func = o == 1 ? VectorFunc::mean : VectorFunc::inv_std_dev;
    d.in = {c.tensor(n.inputs[0])};
    d.outer = dims_product(x, 0, axis);
    d.axis = dims_product(x, axis, x.size());
    d.inner = 1;
    d.epsilon = static_cast<float>(n.attrs.get_float("epsilon", 1e-5));
    d.out = c.produce(n.outputs[o]);
    d.epi.store = c.store_rounding(n.outputs[o]);
    const int64_t rows = d.outer;
    emit_vector_desc(c, n, std::move(d), rows, 0);
  }
}

// MaxPoolGrad(X, Y, dY) as XLA lowers a max pool's gradient, one SelectAndScatter pass on the
// vector unit: for every pooled element, compare its window's inputs to find the selected one,
// then add its gradient there; dX is written once, in fp32 on every chip. Rows are dX's input rows
// (n, ih), or (n, channel, ih) channels-first, so that chunks write disjoint rows; X, Y and dY
// stream by the same share of rows (window halos ignored, as the forward pool's).
void lower_max_pool_grad(Context& c, const ir::Node& n) {
  VectorDesc d;
  d.func = VectorFunc::max_pool_grad;
  d.window = window_2d(ir::window_geometry(c.g, n), false);
  Window& w = d.window;
  w.channel_rows = !w.channels_last;
  d.in = {c.tensor(n.inputs[0]), c.tensor(n.inputs[1]), c.tensor(n.inputs[2])};
  d.out = c.produce(n.outputs[0]);
  d.epi.store = c.store_rounding(n.outputs[0]);
  const int64_t rows = w.n * w.h * (w.channel_rows ? w.c : 1);
  // Select: one compare per window element of every pooled element; scatter: one add each; and
  // dX written once.
  const double pooled = static_cast<double>(c.tiled_elements(d.in[2]));
  const double work =
      pooled * static_cast<double>(w.kh * w.kw + 1) + static_cast<double>(c.tiled_elements(d.out));
  emit_vector_desc(c, n, std::move(d), rows, work / static_cast<double>(rows));
}

bool lower_select_node(Context& c, const ir::Node& n) {
  auto in = [&](int i) { return c.tensor(n.inputs[i]); };
  VectorFunc f;
  if (compare_func(n.op, &f)) {
    elementwise(c, n, f, {in(0), in(1)});
    return true;
  }
  switch (n.op) {
    case OpType::MaxPoolGrad:
      lower_max_pool_grad(c, n);
      return true;
    case OpType::Mod:
      elementwise(c, n, n.attrs.get_int("fmod", 0) ? VectorFunc::fmod : VectorFunc::mod,
                  {in(0), in(1)});
      return true;
    case OpType::Not:
      elementwise(c, n, VectorFunc::logical_not, {in(0)});
      return true;
    case OpType::IsNaN:
      elementwise(c, n, VectorFunc::is_nan, {in(0)});
      return true;
    case OpType::IsInf:
      elementwise(c, n, VectorFunc::is_inf, {in(0)},
                  n.attrs.get_int("detect_positive", 1) ? 1.0f : 0.0f,
                  n.attrs.get_int("detect_negative", 1) ? 1.0f : 0.0f);
      return true;
    case OpType::Cast:
      elementwise(c, n,
                  cast_func(c.g.value(n.inputs[0]).type.dtype, c.g.value(n.outputs[0]).type.dtype),
                  {in(0)});
      return true;
    case OpType::Where:
      elementwise(c, n, VectorFunc::where, {in(0), in(1), in(2)});
      return true;
    case OpType::Clip: {
      float p0, p1;
      if (unary_func(c.g, n, &f, &p0, &p1)) return false;  // constant bounds: a plain clip
      lower_clip(c, n);
      return true;
    }
    case OpType::Sum:
    case OpType::Mean:
    case OpType::Max:
    case OpType::Min:
      lower_variadic(c, n);
      return true;
    case OpType::ArgMax:
    case OpType::ArgMin:
      lower_arg_reduce(c, n);
      return true;
    case OpType::Gather:
      lower_gather(c, n);
      return true;
    case OpType::ScatterND:
      lower_scatter_nd(c, n);
      return true;
    default:
      return false;
  }
}

}  // namespace mimic::backends::tpu_emu
