// Lowering of vector-unit ops: elementwise maps (numpy broadcasting), standalone batch norm,
// layer norm, softmax, pooling (3-D as two passes), reductions and depthwise convolution, plus the
// generic tiler that streams a vector kernel through on-chip memory in double-buffered chunks
// spread over the cores.
#include <fmt/format.h>
#include <algorithm>
#include <cmath>

#include "backends/tpu_emu/fusion.h"
#include "backends/tpu_emu/layout.h"
#include "backends/tpu_emu/lowering.h"
#include "base/error.h"
#include "frontend/ir/nn_geometry.h"
#include "frontend/ir/op_helpers.h"
#include "models/tpu/dataflow.h"

namespace mimic::backends::tpu_emu {

using namespace models::tpu;
using ir::OpType;

namespace {

// Bytes per row of a tensor split into `rows` equal rows, tiled layout included.
double bytes_per_row(const Context& c, int32_t t, int64_t rows) {
  return static_cast<double>(c.tiled_elements(t) * c.element_bytes(t)) / std::max<int64_t>(rows, 1);
}

Window pool_window(const Context& c, const ir::Node& n) {
  Window w = window_2d(ir::window_geometry(c.g, n), n.attrs.get_int("count_include_pad", 0) != 0);
  w.batch_minor = c.batch_minor && w.channels_last && c.g.value(n.inputs[0]).type.shape.rank() == 4;
  return w;
}

}  // namespace

Window window_2d(const ir::WindowGeometry& wg, bool count_include_pad) {
  // 1-D windows run as 2-D ones with a unit spatial dimension (XLA's TPU backend lowers 1-D
  // convolutions and pools as 2-D ones). The length goes to H and W = 1 (NCL is NCHW with W = 1,
  // NLC is NHWC), so that rows of output positions tile across cores and chunks.
  // 3-D windows: the (H, W) window of each depth slice (the depth is unfolded or pooled apart).
  const bool one = wg.spatial_rank == 1;
  const int first = wg.spatial_rank == 3 ? 1 : 0;
  auto at = [&](const std::vector<int64_t>& v, int i, int64_t unit) {
    return one ? (i == 0 ? v[0] : unit) : v[first + i];
  };
  Window w{wg.batch,
           wg.in_channels,
           at(wg.in_size, 0, 1),
           at(wg.in_size, 1, 1),
           wg.out_channels,
           at(wg.out_size, 0, 1),
           at(wg.out_size, 1, 1),
           at(wg.kernel, 0, 1),
           at(wg.kernel, 1, 1),
           at(wg.strides, 0, 1),
           at(wg.strides, 1, 1),
           at(wg.pad_begin, 0, 0),
           at(wg.pad_begin, 1, 0),
           at(wg.dilations, 0, 1),
           at(wg.dilations, 1, 1),
           wg.group,
           wg.channels_last,
           count_include_pad};
  w.ph_end = at(wg.pad_end, 0, 0);
  w.pw_end = at(wg.pad_end, 1, 0);
  return w;
}

std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in,
                                       const std::vector<int64_t>& out) {
  std::vector<int64_t> s(out.size(), 0), cs = row_major_strides(in);
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) s[off + i] = in[i] == 1 && out[off + i] != 1 ? 0 : cs[i];
  return s;
}

namespace {

// The emitter reserves slots in 512-byte granules (Emitter::slot).
uint64_t slot_bytes(double bytes) {
  return (static_cast<uint64_t>(std::ceil(bytes)) + 511) / 512 * 512;
}

// On-chip bytes one core reserves for `t` streamed in chunks of `chunk` rows: two buffers per
// streamed operand and for the output (when not on chip), one per whole operand.
uint64_t working_set(const Context& c, const VectorTiling& t, int64_t chunk) {
  if (!t.vector_instruction) return 0;
  uint64_t bytes = 0;
  for (size_t i = 0; i < t.inputs.size(); ++i)
    if (c.streams(t.inputs[i])) bytes += 2 * slot_bytes(chunk * t.input_bytes_per_row[i]);
  if (c.home(t.output) != Level::onchip) bytes += 2 * slot_bytes(chunk * t.output_bytes_per_row);
  for (int32_t w : t.whole_inputs)
    if (c.home(w) != Level::onchip)
      bytes += slot_bytes(static_cast<double>(c.tiled_elements(w) * c.element_bytes(w)));
  return bytes;
}

}  // namespace

namespace {

// Slot ids of a vector kernel: two per streamed input and for the output (double buffering), one
// per whole operand.
enum { kIn0 = 0, kOut0 = 16, kWhole0 = 32 };

Instruction dma_instruction(int core, int unit, Level src, Level dst, uint64_t bytes,
                            uint64_t src_address, uint64_t dst_address) {
  Instruction in;
  in.opcode = Opcode::dma;
  in.core = static_cast<uint8_t>((src == Level::host || dst == Level::host) ? 0 : core);
  in.unit = static_cast<uint16_t>(unit);
  in.src = src;
  in.dst = dst;
  in.bytes = std::max<uint64_t>(bytes, 1);
  in.src_address = src_address;
  in.dst_address = dst_address;
  return in;
}

// Rows per chunk: as many as half the on-chip slots hold double-buffered, at least one per core's
// share; an operand set that cannot fit even one row is a compile error naming the node.
int64_t chunk_rows(Context& c, const ir::Node& n, const VectorTiling& t) {
  const uint64_t half = c.em->half_bytes();
  double row_bytes =
      c.home(t.output) != Level::onchip && t.vector_instruction ? t.output_bytes_per_row : 0;
  for (size_t i = 0; i < t.inputs.size(); ++i)
    if (c.streams(t.inputs[i]) && t.vector_instruction) row_bytes += t.input_bytes_per_row[i];
  uint64_t whole = 0;
  for (int32_t w : t.whole_inputs)
    if (c.home(w) != Level::onchip)
      whole += static_cast<uint64_t>(c.tiled_elements(w) * c.element_bytes(w));
  if (working_set(c, t, 1) > half)
    c.untileable(
        n, working_set(c, t, 1),
        fmt::format(
            "{} rows of {:.0f} bytes each (double-buffered) plus {} bytes of whole operands",
            t.rows, row_bytes, whole));
  int64_t chunk = row_bytes > 0 ? static_cast<int64_t>((half - whole) / (2 * row_bytes)) : t.rows;
  chunk = std::max<int64_t>(1, std::min(chunk, ceil_div(t.rows, c.spec.cores)));
  // The estimate ignores the slots' rounding to granules: shrink until the rounded set fits.
  if (working_set(c, t, chunk) <= half) return chunk;
  int64_t lo = 1, hi = chunk;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (working_set(c, t, mid) <= half)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

// Reserves every core's slots first (the working set is their sum).
void reserve_slots(Context& c, const VectorTiling& t, int64_t chunk) {
  Emitter& em = *c.em;
  for (int core = 0; core < c.spec.cores && t.vector_instruction; ++core) {
    for (size_t i = 0; i < t.inputs.size(); ++i)
      if (c.streams(t.inputs[i]))
        for (int s = 0; s < 2; ++s)
          em.slot(core, kIn0 + 2 * static_cast<int>(i) + s,
                  static_cast<uint64_t>(std::ceil(chunk * t.input_bytes_per_row[i])));
    if (c.home(t.output) != Level::onchip)
      for (int s = 0; s < 2; ++s)
        em.slot(core, kOut0 + s, static_cast<uint64_t>(std::ceil(chunk * t.output_bytes_per_row)));
    for (size_t j = 0; j < t.whole_inputs.size(); ++j)
      if (c.home(t.whole_inputs[j]) != Level::onchip)
        em.slot(core, kWhole0 + static_cast<int>(j),
                static_cast<uint64_t>(c.tiled_elements(t.whole_inputs[j]) *
                                      c.element_bytes(t.whole_inputs[j])));
  }
}

// Pure data movement: one DMA from the input's home to the output's home computes the copy.
void emit_copy_chunk(Context& c, const VectorTiling& t, int core, int64_t r0, int64_t r1) {
  int32_t src = t.inputs.empty() ? t.output : t.inputs[0];
  double per_row = t.inputs.empty() ? t.output_bytes_per_row : t.input_bytes_per_row[0];
  const int64_t rows = r1 - r0;
  Instruction in = dma_instruction(core, 0, c.home(src), c.home(t.output),
                                   static_cast<uint64_t>(std::ceil(rows * per_row)),
                                   c.p.tensors[src].address, c.p.tensors[t.output].address);
  in.runs = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(rows * t.runs_per_row)));
  in.computes = true;
  in.r0 = r0;
  in.r1 = r1;
  std::vector<int64_t> reads(t.inputs.begin(), t.inputs.end());
  c.em->emit(in, reads, {t.output});
}

// Loads the whole operands into a core's slots, once per core.
void load_whole_inputs(Context& c, const VectorTiling& t, int core) {
  for (size_t j = 0; j < t.whole_inputs.size(); ++j) {
    int32_t w = t.whole_inputs[j];
    if (c.home(w) == Level::onchip) continue;
    auto s = c.em->slot(core, kWhole0 + static_cast<int>(j));
    uint64_t bytes = static_cast<uint64_t>(c.tiled_elements(w) * c.element_bytes(w));
    c.em->emit(dma_instruction(core, 0, c.home(w), Level::onchip, bytes, c.p.tensors[w].address,
                               s.address),
               {w}, {s.resource});
  }
}

// One chunk of rows on `core`: stream its inputs in (slot pair `par`), run the vector
// instruction, stream the output back to its home.
void emit_vector_chunk(Context& c, const VectorTiling& t, int core, int par, int64_t r0,
                       int64_t r1) {
  Emitter& em = *c.em;
  const int dma_out = static_cast<int>(1 % c.spec.dma.engines_per_core);
  const int64_t rows = r1 - r0;
  std::vector<int64_t> reads;
  for (size_t j = 0; j < t.whole_inputs.size(); ++j)
    reads.push_back(c.home(t.whole_inputs[j]) == Level::onchip
                        ? int64_t{t.whole_inputs[j]}
                        : em.slot(core, kWhole0 + static_cast<int>(j)).resource);
  for (size_t i = 0; i < t.inputs.size(); ++i) {
    int32_t x = t.inputs[i];
    if (!c.streams(x)) {
      reads.push_back(x);
      continue;
    }
    auto s = em.slot(core, kIn0 + 2 * static_cast<int>(i) + par);
    uint64_t bytes = static_cast<uint64_t>(std::ceil(rows * t.input_bytes_per_row[i]));
    em.emit(dma_instruction(core, 0, c.home(x), Level::onchip, bytes, c.p.tensors[x].address,
                            s.address),
            {x}, {s.resource});
    reads.push_back(s.resource);
  }
  Instruction v;
  v.opcode = Opcode::vector;
  v.core = static_cast<uint8_t>(core);
  v.elements = static_cast<uint64_t>(std::ceil(rows * t.elements_per_row));
  v.ops_per_element = t.ops;
  v.computes = true;
  v.r0 = r0;
  v.r1 = r1;
  const Level out_home = c.home(t.output);
  if (out_home == Level::onchip) {
    em.emit(v, reads, {t.output});
    return;
  }
  auto os = em.slot(core, kOut0 + par);
  em.emit(v, reads, {os.resource});
  uint64_t bytes = static_cast<uint64_t>(std::ceil(rows * t.output_bytes_per_row));
  em.emit(dma_instruction(core, dma_out, Level::onchip, out_home, bytes, os.address,
                          c.p.tensors[t.output].address),
          {os.resource}, {t.output});
}

}  // namespace

void emit_vector_kernel(Context& c, const ir::Node& n, int32_t kernel, const VectorTiling& tiling) {
  VectorTiling t = tiling;
  // Data that loop fusion keeps on chip, or that a sibling loop streamed, has no address a DMA
  // engine could read or write: moving it is a vector-unit pass (loop_fusion.h).
  bool fused = c.fused(t.output);
  for (int32_t x : t.inputs)
    fused = fused || c.fused(x) || (c.home(x) != Level::onchip && !c.streams(x));
  if (fused) t.vector_instruction = true;
  const int64_t chunk = chunk_rows(c, n, t);
  c.em->begin_kernel(kernel);
  reserve_slots(c, t, chunk);
  std::vector<int64_t> parity(c.spec.cores, 0);
  std::vector<bool> loaded(c.spec.cores, false);
  int64_t index = 0;
  for (int64_t r0 = 0; r0 < t.rows; r0 += chunk, ++index) {
    const int64_t r1 = std::min(t.rows, r0 + chunk);
    const int core = static_cast<int>(index % c.spec.cores);
    const int par = static_cast<int>(parity[core]++ % 2);
    if (!t.vector_instruction) {
      emit_copy_chunk(c, t, core, r0, r1);
      continue;
    }
    if (!loaded[core]) load_whole_inputs(c, t, core);
    loaded[core] = true;
    emit_vector_chunk(c, t, core, par, r0, r1);
  }
  std::vector<int32_t> inputs(t.inputs.begin(), t.inputs.end());
  inputs.insert(inputs.end(), t.whole_inputs.begin(), t.whole_inputs.end());
  c.em->end_kernel(inputs, {t.output});
}

namespace {

// Standard tiling for a kernel whose output has `rows` rows and whose inputs are split by the
// same rows (inputs smaller than a row's share, e.g. broadcast operands, load whole).
VectorTiling row_tiling(Context& c, const VectorDesc& d, int64_t rows, double work_per_row) {
  VectorTiling t;
  t.rows = rows;
  t.output = d.out;
  t.output_bytes_per_row = bytes_per_row(c, d.out, rows);
  int64_t out_elems = c.p.tensors[d.out].numel();
  for (int32_t x : d.in) {
    if (x < 0) continue;
    int64_t elems = c.p.tensors[x].numel();
    // Small operands (broadcast scales, biases) load whole once per core, judged by their tiled
    // size: a per-channel scale [1, C, 1, 1] pads every 1 x 1 plane to a full (8, 128) tile, so
    // one with many channels streams by rows like the others (its rows follow the output's).
    int64_t tiled_bytes = c.tiled_elements(x) * c.element_bytes(x);
    if (elems < out_elems && tiled_bytes <= static_cast<int64_t>(c.em->half_bytes() / 8)) {
      t.whole_inputs.push_back(x);
    } else {
      t.inputs.push_back(x);
      t.input_bytes_per_row.push_back(bytes_per_row(c, x, rows));
    }
  }
  t.elements_per_row = work_per_row;
  t.ops = vector_ops_per_element(d.func) +
          (d.epi.activation != VectorFunc::identity ? vector_ops_per_element(d.epi.activation) : 0);
  return t;
}

// A transposed window (conv_transpose_taps) reads its whole input once over all output rows, and
// computes `work` taps per row, each the precision's products of bf16 parts as a convolution's.
VectorTiling transposed_tiling(const Context& c, const VectorDesc& d, int64_t rows, double work,
                               VectorTiling t) {
  t.elements_per_row = work * static_cast<double>(vector_ops_per_element(d.func) * c.p.passes);
  t.ops = 1;
  for (size_t i = 0; i < t.inputs.size(); ++i)
    if (t.inputs[i] == d.in[0])
      t.input_bytes_per_row[i] =
          static_cast<double>(c.tiled_elements(d.in[0]) * c.element_bytes(d.in[0])) /
          static_cast<double>(std::max<int64_t>(rows, 1));
  return t;
}

// row_tiling, with pooling and depthwise rows reading `stride` input rows per output row (window
// halos ignored) of every channel, or of one with Window::channel_rows.
VectorTiling window_tiling(Context& c, const VectorDesc& d, int64_t rows, double work) {
  VectorTiling t = row_tiling(c, d, rows, work);
  if (d.func == VectorFunc::conv_transpose_taps) return transposed_tiling(c, d, rows, work, t);
  if (d.func != VectorFunc::max_pool && d.func != VectorFunc::avg_pool &&
      d.func != VectorFunc::depthwise_conv)
    return t;
  const Window& w = d.window;
  // `work` counts every tap of every output; the fused activation runs once per output element,
  // not once per tap. A depthwise tap on a bf16 chip is the precision's products of bf16 parts
  // (1, 3 or 6: numerics.h), as a convolution's matrix passes are.
  const double taps = static_cast<double>(std::max<int64_t>(1, w.kh * w.kw));
  const uint32_t act_ops =
      d.epi.activation != VectorFunc::identity ? vector_ops_per_element(d.epi.activation) : 0;
  const int64_t products =
      d.func == VectorFunc::depthwise_conv && c.p.numerics == MatrixNumerics::bf16 ? c.p.passes : 1;
  t.elements_per_row =
      work * static_cast<double>(vector_ops_per_element(d.func) * products) + work / taps * act_ops;
  t.ops = 1;
  double in_row = bytes_per_row(c, d.in[0], w.n * w.h * (w.channel_rows ? w.c : 1));
  t.input_bytes_per_row.assign(t.inputs.size(), 0);
  for (size_t i = 0; i < t.inputs.size(); ++i)
    if (t.inputs[i] == d.in[0]) t.input_bytes_per_row[i] = in_row * std::max<int64_t>(1, w.sh);
  return t;
}

double tiled_per_row(const Context& c, int32_t t, int64_t rows) {
  return static_cast<double>(c.tiled_elements(t)) / std::max<int64_t>(rows, 1);
}

// Vector work per output row (n, oh) of a window op: every output element reads kh x kw inputs.
// Batch-minor: channels on the sublanes, the batch on the lanes (its padding ignored).
double window_work(const Context& c, const VectorDesc& d) {
  int64_t out_c = d.func == VectorFunc::depthwise_conv ? d.window.m : d.window.c;
  const int64_t taps = d.window.kh * d.window.kw;
  if (d.window.batch_minor)
    return static_cast<double>(d.window.ow * round_up(out_c, c.spec.vpu.sublanes) * taps);
  return static_cast<double>(round_up(d.window.ow, c.spec.vpu.sublanes) *
                             round_up(out_c, c.spec.vpu.lanes) * taps);
}

// Produces `out`, adds the kernel and tiles it.
void emit_vector(Context& c, const ir::Node& n, VectorDesc d, int64_t rows, double work,
                 ir::ValueId out);

// 3-D MaxPool/AveragePool (NCDHW) as two window passes on the vector unit. Pooling is separable:
// max of maxes, and for averages every depth plane of a window holds the same number of counted
// (h, w) taps, so the mean of the planes' means is the window's mean (count_include_pad and
// ceil_mode per axis as the 2-D ones). Pass 1 pools (H, W) over the N x (C*D) planes into a
// scratch [N, C*D, OH, OW]; pass 2 pools depth over the N*C [D, OH*OW] slabs with OH*OW on the
// lanes (a channels-last window with W = 1). The intermediate costs a round trip through memory
// that a fused reduce_window would keep on chip.
void lower_pool_3d(Context& c, const ir::Node& n) {
  const ir::WindowGeometry wg = ir::window_geometry(c.g, n);
  const bool include_pad = n.attrs.get_int("count_include_pad", 0) != 0;
  const VectorFunc f = n.op == OpType::MaxPool ? VectorFunc::max_pool : VectorFunc::avg_pool;
  const int64_t batch = wg.batch, planes = wg.in_channels * wg.in_size[0];
  const int64_t oh = wg.out_size[1], ow = wg.out_size[2], ohw = oh * ow;
  VectorDesc hw;
  hw.func = f;
  hw.in = {c.tensor(n.inputs[0])};
  Window& a = hw.window = window_2d(wg, include_pad);  // (H, W) windows of every (n, c, d) plane
  a.c = a.m = planes;
  a.groups = 1;
  hw.out = c.scratch(n.name + ".hw", {batch, planes, oh, ow});
  hw.epi.store = Rounding::none;
  const int32_t scratch = hw.out;
  const double hw_work = window_work(c, hw);
  emit_vector_desc(c, n, std::move(hw), batch * oh, hw_work);
  VectorDesc depth;
  depth.func = f;
  depth.in = {scratch};
  const int64_t slabs = batch * wg.in_channels;
  Window& b = depth.window;  // depth windows of every (n, c) slab, OH*OW as channels
  b.n = slabs;
  b.c = b.m = ohw;
  b.h = wg.in_size[0];
  b.oh = wg.out_size[0];
  b.w = b.ow = 1;
  b.kh = wg.kernel[0];
  b.sh = wg.strides[0];
  b.ph = wg.pad_begin[0];
  b.ph_end = wg.pad_end[0];
  b.dh = wg.dilations[0];
  b.channels_last = true;
  b.count_include_pad = include_pad;
  depth.out = c.produce(n.outputs[0]);
  depth.epi.store = c.store_rounding(n.outputs[0]);
  const double depth_work = static_cast<double>(round_up(ohw, c.spec.vpu.lanes) * wg.kernel[0]);
  emit_vector_desc(c, n, std::move(depth), slabs * wg.out_size[0], depth_work);
  c.release(scratch);
}

// A reduction over dims [first, last] of x as (outer, axis, inner).
void reduction_span(VectorDesc& d, const std::vector<int64_t>& x, int first, int last) {
  d.outer = dims_product(x, 0, first);
  d.axis = dims_product(x, first, last + 1);
  d.inner = dims_product(x, last + 1, x.size());
}

// A reduction whose reduced span does not fit on chip in one row (a loss's mean over a whole
// [batch, seq, hidden] tensor) runs as two passes, as XLA tiles a long reduce: the trailing
// reduced dimensions that fit into a scratch of partial results, then the leading ones over the
// partials. Exact for sum, mean (equal group sizes), max and min; a sum of squares sums its
// partial sums. The partials cost a round trip through memory.
bool split_reduction(Context& c, const ir::Node& n, const VectorDesc& d,
                     const std::vector<int64_t>& x, int first, int last) {
  VectorFunc second;
  switch (d.func) {
    case VectorFunc::sum:
    case VectorFunc::mean:
    case VectorFunc::reduce_max:
    case VectorFunc::reduce_min:
      second = d.func;
      break;
    case VectorFunc::sum_square:
      second = VectorFunc::sum;
      break;
    default:
      return false;
  }
  // A row (its input span and the output) double-buffered must fit half of a kernel's half.
  const int64_t budget = static_cast<int64_t>(c.em->half_bytes()) / (4 * 4);
  if (d.axis * d.inner <= budget || first == last) return false;
  int split = last;  // the trailing reduced dims [split, last] go to the first pass
  while (split > first + 1 && dims_product(x, split - 1, last + 1) * d.inner <= budget) --split;
  const int64_t trailing = dims_product(x, split, last + 1), leading = d.axis / trailing;
  if (trailing * d.inner > budget) return false;
  VectorDesc partial = d;
  partial.outer = d.outer * leading;
  partial.axis = trailing;
  partial.out = c.scratch(n.name + ".partials", {d.outer, leading, d.inner});
  partial.epi.store = Rounding::none;
  const int32_t scratch = partial.out;
  emit_vector_desc(c, n, std::move(partial), d.outer * leading * d.inner, 0);
  VectorDesc total = d;
  total.func = second;
  total.in = {scratch};
  total.axis = leading;
  emit_vector(c, n, std::move(total), d.outer * d.inner, 0, n.outputs[0]);
  c.release(scratch);
  return true;
}

}  // namespace

namespace {

// Inference-form BatchNormalization as one per-channel scale and shift (folded constants).
int64_t describe_batch_norm(Context& c, const ir::Node& n, VectorDesc& d) {
  const ir::Graph& g = c.g;
  const std::vector<int64_t> out_dims = g.value(n.outputs[0]).type.shape.dims();
  std::vector<float> gamma = constant_floats(g, n.inputs[1]),
                     beta = constant_floats(g, n.inputs[2]);
  std::vector<float> mean = constant_floats(g, n.inputs[3]), var = constant_floats(g, n.inputs[4]);
  float eps = static_cast<float>(n.attrs.get_float("epsilon", 1e-5));
  std::vector<float> s(gamma.size()), t(gamma.size());
  for (size_t i = 0; i < s.size(); ++i) {
    s[i] = gamma[i] / std::sqrt(var[i] + eps);
    t[i] = beta[i] - mean[i] * s[i];
  }
  int64_t ch = static_cast<int64_t>(s.size());
  bool last = ir::is_channels_last(n);
  d.func = VectorFunc::scale_shift;
  d.in = {c.tensor(n.inputs[0]), c.add_constant(n.name + ".scale", {ch}, std::move(s), 4),
          c.add_constant(n.name + ".shift", {ch}, std::move(t), 4)};
  d.axis = ch;
  d.inner = last ? 1 : dims_product(out_dims, 2, out_dims.size());
  d.outer = d.axis * d.inner > 0 ? dims_product(out_dims) / (d.axis * d.inner) : 0;
  return d.outer * d.axis;
}

// A reduction over the span from its first to its last reduced axis; -1 when it was lowered as a
// split reduction instead (non-adjacent axes).
int64_t describe_reduction(Context& c, const ir::Node& n, VectorDesc& d) {
  static const std::pair<OpType, VectorFunc> table[] = {
      {OpType::ReduceSum, VectorFunc::sum},
      {OpType::ReduceMean, VectorFunc::mean},
      {OpType::ReduceMax, VectorFunc::reduce_max},
      {OpType::ReduceMin, VectorFunc::reduce_min},
      {OpType::ReduceProd, VectorFunc::prod},
      {OpType::ReduceL1, VectorFunc::l1},
      {OpType::ReduceL2, VectorFunc::l2},
      {OpType::ReduceSumSquare, VectorFunc::sum_square},
      {OpType::ReduceLogSum, VectorFunc::log_sum},
      {OpType::ReduceLogSumExp, VectorFunc::log_sum_exp}};
  for (const auto& [op, func] : table)
    if (op == n.op) d.func = func;
  d.in = {c.tensor(n.inputs[0])};
  const std::vector<int64_t> x = c.p.tensors[d.in[0]].dims;
  std::vector<bool> mask = ir::resolve_reduce_axes(c.g, n);
  int first = -1, last = -1;
  for (int i = 0; i < static_cast<int>(mask.size()); ++i)
    if (mask[i] && x[i] != 1) {
      if (first < 0) first = i;
      last = i;
    }
  if (first < 0) {  // only axes of size 1 reduced: the first of them, extent 1
    auto size_one = std::find(mask.begin(), mask.end(), true);
    first = last = size_one == mask.end() ? 0 : static_cast<int>(size_one - mask.begin());
  }
  reduction_span(d, x, first, last);
  if (split_reduction(c, n, d, x, first, last)) return -1;
  return d.outer * d.inner;
}

}  // namespace

void lower_vector_node(Context& c, const ir::Node& n) {
  const ir::Graph& g = c.g;
  VectorDesc d;
  VectorFunc f;
  float p0, p1;
  const std::vector<int64_t> out_dims = g.value(n.outputs[0]).type.shape.dims();
  auto in = [&](int i) { return c.tensor(n.inputs[i]); };
  int64_t rows = 0;
  double work = 0;  // tiled elements the vector unit processes per row (0: the output's)
  if (lower_select_node(c, n)) return;
  if ((n.op == OpType::MaxPool || n.op == OpType::AveragePool) &&
      g.value(n.inputs[0]).type.shape.rank() == 5)
    return lower_pool_3d(c, n);
  if (n.op == OpType::BatchNormalization) {
    rows = describe_batch_norm(c, n, d);
  } else if (n.op == OpType::LayerNormalization) {
    int axis = ir::normalize_axis(n.attrs.get_int("axis", -1), static_cast<int>(out_dims.size()),
                                  "LayerNormalization axis");
    lower_layer_norm_stats(c, n);
    d.func = VectorFunc::layer_norm;
    d.in = {in(0), in(1), n.has_input(2) ? in(2) : -1};
    d.inner = dims_product(out_dims, axis, out_dims.size());
    d.outer = dims_product(out_dims, 0, axis);
    d.epsilon = static_cast<float>(n.attrs.get_float("epsilon", 1e-5));
    rows = d.outer;
  } else if (n.op == OpType::Softmax || n.op == OpType::LogSoftmax) {
    int axis = ir::normalize_axis(n.attrs.get_int("axis", -1), static_cast<int>(out_dims.size()),
                                  "Softmax axis");
    d.func = n.op == OpType::Softmax ? VectorFunc::softmax : VectorFunc::log_softmax;
    d.in = {in(0)};
    // Before opset 13 (coerce_2d) the input is read as [outer, everything from `axis` on].
    const bool coerce = n.attrs.get_int("coerce_2d", 0) != 0;
    d.outer = dims_product(out_dims, 0, axis);
    d.axis = coerce ? dims_product(out_dims, axis, out_dims.size()) : out_dims[axis];
    d.inner = coerce ? 1 : dims_product(out_dims, axis + 1, out_dims.size());
    rows = d.outer;
  } else if (n.op == OpType::MaxPool || n.op == OpType::AveragePool) {
    d.window = pool_window(c, n);
    d.in = {in(0)};
    d.func = n.op == OpType::MaxPool ? VectorFunc::max_pool : VectorFunc::avg_pool;
    rows = d.window.n * d.window.oh;
    work = window_work(c, d);
  } else if (n.op == OpType::GlobalAveragePool || n.op == OpType::GlobalMaxPool) {
    d.func = n.op == OpType::GlobalAveragePool ? VectorFunc::mean : VectorFunc::reduce_max;
    d.in = {in(0)};
    const std::vector<int64_t> x = c.p.tensors[d.in[0]].dims;
    bool last = ir::is_channels_last(n);
    int64_t spatial = last ? dims_product(x, 1, x.size() - 1) : dims_product(x, 2, x.size());
    d.axis = spatial;
    d.outer = last ? x[0] : x[0] * x[1];
    d.inner = last ? x.back() : 1;
    rows = d.outer * d.inner;
  } else if (ir::is_reduce(n.op)) {
    rows = describe_reduction(c, n, d);
    if (rows < 0) return;  // lowered as a split reduction
  } else if (unary_func(g, n, &f, &p0, &p1)) {
    d.func = f;
    d.p0 = p0;
    d.p1 = p1;
    d.in = {in(0)};
    d.dims = out_dims;
    d.in_strides = {broadcast_strides(c.p.tensors[d.in[0]].dims, out_dims)};
    rows = dims_product(out_dims);
  } else if (binary_func(n.op, &f)) {
    d.func = f;
    d.in = {in(0), in(1)};
    d.dims = out_dims;
    for (int32_t x : d.in) d.in_strides.push_back(broadcast_strides(c.p.tensors[x].dims, out_dims));
    rows = dims_product(out_dims);
  } else {
    throw UnsupportedOpError(
        fmt::format("tpu_emu.compile: {} has no vector-unit lowering", c.describe(n)),
        {ir::op_name(n.op)});
  }
  emit_vector(c, n, d, rows, work, n.outputs[0]);
}

void lower_depthwise_group(Context& c, const std::vector<int>& nodes) {
  const ir::Graph& g = c.g;
  const ir::Node& head = g.node(nodes.front());
  VectorDesc d;
  d.func = VectorFunc::depthwise_conv;
  d.window = pool_window(c, head);
  const int64_t m = d.window.m, kvol = d.window.kh * d.window.kw;
  // [M, 1, KH, KW]: constant taps (BatchNormalization folds into them), or a training step's
  // runtime weights, read where they are (row-major [M, 1, KH, KW] is the kernel's [M, KH * KW]).
  const bool runtime_weights = !g.value(head.inputs[1]).constant;
  std::vector<float> w =
      runtime_weights ? std::vector<float>() : constant_floats(g, head.inputs[1]);
  std::vector<float> bias(m, 0.0f);
  bool has_bias = head.has_input(2);
  if (has_bias) bias = constant_floats(g, head.inputs[2]);
  ir::ValueId cur = head.outputs[0];
  for (size_t i = 1; i < nodes.size(); ++i) {
    const ir::Node& n = g.node(nodes[i]);
    VectorFunc f;
    float p0, p1;
    if (n.op == OpType::BatchNormalization) {  // fold y = s * x + t into the taps and the bias
      std::vector<float> gamma = constant_floats(g, n.inputs[1]),
                         beta = constant_floats(g, n.inputs[2]);
      std::vector<float> mean = constant_floats(g, n.inputs[3]),
                         var = constant_floats(g, n.inputs[4]);
      float eps = static_cast<float>(n.attrs.get_float("epsilon", 1e-5));
      for (int64_t oc = 0; oc < m; ++oc) {
        float s = gamma[oc] / std::sqrt(var[oc] + eps);
        for (int64_t p = 0; p < kvol; ++p) w[oc * kvol + p] *= s;
        bias[oc] = bias[oc] * s + beta[oc] - mean[oc] * s;
      }
      has_bias = true;
    } else if (n.op == OpType::Add) {
      std::vector<float> add = constant_floats(g, n.inputs[0] == cur ? n.inputs[1] : n.inputs[0]);
      for (int64_t oc = 0; oc < m; ++oc) bias[oc] += add[add.size() == 1 ? 0 : oc];
      has_bias = true;
    } else if (unary_func(g, n, &f, &p0, &p1)) {
      d.epi.activation = f;
      d.epi.p0 = p0;
      d.epi.p1 = p1;
    }
    cur = n.outputs[0];
  }
  d.in = {c.tensor(head.inputs[0]),
          runtime_weights ? c.tensor(head.inputs[1])
                          : c.add_constant(head.name + ".weights", {m, kvol}, std::move(w), 4)};
  if (has_bias) d.in.push_back(c.add_constant(head.name + ".bias", {m}, std::move(bias), 4));
  emit_vector(c, head, d, d.window.n * d.window.oh, window_work(c, d), cur);
}

void lower_transposed_window(Context& c, const ir::Node& n) {
  const ir::Graph& g = c.g;
  VectorDesc d;
  d.func = VectorFunc::conv_transpose_taps;
  d.window = window_2d(ir::window_geometry(g, n), false);
  const Window& w = d.window;
  const int64_t kvol = w.kh * w.kw;
  d.in = {c.tensor(n.inputs[0]),
          c.add_constant(n.name + ".weights", {w.c, kvol}, constant_floats(g, n.inputs[1]), 4)};
  if (n.has_input(2))
    d.in.push_back(c.add_constant(n.name + ".bias", {w.m}, constant_floats(g, n.inputs[2]), 4));
  // Taps per output row: each output reads the group's input channels at the taps that land on
  // it, kh * kw / (sh * sw) of them on average.
  const double taps = static_cast<double>((w.c / w.groups) * kvol) /
                      static_cast<double>(std::max<int64_t>(1, w.sh * w.sw));
  const double work =
      static_cast<double>(round_up(w.ow, c.spec.vpu.sublanes) * round_up(w.m, c.spec.vpu.lanes)) *
      taps;
  emit_vector(c, n, d, w.n * w.oh, work, n.outputs[0]);
}

namespace {

void emit_vector(Context& c, const ir::Node& n, VectorDesc d, int64_t rows, double work,
                 ir::ValueId out) {
  d.out = c.produce(out);
  d.epi.store = c.store_rounding(out);
  emit_vector_desc(c, n, std::move(d), rows, work);
}

}  // namespace

Kernel vector_kernel(const VectorDesc& d) {
  Kernel k;
  k.kind = KernelKind::vector;
  k.vec = d;
  return k;
}

void emit_vector_desc(Context& c, const ir::Node& n, VectorDesc d, int64_t rows, double work) {
  int32_t kid = c.add_kernel(vector_kernel(d));
  // Reductions, softmax and normalization read every input element; the rest write every output
  // one.
  bool reads_all = d.func == VectorFunc::softmax || d.func == VectorFunc::log_softmax ||
                   d.func == VectorFunc::layer_norm ||
                   (d.func >= VectorFunc::sum && d.func <= VectorFunc::log_sum_exp);
  if (work == 0) work = tiled_per_row(c, reads_all ? d.in[0] : d.out, rows);
  const bool window = d.func == VectorFunc::max_pool || d.func == VectorFunc::avg_pool ||
                      d.func == VectorFunc::depthwise_conv ||
                      d.func == VectorFunc::conv_transpose_taps;
  VectorTiling t = window_tiling(c, d, rows, work);
  if (window && !d.window.channels_last && working_set(c, t, 1) > c.em->half_bytes()) {
    // One output row of every channel does not fit (many channels of small NCHW planes, each
    // padded to (8, 128) tiles): rows of one channel each, same work in all.
    const int64_t out_c =
        d.func == VectorFunc::max_pool || d.func == VectorFunc::avg_pool ? d.window.c : d.window.m;
    Kernel& k = c.p.kernels[kid];
    k.vec.window.channel_rows = d.window.channel_rows = true;
    t = window_tiling(c, d, rows * out_c, work / static_cast<double>(out_c));
  }
  emit_vector_kernel(c, n, kid, t);
}

}  // namespace mimic::backends::tpu_emu
