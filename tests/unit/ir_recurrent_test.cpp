// Shape inference of LSTM, GRU and RNN: output shapes per layout and direction, flop counts, and
// one-line errors for every ONNX precondition.
#include <gtest/gtest.h>

#include "base/error.h"
#include "frontend/ir/recurrent.h"
#include "frontend/ir/shape_inference.h"
#include "ir_test_util.h"

namespace mimic::ir {
namespace {

struct Net {
  Graph g;
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
};

// X [seq=5, batch=2, input=3] (layout 0) with weights for `gates` gates of hidden 4.
Net make(OpType op, Attributes attrs, int dirs = 1, int gates = 4, Shape x = Shape({5, 2, 3})) {
  Net n;
  n.inputs.push_back(n.g.add_input("x", DType::f32, x));
  n.inputs.push_back(n.g.add_input("w", DType::f32, Shape({dirs, gates * 4, 3})));
  n.inputs.push_back(n.g.add_input("r", DType::f32, Shape({dirs, gates * 4, 4})));
  attrs.set("hidden_size", int64_t{4});
  n.outputs = n.g.add_node(op, "rnn1", n.inputs, attrs, op == OpType::LSTM ? 3 : 2);
  for (ValueId v : n.outputs) n.g.add_output(v);
  return n;
}

using test::error_of;

TEST(RecurrentShapes, LstmBidirectionalLayout0) {
  Net n = make(OpType::LSTM, {{"direction", std::string("bidirectional")}}, 2);
  infer_shapes(n.g);
  EXPECT_EQ(n.g.value(n.outputs[0]).type.shape, Shape({5, 2, 2, 4}));
  EXPECT_EQ(n.g.value(n.outputs[1]).type.shape, Shape({2, 2, 4}));
  EXPECT_EQ(n.g.value(n.outputs[2]).type.shape, Shape({2, 2, 4}));
  // 2 dirs x 5 steps x 2 rows x (2*16*(3+4) + 3*16)
  EXPECT_EQ(node_flops(n.g, n.g.node(0)), 2 * 5 * 2 * (2 * 16 * 7 + 48));
}

TEST(RecurrentShapes, GruLayout1AndSymbolicBatch) {
  Net n = make(OpType::GRU, {{"layout", int64_t{1}}}, 1, 3, Shape({kBatch, 5, 3}));
  infer_shapes(n.g);
  EXPECT_EQ(n.g.value(n.outputs[0]).type.shape, Shape({kBatch, 5, 1, 4}));
  EXPECT_EQ(n.g.value(n.outputs[1]).type.shape, Shape({kBatch, 1, 4}));
  Graph bound = bind_batch(n.g, 6);
  EXPECT_EQ(bound.value(n.outputs[0]).type.shape, Shape({6, 5, 1, 4}));
}

TEST(RecurrentErrors, WeightDimsAgainstHiddenSizeAndDirections) {
  Net n = make(OpType::LSTM, {{"direction", std::string("bidirectional")}}, 1);
  std::string msg = error_of(n.g);
  EXPECT_NE(msg.find("node 'rnn1' (LSTM)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("W is [1,16,3], expected [2,16,3]"), std::string::npos) << msg;
  Net gru = make(OpType::GRU, {}, 1, 4);
  msg = error_of(gru.g);
  EXPECT_NE(msg.find("W is [1,16,3], expected [1,12,3]"), std::string::npos) << msg;
}

TEST(RecurrentErrors, RanksAndAttributes) {
  Net n = make(OpType::RNN, {}, 1, 1, Shape({5, 3}));
  EXPECT_NE(error_of(n.g).find("X must be 3-D, got [5,3]"), std::string::npos);
  Net d = make(OpType::RNN, {{"direction", std::string("sideways")}}, 1, 1);
  EXPECT_NE(error_of(d.g).find("direction='sideways' must be forward, reverse or bidirectional"),
            std::string::npos);
  Net l = make(OpType::RNN, {{"layout", int64_t{2}}}, 1, 1);
  EXPECT_NE(error_of(l.g).find("layout=2 must be 0 or 1"), std::string::npos);
  Net c = make(OpType::GRU, {{"clip", -1.0}}, 1, 3);
  EXPECT_NE(error_of(c.g).find("clip=-1 must be a positive threshold"), std::string::npos);
  Net a = make(OpType::LSTM, {{"activations", std::vector<std::string>{"Sigmoid", "Tanh"}}});
  EXPECT_NE(error_of(a.g).find("'activations' has 2 entries, expected 3"), std::string::npos);
  Net u = make(OpType::RNN, {{"activations", std::vector<std::string>{"Swish"}}}, 1, 1);
  EXPECT_NE(error_of(u.g).find("activation 'Swish' is not one of"), std::string::npos);
  Net ab = make(OpType::RNN, {{"activation_alpha", std::vector<double>{0.5}}}, 1, 1);
  EXPECT_NE(error_of(ab.g).find("activation_alpha has 1"), std::string::npos) << error_of(ab.g);
  Net f = make(OpType::LSTM, {{"input_forget", int64_t{3}}});
  EXPECT_NE(error_of(f.g).find("input_forget=3 must be 0 or 1"), std::string::npos);
}

TEST(RecurrentErrors, OptionalInputShapesAndSequenceLens) {
  Net n = make(OpType::LSTM, {});
  n.g.node(0).inputs.push_back(n.g.add_input("b", DType::f32, Shape({1, 16})));
  std::string msg = error_of(n.g);
  EXPECT_NE(msg.find("B is [1,16], expected [1,32]"), std::string::npos) << msg;

  Net s = make(OpType::GRU, {}, 1, 3);
  int32_t lens[] = {5, 6};
  s.g.node(0).inputs.push_back(kNoValue);
  s.g.node(0).inputs.push_back(s.g.add_constant("lens", HostTensor::from(Shape({2}), lens)));
  msg = error_of(s.g);
  EXPECT_NE(msg.find("sequence_lens[1]=6 is outside [0, seq_length=5]"), std::string::npos) << msg;

  Net h = make(OpType::RNN, {{"layout", int64_t{1}}}, 1, 1);
  h.g.node(0).inputs.insert(h.g.node(0).inputs.end(), {kNoValue, kNoValue});
  h.g.node(0).inputs.push_back(h.g.add_input("h0", DType::f32, Shape({1, 5, 4})));
  msg = error_of(h.g);
  EXPECT_NE(msg.find("initial_h is [1,5,4], expected [5,1,4]"), std::string::npos) << msg;

  Net p = make(OpType::GRU, {}, 1, 3);
  p.g.node(0).inputs.resize(8, kNoValue);
  p.g.node(0).inputs[7] = p.g.add_input("p", DType::f32, Shape({1, 12}));
  EXPECT_NE(error_of(p.g).find("takes 3 to 6 inputs, got 8"), std::string::npos);
}

}  // namespace
}  // namespace mimic::ir
