#include "backends/cpu/onednn_ops.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "backends/cpu/threading.h"
#include "frontend/ir/nn_geometry.h"
#include "frontend/ir/op_helpers.h"

namespace mimic::backends::cpu::onednn {
namespace {

using dnnl::memory;
using ir::OpType;
using tag = memory::format_tag;
using dims = memory::dims;

dims row_major_strides(const dims& d) {
  dims strides(d.size(), 1);
  for (int i = static_cast<int>(d.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * d[i + 1];
  return strides;
}

memory::desc row_major(const dims& d) {
  return memory::desc(d, memory::data_type::f32, row_major_strides(d));
}

// Logical {N, C, spatial...} dims and plain layout of an activation of rank 3-5.
memory::desc activation_md(const ir::Shape& s, bool channels_last) {
  dims d{s[0], channels_last ? s.dim(-1) : s[1]};
  for (int i = channels_last ? 1 : 2; i < s.rank() - (channels_last ? 1 : 0); ++i)
    d.push_back(s[i]);
  static const tag first[] = {tag::ncw, tag::nchw, tag::ncdhw};
  static const tag last[] = {tag::nwc, tag::nhwc, tag::ndhwc};
  return memory::desc(d, memory::data_type::f32, (channels_last ? last : first)[s.rank() - 3]);
}

memory constant_memory(const memory::desc& user, const memory::desc& want, const void* data) {
  memory src(user, cpu_engine(), const_cast<void*>(data));
  memory dst(want, cpu_engine());
  dnnl::stream s(cpu_engine());
  dnnl::reorder(src, dst).execute(s, src, dst);
  s.wait();
  return dst;
}

dnnl::post_ops post_ops(const Group& grp) {
  dnnl::post_ops ops;
  if (grp.residual != ir::kNoValue) ops.append_sum(1.0f);
  switch (grp.activation) {
    case Activation::none:
      break;
    case Activation::relu:
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
      break;
    case Activation::clip:
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, grp.act_alpha, grp.act_beta);
      break;
    case Activation::gelu_erf:
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
      break;
    case Activation::gelu_tanh:
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_tanh, 0.0f, 0.0f);
      break;
    case Activation::swish:  // x * sigmoid(alpha * x), alpha = 1
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_swish, 1.0f, 0.0f);
      break;
  }
  return ops;
}

dnnl::primitive_attr attributes(const Group& grp) {
  dnnl::primitive_attr attr;
  attr.set_post_ops(post_ops(grp));
  return attr;
}

void set_residual(Step& s) {
  if (s.group.residual != ir::kNoValue)
    s.residual = RuntimeArg{DNNL_ARG_DST, s.group.residual, s.user_dst_md, s.dst_md};
}

// Conv weights [M, C/group, k...] with a fused BatchNormalization folded in, and the bias.
void conv_parameters(const ir::Graph& g, const Group& grp, ir::HostTensor& w, ir::HostTensor& b) {
  const ir::Node& n = g.node(grp.head);
  const ir::HostTensor& w0 = *g.value(n.inputs[1]).constant;
  w = ir::HostTensor(ir::DType::f32, w0.shape());
  std::memcpy(w.raw(), w0.raw(), w0.nbytes());
  if (n.has_input(2)) {
    const ir::HostTensor& b0 = *g.value(n.inputs[2]).constant;
    b = ir::HostTensor(ir::DType::f32, b0.shape());
    std::memcpy(b.raw(), b0.raw(), b0.nbytes());
  }
  if (grp.batch_norm >= 0) fold_batch_norm(g, g.node(grp.batch_norm), w, b);
}

memory::desc conv_weights_md(const ir::WindowGeometry& wg) {
  dims d;
  if (wg.group > 1)
    d = {wg.group, wg.out_channels / wg.group};
  else
    d = {wg.out_channels};
  d.push_back(wg.in_channels / wg.group);
  for (int64_t k : wg.kernel) d.push_back(k);
  return row_major(d);
}

// Weights and bias of a convolution: constants are reordered once into the primitive's layout;
// graph values (a training step's parameters) are reordered from their plain layout every run.
void add_weights(const ir::Graph& g, const Group& grp, const memory::desc& w_user,
                 const memory::desc& b_user, Step& s, const memory::desc& w_md,
                 const memory::desc& b_md) {
  const ir::Node& n = g.node(grp.head);
  const bool constant =
      g.value(n.inputs[1]).constant && (!n.has_input(2) || g.value(n.inputs[2]).constant);
  if (!constant) {
    s.inputs.push_back(RuntimeArg{DNNL_ARG_WEIGHTS, n.inputs[1], w_user, w_md});
    if (n.has_input(2)) s.inputs.push_back(RuntimeArg{DNNL_ARG_BIAS, n.inputs[2], b_user, b_md});
    return;
  }
  ir::HostTensor w, b;
  conv_parameters(g, grp, w, b);
  s.constants[DNNL_ARG_WEIGHTS] = constant_memory(w_user, w_md, w.raw());
  if (b.defined()) s.constants[DNNL_ARG_BIAS] = constant_memory(b_user, b_md, b.raw());
}

bool has_bias(const ir::Graph& g, const Group& grp) {
  return g.node(grp.head).has_input(2) || grp.batch_norm >= 0;
}

Step build_conv(const ir::Graph& g, const Group& grp) {
  const ir::Node& n = g.node(grp.head);
  ir::WindowGeometry wg = ir::window_geometry(g, n);
  memory::desc src_user = activation_md(g.value(n.inputs[0]).type.shape, wg.channels_last);
  memory::desc dst_user = activation_md(g.value(n.outputs[0]).type.shape, wg.channels_last);
  memory::desc w_user = conv_weights_md(wg);
  dims strides(wg.strides.begin(), wg.strides.end()),
      pad_l(wg.pad_begin.begin(), wg.pad_begin.end());
  dims pad_r(wg.pad_end.begin(), wg.pad_end.end()), dil;
  for (int64_t d : wg.dilations) dil.push_back(d - 1);
  memory::desc any_src(src_user.dims(), memory::data_type::f32, tag::any);
  memory::desc any_dst(dst_user.dims(), memory::data_type::f32, tag::any);
  memory::desc any_w(w_user.dims(), memory::data_type::f32, tag::any);
  memory::desc b_md = has_bias(g, grp)
                          ? memory::desc({wg.out_channels}, memory::data_type::f32, tag::x)
                          : memory::desc();
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                    dnnl::algorithm::convolution_direct, any_src, any_w, b_md,
                                    any_dst, strides, dil, pad_l, pad_r);
  dnnl::convolution_forward::primitive_desc pd(d, attributes(grp), cpu_engine());
  Step s;
  s.group = grp;
  s.prim = dnnl::convolution_forward(pd);
  s.inputs.push_back(RuntimeArg{DNNL_ARG_SRC, n.inputs[0], src_user, pd.src_desc()});
  add_weights(g, grp, w_user, b_md, s, pd.weights_desc(), pd.bias_desc());
  s.dst_md = pd.dst_desc();
  s.user_dst_md = dst_user;
  set_residual(s);
  return s;
}

// The weight gradient of a convolution (Group::wgrad_src): the head Conv's geometry is the
// forward's with strides and dilations swapped, its input [C, in..., N] and its kernel dy, whose
// pads already leave out input rows past the forward's last window.
Step build_conv_weight_grad(const ir::Graph& g, const Group& grp) {
  const ir::Node& n = g.node(grp.head);
  const ir::WindowGeometry wg = ir::window_geometry(g, n);
  const bool last = grp.wgrad_channels_last;
  memory::desc src_user = activation_md(g.value(grp.wgrad_src).type.shape, last);
  memory::desc dy_user = activation_md(g.value(grp.wgrad_diff_dst).type.shape, last);
  dims w_dims{dy_user.dims()[1], src_user.dims()[1]};
  for (int64_t k : wg.out_size) w_dims.push_back(k);
  memory::desc w_user = row_major(w_dims);
  dims strides(wg.dilations.begin(), wg.dilations.end()), dil;
  for (int64_t s : wg.strides) dil.push_back(s - 1);
  dims pad_l(wg.pad_begin.begin(), wg.pad_begin.end()), pad_r(wg.pad_end.begin(), wg.pad_end.end());
  auto any = [](const memory::desc& md) {
    return memory::desc(md.dims(), memory::data_type::f32, tag::any);
  };
  dnnl::convolution_forward::primitive_desc hint(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                      dnnl::algorithm::convolution_direct, any(src_user),
                                      any(w_user), any(dy_user), strides, dil, pad_l, pad_r),
      cpu_engine());
  dnnl::convolution_backward_weights::primitive_desc pd(
      dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, any(src_user),
                                               any(w_user), any(dy_user), strides, dil, pad_l,
                                               pad_r),
      cpu_engine(), hint);
  Step s;
  s.group = grp;
  s.prim = dnnl::convolution_backward_weights(pd);
  s.inputs.push_back(RuntimeArg{DNNL_ARG_SRC, grp.wgrad_src, src_user, pd.src_desc()});
  s.inputs.push_back(
      RuntimeArg{DNNL_ARG_DIFF_DST, grp.wgrad_diff_dst, dy_user, pd.diff_dst_desc()});
  s.dst_md = pd.diff_weights_desc();
  s.user_dst_md = w_user;
  s.dst_arg = DNNL_ARG_DIFF_WEIGHTS;
  return s;
}

// ONNX ConvTranspose weights [C_in, C_out/group, k...] in oneDNN's logical deconvolution order
// ({OC, IC, k...}, or {G, OC/G, IC/G, k...}), as strides over the ONNX layout.
memory::desc deconv_weights_md(const ir::WindowGeometry& wg) {
  const int64_t g = wg.group, oc = wg.out_channels / g, ic = wg.in_channels / g;
  const int64_t kvol = wg.kernel_volume();
  dims d, strides;
  if (g > 1) d.push_back(g), strides.push_back(ic * oc * kvol);
  d.insert(d.end(), {oc, ic});
  strides.insert(strides.end(), {kvol, oc * kvol});
  int64_t stride = kvol;
  for (int64_t k : wg.kernel) {
    d.push_back(k);
    strides.push_back(stride /= k);
  }
  return memory::desc(d, memory::data_type::f32, strides);
}

// ConvTranspose (a training step's convolution data gradients): oneDNN's deconvolution, whose
// right padding is ONNX's end padding less the output padding (negative ones are refused by the
// library, and those nodes stay on the reference kernel).
Step build_deconv(const ir::Graph& g, const Group& grp) {
  const ir::Node& n = g.node(grp.head);
  ir::WindowGeometry wg = ir::window_geometry(g, n);
  memory::desc src_user = activation_md(g.value(n.inputs[0]).type.shape, wg.channels_last);
  memory::desc dst_user = activation_md(g.value(n.outputs[0]).type.shape, wg.channels_last);
  memory::desc w_user = deconv_weights_md(wg);
  dims strides(wg.strides.begin(), wg.strides.end()), pad_l, pad_r;
  for (int i = 0; i < wg.spatial_rank; ++i) {
    int64_t extent = wg.kernel[i];  // dilations are 1 (window_ok)
    pad_l.push_back(wg.pad_begin[i]);
    pad_r.push_back((wg.in_size[i] - 1) * wg.strides[i] + extent - wg.pad_begin[i] -
                    wg.out_size[i]);
  }
  memory::desc any_src(src_user.dims(), memory::data_type::f32, tag::any);
  memory::desc any_dst(dst_user.dims(), memory::data_type::f32, tag::any);
  memory::desc any_w(w_user.dims(), memory::data_type::f32, tag::any);
  memory::desc b_md = has_bias(g, grp)
                          ? memory::desc({wg.out_channels}, memory::data_type::f32, tag::x)
                          : memory::desc();
  dnnl::deconvolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                      dnnl::algorithm::deconvolution_direct, any_src, any_w, b_md,
                                      any_dst, strides, pad_l, pad_r);
  dnnl::deconvolution_forward::primitive_desc pd(d, attributes(grp), cpu_engine());
  Step s;
  s.group = grp;
  s.prim = dnnl::deconvolution_forward(pd);
  s.inputs.push_back(RuntimeArg{DNNL_ARG_SRC, n.inputs[0], src_user, pd.src_desc()});
  add_weights(g, grp, w_user, b_md, s, pd.weights_desc(), pd.bias_desc());
  s.dst_md = pd.dst_desc();
  s.user_dst_md = dst_user;
  set_residual(s);
  return s;
}

// Pools take their input in the layout its producer wrote (oneDNN pools run on any layout).
Step build_pool(const ir::Graph& g, const Group& grp, const LayoutOf& producer_md) {
  const ir::Node& n = g.node(grp.head);
  bool global = n.op == OpType::GlobalAveragePool || n.op == OpType::GlobalMaxPool;
  bool last = ir::is_channels_last(n);
  const ir::Shape& xs = g.value(n.inputs[0]).type.shape;
  memory::desc src_user = activation_md(xs, last);
  memory::desc dst_user = activation_md(g.value(n.outputs[0]).type.shape, last);
  dims strides, kernel, pad_l, pad_r;
  if (global) {
    for (size_t i = 2; i < src_user.dims().size(); ++i) {
      kernel.push_back(src_user.dims()[i]);
      strides.push_back(1);
      pad_l.push_back(0);
      pad_r.push_back(0);
    }
  } else {
    ir::WindowGeometry wg = ir::window_geometry(g, n);
    strides.assign(wg.strides.begin(), wg.strides.end());
    kernel.assign(wg.kernel.begin(), wg.kernel.end());
    pad_l.assign(wg.pad_begin.begin(), wg.pad_begin.end());
    // ceil_mode's last window may reach past pad_end: oneDNN wants that reach as padding.
    for (int i = 0; i < wg.spatial_rank; ++i)
      pad_r.push_back(std::max(wg.pad_end[i], (wg.out_size[i] - 1) * wg.strides[i] + wg.kernel[i] -
                                                  wg.in_size[i] - wg.pad_begin[i]));
  }
  dnnl::algorithm alg = dnnl::algorithm::pooling_max;
  if (n.op == OpType::AveragePool)
    alg = n.attrs.get_int("count_include_pad", 0) ? dnnl::algorithm::pooling_avg_include_padding
                                                  : dnnl::algorithm::pooling_avg_exclude_padding;
  else if (n.op == OpType::GlobalAveragePool)
    alg = dnnl::algorithm::pooling_avg_exclude_padding;
  memory::desc produced = producer_md(n.inputs[0]);
  memory::desc src =
      produced != memory::desc() && produced.dims() == src_user.dims() ? produced : src_user;
  memory::desc any_dst(dst_user.dims(), memory::data_type::f32, tag::any);
  dnnl::pooling_forward::desc d(dnnl::prop_kind::forward_inference, alg, src, any_dst, strides,
                                kernel, pad_l, pad_r);
  dnnl::pooling_forward::primitive_desc pd(d, cpu_engine());
  Step s;
  s.group = grp;
  s.prim = dnnl::pooling_forward(pd);
  s.inputs.push_back(RuntimeArg{DNNL_ARG_SRC, n.inputs[0], src_user, pd.src_desc()});
  s.dst_md = pd.dst_desc();
  s.user_dst_md = dst_user;
  return s;
}

dims padded(const ir::Shape& s, size_t rank) {
  dims d(rank - s.rank(), 1);
  for (int64_t v : s.dims()) d.push_back(v);
  return d;
}

// The MatMul/Gemm primitive writing `dst_dims` (row-major); weights constant => reordered once
// into the layout it asks for.
Step finish_matmul(const ir::Graph& g, const Group& grp, ir::ValueId a, ir::ValueId b,
                   memory::desc a_md, memory::desc b_md, const memory::desc& bias_md,
                   ir::ValueId bias, const dims& dst_dims) {
  memory::desc dst_md = row_major(dst_dims);
  bool const_b = g.value(b).constant != nullptr;
  memory::desc want_b =
      const_b ? memory::desc(b_md.dims(), memory::data_type::f32, tag::any) : b_md;
  dnnl::matmul::desc d(a_md, want_b, bias_md, dst_md);
  dnnl::matmul::primitive_desc pd(d, attributes(grp), cpu_engine());
  Step s;
  s.group = grp;
  s.prim = dnnl::matmul(pd);
  s.inputs.push_back(RuntimeArg{DNNL_ARG_SRC, a, a_md, pd.src_desc()});
  if (const_b)
    s.constants[DNNL_ARG_WEIGHTS] =
        constant_memory(b_md, pd.weights_desc(), g.value(b).constant->raw());
  else
    s.inputs.push_back(RuntimeArg{DNNL_ARG_WEIGHTS, b, b_md, pd.weights_desc()});
  if (bias != ir::kNoValue)
    s.constants[DNNL_ARG_BIAS] =
        constant_memory(bias_md, pd.bias_desc(), g.value(bias).constant->raw());
  s.dst_md = pd.dst_desc();
  s.user_dst_md = dst_md;
  set_residual(s);
  return s;
}

// MatMul operand k: its value and descriptor; a fused Transpose's input read through swapped
// strides of its last two axes.
std::pair<ir::ValueId, memory::desc> matmul_operand(const ir::Graph& g, const Group& grp, int k,
                                                    size_t rank) {
  const ir::Node& n = g.node(grp.head);
  if (grp.transposed[k] < 0)
    return {n.inputs[k], row_major(padded(g.value(n.inputs[k]).type.shape, rank))};
  ir::ValueId source = g.node(grp.transposed[k]).inputs[0];
  dims d = padded(g.value(source).type.shape, rank), strides = row_major_strides(d);
  std::swap(d[rank - 1], d[rank - 2]);
  std::swap(strides[rank - 1], strides[rank - 2]);
  return {source, memory::desc(d, memory::data_type::f32, strides)};
}

// A product of [..., M, K] rows (read as stored) by a 2-D B, as a Linear layer over a sequence
// is (ViT's attention projects [197, 1, 768]): one GEMM over all the rows, A's leading dims folded
// into M (same memory), instead of a batch of M-row products that each read all of B.
bool folds_into_rows(const ir::Graph& g, const Group& grp) {
  const ir::Node& n = g.node(grp.head);
  return grp.transposed[0] < 0 && g.value(n.inputs[0]).type.shape.rank() > 2 &&
         g.value(grp.transposed[1] < 0 ? n.inputs[1] : g.node(grp.transposed[1]).inputs[0])
                 .type.shape.rank() == 2;
}

Step build_matmul(const ir::Graph& g, const Group& grp) {
  const ir::Node& n = g.node(grp.head);
  const ir::Shape& out = g.value(n.outputs[0]).type.shape;
  const bool fold = folds_into_rows(g, grp);
  const size_t rank = fold ? 2 : out.rank();
  const ir::Shape& a_shape = g.value(n.inputs[0]).type.shape;
  const int64_t k = a_shape.dim(-1), cols = out.dim(-1);
  auto [a, a_md] = fold ? std::make_pair(n.inputs[0], row_major({a_shape.numel() / k, k}))
                        : matmul_operand(g, grp, 0, rank);
  auto [b, b_md] = matmul_operand(g, grp, 1, rank);
  memory::desc bias_md;
  if (grp.bias_add != ir::kNoValue) {
    dims bd(rank, 1);
    bd.back() = cols;
    bias_md = row_major(bd);
  }
  return finish_matmul(g, grp, a, b, a_md, b_md, bias_md, grp.bias_add,
                       fold ? dims{out.numel() / cols, cols} : padded(out, rank));
}

// Gemm's op(A) and op(B) are the stored matrices read through swapped strides.
memory::desc gemm_operand(const ir::Shape& s, bool transposed) {
  if (!transposed) return row_major({s[0], s[1]});
  return memory::desc({s[1], s[0]}, memory::data_type::f32, dims{1, s[1]});
}

Step build_gemm(const ir::Graph& g, const Group& grp) {
  const ir::Node& n = g.node(grp.head);
  memory::desc a_md =
      gemm_operand(g.value(n.inputs[0]).type.shape, n.attrs.get_int("transA", 0) != 0);
  memory::desc b_md =
      gemm_operand(g.value(n.inputs[1]).type.shape, n.attrs.get_int("transB", 0) != 0);
  int64_t cols = g.value(n.outputs[0]).type.shape[1];
  Group group = grp;
  ir::ValueId bias = grp.bias_add;
  if (n.has_input(2)) {
    const ir::Shape& cs = g.value(n.inputs[2]).type.shape;
    if (cs == g.value(n.outputs[0]).type.shape)
      group.residual = n.inputs[2];
    else
      bias = n.inputs[2];
  }
  memory::desc bias_md = bias != ir::kNoValue ? row_major({1, cols}) : memory::desc();
  return finish_matmul(g, group, n.inputs[0], n.inputs[1], a_md, b_md, bias_md, bias,
                       padded(g.value(n.outputs[0]).type.shape, 2));
}

// A step of one primitive reading `value` as `src` (plain, row-major) and writing a plain `dst`.
Step one_input_step(const Group& grp, dnnl::primitive prim, int arg, ir::ValueId value,
                    const memory::desc& src, const memory::desc& dst) {
  Step s;
  s.group = grp;
  s.prim = std::move(prim);
  s.inputs.push_back(RuntimeArg{arg, value, src, src});
  s.dst_md = s.user_dst_md = dst;
  return s;
}

// Softmax along one axis of a row-major tensor (ONNX opset 13 semantics).
Step build_softmax(const ir::Graph& g, const Group& grp) {
  const ir::Node& n = g.node(grp.head);
  const ir::Shape& xs = g.value(n.inputs[0]).type.shape;
  memory::desc md = row_major(xs.dims());
  int axis = ir::normalize_axis(n.attrs.get_int("axis", -1), xs.rank(), "axis");
  dnnl::softmax_forward::desc d(dnnl::prop_kind::forward_inference, md, axis);
  return one_input_step(
      grp, dnnl::softmax_forward(dnnl::softmax_forward::primitive_desc(d, cpu_engine())),
      DNNL_ARG_SRC, n.inputs[0], md, md);
}

// A Transpose as a oneDNN reorder: the output's row-major strides, given per input axis, make
// the reorder write each input element at its transposed position (a blocked, vectorized copy).
Step build_transpose(const ir::Graph& g, const Group& grp) {
  const ir::Node& n = g.node(grp.head);
  const ir::Shape& xs = g.value(n.inputs[0]).type.shape;
  std::vector<int64_t> perm = ir::resolve_perm(n, xs.rank());
  dims out_strides = row_major_strides(g.value(n.outputs[0]).type.shape.dims());
  dims strides(xs.rank());
  for (int j = 0; j < xs.rank(); ++j) strides[perm[j]] = out_strides[j];
  memory::desc src = row_major(xs.dims());
  memory::desc dst(xs.dims(), memory::data_type::f32, strides);
  return one_input_step(
      grp, dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), src, cpu_engine(), dst)),
      DNNL_ARG_FROM, n.inputs[0], src, dst);
}

// A Gelu no product absorbed (training keeps its input for the gradient) as oneDNN's vectorized
// eltwise primitive, erf or tanh form as the node says.
Step build_gelu(const ir::Graph& g, const Group& grp) {
  const ir::Node& n = g.node(grp.head);
  memory::desc md = row_major(g.value(n.inputs[0]).type.shape.dims());
  bool tanh = n.attrs.get_string("approximate", "none") == "tanh";
  dnnl::eltwise_forward::desc d(
      dnnl::prop_kind::forward_inference,
      tanh ? dnnl::algorithm::eltwise_gelu_tanh : dnnl::algorithm::eltwise_gelu_erf, md);
  return one_input_step(
      grp, dnnl::eltwise_forward(dnnl::eltwise_forward::primitive_desc(d, cpu_engine())),
      DNNL_ARG_SRC, n.inputs[0], md, md);
}

// Below 4 MFLOP a step runs on one thread: the work does not pay for waking a second one
// (parallel_threshold scales it by the OpenMP wait policy). Measured per op at batch 1 with
// OMP_WAIT_POLICY=passive (MobileNetV2, 2 threads against 1, ONEDNN_VERBOSE exec times): 1x1
// convolutions of 5-10 MFLOP took 1.3-2x longer, 15-20 MFLOP 0.8-1.5x, 38-40 MFLOP 1.1-1.3x, so
// with sleeping workers the threshold is 64 MFLOP.
constexpr int64_t kSingleThreadFlops = 4'000'000;

}  // namespace

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

ScopedThreads::ScopedThreads(int n) : saved_(omp_get_max_threads()) {
  omp_set_num_threads(n);
}
ScopedThreads::~ScopedThreads() {
  omp_set_num_threads(saved_);
}

int threads_for(double flops) {
  return flops < static_cast<double>(parallel_threshold(kSingleThreadFlops))
             ? 1
             : omp_get_max_threads();
}

std::optional<Step> build_step(const ir::Graph& g, const Group& grp, const LayoutOf& producer_md) {
  const ir::Node& n = g.node(grp.head);
  // Softmax's work: about 8 flops per element (max, subtract, exp, sum, scale), Gelu's as many
  // (a polynomial); a Transpose's copy of each element counts 4, so that copies of a million
  // elements split across threads.
  double numel = static_cast<double>(g.value(n.inputs[0]).type.shape.numel());
  double work = n.op == OpType::Softmax || n.op == OpType::Gelu ? 8.0 * numel
                : n.op == OpType::Transpose                     ? 4.0 * numel
                                            : static_cast<double>(ir::node_flops(g, n));
  int threads = threads_for(work);
  ScopedThreads scope(threads);
  try {
    Step s;
    if (n.op == OpType::Conv && grp.wgrad_src != ir::kNoValue)
      s = build_conv_weight_grad(g, grp);
    else if (n.op == OpType::Conv)
      s = build_conv(g, grp);
    else if (n.op == OpType::ConvTranspose)
      s = build_deconv(g, grp);
    else if (n.op == OpType::MatMul)
      s = build_matmul(g, grp);
    else if (n.op == OpType::Gemm)
      s = build_gemm(g, grp);
    else if (n.op == OpType::Softmax)
      s = build_softmax(g, grp);
    else if (n.op == OpType::Transpose)
      s = build_transpose(g, grp);
    else if (n.op == OpType::Gelu)
      s = build_gelu(g, grp);
    else
      s = build_pool(g, grp, producer_md);
    s.threads = threads;
    return s;
  } catch (const dnnl::error&) {
    return std::nullopt;  // no oneDNN implementation for these shapes: the reference kernels run it
  }
}

}  // namespace mimic::backends::cpu::onednn
