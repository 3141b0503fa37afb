// cpu LSTM/GRU/RNN kernels against a naive per-row implementation of the ONNX equations
// (double precision, one batch row and one gate element at a time), and a hand-computed case.
#include <cmath>
#include <string>

#include "base/error.h"
#include "frontend/api/compile.h"
#include "frontend/api/random.h"
#include "frontend/ir/recurrent_expand.h"
#include "tests/unit/cpu_test_util.h"

namespace mimic::testing {
namespace {

using ir::DType;
using ir::HostTensor;
using ir::OpType;
using ir::Shape;

struct Case {
  OpType op = OpType::LSTM;
  int64_t seq = 4, batch = 3, input = 5, hidden = 4;
  std::string direction = "forward";
  int layout = 0;
  bool bias = true, initial = true, peepholes = false;
  std::vector<int32_t> lens;  // empty: no sequence_lens
  float clip = 0.0f;
  bool linear_before_reset = false, input_forget = false;
  std::vector<std::string> activations;
  std::vector<double> alphas, betas;
  int dirs() const { return direction == "bidirectional" ? 2 : 1; }
  int gates() const { return op == OpType::LSTM ? 4 : op == OpType::GRU ? 3 : 1; }
};

double activate(const std::string& name, double x, double alpha, double beta) {
  if (name == "Sigmoid") return 1.0 / (1.0 + std::exp(-x));
  if (name == "Tanh") return std::tanh(x);
  if (name == "Relu") return std::max(0.0, x);
  if (name == "Affine") return alpha * x + beta;
  if (name == "LeakyRelu") return x >= 0 ? x : alpha * x;
  if (name == "ThresholdedRelu") return x >= alpha ? x : 0.0;
  if (name == "ScaledTanh") return alpha * std::tanh(beta * x);
  if (name == "HardSigmoid") return std::min(1.0, std::max(0.0, alpha * x + beta));
  if (name == "Elu") return x >= 0 ? x : alpha * (std::exp(x) - 1.0);
  if (name == "Softsign") return x / (1.0 + std::fabs(x));
  if (name == "Softplus") return std::log(1.0 + std::exp(x));
  ADD_FAILURE() << name;
  return 0;
}

struct Tensors {
  HostTensor x, w, r, b, h0, c0, p, lens;
};

Tensors make_inputs(const Case& k, uint64_t seed) {
  Random rng(seed);
  int64_t g = k.gates() * k.hidden, d = k.dirs();
  Shape state = k.layout == 0 ? Shape({d, k.batch, k.hidden}) : Shape({k.batch, d, k.hidden});
  Tensors t;
  t.x = rng.uniform_tensor(
      k.layout == 0 ? Shape({k.seq, k.batch, k.input}) : Shape({k.batch, k.seq, k.input}), 1.0f);
  t.w = rng.uniform_tensor(Shape({d, g, k.input}), 0.6f);
  t.r = rng.uniform_tensor(Shape({d, g, k.hidden}), 0.6f);
  if (k.bias) t.b = rng.uniform_tensor(Shape({d, 2 * g}), 0.5f);
  if (k.initial) t.h0 = rng.uniform_tensor(state, 0.8f);
  if (k.initial && k.op == OpType::LSTM) t.c0 = rng.uniform_tensor(state, 0.8f);
  if (k.peepholes) t.p = rng.uniform_tensor(Shape({d, 3 * k.hidden}), 0.5f);
  if (!k.lens.empty()) t.lens = HostTensor::from(Shape({k.batch}), k.lens.data());
  return t;
}

// The ONNX equations, directly: one row b of direction d at a time.
struct Reference {
  const Case& k;
  const Tensors& t;
  std::vector<std::string> acts;
  std::vector<double> alpha, beta;

  float at(const HostTensor& x, int64_t i) const { return x.data<float>()[i]; }
  int64_t state_index(int d, int64_t b, int64_t j) const {
    return (k.layout == 0 ? d * k.batch + b : b * k.dirs() + d) * k.hidden + j;
  }
  double x(int64_t time, int64_t b, int64_t i) const {
    return at(t.x, (k.layout == 0 ? time * k.batch + b : b * k.seq + time) * k.input + i);
  }
  double clip(double v) const {
    return k.clip > 0 ? std::min<double>(k.clip, std::max<double>(-k.clip, v)) : v;
  }
  double f(int d, int which, double v) const {
    int i = d * (k.op == OpType::LSTM ? 3 : k.op == OpType::GRU ? 2 : 1) + which;
    return activate(acts[i], v, alpha[i], beta[i]);
  }
  // Xt W_row^T + Wb_row (+ Rb_row): `row` indexes W's gate rows.
  double wx(int d, int64_t time, int64_t b, int64_t row, bool with_rb) const {
    int64_t g = k.gates() * k.hidden;
    double s = 0;
    for (int64_t i = 0; i < k.input; ++i) s += at(t.w, (d * g + row) * k.input + i) * x(time, b, i);
    if (k.bias) s += at(t.b, d * 2 * g + row) + (with_rb ? at(t.b, d * 2 * g + g + row) : 0.0);
    return s;
  }
  double rh(int d, const std::vector<double>& h, int64_t row) const {
    int64_t g = k.gates() * k.hidden;
    double s = 0;
    for (int64_t m = 0; m < k.hidden; ++m) s += at(t.r, (d * g + row) * k.hidden + m) * h[m];
    return s;
  }
  double rb(int d, int64_t row) const {
    int64_t g = k.gates() * k.hidden;
    return k.bias ? at(t.b, d * 2 * g + g + row) : 0.0;
  }
  double peep(int d, int64_t row) const {
    return k.peepholes ? at(t.p, d * 3 * k.hidden + row) : 0.0;
  }

  void step(int d, int64_t time, int64_t b, std::vector<double>& h, std::vector<double>& c) const {
    int64_t H = k.hidden;
    std::vector<double> nh(H), nc(c);
    for (int64_t j = 0; j < H; ++j) {
      if (k.op == OpType::RNN) {
        nh[j] = f(d, 0, clip(wx(d, time, b, j, true) + rh(d, h, j)));
      } else if (k.op == OpType::LSTM) {
        double i = f(d, 0, clip(wx(d, time, b, j, true) + rh(d, h, j) + peep(d, j) * c[j]));
        double fg = k.input_forget ? 1 - i
                                   : f(d, 0,
                                       clip(wx(d, time, b, 2 * H + j, true) + rh(d, h, 2 * H + j) +
                                            peep(d, 2 * H + j) * c[j]));
        double cc = f(d, 1, clip(wx(d, time, b, 3 * H + j, true) + rh(d, h, 3 * H + j)));
        nc[j] = fg * c[j] + i * cc;
        double o =
            f(d, 0, clip(wx(d, time, b, H + j, true) + rh(d, h, H + j) + peep(d, H + j) * nc[j]));
        nh[j] = o * f(d, 2, nc[j]);
      } else {
        double z = f(d, 0, clip(wx(d, time, b, j, true) + rh(d, h, j)));
        double hc;
        if (k.linear_before_reset) {
          double r = f(d, 0, clip(wx(d, time, b, H + j, true) + rh(d, h, H + j)));
          hc = f(d, 1,
                 clip(wx(d, time, b, 2 * H + j, false) +
                      r * (rh(d, h, 2 * H + j) + rb(d, 2 * H + j))));
        } else {
          std::vector<double> reset_h(H);
          for (int64_t m = 0; m < H; ++m)
            reset_h[m] = f(d, 0, clip(wx(d, time, b, H + m, true) + rh(d, h, H + m))) * h[m];
          hc = f(d, 1, clip(wx(d, time, b, 2 * H + j, true) + rh(d, reset_h, 2 * H + j)));
        }
        nh[j] = (1 - z) * hc + z * h[j];
      }
    }
    h = nh;
    c = nc;
  }

  // Y, Y_h, Y_c in the case's layout.
  std::vector<std::vector<float>> run() const {
    int dirs = k.dirs();
    std::vector<float> y(k.seq * dirs * k.batch * k.hidden, 0.0f);
    std::vector<float> yh(dirs * k.batch * k.hidden), yc(yh.size());
    for (int d = 0; d < dirs; ++d)
      for (int64_t b = 0; b < k.batch; ++b) {
        std::vector<double> h(k.hidden, 0.0), c(k.hidden, 0.0);
        for (int64_t j = 0; j < k.hidden; ++j) {
          if (t.h0.defined()) h[j] = at(t.h0, state_index(d, b, j));
          if (t.c0.defined()) c[j] = at(t.c0, state_index(d, b, j));
        }
        int64_t len = k.lens.empty() ? k.seq : k.lens[b];
        bool back = k.direction == "reverse" || d == 1;
        for (int64_t s = 0; s < len; ++s) {
          int64_t time = back ? len - 1 - s : s;
          step(d, time, b, h, c);
          for (int64_t j = 0; j < k.hidden; ++j) {
            int64_t yi = k.layout == 0 ? ((time * dirs + d) * k.batch + b) * k.hidden + j
                                       : ((b * k.seq + time) * dirs + d) * k.hidden + j;
            y[yi] = static_cast<float>(h[j]);
          }
        }
        for (int64_t j = 0; j < k.hidden; ++j) {
          yh[state_index(d, b, j)] = static_cast<float>(h[j]);
          yc[state_index(d, b, j)] = static_cast<float>(c[j]);
        }
      }
    return {y, yh, yc};
  }
};

Reference reference(const Case& k, const Tensors& t) {
  Reference r{k, t, k.activations, {}, {}};
  std::vector<std::string> defaults =
      k.op == OpType::LSTM  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
      : k.op == OpType::GRU ? std::vector<std::string>{"Sigmoid", "Tanh"}
                            : std::vector<std::string>{"Tanh"};
  if (r.acts.empty())
    for (int d = 0; d < k.dirs(); ++d)
      r.acts.insert(r.acts.end(), defaults.begin(), defaults.end());
  size_t ai = 0, bi = 0;
  for (const std::string& a : r.acts) {
    bool ua = a == "Affine" || a == "LeakyRelu" || a == "ThresholdedRelu" || a == "ScaledTanh" ||
              a == "HardSigmoid" || a == "Elu";
    bool ub = a == "Affine" || a == "ScaledTanh" || a == "HardSigmoid";
    double da = a == "LeakyRelu" ? 0.01 : a == "HardSigmoid" ? 0.2 : 1.0;
    double db = a == "HardSigmoid" ? 0.5 : a == "ScaledTanh" ? 1.0 : 0.0;
    r.alpha.push_back(ua && ai < k.alphas.size() ? k.alphas[ai++] : da);
    r.beta.push_back(ub && bi < k.betas.size() ? k.betas[bi++] : db);
  }
  return r;
}

// The same node unrolled into primitive ops (recurrent_expand.h), run on the cpu backend, with
// W, R, B and P as constants or as runtime inputs.
void check_unrolled(const Case& k, const Tensors& t, const ir::Attributes& attrs,
                    const std::vector<std::vector<float>>& want, bool constant_weights) {
  ir::Graph g;
  std::vector<HostTensor> inputs;
  auto param = [&](const HostTensor& x, bool constant) {
    if (!x.defined()) return ir::kNoValue;
    if (constant) return g.add_constant("param", x);
    inputs.push_back(x);
    return g.add_input("in", x.dtype(), x.shape());
  };
  bool cw = constant_weights;
  std::vector<ir::ValueId> ids{param(t.x, false), param(t.w, cw),      param(t.r, cw),
                               param(t.b, cw),    param(t.lens, true), param(t.h0, false)};
  if (k.op == OpType::LSTM) ids.insert(ids.end(), {param(t.c0, false), param(t.p, cw)});
  while (ids.back() == ir::kNoValue) ids.pop_back();
  int outputs = k.op == OpType::LSTM ? 3 : 2;
  for (ir::ValueId v : g.add_node(k.op, "rnn", ids, attrs, outputs)) g.add_output(v);
  ir::infer_shapes(g);
  std::string why;
  ASSERT_TRUE(ir::can_unroll_recurrent(g, g.node(0), &why)) << why;
  ir::Graph unrolled = ir::unroll_recurrent(g, [](const ir::Node&) { return true; });
  EXPECT_GT(unrolled.num_nodes(), k.seq);
  RunOutput out = compile(unrolled, "cpu").run(inputs);
  for (int i = 0; i < outputs; ++i) {
    SCOPED_TRACE("unrolled, output " + std::to_string(i));
    expect_near(out.outputs[i], want[i], 2e-5f);
  }
}

void check(const Case& k, uint64_t seed = 7) {
  Tensors t = make_inputs(k, seed);
  ir::Attributes attrs{{"hidden_size", k.hidden}, {"direction", k.direction}};
  if (k.layout) attrs.set("layout", int64_t{k.layout});
  if (k.clip > 0) attrs.set("clip", double{k.clip});
  if (k.linear_before_reset) attrs.set("linear_before_reset", int64_t{1});
  if (k.input_forget) attrs.set("input_forget", int64_t{1});
  if (!k.activations.empty()) attrs.set("activations", k.activations);
  if (!k.alphas.empty()) attrs.set("activation_alpha", k.alphas);
  if (!k.betas.empty()) attrs.set("activation_beta", k.betas);
  std::vector<In> inputs{{t.x}, {t.w}, {t.r}, {t.b}, {t.lens}, {t.h0}};
  if (k.op == OpType::LSTM) inputs.insert(inputs.end(), {{t.c0}, {t.p}});
  while (!inputs.back().data.defined()) inputs.pop_back();
  int outputs = k.op == OpType::LSTM ? 3 : 2;
  std::vector<HostTensor> got = run_op(k.op, inputs, attrs, outputs);
  std::vector<std::vector<float>> want = reference(k, t).run();
  for (int i = 0; i < outputs; ++i) {
    SCOPED_TRACE("output " + std::to_string(i));
    expect_near(got[i], want[i], 2e-5f);
  }
  for (bool constant_weights : {true, false}) check_unrolled(k, t, attrs, want, constant_weights);
}

TEST(CpuRecurrent, LstmForwardDefaults) {
  check({});
}

TEST(CpuRecurrent, LstmBidirectionalPeepholesSequenceLens) {
  Case k;
  k.direction = "bidirectional";
  k.peepholes = true;
  k.lens = {4, 2, 0};
  check(k);
}

TEST(CpuRecurrent, LstmReverseLayout1ClipInputForget) {
  Case k;
  k.direction = "reverse";
  k.layout = 1;
  k.clip = 0.7f;
  k.input_forget = true;
  k.lens = {3, 4, 1};
  check(k);
}

TEST(CpuRecurrent, LstmActivationsWithAlphaBeta) {
  Case k;
  k.direction = "bidirectional";
  k.activations = {"HardSigmoid", "LeakyRelu", "ScaledTanh", "Sigmoid", "Elu", "Softsign"};
  k.alphas = {0.3, 0.05, 0.9, 0.8};
  k.betas = {0.4, 1.5};
  check(k);
}

TEST(CpuRecurrent, GruLinearBeforeReset0And1) {
  for (bool lbr : {false, true})
    for (const char* dir : {"forward", "reverse", "bidirectional"}) {
      SCOPED_TRACE(std::string(dir) + (lbr ? " lbr=1" : " lbr=0"));
      Case k;
      k.op = OpType::GRU;
      k.direction = dir;
      k.linear_before_reset = lbr;
      k.lens = {2, 4, 3};
      check(k);
    }
}

TEST(CpuRecurrent, GruLayout1ClipAffine) {
  Case k;
  k.op = OpType::GRU;
  k.layout = 1;
  k.clip = 0.5f;
  k.activations = {"Affine", "Softplus"};
  k.alphas = {0.5};
  k.betas = {0.25};
  k.initial = false;
  check(k);
}

TEST(CpuRecurrent, RnnEveryActivation) {
  for (const char* act : {"Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu", "ThresholdedRelu",
                          "ScaledTanh", "HardSigmoid", "Elu", "Softsign", "Softplus"}) {
    SCOPED_TRACE(act);
    Case k;
    k.op = OpType::RNN;
    k.direction = "bidirectional";
    k.layout = 1;
    k.activations = {act, act};
    k.lens = {1, 4, 2};
    check(k);
  }
}

TEST(CpuRecurrent, RnnNoBiasNoInitialState) {
  Case k;
  k.op = OpType::RNN;
  k.bias = false;
  k.initial = false;
  check(k);
}

// h1 = relu(0.5 * 1) = 0.5; h2 = relu(0.5 * 2 + 1 * 0.5) = 1.5; reverse: h1' = relu(1) = 1,
// h0' = relu(0.5 + 1) = 1.5.
TEST(CpuRecurrent, RnnByHand) {
  float x[] = {1, 2}, w[] = {0.5f, 0.5f}, r[] = {1, 1};
  ir::Attributes attrs{{"hidden_size", int64_t{1}},
                       {"direction", std::string("bidirectional")},
                       {"activations", std::vector<std::string>{"Relu", "Relu"}}};
  auto out = run_op(OpType::RNN,
                    {{HostTensor::from(Shape({2, 1, 1}), x)},
                     {HostTensor::from(Shape({2, 1, 1}), w)},
                     {HostTensor::from(Shape({2, 1, 1}), r)}},
                    attrs, 2);
  expect_near(out[0], {0.5f, 1.5f, 1.5f, 1.0f});  // Y[t, d]: t0 (fwd, rev), t1 (fwd, rev)
  expect_near(out[1], {1.5f, 1.5f});
}

TEST(CpuRecurrent, SequenceLensOutOfRangeAtRunTime) {
  Case k;
  k.op = OpType::RNN;
  k.lens = {1, 5, 2};
  EXPECT_THROW(check(k), InvalidArgument);
}

}  // namespace
}  // namespace mimic::testing
