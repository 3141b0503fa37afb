// Convolutions, transposed convolutions and pools against direct loop references, over strides,
// padding, dilation, groups (incl. depthwise), NCHW and NHWC, 1-D/2-D/3-D.
#include "tests/unit/cpu_test_util.h"

namespace mimic::testing {
namespace {

using ir::Shape;

struct ConvCase {
  int64_t n, c, h, w, m, k, stride, pad, dilation, groups;
};

// out[n,m,y,x] = b[m] + sum_{c in group, ky, kx} in[n,c,y*s-p+ky*d, x*s-p+kx*d] * w[m,c',ky,kx]
std::vector<float> reference_conv2d(const ir::HostTensor& x, const ir::HostTensor& w,
                                    const ir::HostTensor& b, const ConvCase& t, int64_t oh,
                                    int64_t ow) {
  const float *xp = x.data<float>(), *wp = w.data<float>(), *bp = b.data<float>();
  int64_t cg = t.c / t.groups, mg = t.m / t.groups;
  std::vector<float> out(t.n * t.m * oh * ow);
  for (int64_t n = 0; n < t.n; ++n)
    for (int64_t m = 0; m < t.m; ++m)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xo = 0; xo < ow; ++xo) {
          double acc = bp[m];
          int64_t g = m / mg;
          for (int64_t cc = 0; cc < cg; ++cc)
            for (int64_t ky = 0; ky < t.k; ++ky)
              for (int64_t kx = 0; kx < t.k; ++kx) {
                int64_t iy = y * t.stride - t.pad + ky * t.dilation,
                        ix = xo * t.stride - t.pad + kx * t.dilation;
                if (iy < 0 || iy >= t.h || ix < 0 || ix >= t.w) continue;
                acc += xp[((n * t.c + g * cg + cc) * t.h + iy) * t.w + ix] *
                       wp[((m * cg + cc) * t.k + ky) * t.k + kx];
              }
          out[((n * t.m + m) * oh + y) * ow + xo] = static_cast<float>(acc);
        }
  return out;
}

ir::HostTensor to_nhwc(const ir::HostTensor& t) {
  const Shape& s = t.shape();
  ir::HostTensor out(ir::DType::f32, Shape({s[0], s[2], s[3], s[1]}));
  for (int64_t n = 0; n < s[0]; ++n)
    for (int64_t c = 0; c < s[1]; ++c)
      for (int64_t y = 0; y < s[2]; ++y)
        for (int64_t x = 0; x < s[3]; ++x)
          out.data<float>()[((n * s[2] + y) * s[3] + x) * s[1] + c] =
              t.data<float>()[((n * s[1] + c) * s[2] + y) * s[3] + x];
  return out;
}

class Conv2dTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(Conv2dTest, MatchesDirectLoopsInBothLayouts) {
  ConvCase t = GetParam();
  ir::HostTensor x = random_tensor(Shape({t.n, t.c, t.h, t.w}), 1);
  ir::HostTensor w = random_tensor(Shape({t.m, t.c / t.groups, t.k, t.k}), 2);
  ir::HostTensor b = random_tensor(Shape({t.m}), 3);
  int64_t ext = (t.k - 1) * t.dilation + 1;
  int64_t oh = (t.h + 2 * t.pad - ext) / t.stride + 1, ow = (t.w + 2 * t.pad - ext) / t.stride + 1;
  std::vector<float> want = reference_conv2d(x, w, b, t, oh, ow);
  ir::Attributes attrs{{"strides", std::vector<int64_t>{t.stride, t.stride}},
                       {"pads", std::vector<int64_t>{t.pad, t.pad, t.pad, t.pad}},
                       {"dilations", std::vector<int64_t>{t.dilation, t.dilation}},
                       {"group", t.groups}};
  ir::HostTensor got = run1(ir::OpType::Conv, {{x}, {w, true}, {b, true}}, attrs);
  ASSERT_EQ(got.shape(), Shape({t.n, t.m, oh, ow}));
  expect_near(got, want, 1e-4f);
  attrs.set("layout", std::string("NHWC"));
  ir::HostTensor got_nhwc = run1(ir::OpType::Conv, {{to_nhwc(x)}, {w, true}, {b, true}}, attrs);
  ir::HostTensor want_t = ir::HostTensor::from(Shape({t.n, t.m, oh, ow}), want.data());
  expect_near(got_nhwc, values(to_nhwc(want_t)), 1e-4f);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Conv2dTest,
    ::testing::Values(ConvCase{2, 3, 9, 11, 4, 3, 1, 1, 1, 1},     // padded 3x3
                      ConvCase{1, 4, 10, 10, 6, 3, 2, 0, 1, 1},    // strided
                      ConvCase{2, 8, 7, 7, 8, 1, 1, 0, 1, 1},      // pointwise
                      ConvCase{1, 6, 12, 12, 9, 3, 1, 2, 2, 3},    // dilated, 3 groups
                      ConvCase{2, 8, 9, 9, 8, 3, 2, 1, 1, 8},      // depthwise strided
                      ConvCase{1, 4, 8, 8, 8, 3, 1, 1, 1, 4},      // depthwise x2 multiplier
                      ConvCase{1, 3, 15, 15, 5, 7, 2, 3, 1, 1}));  // 7x7 stem

TEST(Conv, SameUpperPaddingOddInput) {
  ir::HostTensor x = random_tensor(Shape({1, 2, 7, 7}), 4);
  ir::HostTensor w = random_tensor(Shape({3, 2, 3, 3}), 5);
  ir::HostTensor zero(ir::DType::f32, Shape({3}));
  ir::HostTensor got =
      run1(ir::OpType::Conv, {{x}, {w, true}},
           {{"auto_pad", std::string("SAME_UPPER")}, {"strides", std::vector<int64_t>{2, 2}}});
  ASSERT_EQ(got.shape(), Shape({1, 3, 4, 4}));
  // SAME_UPPER with total padding 2: one before, one after, like pad=1 explicitly.
  ConvCase t{1, 2, 7, 7, 3, 3, 2, 1, 1, 1};
  expect_near(got, reference_conv2d(x, w, zero, t, 4, 4));
}

TEST(Conv, OneAndThreeDimensionalMatchTwoDimensionalSlices) {
  // A 1-D conv equals a 2-D conv with height 1; a 3-D conv with depth kernel 1 equals 2-D per
  // slice.
  ir::HostTensor x1 = random_tensor(Shape({2, 3, 10}), 6);
  ir::HostTensor w1 = random_tensor(Shape({4, 3, 3}), 7);
  ir::HostTensor y1 =
      run1(ir::OpType::Conv, {{x1}, {w1, true}}, {{"pads", std::vector<int64_t>{1, 1}}});
  ir::HostTensor y2 =
      run1(ir::OpType::Conv,
           {{x1.reshaped(Shape({2, 3, 1, 10}))}, {w1.reshaped(Shape({4, 3, 1, 3})), true}},
           {{"pads", std::vector<int64_t>{0, 1, 0, 1}}});
  expect_near(y1, values(y2));
  ir::HostTensor x3 = random_tensor(Shape({1, 2, 1, 6, 6}), 8);
  ir::HostTensor w3 = random_tensor(Shape({3, 2, 1, 3, 3}), 9);
  ir::HostTensor z3 = run1(ir::OpType::Conv, {{x3}, {w3, true}},
                           {{"pads", std::vector<int64_t>{0, 1, 1, 0, 1, 1}}});
  ir::HostTensor z2 =
      run1(ir::OpType::Conv,
           {{x3.reshaped(Shape({1, 2, 6, 6}))}, {w3.reshaped(Shape({3, 2, 3, 3})), true}},
           {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  expect_near(z3, values(z2));
}

TEST(ConvTranspose, MatchesScatterReference) {
  int64_t n = 1, c = 4, h = 5, w = 4, m = 6, k = 3, s = 2, p = 1, g = 2;
  ir::HostTensor x = random_tensor(Shape({n, c, h, w}), 10);
  ir::HostTensor wt = random_tensor(Shape({c, m / g, k, k}), 11);
  ir::HostTensor got = run1(ir::OpType::ConvTranspose, {{x}, {wt, true}},
                            {{"strides", std::vector<int64_t>{s, s}},
                             {"pads", std::vector<int64_t>{p, p, p, p}},
                             {"group", g},
                             {"output_padding", std::vector<int64_t>{1, 0}}});
  int64_t oh = s * (h - 1) + 1 + k - 2 * p, ow = s * (w - 1) + k - 2 * p;
  ASSERT_EQ(got.shape(), Shape({n, m, oh, ow}));
  std::vector<float> want(n * m * oh * ow, 0.0f);
  int64_t cg = c / g, mg = m / g;
  for (int64_t ci = 0; ci < c; ++ci)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t xx = 0; xx < w; ++xx)
        for (int64_t mm = 0; mm < mg; ++mm)
          for (int64_t ky = 0; ky < k; ++ky)
            for (int64_t kx = 0; kx < k; ++kx) {
              int64_t oy = y * s - p + ky, ox = xx * s - p + kx;
              if (oy < 0 || oy >= oh || ox < 0 || ox >= ow) continue;
              int64_t mo = (ci / cg) * mg + mm;
              want[(mo * oh + oy) * ow + ox] +=
                  x.data<float>()[(ci * h + y) * w + xx] *
                  wt.data<float>()[((ci * mg + mm) * k + ky) * k + kx];
            }
  expect_near(got, want);
}

TEST(Pool, MaxAndAverageWithPaddingCeilModeAndLayouts) {
  ir::HostTensor x = random_tensor(Shape({2, 3, 7, 8}), 12);
  ir::Attributes attrs{{"kernel_shape", std::vector<int64_t>{3, 3}},
                       {"strides", std::vector<int64_t>{2, 2}},
                       {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                       {"ceil_mode", int64_t{1}}};
  ir::HostTensor mx = run1(ir::OpType::MaxPool, {{x}}, attrs);
  ir::HostTensor avg = run1(ir::OpType::AveragePool, {{x}}, attrs);
  attrs.set("count_include_pad", int64_t{1});
  ir::HostTensor avg_pad = run1(ir::OpType::AveragePool, {{x}}, attrs);
  ASSERT_EQ(mx.shape(), Shape({2, 3, 4, 5}));
  for (int64_t nc = 0; nc < 6; ++nc)
    for (int64_t y = 0; y < 4; ++y)
      for (int64_t xo = 0; xo < 5; ++xo) {
        float best = -1e30f;
        double sum = 0;
        int count = 0;
        int64_t y0 = y * 2 - 1, x0 = xo * 2 - 1;
        int64_t y1 = std::min<int64_t>(y0 + 3, 7 + 1), x1 = std::min<int64_t>(x0 + 3, 8 + 1);
        for (int64_t iy = y0; iy < y1; ++iy)
          for (int64_t ix = x0; ix < x1; ++ix) {
            if (iy < 0 || iy >= 7 || ix < 0 || ix >= 8) continue;
            float v = x.data<float>()[(nc * 7 + iy) * 8 + ix];
            best = std::max(best, v);
            sum += v;
            ++count;
          }
        int64_t i = (nc * 4 + y) * 5 + xo;
        EXPECT_NEAR(mx.data<float>()[i], best, 1e-6);
        EXPECT_NEAR(avg.data<float>()[i], sum / count, 1e-5);
        EXPECT_NEAR(avg_pad.data<float>()[i], sum / ((y1 - y0) * (x1 - x0)), 1e-5);
      }
  attrs.set("layout", std::string("NHWC"));
  ir::HostTensor mx_nhwc = run1(ir::OpType::MaxPool, {{to_nhwc(x)}}, attrs);
  expect_near(mx_nhwc, values(to_nhwc(mx)));
}

TEST(Pool, GlobalAverageBothLayouts) {
  ir::HostTensor x = random_tensor(Shape({2, 5, 3, 4}), 13);
  ir::HostTensor y = run1(ir::OpType::GlobalAveragePool, {{x}});
  ir::HostTensor y2 =
      run1(ir::OpType::GlobalAveragePool, {{to_nhwc(x)}}, {{"layout", std::string("NHWC")}});
  ASSERT_EQ(y.shape(), Shape({2, 5, 1, 1}));
  ASSERT_EQ(y2.shape(), Shape({2, 1, 1, 5}));
  for (int64_t i = 0; i < 10; ++i) {
    double sum = 0;
    for (int64_t p = 0; p < 12; ++p) sum += x.data<float>()[i * 12 + p];
    EXPECT_NEAR(y.data<float>()[i], sum / 12, 1e-5);
    EXPECT_NEAR(y2.data<float>()[i], sum / 12, 1e-5);
  }
}

}  // namespace
}  // namespace mimic::testing
