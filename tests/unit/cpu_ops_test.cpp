// Elementwise, linear algebra, normalization, reduction and data-movement kernels of the cpu
// backend against direct loop references.
#include <omp.h>

#include "base/error.h"
#include "base/extrema.h"
#include "base/numeric_formats.h"
#include "tests/unit/cpu_test_util.h"

namespace mimic::testing {
namespace {

using ir::DType;
using ir::OpType;
using ir::Shape;

TEST(Elementwise, BinaryBroadcastingAllPatterns) {
  ir::HostTensor a = random_tensor(Shape({2, 3, 1, 5}), 1);
  ir::HostTensor b = random_tensor(Shape({4, 1}), 2);
  for (OpType op : {OpType::Add, OpType::Sub, OpType::Mul, OpType::Div, OpType::Max, OpType::Min}) {
    ir::HostTensor y = run1(op, {{a}, {b}});
    ASSERT_EQ(y.shape(), Shape({2, 3, 4, 5}));
    for (int64_t i = 0; i < 2 * 3; ++i)
      for (int64_t j = 0; j < 4; ++j)
        for (int64_t k = 0; k < 5; ++k) {
          float x = a.data<float>()[i * 5 + k], z = b.data<float>()[j];
          float want = op == OpType::Add   ? x + z
                       : op == OpType::Sub ? x - z
                       : op == OpType::Mul ? x * z
                       : op == OpType::Div ? x / z
                       : op == OpType::Max ? std::max(x, z)
                                           : std::min(x, z);
          ASSERT_NEAR(y.data<float>()[(i * 4 + j) * 5 + k], want,
                      1e-5f * std::max(1.0f, std::fabs(want)));
        }
  }
}

TEST(Elementwise, IntegerArithmeticAndComparisons) {
  std::vector<int64_t> av{7, -7, 9, 0}, bv{2, 2, -4, 3};
  In a{ir::HostTensor::from(Shape({4}), av.data())}, b{ir::HostTensor::from(Shape({4}), bv.data())};
  ir::HostTensor mod = run1(OpType::Mod, {a, b});
  std::vector<int64_t> want_mod{1, 1, -3, 0};  // Python-style sign of the divisor
  for (int i = 0; i < 4; ++i) EXPECT_EQ(mod.data<int64_t>()[i], want_mod[i]);
  ir::HostTensor fmod = run1(OpType::Mod, {a, b}, {{"fmod", int64_t{1}}});
  EXPECT_EQ(fmod.data<int64_t>()[1], -1);
  ir::HostTensor gt = run1(OpType::Greater, {a, b});
  EXPECT_EQ(gt.dtype(), DType::boolean);
  EXPECT_TRUE(gt.data<bool>()[0]);
  EXPECT_FALSE(gt.data<bool>()[1]);
}

TEST(Elementwise, ActivationsMatchFormulas) {
  std::vector<float> xv{-3.0f, -0.5f, 0.0f, 0.7f, 2.5f, 8.0f};
  In x{ir::HostTensor::from(Shape({6}), xv.data())};
  auto check = [&](OpType op, ir::Attributes attrs, auto f) {
    ir::HostTensor y = run1(op, {x}, attrs);
    for (size_t i = 0; i < xv.size(); ++i)
      EXPECT_NEAR(y.data<float>()[i], f(xv[i]), 1e-5) << ir::op_name(op) << " " << xv[i];
  };
  check(OpType::Relu, {}, [](float v) { return std::max(v, 0.0f); });
  check(OpType::Sigmoid, {}, [](float v) { return 1 / (1 + std::exp(-v)); });
  check(OpType::Gelu, {}, [](float v) { return 0.5f * v * (1 + std::erf(v / std::sqrt(2.0f))); });
  check(OpType::Gelu, {{"approximate", std::string("tanh")}}, [](float v) {
    return 0.5f * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715f * v * v * v)));
  });
  check(OpType::LeakyRelu, {{"alpha", 0.1}}, [](float v) { return v < 0 ? 0.1f * v : v; });
  check(OpType::Elu, {}, [](float v) { return v < 0 ? std::exp(v) - 1 : v; });
  check(OpType::HardSwish, {}, [](float v) { return v * std::clamp(v / 6 + 0.5f, 0.0f, 1.0f); });
  check(OpType::Softplus, {}, [](float v) { return std::log1p(std::exp(v)); });
  ir::HostTensor lo = ir::HostTensor(DType::f32, Shape()), hi = ir::HostTensor(DType::f32, Shape());
  hi.data<float>()[0] = 6.0f;
  ir::HostTensor clip = run1(OpType::Clip, {x, {lo, true}, {hi, true}});
  EXPECT_EQ(clip.data<float>()[0], 0.0f);
  EXPECT_EQ(clip.data<float>()[5], 6.0f);
}

TEST(Elementwise, Float16AndBfloat16ComputeInF32AndRound) {
  std::vector<float> xv{1.0f, 1.0009765625f, 3.14159f, -2.71828f};
  ir::HostTensor x32 = ir::HostTensor::from(Shape({4}), xv.data());
  for (DType t : {DType::f16, DType::bf16}) {
    ir::HostTensor xh = run1(OpType::Cast, {{x32}}, {{"to", std::string(ir::dtype_name(t))}});
    ir::HostTensor yh = run1(OpType::Add, {{xh}, {xh}});
    ASSERT_EQ(yh.dtype(), t);
    ir::HostTensor y32 = run1(OpType::Cast, {{yh}}, {{"to", std::string("f32")}});
    for (int i = 0; i < 4; ++i) {
      float stored = t == DType::f16 ? numeric::round_to_f16(xv[i]) : numeric::round_to_bf16(xv[i]);
      float want = t == DType::f16 ? numeric::round_to_f16(stored + stored)
                                   : numeric::round_to_bf16(stored + stored);
      EXPECT_EQ(y32.data<float>()[i], want) << ir::dtype_name(t) << " " << xv[i];
    }
  }
}

TEST(Elementwise, WhereAndVariadicBroadcast) {
  std::vector<uint8_t> cv{1, 0, 1};
  ir::HostTensor cond(DType::boolean, Shape({3}));
  for (int i = 0; i < 3; ++i) cond.data<bool>()[i] = cv[i];
  ir::HostTensor a = random_tensor(Shape({2, 3}), 3), b = random_tensor(Shape({1}), 4);
  ir::HostTensor w = run1(OpType::Where, {{cond}, {a}, {b}});
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 3; ++c)
      EXPECT_EQ(w.data<float>()[r * 3 + c],
                cv[c] ? a.data<float>()[r * 3 + c] : b.data<float>()[0]);
  ir::HostTensor s = run1(OpType::Sum, {{a}, {b}, {a}});
  ir::HostTensor m = run1(OpType::Mean, {{a}, {b}});
  for (int i = 0; i < 6; ++i) {
    EXPECT_NEAR(s.data<float>()[i], 2 * a.data<float>()[i] + b.data<float>()[0], 1e-5);
    EXPECT_NEAR(m.data<float>()[i], (a.data<float>()[i] + b.data<float>()[0]) / 2, 1e-5);
  }
}

TEST(Linear, BatchedBroadcastMatMul) {
  ir::HostTensor a = random_tensor(Shape({2, 1, 3, 4}), 5), b = random_tensor(Shape({3, 4, 5}), 6);
  ir::HostTensor y = run1(OpType::MatMul, {{a}, {b}});
  ASSERT_EQ(y.shape(), Shape({2, 3, 3, 5}));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t r = 0; r < 3; ++r)
        for (int64_t c = 0; c < 5; ++c) {
          double acc = 0;
          for (int64_t k = 0; k < 4; ++k)
            acc += a.data<float>()[(i * 3 + r) * 4 + k] * b.data<float>()[(j * 4 + k) * 5 + c];
          ASSERT_NEAR(y.data<float>()[((i * 3 + j) * 3 + r) * 5 + c], acc, 1e-4);
        }
}

TEST(Linear, VectorOperandsAndInt8) {
  ir::HostTensor a = random_tensor(Shape({4}), 7), b = random_tensor(Shape({4, 3}), 8);
  ir::HostTensor y = run1(OpType::MatMul, {{a}, {b}});
  ASSERT_EQ(y.shape(), Shape({3}));
  ir::HostTensor ai = random_tensor(Shape({3, 5}), 9, DType::i8),
                 bi = random_tensor(Shape({5, 2}), 10, DType::i8);
  ir::HostTensor yi = run1(OpType::MatMul, {{ai}, {bi}});
  ASSERT_EQ(yi.dtype(), DType::i32);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 2; ++c) {
      int32_t acc = 0;
      for (int k = 0; k < 5; ++k)
        acc += ai.data<int8_t>()[r * 5 + k] * bi.data<int8_t>()[k * 2 + c];
      EXPECT_EQ(yi.data<int32_t>()[r * 2 + c], acc);
    }
}

TEST(Linear, GemmTransposesAlphaBetaAndBias) {
  ir::HostTensor a = random_tensor(Shape({4, 3}), 11), b = random_tensor(Shape({5, 4}), 12),
                 c = random_tensor(Shape({5}), 13);
  ir::HostTensor y =
      run1(OpType::Gemm, {{a}, {b}, {c}},
           {{"transA", int64_t{1}}, {"transB", int64_t{1}}, {"alpha", 0.5}, {"beta", 2.0}});
  ASSERT_EQ(y.shape(), Shape({3, 5}));
  for (int m = 0; m < 3; ++m)
    for (int n = 0; n < 5; ++n) {
      double acc = 0;
      for (int k = 0; k < 4; ++k) acc += a.data<float>()[k * 3 + m] * b.data<float>()[n * 4 + k];
      EXPECT_NEAR(y.data<float>()[m * 5 + n], 0.5 * acc + 2.0 * c.data<float>()[n], 1e-4);
    }
}

TEST(Normalization, BatchNormLayerNormSoftmax) {
  ir::HostTensor x = random_tensor(Shape({2, 3, 4}), 14);
  ir::HostTensor scale = random_tensor(Shape({3}), 15), bias = random_tensor(Shape({3}), 16);
  ir::HostTensor mean = random_tensor(Shape({3}), 17), var(DType::f32, Shape({3}));
  for (int i = 0; i < 3; ++i) var.data<float>()[i] = 0.5f + i;
  ir::HostTensor bn =
      run1(OpType::BatchNormalization, {{x}, {scale}, {bias}, {mean}, {var}}, {{"epsilon", 1e-3}});
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      for (int p = 0; p < 4; ++p) {
        int i = (n * 3 + c) * 4 + p;
        float want = (x.data<float>()[i] - mean.data<float>()[c]) /
                         std::sqrt(var.data<float>()[c] + 1e-3f) * scale.data<float>()[c] +
                     bias.data<float>()[c];
        EXPECT_NEAR(bn.data<float>()[i], want, 1e-4);
      }
  ir::HostTensor g = random_tensor(Shape({4}), 18), be = random_tensor(Shape({4}), 19);
  ir::HostTensor ln = run1(OpType::LayerNormalization, {{x}, {g}, {be}}, {{"epsilon", 1e-5}});
  ir::HostTensor sm = run1(OpType::Softmax, {{x}}, {{"axis", int64_t{1}}});
  for (int r = 0; r < 6; ++r) {
    double mu = 0, sq = 0;
    for (int k = 0; k < 4; ++k) mu += x.data<float>()[r * 4 + k];
    mu /= 4;
    for (int k = 0; k < 4; ++k) sq += std::pow(x.data<float>()[r * 4 + k] - mu, 2);
    double inv = 1 / std::sqrt(sq / 4 + 1e-5);
    for (int k = 0; k < 4; ++k)
      EXPECT_NEAR(
          ln.data<float>()[r * 4 + k],
          (x.data<float>()[r * 4 + k] - mu) * inv * g.data<float>()[k] + be.data<float>()[k], 1e-4);
  }
  for (int n = 0; n < 2; ++n)
    for (int p = 0; p < 4; ++p) {
      double total = 0;
      for (int c = 0; c < 3; ++c) total += std::exp(x.data<float>()[(n * 3 + c) * 4 + p]);
      for (int c = 0; c < 3; ++c)
        EXPECT_NEAR(sm.data<float>()[(n * 3 + c) * 4 + p],
                    std::exp(x.data<float>()[(n * 3 + c) * 4 + p]) / total, 1e-5);
    }
}

TEST(Reduce, SumMeanMaxOverAxesWithAndWithoutKeepdims) {
  ir::HostTensor x = random_tensor(Shape({2, 3, 4}), 20);
  ir::HostTensor s =
      run1(OpType::ReduceSum, {{x}, constant_ints({0, 2})}, {{"keepdims", int64_t{0}}});
  ir::HostTensor m = run1(OpType::ReduceMean, {{x}, constant_ints({-1})});
  ir::HostTensor mx = run1(OpType::ReduceMax, {{x}});
  ASSERT_EQ(s.shape(), Shape({3}));
  ASSERT_EQ(m.shape(), Shape({2, 3, 1}));
  ASSERT_EQ(mx.shape(), Shape({1, 1, 1}));
  float best = -1e30f;
  for (int c = 0; c < 3; ++c) {
    double acc = 0;
    for (int n = 0; n < 2; ++n)
      for (int k = 0; k < 4; ++k) acc += x.data<float>()[(n * 3 + c) * 4 + k];
    EXPECT_NEAR(s.data<float>()[c], acc, 1e-4);
  }
  for (int r = 0; r < 6; ++r) {
    double acc = 0;
    for (int k = 0; k < 4; ++k) {
      acc += x.data<float>()[r * 4 + k];
      best = std::max(best, x.data<float>()[r * 4 + k]);
    }
    EXPECT_NEAR(m.data<float>()[r], acc / 4, 1e-5);
  }
  EXPECT_EQ(mx.data<float>()[0], best);
}

// Sum and mean over every subset of axes of random rank-1..4 shapes (size-1 axes included),
// bit-equal to a double accumulation in the input's row-major order.
TEST(Reduce, SumAndMeanOverEveryAxisSubsetAreExactInDouble) {
  for (uint64_t seed = 0; seed < 24; ++seed) {
    int rank = 1 + int(seed % 4);
    std::vector<int64_t> dims;
    for (int d = 0; d < rank; ++d) dims.push_back(1 + int64_t((seed * 3 + d * 5) % 6));
    ir::HostTensor x = random_tensor(Shape(dims), 50 + seed);
    for (int mask = 1; mask < (1 << rank); ++mask) {
      std::vector<int64_t> axes;
      for (int d = 0; d < rank; ++d)
        if (mask & (1 << d)) axes.push_back(d);
      for (OpType op : {OpType::ReduceSum, OpType::ReduceMean}) {
        ir::HostTensor y = run1(op, {{x}, constant_ints(axes)});
        std::vector<double> acc(y.numel(), 0.0);
        int64_t count = x.numel() / y.numel();
        for (int64_t i = 0; i < x.numel(); ++i) {
          int64_t rem = i, out = 0, stride = 1;
          for (int d = rank - 1; d >= 0; --d) {
            int64_t c = rem % dims[d];
            rem /= dims[d];
            if (mask & (1 << d)) continue;
            out += c * stride;
            stride *= dims[d];
          }
          acc[out] += x.data<float>()[i];
        }
        for (int64_t o = 0; o < y.numel(); ++o)
          ASSERT_EQ(y.data<float>()[o],
                    static_cast<float>(op == OpType::ReduceMean ? acc[o] / count : acc[o]))
              << ir::op_name(op) << " seed " << seed << " mask " << mask << " output " << o;
      }
    }
  }
}

// A channels-last reduction over batch and spatial axes (a BatchNorm's statistics in NHWC) splits
// its rows across threads in chunks fixed by the shape: the sums are exact in double and the same
// on one thread as on two.
TEST(Reduce, ChannelsLastStatisticsSplitAcrossThreadsIndependentlyOfTheirCount) {
  const Shape shape({4, 24, 24, 48});
  ir::HostTensor x = random_tensor(shape, 77);
  std::vector<double> acc(48, 0.0);
  for (int64_t i = 0; i < x.numel(); ++i) acc[i % 48] += x.data<float>()[i];
  std::vector<std::vector<float>> results;
  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    ir::HostTensor y = run1(OpType::ReduceSum, {{x}, constant_ints({0, 1, 2})});
    results.push_back(values(y));
  }
  omp_set_num_threads(omp_get_num_procs());
  EXPECT_EQ(results[0], results[1]);
  for (int c = 0; c < 48; ++c) EXPECT_EQ(results[0][c], static_cast<float>(acc[c])) << c;
}

// Max and min over leading axes with the kept axes innermost ([window, outputs], as the max-pool
// gradient reduces, and [a, kept, b, kept]) fold rows in place: the values of a strided walk, a NaN
// propagated as reduce_row propagates it (numpy's and PyTorch's amax), on any thread count.
TEST(Reduce, MaxAndMinOverLeadingAxesFoldRowsInPlace) {
  const Shape shape({3, 5, 4, 6000});
  ir::HostTensor x = random_tensor(shape, 78);
  float* v = x.data<float>();
  v[1 * 5 * 4 * 6000 + 7] = NAN;
  v[2 * 5 * 4 * 6000 + 8] = INFINITY;
  v[9] = -INFINITY;
  for (std::vector<int64_t> axes : {std::vector<int64_t>{0}, {0, 2}}) {
    for (OpType op : {OpType::ReduceMax, OpType::ReduceMin}) {
      const bool is_max = op == OpType::ReduceMax;
      std::vector<float> want;
      const int64_t inner = shape[3], outer = shape[1] * (axes.size() == 1 ? shape[2] : 1);
      for (int64_t k = 0; k < outer; ++k)
        for (int64_t j = 0; j < inner; ++j) {
          float acc = is_max ? -INFINITY : INFINITY;
          for (int64_t a = 0; a < shape[0]; ++a)
            for (int64_t c = 0; c < shape[2]; ++c) {
              if (axes.size() == 1 && c != k % shape[2]) continue;
              int64_t b = axes.size() == 1 ? k / shape[2] : k;
              float e = v[((a * shape[1] + b) * shape[2] + c) * inner + j];
              acc = is_max ? max_nan(acc, e) : min_nan(acc, e);
            }
          want.push_back(acc);
        }
      for (int threads : {1, 2}) {
        omp_set_num_threads(threads);
        ir::HostTensor y = run1(op, {{x}, constant_ints(axes)}, {{"keepdims", int64_t{0}}});
        std::vector<float> got = values(y);
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_TRUE(got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i])))
              << ir::op_name(op) << " over " << axes.size() << " axes, element " << i << ": "
              << got[i] << " vs " << want[i];
      }
      omp_set_num_threads(omp_get_num_procs());
    }
  }
}

TEST(DataMovement, TransposeSliceConcatSplit) {
  ir::HostTensor x = random_tensor(Shape({2, 3, 4}), 21);
  ir::HostTensor t = run1(OpType::Transpose, {{x}}, {{"perm", std::vector<int64_t>{2, 0, 1}}});
  ASSERT_EQ(t.shape(), Shape({4, 2, 3}));
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 4; ++c)
        EXPECT_EQ(t.data<float>()[(c * 2 + a) * 3 + b], x.data<float>()[(a * 3 + b) * 4 + c]);
  ir::HostTensor s = run1(OpType::Slice, {{x},
                                          constant_ints({2, 0}),
                                          constant_ints({-100, 3}),
                                          constant_ints({2, 1}),
                                          constant_ints({-1, 2})});
  ASSERT_EQ(s.shape(), Shape({2, 2, 3}));
  EXPECT_EQ(s.data<float>()[0], x.data<float>()[2]);          // [0,0,2]
  EXPECT_EQ(s.data<float>()[4], x.data<float>()[2 * 4 + 1]);  // [0,2,1]
  auto parts = run_op(OpType::Split, {{x}, constant_ints({1, 2})}, {{"axis", int64_t{1}}}, 2);
  ir::HostTensor back = run1(OpType::Concat, {{parts[0]}, {parts[1]}}, {{"axis", int64_t{1}}});
  expect_near(back, values(x), 0);
}

TEST(DataMovement, GatherPadTileExpand) {
  ir::HostTensor x = random_tensor(Shape({3, 4}), 22);
  std::vector<int64_t> idx{2, -1, 0};
  ir::HostTensor g = run1(OpType::Gather, {{x}, {ir::HostTensor::from(Shape({3}), idx.data())}},
                          {{"axis", int64_t{1}}});
  ASSERT_EQ(g.shape(), Shape({3, 3}));
  EXPECT_EQ(g.data<float>()[1], x.data<float>()[3]);
  ir::HostTensor p =
      run1(OpType::Pad, {{x}, constant_ints({1, 2, 0, 1})}, {{"mode", std::string("reflect")}});
  ASSERT_EQ(p.shape(), Shape({4, 7}));
  EXPECT_EQ(p.data<float>()[0], x.data<float>()[1 * 4 + 2]);  // reflect: row -1 -> 1, col -2 -> 2
  ir::HostTensor e =
      run1(OpType::Pad, {{x}, constant_ints({1, 2, 0, 1})}, {{"mode", std::string("edge")}});
  EXPECT_EQ(e.data<float>()[0], x.data<float>()[0]);
  ir::HostTensor t = run1(OpType::Tile, {{x}, constant_ints({2, 3})});
  ASSERT_EQ(t.shape(), Shape({6, 12}));
  EXPECT_EQ(t.data<float>()[5 * 12 + 9], x.data<float>()[2 * 4 + 1]);
  ir::HostTensor ex =
      run1(OpType::Expand, {{x.reshaped(Shape({3, 1, 4}))}, constant_ints({2, 3, 5, 4})});
  ASSERT_EQ(ex.shape(), Shape({2, 3, 5, 4}));
  EXPECT_EQ(ex.data<float>()[((1 * 3 + 2) * 5 + 4) * 4 + 3], x.data<float>()[2 * 4 + 3]);
}

// The ONNX Pad semantics element by element: output coordinate o reads input o - before,
// resolved per mode along each axis (negative pads crop).
float pad_reference(const ir::HostTensor& x, const Shape& os, const std::vector<int64_t>& pads,
                    const std::string& mode, int64_t i) {
  const Shape& is = x.shape();
  int64_t off = 0, stride = 1;
  for (int d = os.rank() - 1; d >= 0; --d) {
    int64_t c = i % os[d] - pads[d], n = is[d];
    i /= os[d];
    if (c < 0 || c >= n) {
      if (mode == "constant") return 0.5f;
      if (mode == "edge") c = c < 0 ? 0 : n - 1;
      if (mode == "wrap") c = ((c % n) + n) % n;
      if (mode == "reflect") {
        int64_t period = 2 * (n - 1);
        c = period == 0 ? 0 : ((c % period) + period) % period;
        if (c >= n) c = period - c;
      }
    }
    off += c * stride;
    stride *= n;
  }
  return x.data<float>()[off];
}

TEST(DataMovement, PadEveryModeWithNegativePadsMatchesTheSpec) {
  float fill = 0.5f;
  ir::HostTensor value = ir::HostTensor::from(Shape({}), &fill);
  for (const std::string mode : {"constant", "edge", "reflect", "wrap"})
    for (uint64_t seed = 0; seed < 12; ++seed) {
      Shape shape({3 + int64_t(seed % 3), 3 + int64_t(seed % 4), 4 + int64_t(seed % 5)});
      ir::HostTensor x = random_tensor(shape, 40 + seed);
      std::vector<int64_t> pads;  // before for each axis, then after; some negative (crop)
      for (int k = 0; k < 6; ++k) pads.push_back(int64_t((seed * 7 + k * 5) % 4) - 1);
      ir::HostTensor y = run1(OpType::Pad, {{x}, constant_ints(pads), {value}}, {{"mode", mode}});
      for (int64_t i = 0; i < y.numel(); ++i)
        ASSERT_EQ(y.data<float>()[i], pad_reference(x, y.shape(), pads, mode, i))
            << mode << " seed " << seed << " element " << i;
    }
}

TEST(DataMovement, CastBetweenIntegerBoolAndFloatTypes) {
  std::vector<float> f{-2.7f, -0.0f, 0.4f, 3e9f, -3e9f, std::nanf(""), 200.9f};
  ir::HostTensor x = ir::HostTensor::from(Shape({7}), f.data());
  auto cast = [](const ir::HostTensor& t, DType to) {
    return run1(OpType::Cast, {{t}}, {{"to", std::string(ir::dtype_name(to))}});
  };
  ir::HostTensor i32 = cast(x, DType::i32), i8 = cast(x, DType::i8), b = cast(x, DType::boolean);
  std::vector<int32_t> want32{-2, 0, 0, INT32_MAX, INT32_MIN, 0, 200};
  for (int i = 0; i < 7; ++i) EXPECT_EQ(i32.data<int32_t>()[i], want32[i]) << i;
  EXPECT_EQ(i8.data<int8_t>()[6], 127);  // saturated
  std::vector<bool> want_b{true, false, true, true, true, true, true};
  for (int i = 0; i < 7; ++i) EXPECT_EQ(b.data<bool>()[i], want_b[i]) << i;
  std::vector<int64_t> big{(int64_t(1) << 53) + 1, -5};
  ir::HostTensor back = cast(ir::HostTensor::from(Shape({2}), big.data()), DType::f32);
  EXPECT_EQ(back.data<float>()[0], float(double((int64_t(1) << 53) + 1)));
  EXPECT_EQ(cast(b, DType::f32).data<float>()[1], 0.0f);
  EXPECT_EQ(cast(i32, DType::i8).data<int8_t>()[6], int8_t(200));  // integers wrap, as C++ does
}

TEST(DataMovement, DepthToSpaceInvertsSpaceToDepth) {
  ir::HostTensor x = random_tensor(Shape({1, 2, 4, 6}), 23);
  ir::HostTensor d = run1(OpType::SpaceToDepth, {{x}}, {{"blocksize", int64_t{2}}});
  ASSERT_EQ(d.shape(), Shape({1, 8, 2, 3}));
  ir::HostTensor back = run1(OpType::DepthToSpace, {{d}}, {{"blocksize", int64_t{2}}});
  expect_near(back, values(x), 0);
}

TEST(Errors, GatherIndexOutOfRangeNamesTheNode) {
  ir::HostTensor x = random_tensor(Shape({3, 4}), 24);
  std::vector<int64_t> idx{7};
  try {
    run1(OpType::Gather, {{x}, {ir::HostTensor::from(Shape({1}), idx.data())}});
    FAIL() << "expected an error";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("index 7 is out of range for axis 0 of size 3"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace mimic::testing
