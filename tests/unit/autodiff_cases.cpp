#include "tests/unit/autodiff_cases.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "frontend/api/compile.h"
#include "frontend/api/random.h"
#include "frontend/ir/autodiff.h"

namespace mimic::test {
namespace {

using ir::DType;
using ir::GraphBuilder;
using ir::OpType;
using ir::Shape;
using ir::ValueId;

ir::HostTensor make_input(const Input& in, uint64_t seed) {
  Random rng(seed);
  ir::HostTensor t = rng.tensor(DType::f32, in.shape);
  float* p = t.data<float>();
  int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    if (in.gen == Gen::positive) p[i] = 0.5f + std::fabs(p[i]);
    if (in.gen == Gen::away_from_zero) p[i] = p[i] >= 0 ? p[i] + 0.2f : p[i] - 0.2f;
    if (in.gen == Gen::with_zeros && (i % 6 == 0 || i == 1)) p[i] = 0.0f;
    if (in.gen == Gen::unit_interval) p[i] = 0.8f * std::tanh(p[i]);
  }
  if (in.gen == Gen::distinct) {  // a shuffle of values 0.1 apart: no ties within the step
    for (int64_t i = 0; i < n; ++i)
      p[i] = 0.1f * static_cast<float>(i) - 0.05f * static_cast<float>(n);
    for (int64_t i = n - 1; i > 0; --i)
      std::swap(p[i], p[static_cast<int64_t>(rng.uniform() * (i + 1))]);
  }
  return t;
}

}  // namespace

CaseGraphs build_case(const Case& c) {
  CaseGraphs out{ir::Graph(c.name), ir::Graph(), {}};
  ir::Graph& g = out.backward;
  g.set_name(c.name);
  std::vector<ValueId> ins;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    ins.push_back(g.add_input("x" + std::to_string(i), DType::f32, c.inputs[i].shape));
    out.data.push_back(make_input(c.inputs[i], 100 + i));
  }
  GraphBuilder b(g, "case");
  ValueId y = c.build(b, ins);
  Random rng(7);
  ValueId r = g.add_constant("r", rng.tensor(DType::f32, b.shape(y)));
  std::vector<int64_t> all(b.shape(y).rank());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  ValueId loss = b.mul(y, r);
  if (!all.empty()) loss = b.reduce_sum(loss, all, false);
  out.forward = g;
  out.forward.add_output(loss);
  std::vector<ValueId> grads = ir::append_gradients(g, loss, ins);
  g.add_output(loss);
  for (ValueId v : grads) g.add_output(v);
  return out;
}

// Central differences (L(x + h) - L(x - h)) / 2h, h = 1e-2, in f32, within
// 1e-2 * max(1, |grad|) on up to 24 sampled elements of every input.
void check_case(const Case& c) {
  SCOPED_TRACE(c.name);
  CaseGraphs cg = build_case(c);
  Executable fwd = compile(cg.forward, Device("cpu")), bwd = compile(cg.backward, Device("cpu"));
  const std::vector<ir::HostTensor>& data = cg.data;
  std::vector<ir::HostTensor> analytic = bwd.run(data).outputs;
  auto loss_at = [&](const std::vector<ir::HostTensor>& d) {
    return fwd.run(d).outputs[0].data<float>()[0];
  };
  const float h = 1e-2f;
  for (size_t i = 0; i < data.size(); ++i) {
    int64_t n = data[i].numel(), stride = std::max<int64_t>(1, n / 24);
    for (int64_t e = 0; e < n; e += stride) {
      std::vector<ir::HostTensor> d = data;
      d[i] = data[i].clone();
      float x0 = d[i].data<float>()[e];
      d[i].data<float>()[e] = x0 + h;
      double up = loss_at(d);
      d[i].data<float>()[e] = x0 - h;
      double down = loss_at(d);
      double fd = (up - down) / (2.0 * h), an = analytic[1 + i].data<float>()[e];
      ASSERT_NEAR(an, fd, 1e-2 * std::max(1.0, std::fabs(an))) << "input " << i << " element " << e;
    }
  }
}

namespace {

ValueId conv(GraphBuilder& b, ValueId x, ValueId w, ir::Attributes at,
             ValueId bias = ir::kNoValue) {
  std::vector<ValueId> in{x, w};
  if (bias != ir::kNoValue) in.push_back(bias);
  return b.op(OpType::Conv, in, std::move(at));
}

}  // namespace

std::vector<Case> elementwise_cases() {
  auto unary = [](OpType op, Gen gen = Gen::normal, ir::Attributes at = {}) {
    return Case{
        ir::op_name(op),
        {{Shape({3, 5}), gen}},
        [op, at](GraphBuilder& b, const std::vector<ValueId>& x) { return b.op(op, {x[0]}, at); }};
  };
  auto binary = [](OpType op, Gen gen_b) {
    return Case{ir::op_name(op),
                {{Shape({2, 3, 4})}, {Shape({3, 1}), gen_b}},
                [op](GraphBuilder& b, const std::vector<ValueId>& x) {
                  return b.op(op, {x[0], x[1]});
                }};
  };
  // a / b stays at least 0.1 away from an integer within the finite-difference step: a is an odd
  // multiple of 0.25, b = 2 +- 0.04.
  auto mod_case = [](int64_t fmod) {
    return Case{"Mod fmod=" + std::to_string(fmod),
                {{Shape({2, 6}), Gen::distinct}, {Shape({6}), Gen::unit_interval}},
                [fmod](GraphBuilder& b, const std::vector<ValueId>& x) {
                  ValueId a = b.add(b.scale(x[0], 5.0), b.scalar(0.25, DType::f32));
                  ValueId d = b.add(b.scale(x[1], 0.05), b.scalar(2.0, DType::f32));
                  return b.op(OpType::Mod, {a, d}, {{"fmod", fmod}});
                }};
  };
  return {
      binary(OpType::Add, Gen::normal),
      binary(OpType::Sub, Gen::normal),
      binary(OpType::Mul, Gen::normal),
      binary(OpType::Div, Gen::positive),
      {"Pow",
       {{Shape({2, 3}), Gen::positive}, {Shape({3}), Gen::normal}},
       [](GraphBuilder& b, const std::vector<ValueId>& x) {
         return b.op(OpType::Pow, {x[0], x[1]});
       }},
      unary(OpType::Relu, Gen::away_from_zero),
      unary(OpType::LeakyRelu, Gen::away_from_zero, {{"alpha", 0.1}}),
      unary(OpType::Sigmoid),
      unary(OpType::Tanh),
      unary(OpType::Gelu),
      unary(OpType::Gelu, Gen::normal, {{"approximate", std::string("tanh")}}),
      unary(OpType::Erf),
      unary(OpType::Exp),
      unary(OpType::Log, Gen::positive),
      unary(OpType::Sqrt, Gen::positive),
      unary(OpType::Neg),
      unary(OpType::Abs, Gen::away_from_zero),
      unary(OpType::Softplus),
      unary(OpType::Reciprocal, Gen::positive),
      unary(OpType::Identity),
      unary(OpType::Sin),
      unary(OpType::Cos),
      unary(OpType::Tan, Gen::unit_interval),
      unary(OpType::Asin, Gen::unit_interval),
      unary(OpType::Acos, Gen::unit_interval),
      unary(OpType::Atan),
      unary(OpType::Sinh),
      unary(OpType::Cosh),
      unary(OpType::Asinh),
      unary(OpType::Atanh, Gen::unit_interval),
      {"Acosh",
       {{Shape({3, 5}), Gen::positive}},
       [](GraphBuilder& b, const std::vector<ValueId>& x) {
         return b.op(OpType::Acosh, {b.add(x[0], b.scalar(1.0, DType::f32))});
       }},
      unary(OpType::ThresholdedRelu, Gen::distinct, {{"alpha", 0.3}}),
      unary(OpType::Shrink, Gen::distinct, {{"lambd", 0.5}, {"bias", 0.2}}),
      {"PRelu",
       {{Shape({2, 3, 4}), Gen::away_from_zero}, {Shape({3, 1})}},
       [](GraphBuilder& b, const std::vector<ValueId>& x) {
         return b.op(OpType::PRelu, {x[0], x[1]});
       }},
      mod_case(1),
      mod_case(0),
      unary(OpType::Dropout),
      {"Min",
       {{Shape({2, 3}), Gen::distinct}, {Shape({3}), Gen::distinct}},
       [](GraphBuilder& b, const std::vector<ValueId>& x) {
         return b.op(OpType::Min, {x[0], b.add(x[1], b.scalar(0.03, DType::f32))});
       }},
      unary(OpType::Elu, Gen::away_from_zero, {{"alpha", 0.7}}),
      unary(OpType::Selu, Gen::away_from_zero),
      unary(OpType::Celu, Gen::away_from_zero, {{"alpha", 1.5}}),
      unary(OpType::HardSigmoid),
      unary(OpType::HardSwish),
      unary(OpType::Softsign, Gen::away_from_zero),
      {"Cast",
       {{Shape({4})}},
       [](GraphBuilder& b, const std::vector<ValueId>& x) {
         return b.cast(b.op(OpType::Cast, {x[0]}, {{"to", std::string("f64")}}), DType::f32);
       }},
      {"Clip",
       {{Shape({12}), Gen::distinct}},
       [](GraphBuilder& b, const std::vector<ValueId>& x) {
         return b.op(OpType::Clip, {x[0], b.scalar(-0.33, DType::f32), b.scalar(0.27, DType::f32)});
       }},
      {"Where",
       {{Shape({2, 3})}, {Shape({3})}},
       [](GraphBuilder& b, const std::vector<ValueId>& x) {
         ValueId cond = b.op(OpType::Greater, {b.ints({1, 0, 1}), b.ints({0, 0, 0})});
         return b.op(OpType::Where, {cond, x[0], x[1]});
       }},
      {"Max",
       {{Shape({2, 3}), Gen::distinct}, {Shape({2, 3}), Gen::distinct}},
       [](GraphBuilder& b, const std::vector<ValueId>& x) {
         return b.op(OpType::Max, {x[0], b.add(x[1], b.scalar(0.03, DType::f32))});
       }},
      {"Sum/Mean",
       {{Shape({2, 3})}, {Shape({3})}},
       [](GraphBuilder& b, const std::vector<ValueId>& x) {
         return b.op(OpType::Mean, {b.op(OpType::Sum, {x[0], x[1]}), x[1]});
       }},
  };
}

std::vector<Case> linear_cases() {
  auto gemm = [](bool ta, bool tb) {
    Shape a = ta ? Shape({4, 3}) : Shape({3, 4}), bm = tb ? Shape({5, 4}) : Shape({4, 5});
    return Case{
        "Gemm ta=" + std::to_string(ta) + " tb=" + std::to_string(tb),
        {{a}, {bm}, {Shape({5})}},
        [ta, tb](GraphBuilder& b, const std::vector<ValueId>& x) {
          return b.op(
              OpType::Gemm, {x[0], x[1], x[2]},
              {{"alpha", 0.7}, {"beta", 1.3}, {"transA", int64_t{ta}}, {"transB", int64_t{tb}}});
        }};
  };
  auto cv = [](std::string name, Shape xs, Shape ws, ir::Attributes at) {
    int64_t m = ws[0];
    return Case{
        name, {{xs}, {ws}, {Shape({m})}}, [at](GraphBuilder& b, const std::vector<ValueId>& x) {
          return conv(b, x[0], x[1], at, x[2]);
        }};
  };
  using V = std::vector<int64_t>;
  return {
      {"MatMul",
       {{Shape({3, 4})}, {Shape({4, 5})}},
       [](GraphBuilder& b, const std::vector<ValueId>& x) {
         return b.op(OpType::MatMul, {x[0], x[1]});
       }},
      {"MatMul batched",
       {{Shape({2, 3, 4})}, {Shape({4, 5})}},
       [](GraphBuilder& b, const std::vector<ValueId>& x) {
         return b.op(OpType::MatMul, {x[0], x[1]});
       }},
      {"MatMul rank 4 by a shared matrix",
       {{Shape({2, 2, 3, 4})}, {Shape({4, 5})}},
       [](GraphBuilder& b, const std::vector<ValueId>& x) {
         return b.op(OpType::MatMul, {x[0], x[1]});
       }},
      {"MatMul shared matrix by a batch",
       {{Shape({3, 4})}, {Shape({2, 4, 5})}},
       [](GraphBuilder& b, const std::vector<ValueId>& x) {
         return b.op(OpType::MatMul, {x[0], x[1]});
       }},
      gemm(false, false),
      gemm(true, false),
      gemm(false, true),
      gemm(true, true),
      cv("Conv 3x3 pad 1", Shape({2, 3, 5, 5}), Shape({4, 3, 3, 3}), {{"pads", V{1, 1, 1, 1}}}),
      cv("Conv stride 2 leftover", Shape({1, 2, 7, 6}), Shape({3, 2, 3, 2}),
         {{"strides", V{2, 2}}}),
      cv("Conv stride 2 pad 1", Shape({2, 2, 6, 6}), Shape({3, 2, 3, 3}),
         {{"strides", V{2, 2}}, {"pads", V{1, 1, 1, 1}}}),
      cv("Conv dilation 2", Shape({1, 2, 7, 7}), Shape({2, 2, 3, 3}),
         {{"dilations", V{2, 2}}, {"pads", V{1, 0, 2, 1}}}),
      cv("Conv groups 2", Shape({2, 4, 5, 5}), Shape({6, 2, 3, 3}),
         {{"group", int64_t{2}}, {"pads", V{1, 1, 1, 1}}}),
      cv("Conv depthwise stride 2", Shape({1, 3, 6, 6}), Shape({3, 1, 3, 3}),
         {{"group", int64_t{3}}, {"strides", V{2, 2}}, {"pads", V{1, 1, 1, 1}}}),
      cv("Conv NHWC stride 2 groups 2", Shape({2, 5, 5, 4}), Shape({6, 2, 3, 3}),
         {{"strides", V{2, 2}},
          {"pads", V{1, 1, 1, 1}},
          {"group", int64_t{2}},
          {"layout", std::string("NHWC")}}),
      cv("Conv NHWC 3x3 pad 1 dilation 2", Shape({2, 6, 6, 3}), Shape({4, 3, 3, 3}),
         {{"pads", V{2, 1, 2, 2}}, {"dilations", V{2, 2}}, {"layout", std::string("NHWC")}}),
      cv("Conv 1x1 stride 2 leftover", Shape({2, 3, 6, 5}), Shape({4, 3, 1, 1}),
         {{"strides", V{2, 2}}}),
      cv("Conv NHWC 1x1 stride 2 leftover", Shape({2, 5, 6, 3}), Shape({4, 3, 1, 1}),
         {{"strides", V{2, 2}}, {"layout", std::string("NHWC")}}),
      cv("Conv 1-D", Shape({2, 2, 9}), Shape({3, 2, 3}), {{"strides", V{2}}, {"pads", V{1, 1}}}),
      cv("Conv 1-D NWC", Shape({2, 9, 2}), Shape({3, 2, 3}),
         {{"strides", V{2}}, {"pads", V{1, 1}}, {"layout", std::string("NHWC")}}),
      cv("Conv 3-D", Shape({1, 2, 4, 4, 4}), Shape({2, 2, 2, 2, 2}), {{"strides", V{2, 1, 1}}}),
      {"ConvTranspose stride 2 groups 2",
       {{Shape({2, 4, 3, 3})}, {Shape({4, 3, 3, 3})}, {Shape({6})}},
       [](GraphBuilder& b, const std::vector<ValueId>& x) {
         return b.op(OpType::ConvTranspose, {x[0], x[1], x[2]},
                     {{"strides", V{2, 2}},
                      {"pads", V{1, 0, 1, 1}},
                      {"output_padding", V{1, 0}},
                      {"group", int64_t{2}}});
       }},
      {"ConvTranspose dilation 2",
       {{Shape({1, 2, 4, 4})}, {Shape({2, 3, 2, 2})}},
       [](GraphBuilder& b, const std::vector<ValueId>& x) {
         return b.op(OpType::ConvTranspose, {x[0], x[1]}, {{"dilations", V{2, 2}}});
       }},
  };
}

std::vector<Case> shape_cases() {
  auto one = [](std::string name, Shape s, std::function<ValueId(GraphBuilder&, ValueId)> f) {
    return Case{
        name, {{s}}, [f](GraphBuilder& b, const std::vector<ValueId>& x) { return f(b, x[0]); }};
  };
  auto depth_space = [&one](OpType op, Shape s, ir::Attributes at) {
    std::string name = std::string(ir::op_name(op)) + " " + at.get_string("mode", "");
    return one(name, s, [op, at](GraphBuilder& b, ValueId x) { return b.op(op, {x}, at); });
  };
  return {
      depth_space(OpType::DepthToSpace, Shape({2, 8, 2, 3}),
                  {{"blocksize", int64_t{2}}, {"mode", std::string("DCR")}}),
      depth_space(OpType::DepthToSpace, Shape({2, 8, 2, 3}),
                  {{"blocksize", int64_t{2}}, {"mode", std::string("CRD")}}),
      depth_space(OpType::SpaceToDepth, Shape({2, 3, 4, 6}), {{"blocksize", int64_t{2}}}),
      one("Resize linear pytorch_half_pixel up", Shape({1, 2, 3, 4}),
          [](GraphBuilder& b, ValueId x) {
            std::vector<float> s{1, 1, 2, 1.5f};
            ValueId scales =
                b.graph().add_constant("scales", ir::HostTensor::from(Shape({4}), s.data()));
            return b.op(OpType::Resize, {x, ir::kNoValue, scales},
                        {{"mode", std::string("linear")},
                         {"coordinate_transformation_mode", std::string("pytorch_half_pixel")}});
          }),
      one("Resize cubic align_corners sizes down", Shape({1, 2, 5, 6}),
          [](GraphBuilder& b, ValueId x) {
            return b.op(OpType::Resize, {x, ir::kNoValue, ir::kNoValue, b.ints({1, 2, 3, 4})},
                        {{"mode", std::string("cubic")},
                         {"coordinate_transformation_mode", std::string("align_corners")}});
          }),
      {"ScatterND",
       {{Shape({4, 3, 2})}, {Shape({2, 2})}},
       [](GraphBuilder& b, const std::vector<ValueId>& x) {
         std::vector<int64_t> at{3, -1, 0, 1};  // rows [3, 2] and [0, 1]
         ValueId idx =
             b.graph().add_constant("idx", ir::HostTensor::from(Shape({2, 2}), at.data()));
         return b.op(OpType::ScatterND, {x[0], idx, x[1]});
       }},
      {"ScatterND add, one index",
       {{Shape({4, 3})}, {Shape({3})}},
       [](GraphBuilder& b, const std::vector<ValueId>& x) {
         std::vector<int64_t> at{2};
         ValueId idx = b.graph().add_constant("idx", ir::HostTensor::from(Shape({1}), at.data()));
         return b.op(OpType::ScatterND, {x[0], idx, x[1]}, {{"reduction", std::string("add")}});
       }},
      one("Trilu", Shape({2, 3, 4}),
          [](GraphBuilder& b, ValueId x) {
            return b.op(OpType::Trilu, {x, b.scalar(1.0, DType::i64)}, {{"upper", int64_t{0}}});
          }),
      one("Reshape", Shape({2, 6}),
          [](GraphBuilder& b, ValueId x) {
            return b.reshape(x, Shape({3, 4}));
          }),
      one("Flatten", Shape({2, 3, 2}),
          [](GraphBuilder& b, ValueId x) { return b.op(OpType::Flatten, {x}); }),
      one("Transpose", Shape({2, 3, 4}),
          [](GraphBuilder& b, ValueId x) {
            return b.transpose(x, {2, 0, 1});
          }),
      one("Unsqueeze/Squeeze", Shape({2, 3}),
          [](GraphBuilder& b, ValueId x) {
            return b.op(OpType::Squeeze, {b.op(OpType::Unsqueeze, {x, b.ints({0})}), b.ints({0})});
          }),
      one("Slice", Shape({4, 5}),
          [](GraphBuilder& b, ValueId x) {
            return b.slice(x, {1, 2}, {3, 5}, {0, 1});
          }),
      one("Pad", Shape({2, 3}),
          [](GraphBuilder& b, ValueId x) {
            return b.op(OpType::Pad, {x, b.ints({0, 1, 2, 1})});
          }),
      one("Expand", Shape({3, 1}),
          [](GraphBuilder& b, ValueId x) {
            return b.expand(x, Shape({2, 3, 4}));
          }),
      one("Split", Shape({2, 7}),
          [](GraphBuilder& b, ValueId x) {
            auto parts = b.ops(OpType::Split, {x, b.ints({3, 4})}, {{"axis", int64_t{1}}}, 2);
            return b.reduce_sum(parts[1], {1}, true);  // part 0 unused: its gradient is zero
          }),
      one("ReduceSum", Shape({2, 3, 4}),
          [](GraphBuilder& b, ValueId x) {
            return b.reduce_sum(x, {0, 2}, false);
          }),
      one("ReduceMean", Shape({2, 3, 4}),
          [](GraphBuilder& b, ValueId x) { return b.reduce_mean(x, {1}, true); }),
      {"ReduceMax",
       {{Shape({3, 4}), Gen::distinct}},
       [](GraphBuilder& b, const std::vector<ValueId>& x) {
         return b.op(OpType::ReduceMax, {x[0], b.ints({1})}, {{"keepdims", int64_t{0}}});
       }},
      {"ReduceMin",
       {{Shape({3, 4}), Gen::distinct}},
       [](GraphBuilder& b, const std::vector<ValueId>& x) {
         return b.op(OpType::ReduceMin, {x[0], b.ints({0})});
       }},
      one("Tile", Shape({2, 3}),
          [](GraphBuilder& b, ValueId x) {
            return b.op(OpType::Tile, {x, b.ints({2, 3})});
          }),
      one("Gather embedding", Shape({5, 3}),
          [](GraphBuilder& b, ValueId x) {
            return b.op(OpType::Gather, {x, b.ints({4, 0, 4, -1, 2, 0})});
          }),
      {"Concat",
       {{Shape({2, 3})}, {Shape({2, 2})}},
       [](GraphBuilder& b, const std::vector<ValueId>& x) {
         return b.op(OpType::Concat, {x[0], x[1], x[0]}, {{"axis", int64_t{1}}});
       }},
      {"shared value",
       {{Shape({3, 3})}},
       [](GraphBuilder& b, const std::vector<ValueId>& x) {
         return b.op(OpType::MatMul, {x[0], b.mul(x[0], x[0])});
       }},
  };
}

std::vector<Case> nn_cases() {
  using V = std::vector<int64_t>;
  auto pool = [](std::string name, OpType op, Shape s, ir::Attributes at) {
    return Case{
        name, {{s, Gen::distinct}}, [op, at](GraphBuilder& b, const std::vector<ValueId>& x) {
          return b.op(op, {x[0]}, at);
        }};
  };
  return {
      {"Softmax",
       {{Shape({3, 5})}},
       [](GraphBuilder& b, const std::vector<ValueId>& x) {
         return b.op(OpType::Softmax, {x[0]}, {{"axis", int64_t{0}}});
       }},
      {"LogSoftmax",
       {{Shape({3, 5})}},
       [](GraphBuilder& b, const std::vector<ValueId>& x) {
         return b.op(OpType::LogSoftmax, {x[0]}, {{"axis", int64_t{-1}}});
       }},
      {"LayerNormalization",
       {{Shape({2, 3, 4})}, {Shape({4})}, {Shape({4})}},
       [](GraphBuilder& b, const std::vector<ValueId>& x) {
         return b.op(OpType::LayerNormalization, {x[0], x[1], x[2]}, {{"axis", int64_t{-1}}});
       }},
      {"InstanceNormalization",
       {{Shape({2, 3, 2, 3})}, {Shape({3})}, {Shape({3})}},
       [](GraphBuilder& b, const std::vector<ValueId>& x) {
         return b.op(OpType::InstanceNormalization, {x[0], x[1], x[2]}, {{"epsilon", 1e-3}});
       }},
      pool("MaxPool 2x2", OpType::MaxPool, Shape({2, 2, 4, 4}),
           {{"kernel_shape", V{2, 2}}, {"strides", V{2, 2}}}),
      pool("MaxPool 3x3 s2 p1", OpType::MaxPool, Shape({1, 2, 5, 5}),
           {{"kernel_shape", V{3, 3}}, {"strides", V{2, 2}}, {"pads", V{1, 1, 1, 1}}}),
      pool("AveragePool 2x2", OpType::AveragePool, Shape({2, 2, 4, 5}),
           {{"kernel_shape", V{2, 2}}, {"strides", V{2, 2}}}),
      pool("AveragePool 3x3 p1 exclude pad", OpType::AveragePool, Shape({1, 2, 5, 5}),
           {{"kernel_shape", V{3, 3}}, {"strides", V{2, 2}}, {"pads", V{1, 1, 1, 1}}}),
      pool("AveragePool 3x3 p1 include pad", OpType::AveragePool, Shape({1, 2, 5, 5}),
           {{"kernel_shape", V{3, 3}}, {"pads", V{1, 1, 1, 1}}, {"count_include_pad", int64_t{1}}}),
      pool("GlobalAveragePool", OpType::GlobalAveragePool, Shape({2, 3, 3, 2}), {}),
      pool("MaxPool NHWC 3x3 s2 p1", OpType::MaxPool, Shape({1, 5, 5, 3}),
           {{"kernel_shape", V{3, 3}},
            {"strides", V{2, 2}},
            {"pads", V{1, 1, 1, 1}},
            {"layout", std::string("NHWC")}}),
      pool("AveragePool NHWC 2x2", OpType::AveragePool, Shape({2, 4, 4, 3}),
           {{"kernel_shape", V{2, 2}}, {"strides", V{2, 2}}, {"layout", std::string("NHWC")}}),
      pool("GlobalMaxPool", OpType::GlobalMaxPool, Shape({2, 3, 3, 2}), {}),
      pool("MaxPool 1-D ceil_mode", OpType::MaxPool, Shape({2, 2, 8}),
           {{"kernel_shape", V{3}}, {"strides", V{2}}, {"ceil_mode", int64_t{1}}}),
      pool("MaxPool dilation 2", OpType::MaxPool, Shape({1, 2, 7, 7}),
           {{"kernel_shape", V{2, 2}}, {"dilations", V{2, 2}}, {"pads", V{1, 1, 0, 0}}}),
      // MaxPoolGrad(x, MaxPool(x), dy): linear in dy (each window reads the incoming gradient at
      // its first maximum); x only selects, so its gradient is zero.
      {"MaxPoolGrad 3x3 s2 p1",
       {{Shape({1, 2, 5, 5}), Gen::distinct}, {Shape({1, 2, 3, 3})}},
       [](GraphBuilder& b, const std::vector<ValueId>& x) {
         ir::Attributes at{
             {"kernel_shape", V{3, 3}}, {"strides", V{2, 2}}, {"pads", V{1, 1, 1, 1}}};
         return b.op(OpType::MaxPoolGrad, {x[0], b.op(OpType::MaxPool, {x[0]}, at), x[1]}, at);
       }},
      {"MaxPoolGrad NHWC 2x2",
       {{Shape({2, 4, 4, 3}), Gen::distinct}, {Shape({2, 2, 2, 3})}},
       [](GraphBuilder& b, const std::vector<ValueId>& x) {
         ir::Attributes at{
             {"kernel_shape", V{2, 2}}, {"strides", V{2, 2}}, {"layout", std::string("NHWC")}};
         return b.op(OpType::MaxPoolGrad, {x[0], b.op(OpType::MaxPool, {x[0]}, at), x[1]}, at);
       }},
      {"BatchNormalization inference",
       {{Shape({2, 3, 2, 2})}, {Shape({3})}, {Shape({3})}},
       [](GraphBuilder& b, const std::vector<ValueId>& x) {
         ValueId mean = b.full(ir::TensorType{DType::f32, Shape({3})}, 0.3);
         ValueId var = b.full(ir::TensorType{DType::f32, Shape({3})}, 1.7);
         return b.op(OpType::BatchNormalization, {x[0], x[1], x[2], mean, var});
       }},
  };
}

std::vector<Case> reduce_cases() {
  using V = std::vector<int64_t>;
  auto reduce = [](OpType op, Shape s, V axes, int64_t keep, Gen gen = Gen::normal) {
    return Case{std::string(ir::op_name(op)) + (keep ? " keepdims" : ""),
                {{s, gen}},
                [op, axes, keep](GraphBuilder& b, const std::vector<ValueId>& x) {
                  return b.op(op, {x[0], b.ints(axes)}, {{"keepdims", keep}});
                }};
  };
  auto slice = [](std::string name, Shape s, V starts, V ends, V axes, V steps) {
    return Case{name, {{s}}, [=](GraphBuilder& b, const std::vector<ValueId>& x) {
                  return b.op(OpType::Slice,
                              {x[0], b.ints(starts), b.ints(ends), b.ints(axes), b.ints(steps)});
                }};
  };
  auto one = [](std::string name, Shape s, Gen gen,
                std::function<ValueId(GraphBuilder&, ValueId)> f) {
    return Case{name, {{s, gen}}, [f](GraphBuilder& b, const std::vector<ValueId>& x) {
                  return f(b, x[0]);
                }};
  };
  auto avg_ceil = [](std::string name, Shape s, ir::Attributes at) {
    at.set("ceil_mode", int64_t{1});
    return Case{name, {{s}}, [at](GraphBuilder& b, const std::vector<ValueId>& x) {
                  return b.op(OpType::AveragePool, {x[0]}, at);
                }};
  };
  return {
      reduce(OpType::ReduceProd, Shape({3, 4}), {1}, 0),
      reduce(OpType::ReduceProd, Shape({4, 5}), {1}, 1, Gen::with_zeros),  // 0, 1 and 2 zeros
      reduce(OpType::ReduceL1, Shape({2, 3, 4}), {0, 2}, 0, Gen::away_from_zero),
      reduce(OpType::ReduceL2, Shape({2, 3, 4}), {1}, 1),
      reduce(OpType::ReduceSumSquare, Shape({3, 4}), {0}, 0),
      reduce(OpType::ReduceLogSum, Shape({3, 4}), {1}, 0, Gen::positive),
      reduce(OpType::ReduceLogSumExp, Shape({2, 3, 4}), {2}, 0),
      one("CumSum", Shape({3, 4}), Gen::normal,
          [](GraphBuilder& b, ValueId x) {
            return b.op(OpType::CumSum, {x, b.ints({1})});
          }),
      one("CumSum exclusive reverse", Shape({4, 3}), Gen::normal,
          [](GraphBuilder& b, ValueId x) {
            return b.op(OpType::CumSum, {x, b.scalar(0, DType::i64)},
                        {{"exclusive", int64_t{1}}, {"reverse", int64_t{1}}});
          }),
      slice("Slice step 2", Shape({5, 7}), {1, 0}, {5, 7}, {0, 1}, {2, 3}),
      slice("Slice step -1", Shape({4, 5}), {-1, 3}, {INT64_MIN, 0}, {0, 1}, {-1, -1}),
      slice("Slice step -2 3-D", Shape({2, 7, 3}), {5}, {0}, {1}, {-2}),
      one("Gather axis 1", Shape({2, 5, 3}), Gen::normal,
          [](GraphBuilder& b, ValueId x) {
            ValueId ids = b.reshape(b.ints({4, 0, 4, -1, 2, 0}), Shape({2, 3}));
            return b.op(OpType::Gather, {x, ids}, {{"axis", int64_t{1}}});
          }),
      one("Gather axis -1", Shape({3, 4}), Gen::normal,
          [](GraphBuilder& b, ValueId x) {
            return b.op(OpType::Gather, {x, b.ints({3, 3, 1})}, {{"axis", int64_t{-1}}});
          }),
      one("GatherElements axis 1, shorter indices", Shape({3, 4}), Gen::normal,
          [](GraphBuilder& b, ValueId x) {
            ValueId ids = b.reshape(b.ints({0, 3, -1, 1, 2, 0}), Shape({2, 3}));
            return b.op(OpType::GatherElements, {x, ids}, {{"axis", int64_t{1}}});
          }),
      one("GatherElements axis 0", Shape({3, 2}), Gen::normal,
          [](GraphBuilder& b, ValueId x) {
            ValueId ids = b.reshape(b.ints({2, 0, 2, 2, 1, 0, 0, 1}), Shape({4, 2}));
            return b.op(OpType::GatherElements, {x, ids}, {{"axis", int64_t{0}}});
          }),
      one("LRN size 3", Shape({2, 5, 2, 2}), Gen::normal,
          [](GraphBuilder& b, ValueId x) {
            return b.op(OpType::LRN, {x},
                        {{"size", int64_t{3}}, {"alpha", 0.3}, {"beta", 0.75}, {"bias", 1.5}});
          }),
      one("LRN size 4", Shape({1, 6, 3}), Gen::normal,
          [](GraphBuilder& b, ValueId x) {
            return b.op(OpType::LRN, {x}, {{"size", int64_t{4}}, {"alpha", 0.5}, {"beta", 0.6}});
          }),
      avg_ceil("AveragePool ceil_mode", Shape({1, 2, 5, 6}),
               {{"kernel_shape", V{2, 3}}, {"strides", V{2, 2}}}),
      avg_ceil("AveragePool ceil_mode p1 include pad", Shape({2, 1, 6, 6}),
               {{"kernel_shape", V{3, 3}},
                {"strides", V{2, 2}},
                {"pads", V{1, 1, 1, 1}},
                {"count_include_pad", int64_t{1}}}),
      avg_ceil("AveragePool ceil_mode p1 exclude pad", Shape({1, 2, 6, 5}),
               {{"kernel_shape", V{3, 3}}, {"strides", V{2, 2}}, {"pads", V{1, 1, 1, 1}}}),
  };
}

std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (auto family : {elementwise_cases, linear_cases, shape_cases, nn_cases, reduce_cases})
    for (Case& c : family()) out.push_back(std::move(c));
  return out;
}

}  // namespace mimic::test
