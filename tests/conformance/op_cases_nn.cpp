// Cases: pools, normalizations, softmax family, reductions, ArgMax/ArgMin, CumSum.
#include "tests/conformance/op_cases_util.h"

namespace mimic::testing {
namespace {

using ir::DType;
using ir::OpType;
using ir::Shape;
using A = ir::Attributes;
using Ints = std::vector<int64_t>;

void pool_cases(std::vector<OpCase>& out) {
  struct P {
    const char* name;
    OpType op;
    Shape x;
    A attrs;
    DType t = DType::f32;
  };
  A k3s2p1{{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}};
  A k3s2p1_nhwc = k3s2p1;
  k3s2p1_nhwc.set("layout", std::string("NHWC"));
  A avg_pad = k3s2p1;
  avg_pad.set("count_include_pad", int64_t{1});
  A ceil{{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", int64_t{1}}};
  std::vector<P> specs = {
      {"nchw_k3s2p1", OpType::MaxPool, Shape({2, 3, 9, 9}), k3s2p1},
      {"nhwc_k3s2p1", OpType::MaxPool, Shape({2, 9, 9, 3}), k3s2p1_nhwc},
      {"dilation2",
       OpType::MaxPool,
       Shape({1, 2, 9, 9}),
       {{"kernel_shape", Ints{2, 2}}, {"dilations", Ints{2, 2}}}},
      {"ceil_mode", OpType::MaxPool, Shape({1, 2, 8, 8}), ceil},
      {"pool1d",
       OpType::MaxPool,
       Shape({2, 3, 11}),
       {{"kernel_shape", Ints{3}}, {"strides", Ints{2}}}},
      {"pool3d",
       OpType::MaxPool,
       Shape({1, 2, 4, 6, 6}),
       {{"kernel_shape", Ints{2, 2, 2}}, {"strides", Ints{2, 2, 2}}}},
      {"bf16",
       OpType::MaxPool,
       Shape({1, 3, 6, 6}),
       {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}},
       DType::bf16},
      {"nchw_exclude_pad", OpType::AveragePool, Shape({2, 3, 9, 9}), k3s2p1},
      {"nchw_include_pad", OpType::AveragePool, Shape({2, 3, 9, 9}), avg_pad},
      {"nhwc_exclude_pad", OpType::AveragePool, Shape({2, 9, 9, 3}), k3s2p1_nhwc},
      {"ceil_mode", OpType::AveragePool, Shape({1, 2, 8, 8}), ceil},
      {"pool1d",
       OpType::AveragePool,
       Shape({2, 3, 11}),
       {{"kernel_shape", Ints{4}}, {"pads", Ints{1, 2}}}},
      {"f16", OpType::AveragePool, Shape({1, 3, 6, 6}), {{"kernel_shape", Ints{3, 3}}}, DType::f16},
  };
  for (const P& p : specs) {
    CaseBuilder b(std::string(ir::op_name(p.op)) + "/" + p.name);
    b.op(p.op, {b.in(p.t, p.x)}, p.attrs);
    out.push_back(b.done());
  }
  // MaxPoolGrad(x, MaxPool(x), dy); integral x in [0, 3] makes ties, which go to the first. A
  // matrix case: backends without its kernel scatter dy with a one-hot ConvTranspose, which a
  // matrix unit computes at its operand precision.
  struct G {
    const char* name;
    Shape x, pooled;
    A attrs;
  };
  std::vector<G> grads = {
      {"nchw_k3s2p1", Shape({2, 3, 9, 9}), Shape({2, 3, 5, 5}), k3s2p1},
      {"nhwc_k3s2p1", Shape({2, 9, 9, 3}), Shape({2, 5, 5, 3}), k3s2p1_nhwc},
      {"dilation2",
       Shape({1, 2, 9, 9}),
       Shape({1, 2, 7, 7}),
       {{"kernel_shape", Ints{2, 2}}, {"dilations", Ints{2, 2}}}},
      {"ceil_mode", Shape({1, 2, 8, 8}), Shape({1, 2, 4, 4}), ceil},
      {"pool1d",
       Shape({2, 3, 11}),
       Shape({2, 3, 5}),
       {{"kernel_shape", Ints{3}}, {"strides", Ints{2}}}},
      {"pool3d",
       Shape({1, 2, 4, 6, 6}),
       Shape({1, 2, 2, 3, 3}),
       {{"kernel_shape", Ints{2, 2, 2}}, {"strides", Ints{2, 2, 2}}}},
  };
  for (const G& p : grads)
    for (bool ties : {false, true}) {
      CaseBuilder b(std::string("MaxPoolGrad/") + p.name + (ties ? "_ties" : ""));
      ir::ValueId x = ties ? b.in(DType::f32, p.x, 0, 3, true) : b.in(DType::f32, p.x);
      ir::ValueId y = b.op(OpType::MaxPool, {x}, p.attrs);
      b.chained(y);
      b.op(OpType::MaxPoolGrad, {x, y, b.in(DType::f32, p.pooled)}, p.attrs);
      out.push_back(b.matrix().done());
    }
  for (OpType op : {OpType::GlobalAveragePool, OpType::GlobalMaxPool})
    for (int layout = 0; layout < 3; ++layout) {
      const char* names[] = {"nchw", "nhwc", "nchw_large"};
      CaseBuilder b(std::string(ir::op_name(op)) + "/" + names[layout]);
      Shape x = layout == 0   ? Shape({2, 3, 5, 5})
                : layout == 1 ? Shape({2, 5, 5, 3})
                              : Shape({2, 3, 12, 12});
      A attrs;
      if (layout == 1) attrs.set("layout", std::string("NHWC"));
      b.op(op, {b.in(DType::f32, x)}, attrs);
      out.push_back(b.done());
    }
}

void norm_cases(std::vector<OpCase>& out) {
  auto bn = [&](const char* name, Shape x, bool last, bool params_input, DType t) {
    CaseBuilder b(std::string("BatchNormalization/") + name);
    int64_t c = last ? x.dim(-1) : x[1];
    std::vector<ir::ValueId> ins{b.in(t, x)};
    double lo[] = {0.5, -1, -1, 0.2}, hi[] = {1.5, 1, 1, 2};
    for (int i = 0; i < 4; ++i)
      ins.push_back(params_input ? b.in(t, Shape({c}), lo[i], hi[i])
                                 : b.random_constant(t, Shape({c}), lo[i], hi[i]));
    A attrs{{"epsilon", 1e-3}};
    if (last) attrs.set("layout", std::string("NHWC"));
    b.op(OpType::BatchNormalization, ins, attrs);
    out.push_back(b.done());
  };
  bn("nchw", Shape({2, 3, 4, 4}), false, false, DType::f32);
  bn("nhwc", Shape({2, 4, 4, 3}), true, false, DType::f32);
  bn("params_as_inputs", Shape({2, 3, 5}), false, true, DType::f32);
  bn("f16", Shape({1, 4, 3, 3}), false, false, DType::f16);
  bn("bf16_params_as_inputs", Shape({1, 4, 3, 3}), false, true, DType::bf16);

  {
    CaseBuilder b("LayerNormalization/last_axis_scale_bias");
    b.op(OpType::LayerNormalization,
         {b.in(DType::f32, Shape({2, 5, 8})), b.random_constant(DType::f32, Shape({8}), 0.5, 1.5),
          b.random_constant(DType::f32, Shape({8}))});
    out.push_back(b.done());
  }
  {
    CaseBuilder b("LayerNormalization/axis1_broadcast_scale_with_stats");
    b.node(OpType::LayerNormalization,
           {b.in(DType::f32, Shape({2, 5, 8})),
            b.random_constant(DType::f32, Shape({1, 8}), 0.5, 1.5)},
           {{"axis", int64_t{1}}, {"epsilon", 1e-3}}, 3);
    out.push_back(b.done());
  }
  {
    CaseBuilder b("LayerNormalization/scale_bias_as_inputs");
    b.op(OpType::LayerNormalization,
         {b.in(DType::f32, Shape({3, 6})), b.in(DType::f32, Shape({6}), 0.5, 1.5),
          b.in(DType::f32, Shape({1}))});
    out.push_back(b.done());
  }
  {
    CaseBuilder b("LayerNormalization/long_rows");
    b.op(OpType::LayerNormalization, {b.in(DType::f32, Shape({3, 96}), -3, 5),
                                      b.random_constant(DType::f32, Shape({96}), 0.5, 1.5),
                                      b.random_constant(DType::f32, Shape({96}))});
    out.push_back(b.done());
  }
  {
    CaseBuilder b("LayerNormalization/bf16");
    b.op(OpType::LayerNormalization,
         {b.in(DType::bf16, Shape({4, 16})), b.random_constant(DType::bf16, Shape({16}), 0.5, 1.5),
          b.random_constant(DType::bf16, Shape({16}))});
    out.push_back(b.done());
  }
  {
    CaseBuilder b("InstanceNormalization/nchw");
    b.op(OpType::InstanceNormalization, {b.in(DType::f32, Shape({2, 3, 4, 5})),
                                         b.random_constant(DType::f32, Shape({3}), 0.5, 1.5),
                                         b.random_constant(DType::f32, Shape({3}))});
    out.push_back(b.done());
  }
  {
    CaseBuilder b("InstanceNormalization/large_spatial");
    b.op(OpType::InstanceNormalization,
         {b.in(DType::f32, Shape({1, 2, 8, 8})), b.in(DType::f32, Shape({2}), 0.5, 1.5),
          b.in(DType::f32, Shape({2}))});
    out.push_back(b.done());
  }
  {
    CaseBuilder b("LRN/size3");
    b.op(OpType::LRN, {b.in(DType::f32, Shape({2, 5, 3, 3}))},
         {{"size", int64_t{3}}, {"alpha", 1e-2}, {"beta", 0.6}, {"bias", 1.5}});
    out.push_back(b.done());
  }
}

void softmax_cases(std::vector<OpCase>& out) {
  for (OpType op : {OpType::Softmax, OpType::LogSoftmax, OpType::Hardmax}) {
    struct S {
      const char* name;
      Shape x;
      int64_t axis;
    };
    for (const S& s : {S{"last_axis", Shape({3, 7}), -1}, S{"middle_axis", Shape({2, 5, 4}), 1},
                       S{"long_rows", Shape({3, 70}), -1}}) {
      CaseBuilder b(std::string(ir::op_name(op)) + "/" + s.name);
      b.op(op, {b.in(DType::f32, s.x, -4, 4, op == OpType::Hardmax)}, {{"axis", s.axis}});
      out.push_back(b.done());
    }
  }
  {
    CaseBuilder b("Softmax/f16");
    b.op(OpType::Softmax, {b.in(DType::f16, Shape({4, 40}), -4, 4)});
    out.push_back(b.done());
  }
}

void reduce_cases(std::vector<OpCase>& out) {
  for (OpType op : {OpType::ReduceSum, OpType::ReduceMean, OpType::ReduceMax, OpType::ReduceMin,
                    OpType::ReduceProd, OpType::ReduceL1, OpType::ReduceL2, OpType::ReduceSumSquare,
                    OpType::ReduceLogSum, OpType::ReduceLogSumExp}) {
    bool positive = op == OpType::ReduceLogSum;
    {
      CaseBuilder b(std::string(ir::op_name(op)) + "/axis1_keepdims");
      b.op(op, {b.in(DType::f32, Shape({3, 4, 5}), positive ? 0.1 : -2, 2), b.ints({1})});
      out.push_back(b.done());
    }
    {
      CaseBuilder b(std::string(ir::op_name(op)) + "/axes_0_2_dropped");
      b.op(op, {b.in(DType::f32, Shape({3, 4, 5}), positive ? 0.1 : -1, 1), b.ints({0, 2})},
           {{"keepdims", int64_t{0}}});
      out.push_back(b.done());
    }
  }
  {
    CaseBuilder b("ReduceMean/all_axes");
    b.op(OpType::ReduceMean, {b.in(DType::f32, Shape({3, 4, 5}))});
    out.push_back(b.done());
  }
  {
    CaseBuilder b("ReduceSumSquare/noop_with_empty_axes");
    b.op(OpType::ReduceSumSquare, {b.in(DType::f32, Shape({3, 4}))},
         {{"noop_with_empty_axes", int64_t{1}}});
    out.push_back(b.done());
  }
  for (OpType op :
       {OpType::ReduceSum, OpType::ReduceMax, OpType::ReduceLogSumExp, OpType::ReduceL2}) {
    CaseBuilder b(std::string(ir::op_name(op)) + "/long_rows");
    b.op(op, {b.in(DType::f32, Shape({4, 100})), b.ints({-1})});
    out.push_back(b.done());
  }
  for (DType t : {DType::i32, DType::i64})
    for (OpType op :
         {OpType::ReduceSum, OpType::ReduceMax, OpType::ReduceMean, OpType::ReduceProd}) {
      CaseBuilder b(std::string(ir::op_name(op)) + "/" + ir::dtype_name(t));
      b.op(op, {b.in(t, Shape({3, 4}), -9, 9), b.ints({1})});
      out.push_back(b.done());
    }
  {
    CaseBuilder b("ReduceMean/bf16");
    b.op(OpType::ReduceMean, {b.in(DType::bf16, Shape({4, 6})), b.ints({1})});
    out.push_back(b.done());
  }
}

void arg_cases(std::vector<OpCase>& out) {
  for (OpType op : {OpType::ArgMax, OpType::ArgMin}) {
    std::string name = ir::op_name(op);
    {
      CaseBuilder b(name + "/f32_axis1");
      b.op(op, {b.in(DType::f32, Shape({3, 4, 5}))}, {{"axis", int64_t{1}}});
      out.push_back(b.done());
    }
    for (int64_t last : {0, 1}) {
      CaseBuilder b(name + (last ? "/i64_ties_last" : "/i64_ties_first"));
      b.op(op, {b.in(DType::i64, Shape({4, 6}), -2, 2)},
           {{"axis", int64_t{-1}}, {"keepdims", int64_t{0}}, {"select_last_index", last}});
      out.push_back(b.done());
    }
    for (int64_t last : {0, 1}) {
      CaseBuilder b(name + (last ? "/long_rows_ties_last" : "/long_rows_ties_first"));
      b.op(op, {b.in(DType::f32, Shape({3, 70}), -3, 3, true)},
           {{"axis", int64_t{1}}, {"select_last_index", last}});
      out.push_back(b.done());
    }
    {
      CaseBuilder b(name + "/i8");
      b.op(op, {b.in(DType::i8, Shape({5, 3}), -100, 100)});
      out.push_back(b.done());
    }
  }
}

void cumsum_cases(std::vector<OpCase>& out) {
  struct C {
    const char* name;
    DType t;
    int64_t axis, exclusive, reverse;
  };
  for (const C& c :
       {C{"f32_axis1", DType::f32, 1, 0, 0}, C{"f32_exclusive", DType::f32, 1, 1, 0},
        C{"f32_reverse", DType::f32, -1, 0, 1}, C{"f32_exclusive_reverse", DType::f32, 0, 1, 1},
        C{"i64_axis0", DType::i64, 0, 0, 0}, C{"i32_reverse", DType::i32, 1, 0, 1}}) {
    CaseBuilder b(std::string("CumSum/") + c.name);
    b.op(OpType::CumSum, {b.in(c.t, Shape({3, 5}), -9, 9), b.ints({c.axis})},
         {{"exclusive", c.exclusive}, {"reverse", c.reverse}});
    out.push_back(b.done());
  }
}

}  // namespace

// Recurrent layers, unrolled by lowering: constant and runtime weights, both layouts, directions,
// peepholes, GRU's linear_before_reset and constant sequence_lens.
void recurrent_cases(std::vector<OpCase>& out) {
  struct R {
    const char* name;
    OpType op;
    int gates;
    const char* direction;
    int64_t layout;
    bool constant_weights, lens;
  };
  for (const R& r :
       {R{"LSTM/bidirectional_peepholes_lens", OpType::LSTM, 4, "bidirectional", 0, true, true},
        R{"LSTM/reverse_layout1_runtime_weights", OpType::LSTM, 4, "reverse", 1, false, false},
        R{"GRU/forward_lbr", OpType::GRU, 3, "forward", 0, true, false},
        R{"GRU/bidirectional_layout1_lens", OpType::GRU, 3, "bidirectional", 1, false, true},
        R{"RNN/reverse_lens", OpType::RNN, 1, "reverse", 0, true, true}}) {
    CaseBuilder b(r.name);
    int64_t dirs = std::string(r.direction) == "bidirectional" ? 2 : 1, seq = 4, batch = 3, hid = 5;
    auto weight = [&](Shape s) {
      return r.constant_weights ? b.random_constant(DType::f32, s) : b.in(DType::f32, s, -1, 1);
    };
    std::vector<ir::ValueId> in{
        b.in(DType::f32, r.layout == 0 ? Shape({seq, batch, 6}) : Shape({batch, seq, 6}), -1, 1),
        weight(Shape({dirs, r.gates * hid, 6})), weight(Shape({dirs, r.gates * hid, hid})),
        weight(Shape({dirs, 2 * r.gates * hid}))};
    in.push_back(r.lens ? b.constant(i64_tensor(Shape({batch}), {4, 1, 3})) : ir::kNoValue);
    in.push_back(b.in(
        DType::f32, r.layout == 0 ? Shape({dirs, batch, hid}) : Shape({batch, dirs, hid}), -1, 1));
    if (r.op == OpType::LSTM) {
      in.push_back(b.in(DType::f32,
                        r.layout == 0 ? Shape({dirs, batch, hid}) : Shape({batch, dirs, hid}), -1,
                        1));
      in.push_back(weight(Shape({dirs, 3 * hid})));
    }
    ir::Attributes attrs{
        {"hidden_size", hid}, {"direction", std::string(r.direction)}, {"layout", r.layout}};
    if (r.op == OpType::GRU) attrs.set("linear_before_reset", int64_t{1});
    b.node(r.op, in, attrs, r.op == OpType::LSTM ? 3 : 2);
    out.push_back(b.matrix().done());
  }
}

void add_nn_cases(std::vector<OpCase>& out) {
  recurrent_cases(out);
  pool_cases(out);
  norm_cases(out);
  softmax_cases(out);
  reduce_cases(out);
  arg_cases(out);
  cumsum_cases(out);
}

}  // namespace mimic::testing
