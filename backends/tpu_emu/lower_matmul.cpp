// Lowering of Conv and ConvTranspose (implicit GEMM: M = n*oh*ow, K = kh*kw*c/groups, N = out
// channels/groups, one GEMM per group), MatMul (batched when B is not a constant matrix) and Gemm,
// with their fused followers (fusion.h): BatchNormalization folds into the weights and bias,
// bias/residual/activation become the epilogue. Weights are stored as [batch][K][N] in bf16 parts
// (one per matrix pass) or int8. MatmulTiler then tiles and emits it. Per tile: DMA the input rows
// (conv: the input image rows the window needs, halo included), relayout NCHW tiles to
// channels-minor on the vector unit, one matmul per matrix unit over the whole K range, the
// epilogue on the vector unit, DMA the output tile out. Weights are staged in on-chip memory once
// per kernel when they fit (v2+), else every fold's tile streams from off-chip memory through the
// weight FIFO (always on v1/edge, as TPUv1 does).
#include <fmt/format.h>
#include <algorithm>
#include <cmath>

#include "backends/tpu_emu/fusion.h"
#include "backends/tpu_emu/layout.h"
#include "backends/tpu_emu/lowering.h"
#include "backends/tpu_emu/matmul_tiler.h"
#include "base/error.h"
#include "frontend/ir/nn_geometry.h"
#include "models/tpu/dataflow.h"

namespace mimic::backends::tpu_emu {

using namespace models::tpu;
using ir::OpType;

namespace {

struct Lowered {
  GemmDesc d;
  std::vector<float> w, bias;  // constant weights [batch][K][N] (empty: dynamic W), per-column bias
  ir::ValueId out = ir::kNoValue, residual = ir::kNoValue, w_value = ir::kNoValue;
  ir::ValueId gemm_c = ir::kNoValue;  // Gemm's C to broadcast and scale by beta before the GEMM
  float beta = 1;
  std::vector<float> residual_data;  // constant residual [M, N] (Gemm's C broadcast, x beta)
  bool w_constant = true;
  int32_t w_tensor = -1;  // runtime conv weights relaid as [batch][K][N] (scratch)
  std::string name;
  int32_t a_scratch = -1;  // ConvTranspose/Conv3d: the scratch input the GEMM reads instead
  ir::ValueId a_value = ir::kNoValue;  // a weight gradient: x, read in place of the head's input
  int32_t y_scratch = -1;  // Conv3d, a strided ConvTranspose's phase: the GEMM's output before
                           // it moves to the node's
  bool unrounded = false;  // the GEMM stores its sums unrounded (a residual is added later)
  ir::WindowGeometry geometry;
  ir::ValueId bias_value = ir::kNoValue;  // a runtime bias (a training step's), per column
};

// A Conv's bias: a constant joins the epilogue's constant bias (with folded BatchNorm and Add
// constants, fusion.cpp); a runtime one (a parameter of a training step) is read from its tensor
// by the epilogue, as XLA fuses the bias add into the convolution's output fusion.
void conv_bias(const ir::Graph& g, const ir::Node& n, Lowered& L) {
  if (!n.has_input(2)) return;
  if (g.value(n.inputs[2]).constant)
    L.bias = constant_floats(g, n.inputs[2]);
  else
    L.bias_value = n.inputs[2];
}

// Runtime conv weights: a strided copy (dims, element strides and offset into the weight tensor)
// relays them as the GEMM's [batch][K][N] matrices each run, as constants are at compile time.
void runtime_weights(Context& c, const ir::Node& n, Lowered& L, const std::vector<int64_t>& dims,
                     const std::vector<int64_t>& strides, int64_t offset) {
  L.w_constant = false;
  L.w_tensor = relayout(c, n, c.tensor(n.inputs[1]), dims, strides, offset);
}

// Runtime 2-D conv weights (a training step's parameters) read where they are, as XLA lays a
// parameter out for the convolution that reads it (layout assignment: TensorFlow's and Flax's
// HWIO filters are already the [KH*KW*C, M] matrix a convolution multiplies by) and the matrix
// units load a weight tile transposed at no cost (Cloud TPU guide, "Profile TensorFlow workloads":
// transposing either operand of a matmul is effectively free), so a ConvTranspose reads the same
// filter flipped with its channels swapped. No relayout copy is made; the numerics gather the
// ONNX-ordered filter (GemmDesc::w_view).
void filter_in_place(Context& c, const ir::Node& n, Lowered& L, GemmDesc::WView view) {
  ++c.filters_in_place;
  L.w_constant = false;
  L.w_value = n.inputs[1];
  L.d.w_view = view;
}

void lower_conv(Context& c, const ir::Graph& g, const ir::Node& n, Lowered& L) {
  ir::WindowGeometry wg = ir::window_geometry(g, n);
  Window& w = L.d.conv;
  w = window_2d(wg, false);
  L.d.a_view = GemmDesc::AView::conv;
  L.d.batch = w.groups;
  int64_t cg = w.c / w.groups, ng = w.m / w.groups, kvol = w.kh * w.kw;
  L.d.m = w.n * w.oh * w.ow;
  L.d.k = kvol * cg;
  L.d.n = ng;
  L.d.w_batch_stride = L.d.k * ng;  // one [K, N] weight matrix per group
  if (!g.value(n.inputs[1]).constant) {
    filter_in_place(c, n, L, GemmDesc::WView::conv_filter);
  } else {
    std::vector<float> raw = constant_floats(g, n.inputs[1]);  // [M, Cg, KH, KW]
    L.w.assign(static_cast<size_t>(w.groups * L.d.k * ng), 0.0f);
    // Written in order (rows of the [K, N] matrix), read strided: scattered writes cost more.
    for (int64_t grp = 0; grp < w.groups; ++grp)
      for (int64_t p = 0; p < kvol; ++p)
        for (int64_t ci = 0; ci < cg; ++ci) {
          float* row = &L.w[(grp * L.d.k + p * cg + ci) * ng];
          const float* src = &raw[(grp * ng * cg + ci) * kvol + p];
          for (int64_t o = 0; o < ng; ++o) row[o] = src[o * cg * kvol];
        }
  }
  conv_bias(g, n, L);
}

// A weight gradient as one GEMM that reads x and dy where they are, as XLA's convolution with
// dimension numbers does: rows (c, kh, kw) of the forward's input windows, K = the forward's
// output positions (n, oh, ow), columns = its output channels, with dy ([N*OH*OW, M], channels
// last) as the weights, streamed through the weight port. The [C, KH, KW, M] result is the Conv's
// own output. x's crop is not needed: no window reads the rows it drops.
void lower_conv_weight_grad(const ir::Graph& g, const ir::Node& n, Lowered& L) {
  ir::WeightGradientConv m;
  if (!ir::match_weight_gradient_conv(g, n, &m))
    throw CompileError(fmt::format("tpu_emu.compile: Conv '{}' is no weight gradient", n.name));
  L.d.a_view = GemmDesc::AView::filter;
  L.d.conv = window_2d(m.forward, false);
  const Window& w = L.d.conv;
  L.d.m = w.c * w.kh * w.kw;
  L.d.k = w.n * w.oh * w.ow;
  L.d.n = w.m;
  L.w_constant = false;
  L.w_value = m.dy;
  L.a_value = m.x_full;
}

// The GEMM of a stride-1 ConvTranspose whose window L.d.conv is set: its kernel is the taps
// (filter_ph + jh * step_h, filter_pw + jw * step_w) of the node's filter ([C, Mg, KH, filter_kw]:
// all of them unless a sub-pixel phase picks some, GemmDesc), flipped, channels swapped.
void transposed_filter(Context& c, const ir::Graph& g, const ir::Node& n, Lowered& L,
                       int64_t filter_kw) {
  const Window& w = L.d.conv;
  L.d.a_view = GemmDesc::AView::conv;
  L.d.batch = w.groups;
  const int64_t cg = w.c / w.groups, mg = w.m / w.groups, kvol = w.kh * w.kw;
  L.d.m = w.n * w.oh * w.ow;
  L.d.k = kvol * cg;
  L.d.n = mg;
  L.d.w_batch_stride = L.d.k * mg;
  L.d.filter_kw = filter_kw;
  if (!g.value(n.inputs[1]).constant) {
    filter_in_place(c, n, L, GemmDesc::WView::conv_transpose_filter);
    return;
  }
  const std::vector<float> raw = constant_floats(g, n.inputs[1]);
  const int64_t full = static_cast<int64_t>(raw.size()) / (w.groups * cg * mg);  // KH * KW
  L.w.assign(static_cast<size_t>(w.groups * L.d.k * mg), 0.0f);
  // Row p * Cg + ci of group grp's [K, N] matrix: flipped tap kvol - 1 - p of input channel ci.
  for (int64_t grp = 0; grp < w.groups; ++grp)
    for (int64_t p = 0; p < kvol; ++p)
      for (int64_t ci = 0; ci < cg; ++ci) {
        float* row = &L.w[(grp * L.d.k + p * cg + ci) * mg];
        const float* src = &raw[(grp * cg + ci) * mg * full + filter_tap(L.d, kvol - 1 - p)];
        for (int64_t o = 0; o < mg; ++o) row[o] = src[o * full];
      }
}

// ConvTranspose as XLA lowers it: a stride-1 convolution, with the kernel flipped and its in/out
// channels swapped, over the input dilated by the strides (lhs_dilation) and padded by
// dilation * (k - 1) - pad (output_padding and output_shape at the end). With unit strides the
// padding is the window's own (no copy); otherwise (a dilation or a bias: strided ones without
// go by sub-pixel phases, lower_by_phases) the dilated input is materialized in a scratch tensor
// (zeros included) and the matrix units stream its zeros like any other input.
void lower_conv_transpose(Context& c, const ir::Graph& g, const ir::Node& n, Lowered& L) {
  ir::WindowGeometry wg = ir::window_geometry(g, n);
  const Window t = window_2d(wg, false);  // input, output, kernel, strides, dilations, pad_begin
  Window& w = L.d.conv;
  w = t;
  const int64_t ph = (t.kh - 1) * t.dh - t.ph, pw = (t.kw - 1) * t.dw - t.pw;
  w.sh = w.sw = 1;
  if (t.sh == 1 && t.sw == 1 && ph >= 0 && pw >= 0) {
    w.ph = ph;
    w.pw = pw;
  } else {
    w.h = t.oh + (t.kh - 1) * t.dh;
    w.w = t.ow + (t.kw - 1) * t.dw;
    w.ph = w.pw = 0;
    Window in = t;
    in.ph = ph;
    in.pw = pw;
    L.a_scratch = dilate_input(c, n, c.tensor(n.inputs[0]), in, w.h, w.w);
  }
  transposed_filter(c, g, n, L, t.kw);
  conv_bias(g, n, L);
}

// Conv with 3 spatial dims as one 2-D implicit GEMM: the input unfolded over depth into N*OD
// images of KD*C channels (lower_copy.cpp), so that K = kd*kh*kw*C/groups and M = n*od*oh*ow are
// the 3-D conv's own and the weights load once for every output slice; the output then moves from
// [N*OD, M, OH, OW] to NCDHW. The unfolding costs a copy of the input KD/SD times over, where
// XLA's emitter reads the needed planes in place.
void lower_conv_3d(Context& c, const ir::Graph& g, const ir::Node& n, Lowered& L) {
  const ir::WindowGeometry& wg = L.geometry = ir::window_geometry(g, n);
  const int64_t kd = wg.kernel[0], od = wg.out_size[0];
  Window& w = L.d.conv;
  w = window_2d(wg, false);  // 2-D windows over (H, W) of the N*OD unfolded images
  w.n = wg.batch * od;
  w.c = wg.in_channels * kd;
  L.a_scratch = unfold_depth(c, n, c.tensor(n.inputs[0]), wg);
  L.y_scratch = c.scratch(n.name + ".slices", {w.n, w.m, w.oh, w.ow});
  L.d.a_view = GemmDesc::AView::conv;
  L.d.batch = w.groups;
  const int64_t cg = wg.in_channels / w.groups, ng = w.m / w.groups, khw = w.kh * w.kw;
  L.d.m = w.n * w.oh * w.ow;
  L.d.k = khw * kd * cg;
  L.d.n = ng;
  L.d.w_batch_stride = L.d.k * ng;
  if (!g.value(n.inputs[1]).constant) {
    runtime_weights(c, n, L, {w.groups, khw, kd, cg, ng},
                    {ng * cg * kd * khw, 1, khw, kd * khw, cg * kd * khw}, 0);
  } else {
    std::vector<float> raw = constant_floats(g, n.inputs[1]);  // [M, Cg, KD, KH, KW]
    L.w.assign(static_cast<size_t>(w.groups * L.d.k * ng), 0.0f);
    // Row p * KD*Cg + t * Cg + ci of group grp's [K, N] matrix: tap (t, p) of input channel ci.
    for (int64_t grp = 0; grp < w.groups; ++grp)
      for (int64_t p = 0; p < khw; ++p)
        for (int64_t t = 0; t < kd; ++t)
          for (int64_t ci = 0; ci < cg; ++ci) {
            float* row = &L.w[(grp * L.d.k + (p * kd + t) * cg + ci) * ng];
            const float* src = &raw[((grp * ng * cg + ci) * kd + t) * khw + p];
            for (int64_t o = 0; o < ng; ++o) row[o] = src[o * cg * kd * khw];
          }
  }
  conv_bias(g, n, L);
}

void lower_matmul_node(const ir::Graph& g, const ir::Node& n, Lowered& L) {
  const ir::Shape& a = g.value(n.inputs[0]).type.shape;
  const ir::Shape& b = g.value(n.inputs[1]).type.shape;
  const ir::Shape& y = g.value(n.outputs[0]).type.shape;
  int64_t k = a.dim(-1);
  int64_t nn = b.rank() == 1 ? 1 : b.dim(-1);
  bool b_constant = g.value(n.inputs[1]).constant != nullptr;
  if (b_constant && b.rank() <= 2) {
    L.d.m = a.numel() / k;
    L.d.k = k;
    L.d.n = nn;
    L.w = constant_floats(g, n.inputs[1]);
    return;
  }
  int64_t m = a.rank() == 1 ? 1 : a.dim(-2);
  int64_t batch = 1;
  for (int i = 0; i + 2 < y.rank(); ++i) batch *= y[i];
  L.d.batch = batch;
  L.d.m = m;
  L.d.k = k;
  L.d.n = nn;
  L.d.a_batch_stride = a.rank() > 2 && a.numel() / (m * k) == batch ? m * k : 0;
  L.d.w_batch_stride = b.rank() > 2 && b.numel() / (k * nn) == batch ? k * nn : 0;
  L.d.y_batch_stride = m * nn;
  L.w_constant = false;
  L.w_value = n.inputs[1];
}

// Gemm's beta x C (unidirectional broadcast to [M, N]), as XLA lowers it: a row vector becomes the
// epilogue's bias; an [M, N] C with beta = 1 the epilogue's residual; any other C (a column, a
// scalar at runtime, beta != 1) is first broadcast and scaled into an [M, N] buffer, by the
// compiler for constants and by a vector-unit kernel at runtime, then read as the residual.
void lower_gemm_c(const ir::Graph& g, const ir::Node& n, Lowered& L) {
  const float beta = static_cast<float>(n.attrs.get_float("beta", 1.0));
  const ir::Value& cv = g.value(n.inputs[2]);
  const ir::Shape& s = cv.type.shape;
  const bool row = s.numel() == 1 || (s.numel() == L.d.n && s.dim(-1) == L.d.n);
  if (cv.constant && row) {
    std::vector<float> c = constant_as_floats(*cv.constant, cv.name);
    L.bias.assign(L.d.n, 0.0f);
    for (int64_t j = 0; j < L.d.n; ++j) L.bias[j] = beta * c[c.size() == 1 ? 0 : j];
  } else if (cv.constant) {
    std::vector<float> c = constant_as_floats(*cv.constant, cv.name);
    const bool per_row = s.rank() == 2 && s[1] == 1;  // [M, 1]
    L.residual_data.resize(static_cast<size_t>(L.d.m * L.d.n));
    for (int64_t i = 0; i < L.d.m; ++i)
      for (int64_t j = 0; j < L.d.n; ++j)
        L.residual_data[i * L.d.n + j] =
            beta * c[per_row                                           ? i
                     : static_cast<int64_t>(c.size()) == L.d.m * L.d.n ? i * L.d.n + j
                                                                       : 0];
  } else if (s == g.value(n.outputs[0]).type.shape && beta == 1.0f) {
    L.residual = n.inputs[2];
  } else {
    L.gemm_c = n.inputs[2];
    L.beta = beta;
  }
}

void lower_gemm_node(const ir::Graph& g, const ir::Node& n, Lowered& L) {
  bool ta = n.attrs.get_int("transA", 0) != 0, tb = n.attrs.get_int("transB", 0) != 0;
  const ir::Shape& a = g.value(n.inputs[0]).type.shape;
  const ir::Shape& b = g.value(n.inputs[1]).type.shape;
  L.d.m = ta ? a[1] : a[0];
  L.d.k = ta ? a[0] : a[1];
  L.d.n = tb ? b[0] : b[1];
  L.d.a_transposed = ta;
  L.d.epi.alpha = static_cast<float>(n.attrs.get_float("alpha", 1.0));
  if (g.value(n.inputs[1]).constant) {
    std::vector<float> raw = constant_floats(g, n.inputs[1]);
    if (!tb) {
      L.w = std::move(raw);
    } else {
      L.w.resize(raw.size());
      for (int64_t i = 0; i < L.d.k; ++i)
        for (int64_t j = 0; j < L.d.n; ++j) L.w[i * L.d.n + j] = raw[j * L.d.k + i];
    }
  } else {
    L.w_constant = false;
    L.w_value = n.inputs[1];
    L.d.w_transposed = tb;
  }
  // beta = 0 ignores C, NaN or not (ONNX's reference, PyTorch's addmm).
  if (n.has_input(2) && n.attrs.get_float("beta", 1.0) != 0.0) lower_gemm_c(g, n, L);
}

// Folds BatchNormalization y = s * x + t (s = gamma / sqrt(var + eps), t = beta - mean * s) into
// the weights and bias, per output column.
void fold_batch_norm(const ir::Graph& g, const ir::Node& bn, Lowered& L) {
  std::vector<float> gamma = constant_floats(g, bn.inputs[1]),
                     beta = constant_floats(g, bn.inputs[2]);
  std::vector<float> mean = constant_floats(g, bn.inputs[3]),
                     var = constant_floats(g, bn.inputs[4]);
  float eps = static_cast<float>(bn.attrs.get_float("epsilon", 1e-5));
  int64_t channels = L.d.batch * L.d.n;
  if (L.bias.empty()) L.bias.assign(channels, 0.0f);
  std::vector<float> scale(static_cast<size_t>(channels));
  for (int64_t ch = 0; ch < channels; ++ch) {
    scale[ch] = gamma[ch] / std::sqrt(var[ch] + eps);
    L.bias[ch] = L.bias[ch] * scale[ch] + beta[ch] - mean[ch] * scale[ch];
  }
  // Row by row over the [groups x K, N] weights (contiguous), each column scaled by its channel's
  // s.
  for (int64_t grp = 0; grp < L.d.batch; ++grp)
    for (int64_t r = 0; r < L.d.k; ++r) {
      float* row = &L.w[(grp * L.d.k + r) * L.d.n];
      const float* s = &scale[grp * L.d.n];
      for (int64_t col = 0; col < L.d.n; ++col) row[col] *= s[col];
    }
}

void add_bias(const ir::Graph& g, ir::ValueId v, Lowered& L) {
  std::vector<float> c = constant_floats(g, v);
  int64_t channels = L.d.batch * L.d.n;
  if (L.bias.empty()) L.bias.assign(channels, 0.0f);
  for (int64_t ch = 0; ch < channels; ++ch) L.bias[ch] += c[c.size() == 1 ? 0 : ch];
}

// beta x C broadcast to [M, N] by a vector-unit kernel into a scratch buffer.
int32_t broadcast_c(Context& c, const ir::Node& head, const Lowered& L) {
  VectorDesc v;
  v.func = VectorFunc::scale;
  v.p0 = L.beta;
  v.in = {c.tensor(L.gemm_c)};
  v.dims = {L.d.m, L.d.n};
  v.in_strides = {broadcast_strides(c.p.tensors[v.in[0]].dims, v.dims)};
  v.out = c.scratch(L.name + ".beta_c", v.dims);
  const int32_t out = v.out;
  emit_vector_desc(c, head, std::move(v), L.d.m * L.d.n, 0);
  return out;
}

void lower_head(Context& c, const ir::Node& head, bool weight_grad_in_place, Lowered& L) {
  const ir::Graph& g = c.g;
  if (weight_grad_in_place)
    lower_conv_weight_grad(g, head, L);
  else if (head.op == OpType::Conv && g.value(head.inputs[0]).type.shape.rank() == 5)
    lower_conv_3d(c, g, head, L);
  else if (head.op == OpType::Conv)
    lower_conv(c, g, head, L);
  else if (head.op == OpType::ConvTranspose)
    lower_conv_transpose(c, g, head, L);
  else if (head.op == OpType::MatMul)
    lower_matmul_node(g, head, L);
  else
    lower_gemm_node(g, head, L);
  // 2-D channels-last convolutions read and write their activations in the program's layout.
  const bool two_d = g.value(head.inputs[0]).type.shape.rank() == 4 ||
                     (weight_grad_in_place && L.d.conv.channels_last);
  L.d.conv.batch_minor = c.batch_minor && L.d.conv.channels_last && two_d;
}

// The group's followers folded into the head's GEMM: BatchNormalization into the weights, a
// constant Add into the bias, another Add as the residual, an activation into the epilogue.
void fold_followers(const ir::Graph& g, const std::vector<int>& nodes, Lowered& L) {
  ir::ValueId cur = g.node(nodes.front()).outputs[0];
  for (size_t i = 1; i < nodes.size(); ++i) {
    const ir::Node& n = g.node(nodes[i]);
    VectorFunc f;
    float p0, p1;
    if (n.op == OpType::BatchNormalization) {
      fold_batch_norm(g, n, L);
    } else if (n.op == OpType::Add) {
      ir::ValueId other = n.inputs[0] == cur ? n.inputs[1] : n.inputs[0];
      if (g.value(other).constant)
        add_bias(g, other, L);
      else
        L.residual = other;
    } else if (unary_func(g, n, &f, &p0, &p1)) {
      L.d.epi.activation = f;
      L.d.epi.p0 = p0;
      L.d.epi.p1 = p1;
    }
    cur = n.outputs[0];
  }
  L.out = cur;
}

// Emits L's GEMM (its kernel and tiles) and releases its scratch inputs; y_scratch (when set) is
// left to the caller.
void emit_gemm(Context& c, const ir::Node& head, Lowered& L) {
  const TpuSpec& spec = c.spec;
  GemmDesc& d = L.d;
  // Matrix-vector products run on the vector unit in fp32 (jax#16349), when the vector's matrix
  // fits a quarter of on-chip memory; larger ones stream through the matrix units.
  d.on_vpu =
      d.a_view == GemmDesc::AView::matrix && (d.m == 1 || d.n == 1) && d.batch == 1 &&
      static_cast<uint64_t>(tiled_elements(d.k, d.n, spec.vpu) * 4) <= c.em->half_bytes() / 2;
  d.a = L.a_scratch >= 0            ? L.a_scratch
        : L.a_value != ir::kNoValue ? c.tensor(L.a_value)
                                    : c.tensor(head.inputs[0]);
  const int64_t parts = c.p.passes >= 6 ? 3 : c.p.passes >= 3 ? 2 : 1;
  const int64_t w_eb = d.on_vpu ? 4 : spec.matrix_element_bytes() * parts;
  d.w = L.w_constant
            ? c.add_constant(L.name + ".weights", {d.batch, d.k, d.n}, std::move(L.w), w_eb)
        : L.w_tensor >= 0 ? L.w_tensor
                          : c.tensor(L.w_value);
  if (L.bias_value != ir::kNoValue) {
    d.epi.bias = c.tensor(L.bias_value);
  } else if (!L.bias.empty()) {
    int64_t count = static_cast<int64_t>(L.bias.size());
    d.epi.bias = c.add_constant(L.name + ".bias", {count}, std::move(L.bias), 4);
  }
  int32_t scratch = -1;
  if (L.residual != ir::kNoValue) {
    d.epi.residual = c.tensor(L.residual);
  } else if (!L.residual_data.empty()) {
    d.epi.residual = c.add_constant(L.name + ".c", {d.m, d.n}, std::move(L.residual_data), 4);
  } else if (L.gemm_c != ir::kNoValue) {
    scratch = broadcast_c(c, head, L);
    d.epi.residual = scratch;
  }
  d.y = L.y_scratch >= 0 ? L.y_scratch : c.produce(L.out);
  d.epi.store = L.unrounded ? Rounding::none : c.store_rounding(L.out);
  Kernel kernel;
  kernel.kind = KernelKind::gemm;
  kernel.gemm = d;
  int32_t kid = c.add_kernel(kernel);
  MatmulTiler(c, head, d, kid, w_eb).run();
  if (scratch >= 0) c.release(scratch);
  if (L.a_scratch >= 0) c.release(L.a_scratch);
  if (L.w_tensor >= 0) c.release(L.w_tensor);
}

// Whether every output row and column of ConvTranspose window t is reached by some sub-pixel
// phase (lower_by_phases): row o by phase r = (o + pad) % s when r < k and its image, h + taps - 1
// rows long, reaches it.
bool phases_cover(const Window& t) {
  auto covered = [](int64_t out, int64_t in, int64_t k, int64_t s, int64_t pad) {
    for (int64_t o = 0; o < out; ++o) {
      const int64_t r = (o + pad) % s, q = (o + pad) / s, taps = (k - r + s - 1) / s;
      if (o + pad < 0 || r >= k || q >= in + taps - 1) return false;
    }
    return true;
  };
  return covered(t.oh, t.h, t.kh, t.sh, t.ph) && covered(t.ow, t.w, t.kw, t.sw, t.pw);
}

// A strided 2-D ConvTranspose (dilation 1, no bias; alone or with a fused residual Add: the data
// gradient of a strided convolution) by its sub-pixel phases: output rows o with
// (o + pad_h) % s_h == r_h take the taps r_h, r_h + s_h, ... only, so each phase (r_h, r_w) is a
// stride-1 ConvTranspose of the input as it is with those taps, whose image lands on every s-th
// output position from r - pad (lower_copy.cpp: place_strided). The matrix units multiply no
// zeros and the dilated input is never materialized; each phase's image makes one round trip
// through HBM to its positions. Positions no phase reaches are zeroed first (a 1x1 kernel at
// stride 2 fills 3 in 4); each phase is added to a residual from its unrounded sums, in place when
// the residual dies at the group (Context::residual_in_place), else onto its copy in the output.
// The cuDNN and TensorFlow decomposition of a strided transposed convolution; XLA's TPU lowering
// of lhs_dilation is not public.
bool lower_by_phases(Context& c, const std::vector<int>& nodes) {
  const ir::Graph& g = c.g;
  const ir::Node& n = g.node(nodes.front());
  if (!runs_by_phases(g, nodes)) return false;
  const Window t = window_2d(ir::window_geometry(g, n), false);
  Lowered base;
  fold_followers(g, nodes, base);
  Window placed = t;  // a phase image's placement: dims set per phase
  placed.c = t.m;
  const bool summed = base.residual != ir::kNoValue;
  const int32_t residual = summed ? c.tensor(base.residual) : -1;
  // A residual that dies here is updated in place (its storage becomes the output's); another is
  // copied into the output first.
  const bool in_place = summed && c.residual_in_place.count(base.residual) > 0;
  const int32_t y = in_place ? c.alias(base.out, residual) : c.produce(base.out);
  if (in_place) c.em->reuse_storage(y, residual);
  if (!in_place && (summed || !phases_cover(t))) fill_placed(c, n, residual, placed, y);
  for (int64_t rh = 0; rh < std::min(t.sh, t.kh); ++rh)
    for (int64_t rw = 0; rw < std::min(t.sw, t.kw); ++rw) {
      Lowered L;
      L.name = fmt::format("{}.phase{}{}", n.name, rh, rw);
      L.out = base.out;
      L.unrounded = summed;
      Window& w = L.d.conv;
      w = t;
      w.kh = (t.kh - rh + t.sh - 1) / t.sh;
      w.kw = (t.kw - rw + t.sw - 1) / t.sw;
      w.sh = w.sw = 1;
      w.ph = w.kh - 1;
      w.pw = w.kw - 1;
      w.oh = t.h + w.kh - 1;
      w.ow = t.w + w.kw - 1;
      L.d.filter_ph = rh;
      L.d.filter_pw = rw;
      L.d.filter_step_h = t.sh;
      L.d.filter_step_w = t.sw;
      transposed_filter(c, g, n, L, t.kw);
      L.d.conv.batch_minor = c.batch_minor && t.channels_last;
      L.y_scratch = c.scratch(L.name, placed_dims(w.n, w.m, w.oh, w.ow, t.channels_last),
                              summed ? -1 : c.tensor(n.inputs[0]));  // f32 sums when summed
      emit_gemm(c, n, L);
      placed.h = w.oh;
      placed.w = w.ow;
      placed.ph = rh - t.ph;
      placed.pw = rw - t.pw;
      place_phase(c, n, L.y_scratch, residual, placed, y, c.store_rounding(base.out));
      c.release(L.y_scratch);
    }
  return true;
}

}  // namespace

bool runs_by_phases(const ir::Graph& g, const std::vector<int>& nodes) {
  const ir::Node& n = g.node(nodes.front());
  if (n.op != OpType::ConvTranspose || g.value(n.inputs[0]).type.shape.rank() != 4 ||
      n.has_input(2) || nodes.size() > 2)
    return false;
  const Window t = window_2d(ir::window_geometry(g, n), false);
  if ((t.sh == 1 && t.sw == 1) || t.dh != 1 || t.dw != 1) return false;
  return nodes.size() == 1 || phased_residual(g, nodes) != ir::kNoValue;
}

ir::ValueId phased_residual(const ir::Graph& g, const std::vector<int>& nodes) {
  if (nodes.size() != 2) return ir::kNoValue;
  Lowered base;
  fold_followers(g, nodes, base);
  return base.residual;
}

// Residuals of strided ConvTranspose groups (lower_by_phases) that die at the group: an
// activation with storage of its own (produced by a node that is not a view, not kept on chip by
// loop fusion, not a graph output), whose last reader is the group. The group's output takes their
// storage, so they live as long as it does (`last_use` extended).
void plan_residuals_in_place(const ir::Graph& g, const FusionPlan& plan,
                             const std::vector<bool>& kept, std::vector<int>& last_use,
                             std::unordered_set<ir::ValueId>* in_place) {
  for (const std::vector<int>& nodes : plan.groups) {
    if (nodes.size() != 2 || plan.weight_grad_in_place[nodes.front()] || !runs_by_phases(g, nodes))
      continue;
    const ir::ValueId r = phased_residual(g, nodes), y = g.node(nodes.back()).outputs[0];
    const int producer = g.value(r).producer;
    const bool fused = static_cast<size_t>(r) < kept.size() && kept[r];
    if (producer < 0 || ir::is_view_op(g.node(producer).op) || fused ||
        last_use[r] != plan.emit_at[nodes.front()])
      continue;
    in_place->insert(r);
    last_use[r] = std::max(last_use[r], last_use[y]);
  }
}

void lower_matmul_group(Context& c, const std::vector<int>& nodes, bool weight_grad_in_place) {
  if (!weight_grad_in_place && lower_by_phases(c, nodes)) return;
  const ir::Graph& g = c.g;
  const ir::Node& head = g.node(nodes.front());
  Lowered L;
  L.name = head.name;
  lower_head(c, head, weight_grad_in_place, L);
  fold_followers(g, nodes, L);
  emit_gemm(c, head, L);
  if (L.y_scratch >= 0) {
    fold_depth(c, head, L.y_scratch, c.produce(L.out), L.geometry);
    c.release(L.y_scratch);
  }
}

}  // namespace mimic::backends::tpu_emu
