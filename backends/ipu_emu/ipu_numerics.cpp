#include "backends/ipu_emu/ipu_numerics.h"

#include <fmt/format.h>

#include <cstring>

#include "backends/cpu/cpu_backend.h"
#include "base/error.h"
#include "base/gemm.h"
#include "base/numeric_formats.h"
#include "frontend/ir/nn_geometry.h"

namespace mimic::backends::ipu_emu {
namespace {

using ir::HostTensor;

void round_f16(float* data, int64_t n) {
  numeric::round_to_f16(data, static_cast<size_t>(n));
}

// acc[m, n] = sum over chunks [b_i, b_i+1) of A[:, chunk] * B[chunk, :], in chunk order, with
// fp32 or fp16 partials (see the header). Operand pointers address element (0, 0).
struct Operand {
  const float* data;
  int64_t ld;
  bool transposed;
  // The sub-matrix starting at reduction index k (A: column k; B: row k).
  GemmOperand at(int64_t k, bool is_a) const {
    bool k_is_column = is_a != transposed;
    return {data + (k_is_column ? k : k * ld), ld, transposed};
  }
};

// Uninitialized float scratch, a tensor from the host-memory cache (frontend/ir/host_memory.h): a
// convolution's im2col columns and accumulators are written before they are read, so the 16 MiB
// buffers are neither cleared nor mapped afresh on every call.
HostTensor scratch_floats(int64_t floats) {
  return HostTensor::uninitialized(ir::DType::f32, ir::Shape({std::max<int64_t>(floats, 1)}));
}

// Adds chunk `index` (A[:, k0:k0+kc] * B[k0:k0+kc, :]) into acc with the partials' rules.
void accumulate_chunk(size_t index, int64_t m, int64_t n, int64_t kc, GemmOperand a, GemmOperand b,
                      bool half, float* acc, int64_t ldc, std::vector<float>& scratch) {
  if (!half) {
    gemm_f32(m, n, kc, 1.0f, a, b, index == 0 ? 0.0f : 1.0f, acc, ldc);
    return;
  }
  scratch.resize(static_cast<size_t>(m * n));
  gemm_f32(m, n, kc, 1.0f, a, b, 0.0f, scratch.data(), n);
  round_f16(scratch.data(), m * n);
  for (int64_t r = 0; r < m; ++r) {
    float* row = acc + r * ldc;
    const float* s = scratch.data() + r * n;
    if (index == 0)
      std::memcpy(row, s, n * sizeof(float));
    else
      for (int64_t c = 0; c < n; ++c) row[c] = numeric::round_to_f16(row[c] + s[c]);
  }
}

void chunked_gemm(int64_t m, int64_t n, Operand a, Operand b, const std::vector<int64_t>& bounds,
                  bool half, float* acc, int64_t ldc) {
  std::vector<float> scratch;
  for (size_t i = 0; i + 1 < bounds.size(); ++i)
    accumulate_chunk(i, m, n, bounds[i + 1] - bounds[i], a.at(bounds[i], true),
                     b.at(bounds[i], false), half, acc, ldc, scratch);
  if (bounds.size() < 2)
    for (int64_t r = 0; r < m; ++r) std::memset(acc + r * ldc, 0, n * sizeof(float));
}

std::vector<int64_t> scaled(const std::vector<int64_t>& bounds, int64_t k, int64_t unit) {
  if (bounds.size() < 2 || bounds.back() * unit != k) return {0, k};
  std::vector<int64_t> out;
  for (int64_t b : bounds) out.push_back(b * unit);
  return out;
}

int64_t batch_offset(int64_t index, const ir::Shape& batch, const ir::Shape& operand) {
  // Row-major offset (in matrices) of broadcast batch index `index` into `operand`'s batch dims.
  int64_t off = 0, stride = 1;
  int rb = batch.rank(), ro = operand.rank();
  for (int d = rb - 1; d >= 0; --d) {
    int64_t i = index % batch[d];
    index /= batch[d];
    int od = d - (rb - ro);
    if (od >= 0) {
      if (operand[od] != 1) off += i * stride;
      stride *= operand[od];
    }
  }
  return off;
}

void matmul(const ir::Node& n, const std::vector<const HostTensor*>& in, HostTensor& out,
            const OpRecipe& r) {
  const float* x = in[0]->data<float>();
  const float* w = in[1]->data<float>();
  float* y = out.data<float>();
  if (n.op == ir::OpType::Gemm) {
    bool ta = n.attrs.get_int("transA", 0) != 0, tb = n.attrs.get_int("transB", 0) != 0;
    const ir::Shape &sa = in[0]->shape(), &sb = in[1]->shape();
    int64_t m = ta ? sa[1] : sa[0], k = ta ? sa[0] : sa[1], cols = tb ? sb[0] : sb[1];
    chunked_gemm(m, cols, {x, sa[1], ta}, {w, sb[1], tb}, scaled(r.k_bounds, k, 1), r.half_partials,
                 y, cols);
    float alpha = static_cast<float>(n.attrs.get_float("alpha", 1.0)),
          beta = static_cast<float>(n.attrs.get_float("beta", 1.0));
    // y = alpha * acc + beta * C, C broadcast to [m, cols] (scalar, [cols], [1|m, 1|cols]).
    const HostTensor* c = in.size() > 2 && beta != 0.0f ? in[2] : nullptr;  // beta 0 ignores C
    int64_t c_rows = 1, c_cols = 1;
    if (c && c->shape().rank() >= 1) c_cols = c->shape().dim(-1);
    if (c && c->shape().rank() == 2) c_rows = c->shape().dim(0);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        float v = alpha * y[i * cols + j];
        if (c) v += beta * c->data<float>()[(c_rows == 1 ? 0 : i) * c_cols + (c_cols == 1 ? 0 : j)];
        y[i * cols + j] = r.half_partials ? numeric::round_to_f16(v) : v;
      }
    return;
  }
  ir::Shape sa = in[0]->shape().rank() == 1 ? ir::Shape({1, in[0]->shape()[0]}) : in[0]->shape();
  ir::Shape sb = in[1]->shape().rank() == 1 ? ir::Shape({in[1]->shape()[0], 1}) : in[1]->shape();
  int64_t m = sa.dim(-2), k = sa.dim(-1), cols = sb.dim(-1);
  ir::Shape ba(std::vector<int64_t>(sa.dims().begin(), sa.dims().end() - 2));
  ir::Shape bb(std::vector<int64_t>(sb.dims().begin(), sb.dims().end() - 2));
  auto bounds = scaled(r.k_bounds, k, 1);
  if (bb.numel() == 1) {  // one shared B: a single tall product
    chunked_gemm(ba.numel() * m, cols, {x, k, false}, {w, cols, false}, bounds, r.half_partials, y,
                 cols);
    return;
  }
  ir::Shape batch = ir::broadcast_shapes(ba, bb, "MatMul");
  int64_t batches = batch.numel();
#pragma omp parallel for schedule(dynamic) if (batches >= 4)
  for (int64_t i = 0; i < batches; ++i)
    chunked_gemm(m, cols, {x + batch_offset(i, batch, ba) * m * k, k, false},
                 {w + batch_offset(i, batch, bb) * k * cols, cols, false}, bounds, r.half_partials,
                 y + i * m * cols, cols);
}

// col[c * kvol + kk, p] (row stride ld) for channels-first x[C, H, W] (one image, one group).
void im2col_nchw(const float* x, float* col, int64_t ld, int64_t channels,
                 const ir::WindowGeometry& g) {
  int64_t oh = g.out_size[0], ow = g.out_size[1], ih = g.in_size[0], iw = g.in_size[1];
  int64_t kh = g.kernel[0], kw = g.kernel[1], p = oh * ow;
#pragma omp parallel for collapse(2) schedule(static) if (channels * kh * kw * p > 65536)
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t kk = 0; kk < kh * kw; ++kk) {
      int64_t ky = kk / kw, kx = kk % kw;
      float* row = col + (c * kh * kw + kk) * ld;
      const float* plane = x + c * ih * iw;
      for (int64_t y = 0; y < oh; ++y) {
        int64_t iy = y * g.strides[0] - g.pad_begin[0] + ky * g.dilations[0];
        float* dst = row + y * ow;
        if (iy < 0 || iy >= ih) {
          std::memset(dst, 0, ow * sizeof(float));
          continue;
        }
        for (int64_t xo = 0; xo < ow; ++xo) {
          int64_t ix = xo * g.strides[1] - g.pad_begin[1] + kx * g.dilations[1];
          dst[xo] = ix >= 0 && ix < iw ? plane[iy * iw + ix] : 0.0f;
        }
      }
    }
}

// col[p, kk * cc + c] for channels-last x[H, W, C_total], channels c0 .. c0 + cc (runs of cc
// channels are contiguous in x: one memcpy per output pixel and kernel position).
void im2col_nhwc(const float* x, float* col, int64_t c0, int64_t cc, const ir::WindowGeometry& g) {
  int64_t oh = g.out_size[0], ow = g.out_size[1], ih = g.in_size[0], iw = g.in_size[1],
          ct = g.in_channels;
  int64_t kh = g.kernel[0], kw = g.kernel[1], kvol = kh * kw;
#pragma omp parallel for schedule(static) if (oh * ow * cc * kvol > 65536)
  for (int64_t y = 0; y < oh; ++y)
    for (int64_t xo = 0; xo < ow; ++xo) {
      float* dst = col + (y * ow + xo) * kvol * cc;
      for (int64_t kk = 0; kk < kvol; ++kk, dst += cc) {
        int64_t iy = y * g.strides[0] - g.pad_begin[0] + (kk / kw) * g.dilations[0];
        int64_t ix = xo * g.strides[1] - g.pad_begin[1] + (kk % kw) * g.dilations[1];
        if (iy < 0 || iy >= ih || ix < 0 || ix >= iw)
          std::memset(dst, 0, cc * sizeof(float));
        else
          std::memcpy(dst, x + (iy * iw + ix) * ct + c0, cc * sizeof(float));
      }
    }
}

// Channels-last, not pointwise: per K chunk (input channels c0 .. c1 of a group), the weights are
// reordered to [Mg, kernel position, channel] to match the chunk's im2col columns. Images are
// processed in batches whose im2col rows are stacked ([images x P, K]), so each chunk is one GEMM
// for many images: a weight gradient (the batch/channel-swapped convolution, whose "images" are
// the input channels and whose P is the kernel's few positions) was a matrix-vector product per
// image otherwise, reading the whole output gradient each time.
void conv2d_nhwc(const float* x, const float* w, float* y, const ir::WindowGeometry& g,
                 const std::vector<int64_t>& channel_bounds, bool half) {
  int64_t cg = g.in_channels / g.group, mg = g.out_channels / g.group, kvol = g.kernel_volume();
  int64_t p = g.out_spatial(), in_sp = g.in_spatial();
  size_t chunks = channel_bounds.size() - 1;
  std::vector<std::vector<float>> wt(g.group * chunks);
  int64_t widest = 0;
  for (int64_t grp = 0; grp < g.group; ++grp)
    for (size_t ci = 0; ci < chunks; ++ci) {
      int64_t c0 = channel_bounds[ci], cc = channel_bounds[ci + 1] - c0;
      widest = std::max(widest, cc);
      auto& t = wt[grp * chunks + ci];
      t.resize(static_cast<size_t>(mg * kvol * cc));
      for (int64_t m = 0; m < mg; ++m)
        for (int64_t c = 0; c < cc; ++c)
          for (int64_t kk = 0; kk < kvol; ++kk)
            t[(m * kvol + kk) * cc + c] = w[((grp * mg + m) * cg + c0 + c) * kvol + kk];
    }
  constexpr int64_t kMaxColumnFloats = int64_t{1} << 22;  // 16 MiB of im2col per batch of images
  const int64_t per = std::max<int64_t>(
      1, std::min<int64_t>(g.batch, kMaxColumnFloats / std::max<int64_t>(p * kvol * widest, 1)));
  HostTensor col = scratch_floats(per * p * kvol * widest);
  std::vector<float> scratch;
  for (int64_t b0 = 0; b0 < g.batch; b0 += per) {
    const int64_t nb = std::min(per, g.batch - b0);
    for (int64_t grp = 0; grp < g.group; ++grp)
      for (size_t ci = 0; ci < chunks; ++ci) {
        int64_t c0 = channel_bounds[ci], cc = channel_bounds[ci + 1] - c0;
        for (int64_t b = 0; b < nb; ++b)
          im2col_nhwc(x + (b0 + b) * in_sp * g.in_channels, col.data<float>() + b * p * kvol * cc,
                      grp * cg + c0, cc, g);
        accumulate_chunk(ci, nb * p, mg, kvol * cc, {col.data<float>(), kvol * cc, false},
                         {wt[grp * chunks + ci].data(), kvol * cc, true}, half,
                         y + b0 * p * g.out_channels + grp * mg, g.out_channels, scratch);
      }
  }
}

void add_channel_bias(float* y, const float* bias, const ir::WindowGeometry& g, bool half) {
  if (!bias) return;
  int64_t p = g.out_spatial(), m = g.out_channels;
#pragma omp parallel for if (g.batch * p * m > 65536)
  for (int64_t i = 0; i < g.batch * p * m; ++i) {
    int64_t c = g.channels_last ? i % m : (i / p) % m;
    y[i] = half ? numeric::round_to_f16(y[i] + bias[c]) : y[i] + bias[c];
  }
}

// Channels-first: images are processed in batches whose im2col columns sit side by side
// ([K, images x P]), so each K chunk is one GEMM for many images (fewer, larger products than one
// per image), then the [Mg, images x P] result is scattered back to NCHW.
void conv2d_nchw(const float* x, const float* w, float* y, const ir::WindowGeometry& g,
                 const std::vector<int64_t>& bounds, bool half) {
  int64_t cg = g.in_channels / g.group, mg = g.out_channels / g.group, kvol = g.kernel_volume();
  int64_t kdim = cg * kvol, p = g.out_spatial(), in_sp = g.in_spatial();
  constexpr int64_t kMaxColumnFloats = int64_t{1} << 22;  // 16 MiB of im2col per batch of images
  int64_t per = std::max<int64_t>(
      1, std::min<int64_t>(g.batch, kMaxColumnFloats / std::max<int64_t>(kdim * p, 1)));
  HostTensor col_buffer = scratch_floats(kdim * p * per), acc_buffer = scratch_floats(mg * p * per);
  float* const col = col_buffer.data<float>();
  float* const acc = acc_buffer.data<float>();
  for (int64_t b0 = 0; b0 < g.batch; b0 += per) {
    int64_t nb = std::min(per, g.batch - b0), np = nb * p;
    for (int64_t grp = 0; grp < g.group; ++grp) {
      if (g.is_pointwise()) {
#pragma omp parallel for collapse(2) schedule(static) if (kdim * np > 65536)
        for (int64_t c = 0; c < kdim; ++c)
          for (int64_t b = 0; b < nb; ++b)
            std::memcpy(col + c * np + b * p, x + ((b0 + b) * g.in_channels + grp * cg + c) * in_sp,
                        p * sizeof(float));
      } else {
        for (int64_t b = 0; b < nb; ++b)
          im2col_nchw(x + ((b0 + b) * g.in_channels + grp * cg) * in_sp, col + b * p, np, cg, g);
      }
      chunked_gemm(mg, np, {w + grp * mg * kdim, kdim, false}, {col, np, false}, bounds, half, acc,
                   np);
#pragma omp parallel for collapse(2) schedule(static) if (mg * np > 65536)
      for (int64_t m = 0; m < mg; ++m)
        for (int64_t b = 0; b < nb; ++b)
          std::memcpy(y + ((b0 + b) * g.out_channels + grp * mg + m) * p, acc + m * np + b * p,
                      p * sizeof(float));
    }
  }
}

void conv2d(const ir::Graph& graph, const ir::Node& n, const std::vector<const HostTensor*>& in,
            HostTensor& out, const OpRecipe& r) {
  ir::WindowGeometry g =
      ir::window_geometry(n, in[0]->shape(), &in[1]->shape(), ir::WindowKind::conv);
  const float* x = in[0]->data<float>();
  const float* w = in[1]->data<float>();
  float* y = out.data<float>();
  int64_t cg = g.in_channels / g.group, mg = g.out_channels / g.group, kvol = g.kernel_volume();
  int64_t kdim = cg * kvol, p = g.out_spatial();
  auto bounds = scaled(r.k_bounds, kdim, kvol);
  if (g.channels_last && g.is_pointwise()) {
    for (int64_t grp = 0; grp < g.group; ++grp)
      chunked_gemm(g.batch * p, mg, {x + grp * cg, g.in_channels, false},
                   {w + grp * mg * cg, cg, true}, bounds, r.half_partials, y + grp * mg,
                   g.out_channels);
  } else if (g.channels_last) {
    std::vector<int64_t> channels = r.k_bounds.size() >= 2 && r.k_bounds.back() == cg
                                        ? r.k_bounds
                                        : std::vector<int64_t>{0, cg};
    conv2d_nhwc(x, w, y, g, channels, r.half_partials);
  } else {
    conv2d_nchw(x, w, y, g, bounds, r.half_partials);
  }
  add_channel_bias(y, in.size() > 2 && in[2] ? in[2]->data<float>() : nullptr, g, r.half_partials);
}

// acc[oh, ow] = sum over taps t0 .. t1 (row-major kernel positions) of w[tap] * plane[window],
// tap by tap in the partials format (the vector unit's multiply-accumulate).
void depthwise_taps(const float* plane, const float* w, float* acc, int64_t t0, int64_t t1,
                    const ir::WindowGeometry& g, bool half) {
  int64_t oh = g.out_size[0], ow = g.out_size[1], ih = g.in_size[0], iw = g.in_size[1];
  int64_t kw = g.kernel[1];
  std::memset(acc, 0, oh * ow * sizeof(float));
  for (int64_t t = t0; t < t1; ++t) {
    int64_t ky = t / kw, kx = t % kw;
    float wv = w[t];
    for (int64_t yo = 0; yo < oh; ++yo) {
      int64_t iy = yo * g.strides[0] - g.pad_begin[0] + ky * g.dilations[0];
      if (iy < 0 || iy >= ih) continue;
      for (int64_t xo = 0; xo < ow; ++xo) {
        int64_t ix = xo * g.strides[1] - g.pad_begin[1] + kx * g.dilations[1];
        if (ix < 0 || ix >= iw) continue;
        float v = acc[yo * ow + xo] + wv * plane[iy * iw + ix];
        acc[yo * ow + xo] = half ? numeric::round_to_f16(v) : v;
      }
    }
  }
}

// Per channel, each K chunk of taps (a tile's kernel block) accumulates its partial plane; the
// partials are then summed in chunk order in the partials format (the plan's reduction).
void depthwise2d(const ir::Node& n, const std::vector<const HostTensor*>& in, HostTensor& out,
                 const OpRecipe& r) {
  ir::WindowGeometry g =
      ir::window_geometry(n, in[0]->shape(), &in[1]->shape(), ir::WindowKind::conv);
  const float* x = in[0]->data<float>();
  const float* w = in[1]->data<float>();
  float* y = out.data<float>();
  int64_t oh = g.out_size[0], ow = g.out_size[1], taps = g.kernel[0] * g.kernel[1];
  int64_t in_sp = g.in_size[0] * g.in_size[1];
  std::vector<int64_t> bounds = r.k_bounds.size() >= 2 && r.k_bounds.back() == taps
                                    ? r.k_bounds
                                    : std::vector<int64_t>{0, taps};
  bool half = r.half_partials;
#pragma omp parallel for collapse(2)
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t c = 0; c < g.in_channels; ++c) {
      const float* plane = x + (b * g.in_channels + c) * in_sp;
      float* o = y + (b * g.in_channels + c) * oh * ow;
      std::vector<float> part(bounds.size() > 2 ? static_cast<size_t>(oh * ow) : 0);
      for (size_t i = 0; i + 1 < bounds.size(); ++i) {
        depthwise_taps(plane, w + c * taps, i == 0 ? o : part.data(), bounds[i], bounds[i + 1], g,
                       half);
        if (i > 0)
          for (int64_t j = 0; j < oh * ow; ++j)
            o[j] = half ? numeric::round_to_f16(o[j] + part[j]) : o[j] + part[j];
      }
    }
  add_channel_bias(y, in.size() > 2 && in[2] ? in[2]->data<float>() : nullptr, g, half);
}

// f16 tensors on the matrix path: the AMP units take f16 operands (exact in f32), accumulate with
// the precision's partials, and the result is stored as f16.
HostTensor f16_to_f32(const HostTensor& t) {
  HostTensor out(ir::DType::f32, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i)
    out.data<float>()[i] = numeric::f16_to_f32(t.data<ir::Float16>()[i].bits);
  return out;
}

HostTensor f32_to_f16(const HostTensor& t) {
  HostTensor out(ir::DType::f16, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i)
    out.data<ir::Float16>()[i].bits = numeric::f32_to_f16(t.data<float>()[i]);
  return out;
}

}  // namespace

IpuNumerics::IpuNumerics(const DeviceProgram& program)
    : p_(program),
      storage_(program.graph, program.half_storage, program.fp32_master,
               program.stochastic_rounding) {
  const ir::Graph& g = p_.graph;
  constants_.resize(g.num_values());
  for (int v = 0; v < g.num_values(); ++v)
    if (g.value(v).constant)
      constants_[v] = storage_.stored_half(v) ? storage_.rounded_copy(*g.value(v).constant, v, 0)
                                              : *g.value(v).constant;
  last_use_.assign(g.num_values(), -1);
  for (int i = 0; i < g.num_nodes(); ++i)
    for (ir::ValueId v : g.node(i).inputs)
      if (v != ir::kNoValue) last_use_[v] = i;
  for (ir::ValueId v : g.outputs()) last_use_[v] = g.num_nodes();
}

HostTensor IpuNumerics::read(const std::vector<HostTensor>& values, ir::ValueId v,
                             const ir::Node& reader, uint64_t run) const {
  if (v == ir::kNoValue) return HostTensor();
  return storage_.read_as_half(v, reader) ? storage_.rounded_copy(values[v], v, run) : values[v];
}

std::vector<HostTensor> IpuNumerics::run(const std::vector<HostTensor>& inputs) const {
  const ir::Graph& g = p_.graph;
  const uint64_t run = ++runs_;
  std::vector<HostTensor> values = constants_;
  for (size_t i = 0; i < inputs.size() && i < g.inputs().size(); ++i) {
    ir::ValueId v = g.inputs()[i];
    values[v] = storage_.stored_half(v) ? storage_.rounded_copy(inputs[i], v, run) : inputs[i];
  }
  for (int i = 0; i < g.num_nodes(); ++i) {
    const ir::Node& n = g.node(i);
    bool folded = true;
    for (ir::ValueId v : n.outputs) folded = folded && g.value(v).constant != nullptr;
    if (folded) continue;
    const OpRecipe& r = p_.recipes.at(i);
    if (r.kind == RecipeKind::generic) {
      std::vector<HostTensor> ins;
      for (ir::ValueId v : n.inputs) ins.push_back(read(values, v, n, run));
      std::vector<HostTensor> outs = cpu::run_node(g, n, ins);
      for (size_t k = 0; k < outs.size(); ++k) {
        ir::ValueId v = n.outputs[k];
        if (storage_.stored_half(v) && !ir::is_view_op(n.op))
          storage_.round(outs[k].data<float>(), outs[k].numel(), v, run);
        values[v] = std::move(outs[k]);
      }
    } else {
      std::vector<const HostTensor*> ins;
      std::vector<HostTensor> widened;
      widened.reserve(2 * n.inputs.size());  // pointers into it stay valid
      for (ir::ValueId v : n.inputs) {
        const HostTensor* in = v == ir::kNoValue ? nullptr : &values[v];
        if (in && in->dtype() == ir::DType::f16) in = &widened.emplace_back(f16_to_f32(*in));
        if (in && storage_.read_as_half(v, n)) in = &widened.emplace_back(read(values, v, n, run));
        ins.push_back(in);
      }
      const ir::TensorType& t = g.value(n.outputs[0]).type;
      if (t.dtype != ir::DType::f32 && t.dtype != ir::DType::f16)
        throw RuntimeError(fmt::format("ipu-emu: {} must be f32 or f16 for the chip's matrix path",
                                       ir::describe(g, n)));
      // Every matrix recipe writes each element of its output (the first K chunk overwrites).
      HostTensor out = HostTensor::uninitialized(ir::DType::f32, t.shape);
      if (r.kind == RecipeKind::matmul)
        matmul(n, ins, out, r);
      else if (r.kind == RecipeKind::conv)
        conv2d(g, n, ins, out, r);
      else
        depthwise2d(n, ins, out, r);
      if (storage_.stored_half(n.outputs[0]))
        storage_.round(out.data<float>(), out.numel(), n.outputs[0], run);
      values[n.outputs[0]] = t.dtype == ir::DType::f16 ? f32_to_f16(out) : std::move(out);
    }
    for (ir::ValueId v : n.inputs)
      if (v != ir::kNoValue && last_use_[v] == i && !g.value(v).constant) values[v] = HostTensor();
  }
  std::vector<HostTensor> out;
  for (ir::ValueId v : g.outputs()) out.push_back(values[v]);
  return out;
}

}  // namespace mimic::backends::ipu_emu
