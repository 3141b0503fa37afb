// Shape inference of LSTM, GRU and RNN: every input's shape against the ONNX spec (see
// recurrent.h), sequence_lens values against seq_length when they are constant.
#include <fmt/format.h>

#include "base/error.h"
#include "frontend/ir/recurrent.h"
#include "frontend/ir/shape_inference.h"

namespace mimic::ir::infer {
namespace {

// Input indices (ONNX): X, W, R, B, sequence_lens, initial_h, initial_c (LSTM), P (LSTM).
constexpr int kB = 3, kSequenceLens = 4, kInitialH = 5, kInitialC = 6, kPeepholes = 7;

void expect_shape(InferContext& c, int i, const char* name, const Shape& want,
                  const char* meaning) {
  if (!c.has_input(i)) return;
  if (c.shape(i) != want)
    c.fail(fmt::format("{} is {}, expected {} ({})", name, c.shape(i).str(), want.str(), meaning));
}

void check_sequence_lens(InferContext& c, const RecurrentSpec& s) {
  if (!c.has_input(kSequenceLens)) return;
  c.expect_dtype(kSequenceLens, {DType::i32, DType::i64});
  expect_shape(c, kSequenceLens, "sequence_lens", Shape({s.batch}), "batch_size");
  if (!c.constant(kSequenceLens)) return;
  std::vector<int64_t> lens = c.ints(kSequenceLens);
  for (size_t b = 0; b < lens.size(); ++b)
    if (lens[b] < 0 || lens[b] > s.seq_length)
      c.fail(fmt::format("sequence_lens[{}]={} is outside [0, seq_length={}]", b, lens[b],
                         s.seq_length));
}

void check_dtypes(InferContext& c) {
  DType t = c.dtype(0);
  if (t != DType::f32 && t != DType::f16 && t != DType::bf16 && t != DType::f64)
    c.fail(fmt::format("X has dtype {}, expected a floating-point tensor", dtype_name(t)));
  for (int i = 1; i < c.num_inputs(); ++i)
    if (i != kSequenceLens && c.has_input(i)) c.expect_same_dtype(0, i);
}

}  // namespace

void recurrent(InferContext& c) {
  check_dtypes(c);
  RecurrentSpec s;
  try {
    s = recurrent_spec(c.node(), c.shape(0), c.shape(1), c.shape(2));
  } catch (const ShapeError& e) {
    c.fail(e.what());
  }
  int64_t dirs = s.num_directions, h = s.hidden;
  expect_shape(c, kB, "B", Shape({dirs, 2 * s.gates * h}),
               fmt::format("num_directions, 2*{}*hidden_size", s.gates).c_str());
  check_sequence_lens(c, s);
  const char* state = s.layout == 0 ? "num_directions, batch_size, hidden_size (layout=0)"
                                    : "batch_size, num_directions, hidden_size (layout=1)";
  expect_shape(c, kInitialH, "initial_h", s.state_shape(), state);
  expect_shape(c, kInitialC, "initial_c", s.state_shape(), state);
  expect_shape(c, kPeepholes, "P", Shape({dirs, 3 * h}), "num_directions, 3*hidden_size");
  c.set_output(0, c.dtype(0), s.y_shape());
  for (size_t i = 1; i < c.node().outputs.size(); ++i)
    c.set_output(static_cast<int>(i), c.dtype(0), s.state_shape());
}

}  // namespace mimic::ir::infer
