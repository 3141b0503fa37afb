// LSTM, GRU and RNN (ONNX semantics, see frontend/ir/recurrent.h). Per direction: the input
// projection of every time step is one GEMM (X[seq*batch, input] x W^T), the recurrent projection
// one GEMM per step over the whole batch (H[batch, hidden] x R^T); gates and state updates follow
// per batch row. With sequence_lens, row b runs steps [0, len_b) (a backward direction from
// len_b - 1 down to 0); its Y rows past len_b stay zero and Y_h/Y_c hold its state after its last
// valid step (the initial state when len_b = 0).
#include <fmt/format.h>
#include <algorithm>
#include <cstring>

#include "backends/cpu/kernels.h"
#include "backends/cpu/tensor_iter.h"
#include "base/error.h"
#include "base/gemm.h"
#include "frontend/ir/recurrent.h"

namespace mimic::backends::cpu {
namespace {

using ir::RecurrentSpec;

constexpr int kB = 3, kSequenceLens = 4, kInitialH = 5, kInitialC = 6, kPeepholes = 7;

// One direction's run: the spec, its weights and the state of every batch row.
struct DirectionRun {
  const KernelArgs& a;
  const RecurrentSpec& s;
  int d;
  const std::vector<int64_t>& lens;
  int64_t gate_rows;             // gates * hidden
  std::vector<float> xw;         // [x rows, gate_rows]: X W^T + biases
  std::vector<float> hr;         // [batch, gate_rows]: H R^T for the current step
  std::vector<float> h, c;       // [batch, hidden]
  std::vector<float> rb_hidden;  // GRU linear_before_reset: Rbh, applied inside the reset product

  const float* w() const { return f32(a.input(1)) + d * gate_rows * s.input_size; }
  const float* r() const { return f32(a.input(2)) + d * gate_rows * s.hidden; }
  // Row of X (and of xw) holding time t of batch row b.
  int64_t x_row(int64_t t, int64_t b) const {
    return s.layout == 0 ? t * s.batch + b : b * s.seq_length + t;
  }
  int64_t state_offset(int64_t b) const {
    return (s.layout == 0 ? d * s.batch + b : b * s.num_directions + d) * s.hidden;
  }
  int64_t y_offset(int64_t t, int64_t b) const {
    int64_t dirs = s.num_directions;
    return (s.layout == 0 ? (t * dirs + d) * s.batch + b : (b * s.seq_length + t) * dirs + d) *
           s.hidden;
  }
  // The time step that batch row b processes at step `step`, or -1 once its sequence has ended.
  int64_t time_of(int64_t step, int64_t b) const {
    if (step >= lens[b]) return -1;
    return s.backward(d) ? lens[b] - 1 - step : step;
  }
  float clip(float v) const { return s.has_clip ? std::min(std::max(v, -s.clip), s.clip) : v; }
  float act(int which, float v) const {
    return ir::apply_activation(s.activation(d, which), clip(v));
  }
};

void project_inputs(DirectionRun& run) {
  const RecurrentSpec& s = run.s;
  int64_t rows = s.seq_length * s.batch, g = run.gate_rows, hid = s.hidden;
  run.xw.assign(rows * g, 0.0f);
  if (rows > 0 && s.input_size > 0)
    gemm_f32(rows, g, s.input_size, 1.0f, {f32(run.a.input(0)), s.input_size, false},
             {run.w(), s.input_size, true}, 0.0f, run.xw.data(), g);
  if (!run.a.has_input(kB)) return;
  const float* wb = f32(run.a.input(kB)) + run.d * 2 * g;
  const float* rb = wb + g;
  std::vector<float> bias(wb, wb + g);
  bool split_h = s.op == ir::OpType::GRU && s.linear_before_reset;
  for (int64_t j = 0; j < g; ++j)
    if (!(split_h && j >= 2 * hid)) bias[j] += rb[j];
  if (split_h) run.rb_hidden.assign(rb + 2 * hid, rb + 3 * hid);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < g; ++j) run.xw[i * g + j] += bias[j];
}

void init_state(DirectionRun& run) {
  const RecurrentSpec& s = run.s;
  run.h.assign(s.batch * s.hidden, 0.0f);
  run.c.assign(s.batch * s.hidden, 0.0f);
  for (int idx : {kInitialH, kInitialC}) {
    if (!run.a.has_input(idx)) continue;
    std::vector<float>& dst = idx == kInitialH ? run.h : run.c;
    for (int64_t b = 0; b < s.batch; ++b)
      std::memcpy(&dst[b * s.hidden], f32(run.a.input(idx)) + run.state_offset(b),
                  s.hidden * sizeof(float));
  }
}

// hr[:, col0 : col0 + cols] = state[batch, hidden] x R[col0 : col0 + cols]^T.
void project_state(DirectionRun& run, const float* state, int64_t col0, int64_t cols) {
  const RecurrentSpec& s = run.s;
  gemm_f32(s.batch, cols, s.hidden, 1.0f, {state, s.hidden, false},
           {run.r() + col0 * s.hidden, s.hidden, true}, 0.0f, run.hr.data() + col0, run.gate_rows);
}

void lstm_row(DirectionRun& run, int64_t t, int64_t b) {
  const RecurrentSpec& s = run.s;
  int64_t hid = s.hidden;
  const float* x = &run.xw[run.x_row(t, b) * run.gate_rows];
  const float* r = &run.hr[b * run.gate_rows];
  const float* p =
      run.a.has_input(kPeepholes) ? f32(run.a.input(kPeepholes)) + run.d * 3 * hid : nullptr;
  float* h = &run.h[b * hid];
  float* c = &run.c[b * hid];
  for (int64_t j = 0; j < hid; ++j) {
    float c_prev = c[j];
    float pi = p ? p[j] : 0.0f, po = p ? p[hid + j] : 0.0f, pf = p ? p[2 * hid + j] : 0.0f;
    float i_gate = run.act(0, x[j] + r[j] + pi * c_prev);
    float f_gate =
        s.input_forget ? 1.0f - i_gate : run.act(0, x[2 * hid + j] + r[2 * hid + j] + pf * c_prev);
    float cell = run.act(1, x[3 * hid + j] + r[3 * hid + j]);
    c[j] = f_gate * c_prev + i_gate * cell;
    float o_gate = run.act(0, x[hid + j] + r[hid + j] + po * c[j]);
    h[j] = o_gate * ir::apply_activation(s.activation(run.d, 2), c[j]);
  }
}

void rnn_row(DirectionRun& run, int64_t t, int64_t b) {
  int64_t hid = run.s.hidden;
  const float* x = &run.xw[run.x_row(t, b) * run.gate_rows];
  const float* r = &run.hr[b * run.gate_rows];
  for (int64_t j = 0; j < hid; ++j) run.h[b * hid + j] = run.act(0, x[j] + r[j]);
}

// GRU's update and reset gates of row b into z and (for linear_before_reset=0) r (.) H into rh.
void gru_gates(DirectionRun& run, int64_t t, int64_t b, float* z, float* r_gate) {
  int64_t hid = run.s.hidden;
  const float* x = &run.xw[run.x_row(t, b) * run.gate_rows];
  const float* r = &run.hr[b * run.gate_rows];
  for (int64_t j = 0; j < hid; ++j) {
    z[j] = run.act(0, x[j] + r[j]);
    r_gate[j] = run.act(0, x[hid + j] + r[hid + j]);
  }
}

void gru_finish(DirectionRun& run, int64_t t, int64_t b, const float* z, const float* r_gate) {
  int64_t hid = run.s.hidden;
  const float* x = &run.xw[run.x_row(t, b) * run.gate_rows] + 2 * hid;
  const float* rh = &run.hr[b * run.gate_rows] + 2 * hid;
  float* h = &run.h[b * hid];
  for (int64_t j = 0; j < hid; ++j) {
    float recurrent = run.s.linear_before_reset
                          ? r_gate[j] * (rh[j] + (run.rb_hidden.empty() ? 0.0f : run.rb_hidden[j]))
                          : rh[j];
    float cand = run.act(1, x[j] + recurrent);
    h[j] = (1.0f - z[j]) * cand + z[j] * h[j];
  }
}

// One GRU step: with linear_before_reset=0 the candidate's recurrent product needs r (.) H first.
void gru_step(DirectionRun& run, int64_t step, std::vector<float>& z, std::vector<float>& r_gate) {
  const RecurrentSpec& s = run.s;
  int64_t hid = s.hidden;
  project_state(run, run.h.data(), 0, s.linear_before_reset ? 3 * hid : 2 * hid);
  for (int64_t b = 0; b < s.batch; ++b)
    if (int64_t t = run.time_of(step, b); t >= 0)
      gru_gates(run, t, b, &z[b * hid], &r_gate[b * hid]);
  if (!s.linear_before_reset) {
    std::vector<float> reset_h(s.batch * hid, 0.0f);
    for (int64_t i = 0; i < s.batch * hid; ++i) reset_h[i] = r_gate[i] * run.h[i];
    project_state(run, reset_h.data(), 2 * hid, hid);
  }
  for (int64_t b = 0; b < s.batch; ++b)
    if (int64_t t = run.time_of(step, b); t >= 0)
      gru_finish(run, t, b, &z[b * hid], &r_gate[b * hid]);
}

void write_outputs(const DirectionRun& run, int64_t step) {
  const RecurrentSpec& s = run.s;
  float* y = f32(run.a.output(0));
  for (int64_t b = 0; b < s.batch; ++b)
    if (int64_t t = run.time_of(step, b); t >= 0)
      std::memcpy(y + run.y_offset(t, b), &run.h[b * s.hidden], s.hidden * sizeof(float));
}

void write_states(const DirectionRun& run) {
  const RecurrentSpec& s = run.s;
  for (size_t o = 1; o < run.a.out.size(); ++o) {
    const std::vector<float>& src = o == 1 ? run.h : run.c;
    for (int64_t b = 0; b < s.batch; ++b)
      std::memcpy(f32(run.a.output(static_cast<int>(o))) + run.state_offset(b), &src[b * s.hidden],
                  s.hidden * sizeof(float));
  }
}

void run_direction(const KernelArgs& a, const RecurrentSpec& s, int d,
                   const std::vector<int64_t>& lens) {
  DirectionRun run{a, s, d, lens, s.gates * s.hidden, {}, {}, {}, {}, {}};
  project_inputs(run);
  init_state(run);
  run.hr.assign(s.batch * run.gate_rows, 0.0f);
  std::vector<float> z(s.batch * s.hidden), r_gate(s.batch * s.hidden);
  int64_t steps = lens.empty() ? 0 : *std::max_element(lens.begin(), lens.end());
  for (int64_t step = 0; step < steps; ++step) {
    if (s.op == ir::OpType::GRU) {
      gru_step(run, step, z, r_gate);
    } else {
      project_state(run, run.h.data(), 0, run.gate_rows);
      for (int64_t b = 0; b < s.batch; ++b) {
        int64_t t = run.time_of(step, b);
        if (t < 0) continue;
        if (s.op == ir::OpType::LSTM)
          lstm_row(run, t, b);
        else
          rnn_row(run, t, b);
      }
    }
    write_outputs(run, step);
  }
  write_states(run);
}

std::vector<int64_t> sequence_lengths(const KernelArgs& a, const RecurrentSpec& s) {
  std::vector<int64_t> lens(s.batch, s.seq_length);
  if (!a.has_input(kSequenceLens)) return lens;
  const ir::HostTensor& t = a.input(kSequenceLens);
  for (int64_t b = 0; b < s.batch; ++b) {
    int64_t v = t.dtype() == ir::DType::i64 ? t.data<int64_t>()[b] : t.data<int32_t>()[b];
    if (v < 0 || v > s.seq_length)
      throw InvalidArgument(fmt::format("{}: sequence_lens[{}]={} is outside [0, {}]",
                                        ir::describe(a.graph, a.node), b, v, s.seq_length));
    lens[b] = v;
  }
  return lens;
}

}  // namespace

void recurrent_kernel(const KernelArgs& a) {
  RecurrentSpec s =
      ir::recurrent_spec(a.node, a.input(0).shape(), a.input(1).shape(), a.input(2).shape());
  std::vector<int64_t> lens = sequence_lengths(a, s);
  std::memset(a.output(0).raw(), 0, a.output(0).numel() * sizeof(float));
  for (int d = 0; d < s.num_directions; ++d) run_direction(a, s, d, lens);
}

}  // namespace mimic::backends::cpu
