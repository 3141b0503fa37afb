// Cases: MatMul, Gemm, Conv, ConvTranspose.
#include "tests/conformance/op_cases_util.h"

namespace mimic::testing {
namespace {

using ir::DType;
using ir::OpType;
using ir::Shape;
using A = ir::Attributes;
using Ints = std::vector<int64_t>;

void matmul_cases(std::vector<OpCase>& out) {
  struct MM {
    const char* name;
    Shape a, b;
    DType t;
  };
  std::vector<MM> cases = {
      {"2d", Shape({5, 7}), Shape({7, 3}), DType::f32},
      {"batched_3d", Shape({4, 5, 6}), Shape({4, 6, 3}), DType::f32},
      {"broadcast_batch", Shape({2, 1, 4, 5}), Shape({3, 5, 6}), DType::f32},
      {"broadcast_b_batch", Shape({2, 3, 4, 5}), Shape({1, 3, 5, 2}), DType::f32},
      {"shared_b", Shape({3, 4, 6}), Shape({6, 5}), DType::f32},
      {"shared_a", Shape({4, 6}), Shape({3, 6, 5}), DType::f32},
      {"vector_matrix", Shape({6}), Shape({6, 4}), DType::f32},
      {"matrix_vector", Shape({3, 6}), Shape({6}), DType::f32},
      {"vector_vector", Shape({6}), Shape({6}), DType::f32},
      {"attention_scores", Shape({2, 3, 8, 4}), Shape({2, 3, 4, 8}), DType::f32},
      {"bf16", Shape({3, 5, 16}), Shape({16, 7}), DType::bf16},
      {"f16_batched", Shape({2, 5, 16}), Shape({2, 16, 7}), DType::f16},
  };
  for (const MM& m : cases) {
    CaseBuilder b(std::string("MatMul/") + m.name);
    b.op(OpType::MatMul, {b.in(m.t, m.a), b.in(m.t, m.b)});
    out.push_back(b.matrix().done());
  }
  {
    CaseBuilder b("MatMul/constant_weights_bias_relu");
    ir::ValueId h = b.op(OpType::MatMul, {b.in(DType::f32, Shape({4, 8})),
                                          b.random_constant(DType::f32, Shape({8, 6}))});
    b.chained(h);
    ir::ValueId z = b.op(OpType::Add, {h, b.random_constant(DType::f32, Shape({6}))});
    b.chained(z);
    b.op(OpType::Relu, {z});
    out.push_back(b.matrix().done());
  }
}

void gemm_cases(std::vector<OpCase>& out) {
  for (int64_t ta : {0, 1})
    for (int64_t tb : {0, 1}) {
      CaseBuilder b(fmt::format("Gemm/transA{}_transB{}_bias_row", ta, tb));
      Shape sa = ta ? Shape({6, 4}) : Shape({4, 6}), sb = tb ? Shape({5, 6}) : Shape({6, 5});
      b.op(OpType::Gemm,
           {b.in(DType::f32, sa), b.in(DType::f32, sb), b.random_constant(DType::f32, Shape({5}))},
           {{"transA", ta}, {"transB", tb}});
      out.push_back(b.matrix().done());
    }
  {
    CaseBuilder b("Gemm/alpha_beta_column_c");
    b.op(OpType::Gemm,
         {b.in(DType::f32, Shape({4, 6})), b.in(DType::f32, Shape({6, 5})),
          b.in(DType::f32, Shape({4, 1}))},
         {{"alpha", 0.5}, {"beta", 2.0}});
    out.push_back(b.matrix().done());
  }
  {
    CaseBuilder b("Gemm/no_c");
    b.op(OpType::Gemm, {b.in(DType::f32, Shape({3, 7})), b.in(DType::f32, Shape({2, 7}))},
         {{"transB", int64_t{1}}});
    out.push_back(b.matrix().done());
  }
  {
    CaseBuilder b("Gemm/beta_zero");
    b.op(OpType::Gemm,
         {b.in(DType::f32, Shape({3, 7})), b.in(DType::f32, Shape({7, 2})),
          b.in(DType::f32, Shape({3, 2}))},
         {{"beta", 0.0}});
    out.push_back(b.matrix().done());
  }
  {
    CaseBuilder b("Gemm/bf16_full_c");
    b.op(OpType::Gemm, {b.in(DType::bf16, Shape({4, 8})), b.in(DType::bf16, Shape({8, 3})),
                        b.in(DType::bf16, Shape({4, 3}))});
    out.push_back(b.matrix().done());
  }
}

struct ConvSpec {
  const char* name;
  Shape x, w;
  A attrs;
  bool bias = false;
  DType t = DType::f32;
  bool weights_input = false;
  std::string workspace_mb = "";
};

void add_conv(std::vector<OpCase>& out, OpType op, const ConvSpec& s) {
  CaseBuilder b(std::string(ir::op_name(op)) + "/" + s.name);
  ir::ValueId x = b.in(s.t, s.x);
  ir::ValueId w =
      s.weights_input ? b.in(s.t, s.w, -0.5, 0.5) : b.random_constant(s.t, s.w, -0.5, 0.5);
  std::vector<ir::ValueId> ins{x, w};
  if (s.bias) {
    int64_t m = op == OpType::Conv ? s.w[0] : s.w[1] * s.attrs.get_int("group", 1);
    ins.push_back(b.random_constant(s.t, Shape({m})));
  }
  b.op(op, ins, s.attrs);
  if (!s.workspace_mb.empty()) b.option("workspace_mb", s.workspace_mb);
  out.push_back(b.matrix().done());
}

const A nhwc{{"layout", std::string("NHWC")}};

A with(A a, const std::string& k, ir::AttrValue v) {
  a.set(k, std::move(v));
  return a;
}

void conv_cases(std::vector<OpCase>& out) {
  std::vector<ConvSpec> specs = {
      {"nchw_3x3_pad1_bias",
       Shape({2, 4, 7, 7}),
       Shape({6, 4, 3, 3}),
       {{"pads", Ints{1, 1, 1, 1}}},
       true},
      {"nchw_stride2_dilation2",
       Shape({2, 3, 9, 9}),
       Shape({4, 3, 3, 3}),
       {{"strides", Ints{2, 2}}, {"dilations", Ints{2, 2}}, {"pads", Ints{2, 2, 2, 2}}}},
      {"nchw_group2_bias",
       Shape({1, 4, 6, 6}),
       Shape({6, 2, 3, 3}),
       {{"group", int64_t{2}}, {"pads", Ints{1, 1, 1, 1}}},
       true},
      {"nchw_depthwise_s2_bias",
       Shape({2, 5, 8, 8}),
       Shape({5, 1, 3, 3}),
       {{"group", int64_t{5}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}},
       true},
      {"nhwc_depthwise", Shape({2, 8, 8, 5}), Shape({5, 1, 3, 3}),
       with(with(nhwc, "group", int64_t{5}), "pads", Ints{1, 1, 1, 1})},
      {"nchw_depthwise_multiplier2",
       Shape({1, 3, 6, 6}),
       Shape({6, 1, 3, 3}),
       {{"group", int64_t{3}}, {"pads", Ints{1, 1, 1, 1}}}},
      {"nchw_pointwise_bias", Shape({2, 6, 5, 5}), Shape({4, 6, 1, 1}), {}, true},
      {"nhwc_pointwise_group2", Shape({2, 5, 5, 6}), Shape({4, 3, 1, 1}),
       with(nhwc, "group", int64_t{2})},
      {"nchw_pointwise_stride2",
       Shape({2, 6, 7, 7}),
       Shape({4, 6, 1, 1}),
       {{"strides", Ints{2, 2}}}},
      {"nhwc_3x3_s2_bias", Shape({2, 9, 9, 4}), Shape({6, 4, 3, 3}),
       with(with(nhwc, "strides", Ints{2, 2}), "pads", Ints{1, 1, 1, 1}), true},
      {"nhwc_group2_weights_input", Shape({1, 6, 6, 4}), Shape({4, 2, 3, 3}),
       with(with(nhwc, "group", int64_t{2}), "pads", Ints{1, 0, 1, 0}), false, DType::f32, true},
      {"nchw_weights_input", Shape({1, 3, 5, 5}), Shape({2, 3, 3, 3}), {}, false, DType::f32, true},
      {"conv1d_stride2",
       Shape({2, 3, 10}),
       Shape({4, 3, 3}),
       {{"pads", Ints{1, 1}}, {"strides", Ints{2}}},
       true},
      {"conv3d",
       Shape({1, 2, 4, 5, 5}),
       Shape({3, 2, 2, 3, 3}),
       {{"pads", Ints{0, 1, 1, 1, 1, 1}}}},
      {"nhwc_conv1d", Shape({2, 9, 3}), Shape({4, 3, 3}), with(nhwc, "pads", Ints{1, 1}), true},
      {"same_upper_stride2",
       Shape({1, 3, 7, 7}),
       Shape({2, 3, 4, 4}),
       {{"auto_pad", std::string("SAME_UPPER")}, {"strides", Ints{2, 2}}}},
      {"asymmetric_pads", Shape({1, 2, 6, 5}), Shape({3, 2, 3, 2}), {{"pads", Ints{0, 2, 1, 0}}}},
      {"bf16_bias",
       Shape({1, 4, 6, 6}),
       Shape({4, 4, 3, 3}),
       {{"pads", Ints{1, 1, 1, 1}}},
       true,
       DType::bf16},
      {"f16_nhwc_bias", Shape({2, 6, 6, 4}), Shape({8, 4, 3, 3}),
       with(nhwc, "pads", Ints{1, 1, 1, 1}), true, DType::f16},
      {"f16_depthwise",
       Shape({1, 4, 6, 6}),
       Shape({4, 1, 3, 3}),
       {{"group", int64_t{4}}},
       true,
       DType::f16},
      {"chunked_nchw",
       Shape({6, 16, 32, 32}),
       Shape({8, 16, 3, 3}),
       {{"pads", Ints{1, 1, 1, 1}}},
       true,
       DType::f32,
       false,
       "1"},
      {"chunked_nhwc", Shape({5, 32, 32, 16}), Shape({8, 16, 3, 3}),
       with(nhwc, "pads", Ints{1, 1, 1, 1}), true, DType::f32, false, "1"},
  };
  for (const ConvSpec& s : specs) add_conv(out, OpType::Conv, s);
}

void conv_transpose_cases(std::vector<OpCase>& out) {
  std::vector<ConvSpec> specs = {
      {"nchw_s2_p1_bias",
       Shape({2, 4, 5, 5}),
       Shape({4, 3, 3, 3}),
       {{"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}},
       true},
      {"group2", Shape({1, 4, 4, 4}), Shape({4, 2, 3, 3}), {{"group", int64_t{2}}}},
      {"output_padding",
       Shape({1, 2, 4, 4}),
       Shape({2, 3, 3, 3}),
       {{"strides", Ints{2, 2}}, {"output_padding", Ints{1, 1}}, {"pads", Ints{1, 1, 1, 1}}}},
      {"dilation2", Shape({1, 2, 5, 5}), Shape({2, 2, 3, 3}), {{"dilations", Ints{2, 2}}}, true},
      {"nhwc_s2_bias", Shape({2, 5, 5, 4}), Shape({4, 3, 3, 3}), with(nhwc, "strides", Ints{2, 2}),
       true},
      {"conv1d_stride3", Shape({1, 3, 6}), Shape({3, 2, 3}), {{"strides", Ints{3}}}},
      {"f16_bias",
       Shape({1, 4, 4, 4}),
       Shape({4, 2, 2, 2}),
       {{"strides", Ints{2, 2}}},
       true,
       DType::f16},
      {"weights_input", Shape({1, 3, 4, 4}), Shape({3, 2, 3, 3}), {}, false, DType::f32, true},
      {"chunked",
       Shape({4, 8, 32, 32}),
       Shape({8, 16, 3, 3}),
       {{"pads", Ints{1, 1, 1, 1}}},
       true,
       DType::f32,
       false,
       "1"},
  };
  for (const ConvSpec& s : specs) add_conv(out, OpType::ConvTranspose, s);
}

}  // namespace

void add_linear_cases(std::vector<OpCase>& out) {
  matmul_cases(out);
  gemm_cases(out);
  conv_cases(out);
  conv_transpose_cases(out);
}

}  // namespace mimic::testing
