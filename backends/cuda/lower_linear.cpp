// Lowering of MatMul, Gemm, Conv and ConvTranspose to cuBLAS GEMMs plus im2col/col2im/bias kernels
// (gemm_plan.h, conv_plan.h). 16-bit inputs run cuBLAS on their own type with f32 accumulation;
// convolutions keep the f32 GEMM result and round once when adding the bias, as the cpu does.
#include <fmt/format.h>

#include "backends/cuda/conv_plan.h"
#include "backends/cuda/gemm_plan.h"
#include "backends/cuda/lowerer.h"
#include "base/error.h"
#include "frontend/ir/nn_geometry.h"

namespace mimic::backends::cuda {
namespace {

using ir::DType;
using ir::OpType;

int64_t bytes_of(int64_t elements, DType t) {
  return elements * static_cast<int64_t>(ir::dtype_size(t));
}

GemmInstr gemm_instr(const Lowerer& l, const GemmCall& call, DType a_dt, BufRef a, DType b_dt,
                     BufRef b, DType c_dt, BufRef c, float alpha = 1, float beta = 0) {
  GemmInstr g;
  g.g = call.g;
  g.a_dt = to_dt(a_dt);
  g.b_dt = to_dt(b_dt);
  g.c_dt = to_dt(c_dt);
  g.tf32 = l.options().tf32 && a_dt == DType::f32;
  g.alpha = alpha;
  g.beta = beta;
  g.a = a.at(bytes_of(call.a_offset, a_dt));
  g.b = b.at(bytes_of(call.b_offset, b_dt));
  g.c = c.at(bytes_of(call.c_offset, c_dt));
  return g;
}

std::string check_calls(const std::vector<GemmCall>& calls) {
  for (const GemmCall& c : calls)
    if (!fits_cublas(c)) return "a GEMM dimension exceeds cuBLAS's 32-bit limits";
  return "";
}

std::string check_window(const ir::Graph& g, const ir::Node& n) {
  ir::WindowGeometry geo = ir::window_geometry(g, n);
  if (geo.spatial_rank > kMaxSpatial)
    return fmt::format("{} spatial dims (kernels take 1 to {})", geo.spatial_rank, kMaxSpatial);
  if (geo.batch == 0) return "an empty batch";
  return "";
}

void lower_matmul(Lowerer& l, const ir::Node& n) {
  const ir::TensorType& ta = l.in_type(n, 0);
  MatmulPlan plan = plan_matmul(ta.shape, l.in_type(n, 1).shape);
  BufRef a = l.in(n, 0), b = l.in(n, 1), y = l.out(n, 0);
  for (const GemmCall& call : plan.calls)
    if (call.g.m > 0 && call.g.n > 0 && call.g.batch > 0)
      l.emit(gemm_instr(l, call, ta.dtype, a, ta.dtype, b, ta.dtype, y));
  l.matrix_mode(ta.dtype);
}

void lower_gemm(Lowerer& l, const ir::Node& n) {
  const ir::Attributes& at = n.attrs;
  bool trans_a = at.get_int("transA", 0) != 0, trans_b = at.get_int("transB", 0) != 0;
  float alpha = static_cast<float>(at.get_float("alpha", 1.0));
  float beta = static_cast<float>(at.get_float("beta", 1.0));
  const ir::TensorType& ta = l.in_type(n, 0);
  const ir::Shape& sa = ta.shape;
  const ir::Shape& sb = l.in_type(n, 1).shape;
  const ir::Shape& out = l.out_type(n, 0).shape;
  int64_t m = out[0], nn = out[1], k = trans_a ? sa[0] : sa[1];
  BufRef a = l.in(n, 0), b = l.in(n, 1);
  BufRef c = n.has_input(2) && beta != 0.0f ? l.in(n, 2) : BufRef{};
  BufRef y = l.out(n, 0);
  if (c.valid()) {
    l.emit(CopyInstr{copy_params(out.dims(), broadcast_strides(l.in_type(n, 2).shape, out), 0,
                                 esize_of(ta.dtype)),
                     c, y});
  } else {
    beta = 0.0f;
  }
  GemmCall call =
      row_major_gemm(m, nn, k, {0, sa[1], 0, trans_a}, {0, sb[1], 0, trans_b}, {0, nn, 0, false});
  if (m > 0 && nn > 0)
    l.emit(gemm_instr(l, call, ta.dtype, a, ta.dtype, b, ta.dtype, y, alpha, beta));
  l.matrix_mode(ta.dtype);
}

// y = pre (+ bias), rounding once to y's type; nothing to do for f32 without bias.
void finish_conv(Lowerer& l, const ir::Node& n, BufRef pre, BufRef bias, BufRef y,
                 bool channels_last, int64_t channels, int64_t spatial) {
  DType dt = l.out_type(n, 0).dtype;
  if (!bias.valid() && dt == DType::f32) return;
  BiasParams p{};
  p.in_dt = DT::f32;
  p.dt = to_dt(dt);
  p.bias_dt = bias.valid() ? to_dt(l.in_type(n, 2).dtype) : DT::f32;
  p.channels_last = channels_last;
  p.n = l.out_type(n, 0).shape.numel();
  p.channels = channels;
  p.spatial = spatial;
  l.emit(BiasInstr{p, pre, bias, y});
}

void lower_conv(Lowerer& l, const ir::Node& n) {
  ir::WindowGeometry g = ir::window_geometry(l.graph(), n);
  DType dt = l.in_type(n, 0).dtype;
  ConvPlan plan = plan_conv(g, esize_of(dt), l.options().workspace_bytes);
  const ir::HostTensor* w_const = l.constant(n, 1);
  BufRef x = l.in(n, 0), bias = l.in(n, 2);
  // Constant weights are uploaded once, already in the order the GEMM reads.
  BufRef w = plan.reorder_weights && w_const
                 ? l.upload(reorder_weights_channels_last(*w_const),
                            fmt::format("weights of '{}' as [M, k, C]", n.name))
                 : l.in(n, 1);
  BufRef y = l.out(n, 0);
  if (plan.algo == ConvAlgo::depthwise) {
    DepthwiseParams p{};
    p.dt = to_dt(dt);
    p.bias_dt = bias.valid() ? to_dt(l.in_type(n, 2).dtype) : p.dt;
    p.channels_last = g.channels_last;
    p.has_bias = bias.valid();
    p.batch = g.batch;
    p.channels = g.in_channels;
    p.n = l.out_type(n, 0).shape.numel();
    p.w = make_window(g);
    l.emit(DepthwiseInstr{p, x, w, bias, y});
    return;
  }
  int64_t out_elems = l.out_type(n, 0).shape.numel();
  BufRef pre =
      dt == DType::f32 ? y : l.scratch(out_elems * 4, fmt::format("f32 result of '{}'", n.name));
  if (plan.reorder_weights && !w_const) {
    const ir::Shape& ws = l.in_type(n, 1).shape;
    BufRef wt =
        l.scratch(bytes_of(ws.numel(), dt), fmt::format("weights of '{}' as [M, k, C]", n.name));
    l.emit(CopyInstr{permute_params({ws[0], ws[1], plan.kvol}, {0, 2, 1}, esize_of(dt)), w, wt});
    w = wt;
  }
  BufRef col;
  if (plan.algo == ConvAlgo::im2col) {
    col = l.scratch(bytes_of(plan.col_elements, dt), fmt::format("im2col of '{}'", n.name));
    int64_t chunks = (g.batch + plan.chunk_images - 1) / plan.chunk_images;
    if (chunks > 1)
      l.note(fmt::format(
          "cuda: conv '{}' runs in {} chunks of {} image(s) (im2col workspace {:.0f} MiB)", n.name,
          chunks, plan.chunk_images, bytes_of(plan.col_elements, dt) / 1048576.0));
  }
  for (int64_t first = 0; first < g.batch; first += plan.chunk_images) {
    int64_t count = std::min(plan.chunk_images, g.batch - first);
    BufRef src = x;
    if (plan.algo == ConvAlgo::im2col) {
      Im2colParams p{};
      p.dt = to_dt(dt);
      p.channels_last = g.channels_last;
      p.images = count;
      p.channels = g.in_channels;
      p.groups = g.group;
      p.kvol = plan.kvol;
      p.out_spatial = plan.out_spatial;
      p.in_spatial = plan.in_spatial;
      p.n = count * g.in_channels * plan.kvol * plan.out_spatial;
      p.w = make_window(g);
      l.emit(Im2colInstr{p, x.at(bytes_of(first * g.in_channels * plan.in_spatial, dt)), col});
      src = col;
    }
    for (const GemmCall& call : conv_gemm_calls(plan, first, count)) {
      if (!g.channels_last)
        l.emit(gemm_instr(l, call, dt, w, dt, src, DType::f32, pre));
      else
        l.emit(gemm_instr(l, call, dt, src, dt, w, DType::f32, pre));
    }
  }
  finish_conv(l, n, pre, bias, y, g.channels_last, g.out_channels, plan.out_spatial);
  l.matrix_mode(dt);
}

void lower_conv_transpose(Lowerer& l, const ir::Node& n) {
  ir::WindowGeometry g = ir::window_geometry(l.graph(), n);
  DType dt = l.in_type(n, 0).dtype;
  ConvTransposePlan plan = plan_conv_transpose(g, l.options().workspace_bytes);
  const ir::Shape& xs = l.in_type(n, 0).shape;
  const ir::Shape& ys = l.out_type(n, 0).shape;
  BufRef x = l.in(n, 0), w = l.in(n, 1), bias = l.in(n, 2);
  BufRef y = l.out(n, 0);
  int64_t out_elems = ys.numel();
  if (g.channels_last) {
    BufRef xt =
        l.scratch(bytes_of(xs.numel(), dt), fmt::format("'{}' input as channels first", n.name));
    l.emit(CopyInstr{channels_move_params(xs.dims(), false, esize_of(dt)), x, xt});
    x = xt;
  }
  bool direct = !g.channels_last && dt == DType::f32;
  BufRef pre = direct ? y : l.scratch(out_elems * 4, fmt::format("f32 result of '{}'", n.name));
  BufRef col = l.scratch(plan.col_elements * 4, fmt::format("col of '{}'", n.name));
  for (int64_t first = 0; first < g.batch; first += plan.chunk_images) {
    int64_t count = std::min(plan.chunk_images, g.batch - first);
    for (const GemmCall& call : conv_transpose_gemm_calls(plan, first, count))
      l.emit(gemm_instr(l, call, dt, w, dt, x, DType::f32, col));
    Col2imParams p{};
    p.dt = DT::f32;
    p.images = count;
    p.channels = g.out_channels;
    p.kvol = plan.kvol;
    p.in_spatial = plan.in_spatial;
    p.out_spatial = plan.out_spatial;
    p.n = count * g.out_channels * plan.out_spatial;
    p.w = make_window(g);
    l.emit(Col2imInstr{p, col, pre.at(first * g.out_channels * plan.out_spatial * 4)});
  }
  if (!g.channels_last) {
    finish_conv(l, n, pre, bias, y, false, g.out_channels, plan.out_spatial);
  } else {
    std::vector<int64_t> cf{ys[0], ys[ys.rank() - 1]};
    for (int i = 1; i < ys.rank() - 1; ++i) cf.push_back(ys[i]);
    BufRef cf_out = pre;
    if (bias.valid() || dt != DType::f32) {
      cf_out =
          l.scratch(bytes_of(out_elems, dt), fmt::format("'{}' output as channels first", n.name));
      finish_conv(l, n, pre, bias, cf_out, false, g.out_channels, plan.out_spatial);
    }
    l.emit(CopyInstr{channels_move_params(cf, true, esize_of(dt)), cf_out, y});
  }
  l.matrix_mode(dt);
}

}  // namespace

std::string check_linear(const ir::Graph& g, const ir::Node& n) {
  DType t = g.value(n.inputs[0]).type.dtype;
  if (!is_float_type(t)) return dtype_reason(n, t);
  switch (n.op) {
    case OpType::MatMul: {
      MatmulPlan plan =
          plan_matmul(g.value(n.inputs[0]).type.shape, g.value(n.inputs[1]).type.shape);
      if (plan.k == 0) return "MatMul with an empty inner dimension";
      return check_calls(plan.calls);
    }
    case OpType::Gemm: {
      const ir::Shape& out = g.value(n.outputs[0]).type.shape;
      const ir::Shape& sa = g.value(n.inputs[0]).type.shape;
      int64_t k = n.attrs.get_int("transA", 0) ? sa[0] : sa[1];
      if (k == 0) return "Gemm with an empty inner dimension";
      return check_calls({row_major_gemm(out[0], out[1], k, {0, sa[1], 0, false},
                                         {0, g.value(n.inputs[1]).type.shape[1], 0, false},
                                         {0, out[1], 0, false})});
    }
    default: {
      std::string r = check_window(g, n);
      if (!r.empty()) return r;
      ir::WindowGeometry geo = ir::window_geometry(g, n);
      if (n.op == OpType::Conv) {
        ConvPlan plan = plan_conv(geo, ir::dtype_size(t), int64_t{256} << 20);
        if (plan.algo != ConvAlgo::depthwise && plan.k == 0) return "Conv with no input channels";
        return check_calls(conv_gemm_calls(plan, 0, plan.chunk_images));
      }
      ConvTransposePlan plan = plan_conv_transpose(geo, int64_t{256} << 20);
      if (plan.cg == 0) return "ConvTranspose with no input channels";
      return check_calls(conv_transpose_gemm_calls(plan, 0, plan.chunk_images));
    }
  }
}

void lower_linear(Lowerer& l, const ir::Node& n) {
  switch (n.op) {
    case OpType::MatMul:
      return lower_matmul(l, n);
    case OpType::Gemm:
      return lower_gemm(l, n);
    case OpType::Conv:
      return lower_conv(l, n);
    default:
      return lower_conv_transpose(l, n);
  }
}

}  // namespace mimic::backends::cuda
