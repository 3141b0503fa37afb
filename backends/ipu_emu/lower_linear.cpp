// Lowering of matrix products (MatMul, Gemm, Conv, ConvTranspose) and windowed vector ops
// (depthwise convolution, MaxPool, AveragePool) through the planner.
#include <fmt/format.h>

#include "backends/ipu_emu/linear_plan.h"
#include "backends/ipu_emu/lowering.h"
#include "frontend/ir/nn_geometry.h"

namespace mimic::backends::ipu_emu {

using models::ipu::NumberFormat;

namespace {

NumberFormat partials_for(const LowerContext& c, NumberFormat in) {
  return in == NumberFormat::f16 && c.options.half_partials ? NumberFormat::f16 : NumberFormat::f32;
}

// Plans `p`, takes tiles, places operands and outputs, builds the supersteps.
LoweredOp finish_linear(LowerContext& c, const ir::Node& n, LinearProblem p, ir::ValueId a,
                        ir::ValueId b, ir::ValueId bias, const std::string& shape_text) {
  LoweredOp op;
  if (c.placed[a]) p.a_send_per_tile = c.placement[a].bytes_per_tile;
  if (b != ir::kNoValue && c.placed[b] && !p.weights_stored)
    p.b_send_per_tile = c.placement[b].bytes_per_tile;
  LinearPlan plan = plan_linear(c.specs, p, c.cursor.tiles(), c.options.memory_proportion);
  TileSpan span = c.cursor.take(plan.tiles);
  Placement pa = operand(c, op, a, span);
  TileSpan b_span = span;
  if (b != ir::kNoValue) b_span = operand(c, op, b, span).span;
  if (bias != ir::kNoValue) operand(c, op, bias, span);
  p.a_send_per_tile = pa.bytes_per_tile;
  std::string label = p.label;
  op.steps = linear_steps(c.specs, p, plan, span, pa.span, b_span, c.op_index, c.labels->id(label),
                          c.labels->id(plan.ks > 1 ? label + " reduce" : label + " bias/cast"));
  op.temp_span = span;
  op.temp_exchange = plan.exchange_bytes;
  op.temp_partials = plan.partials_bytes;
  place_outputs(c, op, n, span);
  op.est_cycles = plan.cycles;
  op.plan = fmt::format("{} {}: split {}{}", label, shape_text, plan.describe(),
                        plan.fits ? "" : " (over budget)");
  op.planned = true;
  op.split[0] = plan.gs, op.split[1] = plan.ms, op.split[2] = plan.ns, op.split[3] = plan.ks;
  op.plan_tiles = plan.tiles;
  op.recipe.half_partials = p.partials == NumberFormat::f16;
  op.recipe.k_bounds = k_chunks(p, plan);
  return op;
}

}  // namespace

// Along each spatial dimension n outputs read (n - 1) * min(stride, extent) + extent inputs
// (extent = the block's dilated kernel), so strided windows that skip inputs do not exchange
// them; a block spanning several images reads its share of whole images, a block inside an image
// a band of rows.
std::function<uint64_t(uint64_t, const std::vector<uint64_t>&)> window_input_pixels(
    const ir::WindowGeometry& g) {
  auto needed = [g](int d, uint64_t n, const std::vector<uint64_t>& kb) -> uint64_t {
    uint64_t k = kb.empty() ? static_cast<uint64_t>(g.kernel[d]) : kb[d];
    uint64_t extent = (k - 1) * g.dilations[d] + 1;
    uint64_t step = std::min<uint64_t>(g.strides[d], extent);
    return std::min<uint64_t>(g.in_size[d] + g.pad_begin[d] + g.pad_end[d],
                              (n - 1) * step + extent);
  };
  return [g, needed](uint64_t rows, const std::vector<uint64_t>& kb) -> uint64_t {
    uint64_t out_sp = static_cast<uint64_t>(g.out_spatial());
    if (g.spatial_rank == 0) return rows;
    uint64_t rest = 1;
    for (int d = 1; d < g.spatial_rank; ++d) rest *= needed(d, g.out_size[d], kb);
    if (rows >= out_sp) return ceil_div(rows * needed(0, g.out_size[0], kb) * rest, out_sp);
    uint64_t row_len = out_sp / static_cast<uint64_t>(g.out_size[0]);
    return needed(0, ceil_div(rows, row_len), kb) * rest;
  };
}

std::vector<uint64_t> kernel_dims(const ir::WindowGeometry& g) {
  std::vector<uint64_t> k;
  for (int d = 0; d < g.spatial_rank; ++d) k.push_back(static_cast<uint64_t>(g.kernel[d]));
  return k;
}

LoweredOp lower_matmul(LowerContext& c, const ir::Node& n) {
  const ir::Shape& sa = c.shapes[n.inputs[0]];
  const ir::Shape& sb = c.shapes[n.inputs[1]];
  LinearProblem p;
  int64_t m, k, cols, groups = 1, rows;
  if (n.op == ir::OpType::Gemm) {
    bool ta = n.attrs.get_int("transA", 0) != 0, tb = n.attrs.get_int("transB", 0) != 0;
    m = ta ? sa[1] : sa[0];
    k = ta ? sa[0] : sa[1];
    cols = tb ? sb[0] : sb[1];
    rows = m;
    p.has_bias = n.has_input(2);
  } else {
    ir::Shape a = sa.rank() == 1 ? ir::Shape({1, sa[0]}) : sa;
    ir::Shape b = sb.rank() == 1 ? ir::Shape({sb[0], 1}) : sb;
    m = a.dim(-2), k = a.dim(-1), cols = b.dim(-1);
    int64_t batch_a = a.product(0, a.rank() - 2), batch_b = b.product(0, b.rank() - 2);
    int64_t out = c.shapes[n.outputs[0]].numel();
    if (batch_b == 1) {
      rows = batch_a * m;
    } else {
      groups = std::max<int64_t>(1, out / std::max<int64_t>(1, m * cols));
      rows = m;
    }
  }
  p.groups = static_cast<uint64_t>(groups);
  p.rows = static_cast<uint64_t>(rows);
  p.cols = static_cast<uint64_t>(cols);
  p.in_channels = static_cast<uint64_t>(k);
  p.in_format = value_format(c, n.inputs[0]);
  p.partials = partials_for(c, p.in_format);
  p.out_format = value_format(c, n.outputs[0]);
  p.weights_stored = c.graph.value(n.inputs[1]).constant != nullptr;
  p.b_total_bytes = value_bytes(c, n.inputs[1]);
  p.input_pixels = [](uint64_t r, const std::vector<uint64_t>&) { return r; };
  p.label = n.op == ir::OpType::Gemm ? "gemm" : "matmul";
  std::string shape =
      fmt::format("{}[{}x{}x{}]", groups > 1 ? fmt::format("{}x", groups) : "", rows, k, cols);
  LoweredOp op = finish_linear(c, n, p, n.inputs[0], n.inputs[1],
                               n.has_input(2) ? n.inputs[2] : ir::kNoValue, shape);
  op.recipe.kind = RecipeKind::matmul;
  return op;
}

LoweredOp lower_conv(LowerContext& c, const ir::Node& n) {
  bool transpose = n.op == ir::OpType::ConvTranspose;
  const ir::Shape& x = c.shapes[n.inputs[0]];
  const ir::Shape& w = c.shapes[n.inputs[1]];
  ir::WindowGeometry g = ir::window_geometry(
      n, x, &w, transpose ? ir::WindowKind::conv_transpose : ir::WindowKind::conv);
  uint64_t cg = g.in_channels / g.group, mg = g.out_channels / g.group, kvol = g.kernel_volume();
  bool depthwise = !transpose && g.group == g.in_channels && g.group > 1;
  LinearProblem p;
  p.groups = g.group;
  p.in_format = value_format(c, n.inputs[0]);
  p.partials = partials_for(c, p.in_format);
  p.out_format = value_format(c, n.outputs[0]);
  p.weights_stored = c.graph.value(n.inputs[1]).constant != nullptr;
  p.b_total_bytes = value_bytes(c, n.inputs[1]);
  p.has_bias = n.has_input(2);
  if (transpose) {
    // Each input pixel scatters a [Mg x kernel] window: a matrix product over input pixels.
    p.rows = g.batch * g.in_spatial();
    p.cols = mg * kvol;
    p.in_channels = cg;
    p.input_pixels = [](uint64_t r, const std::vector<uint64_t>&) { return r; };
    p.label = "conv_transpose";
  } else {
    p.rows = g.batch * g.out_spatial();
    p.cols = mg;
    p.in_channels = depthwise ? 1 : cg;
    p.kvol = kvol;
    p.vector_path = depthwise;
    if (depthwise) p.kernel = kernel_dims(g);
    p.input_pixels = window_input_pixels(g);
    if (!depthwise && kvol >= 16 && kvol > 4 * static_cast<uint64_t>(g.out_spatial())) {
      // A kernel much wider than its output (a weight gradient: dy as the kernel over the whole
      // input; not a 3x3 layer on a 1x1 map) is planned as its im2col product, K = channels x taps
      // split across tiles, as poplin's weight-update passes split the batch and field; each tile
      // gathers its block of windows.
      p.in_channels = cg * kvol;
      p.kvol = 1;
      p.input_pixels = [](uint64_t r, const std::vector<uint64_t>&) { return r; };
    }
    p.label = depthwise ? "depthwise conv" : "conv";
  }
  std::string shape = fmt::format("{}x{} k{} g{} -> {}", x.str(), w.str(), kvol, g.group,
                                  c.shapes[n.outputs[0]].str());
  LoweredOp op = finish_linear(c, n, p, n.inputs[0], n.inputs[1],
                               n.has_input(2) ? n.inputs[2] : ir::kNoValue, shape);
  bool two_d = g.spatial_rank == 2 && !transpose;
  if (two_d && depthwise && !g.channels_last && cg == 1 && mg == 1)
    op.recipe.kind = RecipeKind::depthwise;
  else if (two_d && !depthwise)
    op.recipe.kind = RecipeKind::conv;
  else
    op.recipe = OpRecipe{};  // reference kernel; no K split in the numerics
  return op;
}

LoweredOp lower_pool(LowerContext& c, const ir::Node& n) {
  ir::WindowGeometry g =
      ir::window_geometry(n, c.shapes[n.inputs[0]], nullptr, ir::WindowKind::pool);
  bool max = n.op == ir::OpType::MaxPool;
  LinearProblem p;
  p.groups = g.in_channels;
  p.rows = g.batch * g.out_spatial();
  p.cols = 1;
  p.in_channels = 1;
  p.kvol = g.kernel_volume();
  p.kernel = kernel_dims(g);
  p.vector_path = true;
  p.has_b = false;
  p.in_format = p.out_format = value_format(c, n.inputs[0]);
  // Partial maxima are exact in the input format; partial sums of an average are fp32, scaled
  // (and cast) once after the K split's reduction.
  p.partials = max ? p.in_format : NumberFormat::f32;
  p.post_reduce_ops = max ? 0 : 1;
  p.input_pixels = window_input_pixels(g);
  p.label = max ? "maxpool" : "avgpool";
  std::string shape = fmt::format("{} k{}", c.shapes[n.inputs[0]].str(), p.kvol);
  LoweredOp op = finish_linear(c, n, p, n.inputs[0], ir::kNoValue, ir::kNoValue, shape);
  // Reference kernel: a maximum does not depend on the order of the split; an average's fp32
  // sum differs from the tiles' chunked order only by rounding.
  op.recipe = OpRecipe{};
  return op;
}

}  // namespace mimic::backends::ipu_emu
