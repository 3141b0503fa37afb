// Lowering of data-movement ops as strided copies: Transpose (through the vector unit's transpose
// path when the minor dimension moves), Concat, Slice, Split, Pad (fill, then copy into the
// interior), Expand (zero strides), ConvTranspose's dilated input and Conv3d's depth unfolding.
// Copies that keep the minor dimension are single DMAs between the tensors' home memories (DMA
// engines take strided descriptors).
#include <fmt/format.h>
#include <algorithm>
#include <utility>

#include "backends/tpu_emu/layout.h"
#include "backends/tpu_emu/lowering.h"
#include "base/error.h"
#include "frontend/ir/op_helpers.h"

namespace mimic::backends::tpu_emu {

using namespace models::tpu;
using ir::OpType;

namespace {

// The kernel of one copy: dims iterated, src/dst element strides and offsets (src < 0: a fill).
int32_t copy_desc_kernel(Context& c, int32_t src, int32_t dst, const std::vector<int64_t>& dims,
                         const std::vector<int64_t>& src_strides, int64_t src_offset,
                         const std::vector<int64_t>& dst_strides, int64_t dst_offset,
                         bool transpose, float fill) {
  VectorDesc d;
  d.func = src < 0 ? VectorFunc::identity : transpose ? VectorFunc::transpose : VectorFunc::copy;
  d.p0 = fill;
  if (src >= 0) {
    d.in = {src};
    d.in_strides = {src_strides};
    d.in_offsets = {src_offset};
  }
  d.out = dst;
  d.dims = dims;
  d.out_strides = dst_strides;
  d.out_offset = dst_offset;
  d.epi.store = Rounding::none;
  Kernel k;
  k.kind = KernelKind::vector;
  k.vec = d;
  return c.add_kernel(k);
}

// One copy kernel: dims iterated, src/dst element strides and offsets.
void copy_kernel(Context& c, const ir::Node& n, int32_t src, int32_t dst,
                 const std::vector<int64_t>& dims, const std::vector<int64_t>& src_strides,
                 int64_t src_offset, const std::vector<int64_t>& dst_strides, int64_t dst_offset,
                 bool transpose, float fill = 0) {
  int32_t kid = copy_desc_kernel(c, src, dst, dims, src_strides, src_offset, dst_strides,
                                 dst_offset, transpose, fill);
  VectorTiling t;
  t.rows = dims_product(dims);
  t.output = dst;
  double out_eb = static_cast<double>(c.element_bytes(dst));
  // Tiled bytes of the region, spread over its elements.
  double region_tiled = static_cast<double>(tiled_elements(dims, c.spec.vpu));
  t.output_bytes_per_row = region_tiled * out_eb / std::max<int64_t>(t.rows, 1);
  if (src >= 0) {
    t.inputs = {src};
    t.input_bytes_per_row = {region_tiled * c.element_bytes(src) / std::max<int64_t>(t.rows, 1)};
  }
  t.elements_per_row = region_tiled / std::max<int64_t>(t.rows, 1);
  // Contiguous pieces: the innermost dimensions that are contiguous on both sides form one run.
  int64_t extent = 1;
  for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
    bool src_ok = src < 0 || src_strides[i] == extent;
    if (!src_ok || dst_strides[i] != extent) break;
    extent *= dims[i];
  }
  t.runs_per_row = 1.0 / static_cast<double>(std::max<int64_t>(extent, 1));
  t.ops = vector_ops_per_element(VectorFunc::transpose);
  t.vector_instruction = transpose || src < 0;
  emit_vector_kernel(c, n, kid, t);
}

// Expand into a value loop fusion keeps on chip (loop_fusion.h): the vector unit broadcasts the
// input, read from its home once, into the readers' tiles.
void broadcast_on_chip(Context& c, const ir::Node& n, int32_t x, int32_t y,
                       const std::vector<int64_t>& dims, const std::vector<int64_t>& strides) {
  int32_t kid = copy_desc_kernel(c, x, y, dims, strides, 0, row_major_strides(dims), 0, false, 0);
  VectorTiling t;
  t.rows = dims_product(dims);
  t.output = y;
  const double rows = static_cast<double>(std::max<int64_t>(t.rows, 1));
  t.inputs = {x};
  t.input_bytes_per_row = {static_cast<double>(c.tiled_elements(x) * c.element_bytes(x)) / rows};
  t.elements_per_row = static_cast<double>(tiled_elements(dims, c.spec.vpu)) / rows;
  t.ops = vector_ops_per_element(VectorFunc::copy);
  emit_vector_kernel(c, n, kid, t);
}

// Input indices [first, last) that land inside [0, size) at position i * stride + offset.
std::pair<int64_t, int64_t> landing_range(int64_t in, int64_t stride, int64_t offset,
                                          int64_t size) {
  int64_t first = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  int64_t last = size - 1 - offset < 0 ? 0 : std::min(in, (size - 1 - offset) / stride + 1);
  return {first, std::max(first, last)};
}

// Where x [N, C, H, W] (or [N, H, W, C]) lands in y [.., hs, ws, ..] placed by `in` (every sh-th
// row and sw-th column from (ph, pw)): the iterated dims, x's and y's element strides and offsets.
struct Placement {
  std::vector<int64_t> dims, x_strides, y_strides;
  int64_t x_offset = 0, y_offset = 0;
  bool empty = false;
};

Placement placement(const Window& in, int64_t hs, int64_t ws) {
  Placement p;
  auto [h0, h1] = landing_range(in.h, in.sh, in.ph, hs);
  auto [w0, w1] = landing_range(in.w, in.sw, in.pw, ws);
  p.empty = h1 <= h0 || w1 <= w0 || in.n * in.c == 0;
  const int64_t at = (h0 * in.sh + in.ph) * ws + w0 * in.sw + in.pw;  // first landing pixel
  if (in.channels_last) {  // pixels of C contiguous channels
    const std::vector<int64_t> os = row_major_strides({in.n, hs, ws, in.c});
    p.dims = {in.n, h1 - h0, w1 - w0, in.c};
    p.x_strides = row_major_strides({in.n, in.h, in.w, in.c});
    p.x_offset = (h0 * in.w + w0) * in.c;
    p.y_strides = {os[0], in.sh * ws * in.c, in.sw * in.c, 1};
    p.y_offset = at * in.c;
  } else {
    const std::vector<int64_t> os = row_major_strides({in.n, in.c, hs, ws});
    p.dims = {in.n, in.c, h1 - h0, w1 - w0};
    p.x_strides = row_major_strides({in.n, in.c, in.h, in.w});
    p.x_offset = h0 * in.w + w0;
    p.y_strides = {os[0], os[1], in.sh * ws, in.sw};
    p.y_offset = at;
  }
  return p;
}

}  // namespace

std::vector<int64_t> placed_dims(int64_t n, int64_t c, int64_t h, int64_t w, bool channels_last) {
  return channels_last ? std::vector<int64_t>{n, h, w, c} : std::vector<int64_t>{n, c, h, w};
}

void fill_placed(Context& c, const ir::Node& n, int32_t r, const Window& in, int32_t y) {
  const std::vector<int64_t> dims = placed_dims(in.n, in.c, in.oh, in.ow, in.channels_last);
  if (r >= 0)
    copy_kernel(c, n, r, y, dims, row_major_strides(dims), 0, row_major_strides(dims), 0, false);
  else
    copy_kernel(c, n, -1, y, dims, {}, 0, row_major_strides(dims), 0, false, 0.0f);
}

void place_phase(Context& c, const ir::Node& n, int32_t x, int32_t r, const Window& in, int32_t y,
                 Rounding store) {
  Placement p = placement(in, in.oh, in.ow);
  if (p.empty) return;
  if (r < 0) {
    copy_kernel(c, n, x, y, p.dims, p.x_strides, p.x_offset, p.y_strides, p.y_offset, false);
    return;
  }
  VectorDesc d;
  d.func = VectorFunc::add;
  d.in = {x, r};
  d.in_strides = {p.x_strides, p.y_strides};
  d.in_offsets = {p.x_offset, p.y_offset};
  d.out = y;
  d.dims = p.dims;
  d.out_strides = p.y_strides;
  d.out_offset = p.y_offset;
  d.epi.store = store;
  Kernel k;
  k.kind = KernelKind::vector;
  k.vec = d;
  const int32_t kid = c.add_kernel(k);
  VectorTiling t;
  t.rows = dims_product(p.dims);
  const double rows = static_cast<double>(std::max<int64_t>(t.rows, 1));
  const double tiled = static_cast<double>(tiled_elements(p.dims, c.spec.vpu));
  t.output = y;
  t.output_bytes_per_row = tiled * static_cast<double>(c.element_bytes(y)) / rows;
  t.inputs = {x, r};
  t.input_bytes_per_row = {tiled * static_cast<double>(c.element_bytes(x)) / rows,
                           tiled * static_cast<double>(c.element_bytes(r)) / rows};
  t.elements_per_row = tiled / rows;
  t.ops = vector_ops_per_element(VectorFunc::add);
  emit_vector_kernel(c, n, kid, t);
}

int32_t dilate_input(Context& c, const ir::Node& n, int32_t x, const Window& in, int64_t hs,
                     int64_t ws) {
  const std::vector<int64_t> dims = placed_dims(in.n, in.c, hs, ws, in.channels_last);
  int32_t y = c.scratch(n.name + ".dilated", dims, x);
  copy_kernel(c, n, -1, y, dims, {}, 0, row_major_strides(dims), 0, false, 0.0f);
  Placement p = placement(in, hs, ws);
  if (!p.empty)
    copy_kernel(c, n, x, y, p.dims, p.x_strides, p.x_offset, p.y_strides, p.y_offset, false);
  return y;
}

int32_t relayout(Context& c, const ir::Node& n, int32_t x, const std::vector<int64_t>& dims,
                 const std::vector<int64_t>& strides, int64_t offset) {
  int32_t y = c.scratch(n.name + ".relaid", dims, x);
  if (dims_product(dims) > 0)
    copy_kernel(c, n, x, y, dims, strides, offset, row_major_strides(dims), 0, false);
  return y;
}

int32_t unfold_depth(Context& c, const ir::Node& n, int32_t x, const ir::WindowGeometry& wg) {
  const int64_t batch = wg.batch, ch = wg.in_channels, depth = wg.in_size[0];
  const int64_t hw = wg.in_size[1] * wg.in_size[2], od = wg.out_size[0], kd = wg.kernel[0];
  const int64_t s = wg.strides[0], pad = wg.pad_begin[0], dil = wg.dilations[0];
  const int64_t groups = wg.group, cg = ch / groups;
  const std::vector<int64_t> dims{batch * od, ch * kd, wg.in_size[1], wg.in_size[2]};
  int32_t y = c.scratch(n.name + ".planes", dims);
  // Output slices [first, last) of tap k whose input plane od * s - pad + k * dil is inside.
  std::vector<std::pair<int64_t, int64_t>> range(kd);
  bool padded = false;
  for (int64_t k = 0; k < kd; ++k) {
    range[k] = landing_range(od, s, k * dil - pad, depth);
    padded = padded || range[k].first > 0 || range[k].second < od;
  }
  if (padded) copy_kernel(c, n, -1, y, dims, {}, 0, row_major_strides(dims), 0, false, 0.0f);
  const int64_t plane = ch * kd * hw;  // one output slice's image
  for (int64_t k = 0; k < kd; ++k) {
    auto [o0, o1] = range[k];
    if (o1 <= o0 || batch * ch * hw == 0) continue;
    copy_kernel(c, n, x, y, {batch, o1 - o0, groups, cg, hw},
                {ch * depth * hw, s * hw, cg * depth * hw, depth * hw, 1},
                (o0 * s - pad + k * dil) * hw, {od * plane, plane, kd * cg * hw, hw, 1},
                o0 * plane + k * cg * hw, false);
  }
  return y;
}

void fold_depth(Context& c, const ir::Node& n, int32_t src, int32_t dst,
                const ir::WindowGeometry& wg) {
  const int64_t m = wg.out_channels, od = wg.out_size[0], ohw = wg.out_size[1] * wg.out_size[2];
  const std::vector<int64_t> dims{wg.batch, m, od, ohw};
  if (wg.batch * m * od * ohw == 0) return;
  copy_kernel(c, n, src, dst, dims, {od * m * ohw, ohw, m * ohw, 1}, 0, row_major_strides(dims), 0,
              false);
}

namespace {

// Each input copied into its place along the axis.
void lower_concat(Context& c, const ir::Node& n, int rank) {
  int32_t y = c.produce(n.outputs[0]);
  std::vector<int64_t> out_dims = c.p.tensors[y].dims, os = row_major_strides(out_dims);
  int axis = ir::normalize_axis(n.attrs.get_int("axis", 0), rank, "Concat axis");
  int64_t offset = 0;
  for (int i = 0; i < n.num_inputs(); ++i) {
    int32_t xi = c.tensor(n.inputs[i]);
    std::vector<int64_t> d = c.p.tensors[xi].dims;
    if (dims_product(d) > 0)
      copy_kernel(c, n, xi, y, d, row_major_strides(d), 0, os, offset * os[axis], false);
    offset += d[axis];
  }
}

// Each output copied from its place along the axis.
void lower_split(Context& c, const ir::Node& n, int32_t x, const std::vector<int64_t>& in_strides,
                 int rank) {
  const ir::Graph& g = c.g;
  int axis = ir::normalize_axis(n.attrs.get_int("axis", 0), rank, "Split axis");
  std::vector<int64_t> sizes = ir::resolve_split(g, n);
  int64_t offset = 0;
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    int32_t y = c.produce(n.outputs[i]);
    std::vector<int64_t> out_dims = c.p.tensors[y].dims;
    if (dims_product(out_dims) > 0)
      copy_kernel(c, n, x, y, out_dims, in_strides, offset * in_strides[axis],
                  row_major_strides(out_dims), 0, false);
    offset += sizes[i];
  }
}

// A fill of the whole output with the pad value, then the input copied inside it.
void lower_pad(Context& c, const ir::Node& n, int32_t x, const std::vector<int64_t>& in_dims,
               const std::vector<int64_t>& in_strides, int rank) {
  const ir::Graph& g = c.g;
  ir::PadSpec pads = ir::resolve_pads(g, n);
  float value = n.has_input(2) ? g.value(n.inputs[2]).constant->data<float>()[0]
                               : 0.0f;  // checked by supported.cpp
  int32_t y = c.produce(n.outputs[0]);
  std::vector<int64_t> out_dims = c.p.tensors[y].dims, os = row_major_strides(out_dims);
  copy_kernel(c, n, -1, y, out_dims, {}, 0, os, 0, false, value);
  int64_t offset = 0;
  for (int i = 0; i < rank; ++i) offset += pads.before[i] * os[i];
  if (dims_product(in_dims) > 0) copy_kernel(c, n, x, y, in_dims, in_strides, 0, os, offset, false);
}

}  // namespace

void lower_copy_node(Context& c, const ir::Node& n) {
  const ir::Graph& g = c.g;
  const std::vector<int64_t> in_dims = g.value(n.inputs[0]).type.shape.dims();
  const int32_t x = c.tensor(n.inputs[0]);
  const std::vector<int64_t> in_strides = row_major_strides(in_dims);
  const int rank = static_cast<int>(in_dims.size());
  switch (n.op) {
    case OpType::Transpose: {
      std::vector<int64_t> perm = ir::resolve_perm(n, rank);
      int32_t y = c.produce(n.outputs[0]);
      std::vector<int64_t> out_dims = c.p.tensors[y].dims, s(rank);
      for (int i = 0; i < rank; ++i) s[i] = in_strides[perm[i]];
      bool minor_moves = rank > 0 && perm[rank - 1] != rank - 1;
      copy_kernel(c, n, x, y, out_dims, s, 0, row_major_strides(out_dims), 0, minor_moves);
      return;
    }
    case OpType::Concat:
      return lower_concat(c, n, rank);
    case OpType::Slice: {
      ir::SliceSpec s = ir::resolve_slice(g, n);
      int32_t y = c.produce(n.outputs[0]);
      std::vector<int64_t> strides(rank);
      int64_t offset = 0;
      for (int i = 0; i < rank; ++i) {
        strides[i] = in_strides[i] * s.step[i];
        offset += s.start[i] * in_strides[i];
      }
      std::vector<int64_t> out_dims = c.p.tensors[y].dims;
      if (dims_product(out_dims) > 0)
        copy_kernel(c, n, x, y, out_dims, strides, offset, row_major_strides(out_dims), 0, false);
      return;
    }
    case OpType::Split:
      return lower_split(c, n, x, in_strides, rank);
    case OpType::Pad:
      return lower_pad(c, n, x, in_dims, in_strides, rank);
    case OpType::Expand: {
      int32_t y = c.produce(n.outputs[0]);
      std::vector<int64_t> out_dims = c.p.tensors[y].dims, s(out_dims.size(), 0);
      size_t off = out_dims.size() - in_dims.size();
      for (size_t i = 0; i < in_dims.size(); ++i) s[off + i] = in_dims[i] == 1 ? 0 : in_strides[i];
      if (c.fused(y)) return broadcast_on_chip(c, n, x, y, out_dims, s);
      copy_kernel(c, n, x, y, out_dims, s, 0, row_major_strides(out_dims), 0, false);
      return;
    }
    default:
      throw UnsupportedOpError(
          fmt::format("tpu_emu.compile: {} has no copy lowering", c.describe(n)),
          {ir::op_name(n.op)});
  }
}

}  // namespace mimic::backends::tpu_emu
