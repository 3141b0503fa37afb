// Recomputation (frontend/api/recompute.h) and the step annotations it relies on: roles and
// phases set by build_train_graph, the same losses with every mode, fewer bytes live at the peak
// with each stronger mode (measured by ir::profile_memory on the step's own node order), and
// the extra nodes it costs.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>

#include "base/error.h"
#include "frontend/api/random.h"
#include "frontend/api/train.h"
#include "frontend/ir/liveness.h"
#include "train_test_util.h"

namespace mimic {
namespace {

using ir::DType;
using ir::Shape;

// A deep CNN (8 conv blocks) whose activations dominate its memory, as in real training.
std::shared_ptr<nn::Sequential> deep_cnn() {
  auto m = std::make_shared<nn::Sequential>();
  for (int i = 0; i < 8; ++i) {
    m->push_back(std::make_shared<nn::Conv2d>(i == 0 ? 3 : 8, 8, 3, 1, 1, 1, true, "NCHW", 1,
                                              nn::Init{uint64_t(10 + i)}));
    m->push_back(std::make_shared<nn::BatchNorm2d>(8));
    m->push_back(std::make_shared<nn::ReLU>());
  }
  m->push_back(std::make_shared<nn::Flatten>());
  m->push_back(std::make_shared<nn::Linear>(8 * 16 * 16, 10, true, nn::Init{3}));
  return m;
}

const ir::TensorType kInput{DType::f32, Shape({8, 3, 16, 16})};

TrainOptions options(Recompute mode) {
  TrainOptions o;
  o.optimizer = {OptimizerKind::sgd, 0.05, 0.9};
  o.recompute = mode;
  return o;
}

TEST(TrainAnnotations, RolesAndPhasesOfTheStep) {
  auto model = train_test::small_cnn();
  TrainStep step(*model, {DType::f32, Shape({4, 3, 8, 8})}, Device("cpu"),
                 options(Recompute::none));
  const TrainGraph& t = step.train_graph();
  const ir::Graph& g = t.graph;
  std::map<ir::ValueRole, int> inputs;
  for (ir::ValueId v : g.inputs()) ++inputs[g.value(v).role];
  EXPECT_EQ(inputs[ir::ValueRole::weight], int(t.params.size()));
  EXPECT_EQ(inputs[ir::ValueRole::buffer], int(t.buffers.size()));
  EXPECT_EQ(inputs[ir::ValueRole::optimizer_state], int(t.state.size()));  // momentum
  EXPECT_EQ(inputs[ir::ValueRole::data], 4);                               // x, target, lr, step
  int gradients = 0;
  for (ir::ValueId v = 0; v < g.num_values(); ++v)
    gradients += g.value(v).role == ir::ValueRole::gradient;
  EXPECT_EQ(gradients, int(t.params.size()));
  // Phases are contiguous and in order: forward, loss, backward, update.
  std::vector<ir::StepPhase> seen;
  for (const ir::Node& n : g.nodes())
    if (seen.empty() || seen.back() != n.phase) seen.push_back(n.phase);
  EXPECT_EQ(seen, (std::vector<ir::StepPhase>{ir::StepPhase::forward, ir::StepPhase::loss,
                                              ir::StepPhase::backward, ir::StepPhase::update}));
}

TEST(Recompute, SameLossesFewerLiveBytesMoreNodes) {
  auto model = deep_cnn();
  ir::HostTensor x = Random(5).tensor(DType::f32, kInput.shape);
  ir::HostTensor y = Random(6).tensor(DType::i64, Shape({8}), 10);
  std::vector<float> losses[3];
  int64_t peak[3], saved[3], nodes[3];
  for (int m = 0; m < 3; ++m) {
    TrainStep step(*model, kInput, Device("cpu"), options(static_cast<Recompute>(m)));
    for (int s = 0; s < 3; ++s) losses[m].push_back(step.step(x, y));
    const ir::Graph& g = step.train_graph().graph;
    ir::MemoryProfile p = ir::profile_memory(g);
    peak[m] = p.peak_bytes;
    saved[m] = p.bytes_by_category["saved_activations"];
    nodes[m] = g.num_nodes();
    int recomputed = 0;
    for (const ir::Node& n : g.nodes())
      recomputed += n.name.rfind("recompute/", 0) == 0 && n.phase == ir::StepPhase::backward;
    EXPECT_EQ(nodes[m] - nodes[0], recomputed) << recompute_name(static_cast<Recompute>(m));
  }
  std::printf(
      "peak bytes none %lld checkpoints %lld full %lld; saved activations %lld %lld %lld; "
      "nodes %lld %lld %lld\n",
      (long long)peak[0], (long long)peak[1], (long long)peak[2], (long long)saved[0],
      (long long)saved[1], (long long)saved[2], (long long)nodes[0], (long long)nodes[1],
      (long long)nodes[2]);
  for (int m = 1; m < 3; ++m)
    for (int s = 0; s < 3; ++s) EXPECT_FLOAT_EQ(losses[m][s], losses[0][s]) << m << " step " << s;
  EXPECT_GT(nodes[1], nodes[0]);
  EXPECT_GT(nodes[2], nodes[0]);
  // Each activation is 8x8x16x16 f32 = 64 KiB; none keeps 3 per block (conv, BN, ReLU outputs)
  // for the backward pass, checkpoints keeps the conv outputs, full about sqrt(n) of them.
  EXPECT_LT(peak[1], peak[0]);
  EXPECT_LT(peak[2], peak[1]);
  EXPECT_LT(saved[1], saved[0]);
  EXPECT_LT(saved[2], saved[1]);
}

// Named checkpoints (PopTorch's recomputationCheckpoint, IPU TensorFlow's pipeline splits on one
// IPU): their outputs are kept whole and every segment between them is recomputed from them; the
// losses are unchanged, and a name that is no forward node, or checkpoints with another mode, is a
// one-line error.
TEST(Recompute, NamedCheckpointsAreKeptAndTheSegmentsBetweenThemRecomputed) {
  auto model = deep_cnn();
  ir::HostTensor x = Random(5).tensor(DType::f32, kInput.shape);
  ir::HostTensor y = Random(6).tensor(DType::i64, Shape({8}), 10);
  TrainStep plain(*model, kInput, Device("cpu"), options(Recompute::none));
  std::vector<std::string> relus;
  for (const ir::Node& n : plain.train_graph().graph.nodes())
    if (n.phase == ir::StepPhase::forward && n.op == ir::OpType::Relu) relus.push_back(n.name);
  ASSERT_EQ(relus.size(), 8u);
  TrainOptions o = options(Recompute::full);
  o.recompute_checkpoints = {relus[2], relus[5]};
  TrainStep named(*model, kInput, Device("cpu"), o);
  std::set<std::string> recomputed;
  for (const ir::Node& n : named.train_graph().graph.nodes())
    if (n.name.rfind("recompute/", 0) == 0) recomputed.insert(n.name.substr(10));
  for (int b = 0; b < 8; ++b)  // blocks 0-2 from the input, 3-5 from block 2's, 6-7 from block 5's
    EXPECT_EQ(recomputed.count(relus[b]), b == 2 || b == 5 ? 0u : 1u) << relus[b];
  for (int s = 0; s < 3; ++s) EXPECT_FLOAT_EQ(named.step(x, y), plain.step(x, y)) << "step " << s;
  auto error = [&](Recompute mode, std::vector<std::string> names) {
    TrainOptions bad = options(mode);
    bad.recompute_checkpoints = std::move(names);
    try {
      TrainStep step(*model, kInput, Device("cpu"), bad);
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string unknown = error(Recompute::full, {relus[0], "no.such.node"});
  EXPECT_EQ(
      unknown.rfind("recompute checkpoint 'no.such.node' is not a node of the forward pass (", 0),
      0u)
      << unknown;
  EXPECT_EQ(error(Recompute::checkpoints, {relus[0]}),
            "recompute checkpoints (1 named) need recompute 'full', not 'checkpoints'");
}

TEST(Recompute, NamesAreParsedAndBadOnesRefused) {
  EXPECT_EQ(parse_recompute("full"), Recompute::full);
  EXPECT_EQ(parse_recompute("checkpoints"), Recompute::checkpoints);
  try {
    parse_recompute("sometimes");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'sometimes'"), std::string::npos) << e.what();
  }
}

TEST(Liveness, PeakOfAChainIsTwoValuesAndInputs) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", DType::f32, Shape({256}));  // 1 KiB each
  ir::ValueId a = g.add_node(ir::OpType::Relu, "a", {x}).at(0);
  ir::ValueId b = g.add_node(ir::OpType::Neg, "b", {a}).at(0);
  ir::ValueId c = g.add_node(ir::OpType::Abs, "c", {b}).at(0);
  g.add_output(c);
  for (ir::ValueId v : {a, b, c}) g.value(v).type = g.value(x).type, g.value(v).typed = true;
  ir::MemoryProfile p = ir::profile_memory(g);
  // Step 0: x and a live (x's last reader); step 1: a, b; step 2: b, c.
  EXPECT_EQ(p.peak_bytes, 2048);
  EXPECT_EQ(p.peak_step, 0);
  EXPECT_EQ(p.bytes_by_category["inputs"], 1024);
  EXPECT_EQ(p.bytes_by_category["activations"], 1024);
}

}  // namespace
}  // namespace mimic
