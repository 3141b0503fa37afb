// Grouped and depthwise convolutions under the chip's precision (numerics.h): at default precision
// every convolution, whatever its group count, rounds both operands to bf16 and accumulates in
// fp32, as XLA's precision config on the convolution HLO says. Checked against a reference written
// here (bf16 rounding to nearest even, sums in double) that rounds every convolution's operands,
// the PyTorch-style "bf16 operands, fp32 accumulation" reference, and against plain fp32.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tpu_test_util.h"

namespace mimic {
namespace {

using ir::OpType;

float bf16(float f) {  // round to nearest even on the upper 16 bits (finite values)
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  u += 0x7fffu + ((u >> 16) & 1u);
  u &= 0xffff0000u;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

struct ConvShape {
  int64_t n, c, h, w, m, k, group, stride, pad;
  int64_t oh() const { return (h + 2 * pad - k) / stride + 1; }
  int64_t ow() const { return (w + 2 * pad - k) / stride + 1; }
};

// NCHW grouped convolution with bias; operands rounded to bf16 when `round` (sums in double).
std::vector<float> conv_ref(const ConvShape& s, const std::vector<float>& x,
                            const std::vector<float>& w, const std::vector<float>& b, bool round) {
  const int64_t cg = s.c / s.group, mg = s.m / s.group, oh = s.oh(), ow = s.ow();
  auto r = [&](float v) { return round ? bf16(v) : v; };
  std::vector<float> y(static_cast<size_t>(s.n * s.m * oh * ow));
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t m = 0; m < s.m; ++m)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double acc = b.empty() ? 0.0 : b[m];
          for (int64_t ci = 0; ci < cg; ++ci) {
            const int64_t c = (m / mg) * cg + ci;
            for (int64_t p = 0; p < s.k; ++p)
              for (int64_t q = 0; q < s.k; ++q) {
                int64_t ih = i * s.stride - s.pad + p, iw = j * s.stride - s.pad + q;
                if (ih < 0 || ih >= s.h || iw < 0 || iw >= s.w) continue;
                acc += static_cast<double>(r(x[((n * s.c + c) * s.h + ih) * s.w + iw])) *
                       r(w[((m * cg + ci) * s.k + p) * s.k + q]);
              }
          }
          y[((n * s.m + m) * oh + i) * ow + j] = static_cast<float>(acc);
        }
  return y;
}

std::vector<float> floats(const ir::HostTensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i)
    d = std::max(d, std::fabs(static_cast<double>(a[i]) - b[i]));
  return d;
}

void add_conv(ir::Graph& g, ir::ValueId x, const ConvShape& s, const std::string& name,
              const ir::HostTensor& w, const ir::HostTensor& b, ir::ValueId* out) {
  auto wv = g.add_constant(name + ".w", w), bv = g.add_constant(name + ".b", b);
  *out = g.add_node(OpType::Conv, name, {x, wv, bv},
                    {{"group", s.group},
                     {"strides", std::vector<int64_t>{s.stride, s.stride}},
                     {"pads", std::vector<int64_t>{s.pad, s.pad, s.pad, s.pad}}})[0];
}

// One convolution on tpu-emu:v4 at `precision` against both references.
struct Distances {
  double to_bf16, to_f32, bf16_to_f32;
};

Distances one_conv(const ConvShape& s, const std::string& precision) {
  ir::HostTensor w = tpu_test::random_tensor(ir::Shape({s.m, s.c / s.group, s.k, s.k}), 41,
                                             1.0f / static_cast<float>(s.k));
  ir::HostTensor b = tpu_test::random_tensor(ir::Shape({s.m}), 42);
  ir::HostTensor x = tpu_test::random_tensor(ir::Shape({s.n, s.c, s.h, s.w}), 43);
  ir::Graph g("conv");
  auto xv = g.add_input("x", ir::DType::f32, ir::Shape({s.n, s.c, s.h, s.w}));
  ir::ValueId y;
  add_conv(g, xv, s, "conv", w, b, &y);
  g.add_output(y);
  Executable e = compile(g, Device("tpu-emu:v4"), tpu_test::options({}, precision));
  std::vector<float> got = floats(e.run({x}).outputs[0]);
  std::vector<float> xs = floats(x), ws = floats(w), bs = floats(b);
  std::vector<float> r16 = conv_ref(s, xs, ws, bs, true), r32 = conv_ref(s, xs, ws, bs, false);
  return {max_diff(got, r16), max_diff(got, r32), max_diff(r16, r32)};
}

TEST(TpuGroupedConvNumerics, DepthwiseDefaultMatchesBf16OperandReference) {
  for (ConvShape s :
       {ConvShape{2, 24, 9, 9, 24, 3, 24, 1, 1}, ConvShape{1, 32, 12, 12, 32, 3, 32, 2, 1},
        ConvShape{1, 16, 7, 7, 32, 3, 16, 1, 1}}) {  // the last: channel multiplier 2
    Distances d = one_conv(s, "default");
    SCOPED_TRACE("c=" + std::to_string(s.c) + " m=" + std::to_string(s.m));
    EXPECT_GT(d.bf16_to_f32, 1e-3);              // the two references really differ
    EXPECT_LT(d.to_bf16, d.bf16_to_f32 / 1000);  // summation order only
    EXPECT_GT(d.to_f32, d.bf16_to_f32 / 2);
  }
}

TEST(TpuGroupedConvNumerics, GroupedDefaultMatchesBf16OperandReference) {
  Distances d = one_conv(ConvShape{2, 16, 8, 8, 24, 3, 4, 1, 1}, "default");
  EXPECT_GT(d.bf16_to_f32, 1e-3);
  EXPECT_LT(d.to_bf16, d.bf16_to_f32 / 1000);
}

TEST(TpuGroupedConvNumerics, DepthwiseHighAndHighestApproachFloat32) {
  const ConvShape s{2, 24, 9, 9, 24, 3, 24, 1, 1};
  Distances high = one_conv(s, "high"), highest = one_conv(s, "highest");
  EXPECT_LT(high.to_f32, high.bf16_to_f32 / 50);  // 3 passes: about 16 significant bits
  EXPECT_LT(highest.to_f32, 1e-5);                // 6 passes: fp32 up to summation order
  EXPECT_LE(highest.to_f32, high.to_f32);
}

// A MobileNetV2 inverted residual block (1x1 expand, ReLU6, 3x3 depthwise, ReLU6, 1x1 project,
// residual add): at default precision the emulator follows the reference that rounds every
// convolution's operands, and stays well away from fp32.
TEST(TpuGroupedConvNumerics, InvertedResidualBlockFollowsBf16Reference) {
  const int64_t n = 1, c = 16, e = 96, hw = 14;
  const ConvShape expand{n, c, hw, hw, e, 1, 1, 1, 0}, dw{n, e, hw, hw, e, 3, e, 1, 1},
      project{n, e, hw, hw, c, 1, 1, 1, 0};
  ir::HostTensor w1 = tpu_test::random_tensor(ir::Shape({e, c, 1, 1}), 51, 0.25f),
                 b1 = tpu_test::random_tensor(ir::Shape({e}), 52, 0.1f),
                 w2 = tpu_test::random_tensor(ir::Shape({e, 1, 3, 3}), 53, 0.33f),
                 b2 = tpu_test::random_tensor(ir::Shape({e}), 54, 0.1f),
                 w3 = tpu_test::random_tensor(ir::Shape({c, e, 1, 1}), 55, 0.1f),
                 b3 = tpu_test::random_tensor(ir::Shape({c}), 56, 0.1f),
                 x = tpu_test::random_tensor(ir::Shape({n, c, hw, hw}), 57);
  ir::Graph g("inverted_residual");
  auto xv = g.add_input("x", ir::DType::f32, ir::Shape({n, c, hw, hw}));
  auto lo =
      g.add_constant("lo", ir::HostTensor::from(ir::Shape({}), std::vector<float>{0.0f}.data()));
  auto hi =
      g.add_constant("hi", ir::HostTensor::from(ir::Shape({}), std::vector<float>{6.0f}.data()));
  ir::ValueId a, b, p;
  add_conv(g, xv, expand, "expand", w1, b1, &a);
  a = g.add_node(OpType::Clip, "relu6a", {a, lo, hi})[0];
  add_conv(g, a, dw, "dw", w2, b2, &b);
  b = g.add_node(OpType::Clip, "relu6b", {b, lo, hi})[0];
  add_conv(g, b, project, "project", w3, b3, &p);
  g.add_output(g.add_node(OpType::Add, "residual", {p, xv})[0]);
  Executable ex = compile(g, Device("tpu-emu:v4"), tpu_test::options({}, "default"));
  std::vector<float> got = floats(ex.run({x}).outputs[0]);

  auto block = [&](bool round) {
    auto relu6 = [](std::vector<float> v) {
      for (float& f : v) f = std::min(std::max(f, 0.0f), 6.0f);
      return v;
    };
    std::vector<float> t = relu6(conv_ref(expand, floats(x), floats(w1), floats(b1), round));
    t = relu6(conv_ref(dw, t, floats(w2), floats(b2), round));
    t = conv_ref(project, t, floats(w3), floats(b3), round);
    for (size_t i = 0; i < t.size(); ++i) t[i] += x.data<float>()[i];
    return t;
  };
  std::vector<float> r16 = block(true), r32 = block(false);
  const double to_bf16 = max_diff(got, r16), to_f32 = max_diff(got, r32);
  EXPECT_GT(max_diff(r16, r32), 1e-2);
  EXPECT_LT(to_bf16, to_f32 / 20) << "to_bf16 " << to_bf16 << " to_f32 " << to_f32;
}

// int8 chips (edge): a depthwise convolution takes int8 operands like every convolution there
// (numerics.h): the input quantized per tensor, the taps per output channel, exact integer sums
// rescaled by both scales, the output requantized per tensor. Against that reference written
// here it agrees to the output's quantum; plain fp32 taps land elsewhere on the output grid.
TEST(TpuGroupedConvNumerics, DepthwiseOnInt8ChipsTakesInt8Operands) {
  const ConvShape s{1, 32, 10, 10, 32, 3, 32, 1, 1};
  ir::HostTensor w = tpu_test::random_tensor(ir::Shape({s.m, 1, 3, 3}), 61, 0.3f);
  ir::HostTensor b = tpu_test::random_tensor(ir::Shape({s.m}), 62, 0.1f);
  ir::HostTensor x = tpu_test::random_tensor(ir::Shape({s.n, s.c, s.h, s.w}), 63);
  ir::Graph g("dw");
  auto xv = g.add_input("x", ir::DType::f32, ir::Shape({s.n, s.c, s.h, s.w}));
  ir::ValueId y;
  add_conv(g, xv, s, "dw", w, b, &y);
  g.add_output(y);
  Executable e = compile(g, Device("tpu-emu:edge"), tpu_test::options());
  std::vector<float> got = floats(e.run({x}).outputs[0]);

  auto quantize = [](std::vector<float> v, size_t begin, size_t end) {
    float mx = 0;
    for (size_t i = begin; i < end; ++i) mx = std::max(mx, std::fabs(v[i]));
    const float scale = mx > 0 ? mx / 127.0f : 1.0f;
    for (size_t i = begin; i < end; ++i)
      v[i] = std::clamp(std::nearbyint(v[i] / scale), -127.0f, 127.0f) * scale;
    return v;
  };
  std::vector<float> xq = quantize(floats(x), 0, static_cast<size_t>(x.numel())), wq = floats(w);
  for (int64_t m = 0; m < s.m; ++m) wq = quantize(wq, m * 9, (m + 1) * 9);
  auto requantized = [&](std::vector<float> ref) { return quantize(ref, 0, ref.size()); };
  std::vector<float> want = requantized(conv_ref(s, xq, wq, floats(b), false));
  std::vector<float> plain = requantized(conv_ref(s, floats(x), floats(w), floats(b), false));
  float quantum = 0;
  for (float v : want) quantum = std::max(quantum, std::fabs(v) / 127.0f);
  auto mean_diff = [](const std::vector<float>& a, const std::vector<float>& b) {
    double d = 0;
    for (size_t i = 0; i < a.size(); ++i) d += std::fabs(static_cast<double>(a[i]) - b[i]);
    return d / static_cast<double>(a.size());
  };
  EXPECT_LE(max_diff(got, want), 1.01 * quantum);
  EXPECT_LT(mean_diff(got, want), 0.01 * quantum);
  EXPECT_GT(mean_diff(plain, want), 0.05 * quantum);  // fp32 taps would not pass the line above
}

}  // namespace
}  // namespace mimic
