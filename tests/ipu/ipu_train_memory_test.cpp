// Training memory and time on ipu-emu: a train step's tile memory by category (saved
// activations, gradients, accumulators, optimizer state), the out-of-memory error that names
// the category, gradient accumulation and recomputation making the same batch fit, the update
// running once per step, the replicas' gradient all-reduce over IPU-Links, pipelined training,
// the options' one-line errors, and roles and phases crossing to the device worker.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>

#include "backends/ipu_emu/graph_wire.h"
#include "base/error.h"
#include "frontend/api/random.h"
#include "frontend/api/train.h"

namespace mimic {
namespace {

using ir::DType;
using ir::Shape;

constexpr double kTileBytes = 638976;
constexpr int64_t kC = 32, kHW = 32, kClasses = 10;

// conv 3x3 (3 -> C) then `layers` x (conv 3x3 C -> C, BatchNorm, ReLU), global pool, linear:
// activations grow with the batch, parameters do not.
std::shared_ptr<nn::Sequential> conv_net(int layers) {
  auto m = std::make_shared<nn::Sequential>();
  m->push_back(std::make_shared<nn::Conv2d>(3, kC, 3, 1, 1, 1, true, "NCHW", 1, nn::Init{1}));
  for (int i = 0; i < layers; ++i) {
    m->push_back(std::make_shared<nn::Conv2d>(kC, kC, 3, 1, 1, 1, false, "NCHW", 1,
                                              nn::Init{uint64_t(i + 2)}));
    m->push_back(std::make_shared<nn::BatchNorm2d>(kC));
    m->push_back(std::make_shared<nn::ReLU>());
  }
  m->push_back(std::make_shared<nn::GlobalAvgPool>());
  m->push_back(std::make_shared<nn::Flatten>());
  m->push_back(std::make_shared<nn::Linear>(kC, kClasses, true, nn::Init{99}));
  return m;
}

// Trainable parameters' elements (their gradients' f32 elements).
int64_t parameter_elements(int layers) {
  return 3 * kC * 9 + kC + layers * (kC * kC * 9 + 2 * kC) + kC * kClasses + kClasses;
}

TrainOptions train_options(std::map<std::string, std::string> opts, Recompute r = Recompute::none,
                           bool compile_only = true) {
  TrainOptions o;
  o.optimizer = {OptimizerKind::sgd, 0.05, 0.9};
  o.compile.options = std::move(opts);
  o.compile.compile_only = compile_only;
  o.compile.timing_only = !compile_only;
  o.recompute = r;
  return o;
}

TrainStep make_step(int64_t batch, const TrainOptions& o, int layers = 4) {
  auto net = conv_net(layers);
  return TrainStep(*net, ir::TensorType{DType::f32, Shape({batch, 3, kHW, kHW})},
                   Device("ipu-emu:gc200"), o);
}

const std::map<std::string, double>& metrics(const TrainStep& s) {
  return s.executable().compile_report().metrics;
}

// Sum of the memory.<category>_bytes keys: the fullest tile's bytes.
double category_sum(const std::map<std::string, double>& m) {
  double sum = 0;
  for (const auto& [k, v] : m)
    if (k.rfind("memory.", 0) == 0 && k != "memory.peak_bytes" && k != "memory.capacity_bytes")
      sum += v;
  return sum;
}

// "name 123" pairs of an out-of-memory message's breakdown.
std::map<std::string, int64_t> message_bytes(const std::string& m) {
  std::map<std::string, int64_t> out;
  std::regex part("([a-z_ ]+) ([0-9]+)");
  std::string tail = m.substr(m.find("):") == std::string::npos ? 0 : m.find("): "));
  for (auto it = std::sregex_iterator(tail.begin(), tail.end(), part); it != std::sregex_iterator();
       ++it) {
    std::string name = (*it)[1];
    name.erase(0, name.find_first_not_of(' '));
    out[name] = std::stoll((*it)[2]);
  }
  return out;
}

constexpr int64_t kBatch = 304;  // does not fit one GC200 without accumulation or recomputation

TEST(IpuTrainMemory, OutOfMemoryNamesSavedActivations) {
  try {
    make_step(kBatch, train_options({}));
    FAIL() << "batch " << kBatch << " should not fit";
  } catch (const OutOfMemoryError& e) {
    std::string m = e.what();
    EXPECT_EQ(m.find('\n'), std::string::npos) << "one line";
    EXPECT_NE(m.find("Out of memory on tile " + std::to_string(e.tile())), std::string::npos) << m;
    auto bytes = message_bytes(m);
    // The top-level categories add up to the bytes used; the tensors inside "activations" add
    // up to it, and saved activations (stashed for the backward pass) are the largest of them.
    int64_t top = bytes["activations"] + bytes["exchange buffers"] + bytes["partials"] +
                  bytes["weights"] + bytes["code"] + bytes["vertex state"];
    EXPECT_EQ(top, e.bytes_used()) << m;
    ASSERT_GT(bytes.count("saved_activations"), 0u) << m;
    int64_t inner = 0, largest = 0;
    for (const char* c : {"activation", "data", "gradient", "gradient_accumulator",
                          "optimizer_state", "buffer", "saved_activations"})
      if (bytes.count(c)) inner += bytes[c], largest = std::max(largest, bytes[c]);
    EXPECT_EQ(inner, bytes["activations"]) << m;
    EXPECT_EQ(largest, bytes["saved_activations"]) << m;
    EXPECT_GT(e.bytes_used(), kTileBytes);
  }
}

TEST(IpuTrainMemory, AccumulationAndRecomputationMakeTheSameBatchFit) {
  TrainStep plain = make_step(kBatch, train_options({{"allow_out_of_memory", "true"}}));
  const auto& p = metrics(plain);
  EXPECT_EQ(p.at("out_of_memory"), 1);
  EXPECT_EQ(p.at("memory.peak_bytes"), category_sum(p)) << "categories add up to the peak";
  EXPECT_EQ(p.at("memory.capacity_bytes"), kTileBytes);
  EXPECT_EQ(p.at("memory.gradient_accumulator_bytes"), 0);

  // Accumulating 4 micro-batches of 64: the same effective batch, a quarter of the activations.
  TrainStep acc = make_step(kBatch, train_options({{"gradient_accumulation", "4"}}));
  const auto& a = metrics(acc);
  EXPECT_EQ(a.at("out_of_memory"), 0);
  EXPECT_EQ(a.at("micro_batches"), 4);
  EXPECT_EQ(a.at("memory.peak_bytes"), category_sum(a));
  EXPECT_LE(a.at("memory.peak_bytes"), kTileBytes);
  // Accumulators are resident: summed over the tiles they are the f32 gradients of every
  // parameter, rounded up per tile.
  const auto& table = acc.executable().compile_report().tables.at("ipu_tile_memory");
  size_t col = std::find(table.columns.begin(), table.columns.end(), "gradient_accumulator") -
               table.columns.begin();
  ASSERT_LT(col, table.columns.size());
  double accumulators = 0;
  for (const auto& row : table.rows) accumulators += row[col];
  double g = 4.0 * parameter_elements(4);
  EXPECT_GE(accumulators, g);
  EXPECT_LE(accumulators, g + 1472.0 * 14) << "at most a byte short per tile of each of the 14 "
                                              "parameter tensors";
  // Arithmetic: a stashed tensor of the micro-batch is a quarter of the batch's, so the saved
  // activations at the peak are at most a quarter of the plain step's plus a few bytes of
  // rounding per tensor (even shares are rounded up per tile).
  EXPECT_LE(a.at("memory.saved_activations_bytes"),
            p.at("memory.saved_activations_bytes") / 4 + 4096);
  // Parameters and optimizer state do not shrink with the micro-batch.
  EXPECT_GT(a.at("memory.weight_bytes"), 0);
  // The planner's phase estimates: the backward pass costs more than the forward pass (two
  // products per layer), the update runs once, nothing is all-reduced on one replica.
  EXPECT_GT(a.at("phase.backward_cycles"), a.at("phase.forward_cycles"));
  EXPECT_GT(a.at("phase.update_cycles"), 0);
  EXPECT_EQ(a.at("phase.allreduce_cycles"), 0);

  // Recomputation (the coordinator's graph rewrite) at the full batch: fewer stashed tensors.
  TrainStep rec = make_step(kBatch, train_options({}, Recompute::checkpoints));
  const auto& r = metrics(rec);
  EXPECT_EQ(r.at("out_of_memory"), 0);
  EXPECT_LE(r.at("memory.peak_bytes"), kTileBytes);
  EXPECT_LT(r.at("memory.saved_activations_bytes"), p.at("memory.saved_activations_bytes"));
}

TEST(IpuTrainMemory, AccumulationUpdatesOnceAndReplicasAllReduceTheGradients) {
  constexpr int kLayers = 2;
  auto run = [&](std::map<std::string, std::string> opts) {
    TrainStep s = make_step(16, train_options(std::move(opts), Recompute::none, false), kLayers);
    ir::HostTensor x(DType::f32, Shape({16, 3, kHW, kHW})), y(DType::i64, Shape({16}));
    s.step(x, y);
    return s.last_report();
  };
  backends::RunReport one = run({}), four = run({{"gradient_accumulation", "4"}}),
                      replicas = run({{"gradient_accumulation", "4"}, {"replication_factor", "2"}});
  for (const auto* r : {&one, &four, &replicas})
    for (const char* k : {"phase.forward_cycles", "phase.loss_cycles", "phase.backward_cycles",
                          "phase.update_cycles"})
      EXPECT_GT(r->metrics.at(k), 0) << k;
  // The optimizer runs once per step whatever the accumulation; the update's shapes are the
  // parameters', so its cycles are the same.
  EXPECT_EQ(four.metrics.at("phase.update_cycles"), one.metrics.at("phase.update_cycles"));
  EXPECT_EQ(one.metrics.at("phase.allreduce_cycles"), 0);
  EXPECT_GT(replicas.metrics.at("phase.allreduce_cycles"), 0);
  // Ring all-reduce: each of R replicas sends 2 (R - 1) chunks of G / R bytes, G the f32
  // gradients of every parameter; nothing else crosses the IPU-Links.
  double g = 4.0 * parameter_elements(kLayers);
  EXPECT_EQ(replicas.bytes_moved.at("ipu_link"), int64_t(2 * 2 * std::ceil(g / 2)));
  // Parameters and optimizer state stay on the IPU: the host link carries the data only.
  double images = 16.0 * 3 * kHW * kHW * 4;
  EXPECT_GE(one.bytes_moved.at("host"), images);
  EXPECT_LT(one.bytes_moved.at("host"), images + 256) << "labels and scalars only, no parameter";
  // Four micro-batches of a quarter of the data; the step's scalars (lr, step, loss) four times.
  EXPECT_NEAR(four.bytes_moved.at("host"), one.bytes_moved.at("host"), 3 * 3 * 8);
}

// Busy cycles of the links in a training step of `replicas` replicas, with preset overrides.
uint64_t link_busy_cycles(const char* replicas, std::map<std::string, std::string> overrides) {
  TrainOptions o = train_options({{"replication_factor", replicas}}, Recompute::none, false);
  o.compile.overrides = std::move(overrides);
  TrainStep s = make_step(16, o, 2);
  s.step(ir::HostTensor(DType::f32, Shape({16, 3, kHW, kHW})),
         ir::HostTensor(DType::i64, Shape({16})));
  for (const auto& u : s.last_report().units)
    if (u.name == "ipu-links") return u.busy_cycles;
  return 0;
}

TEST(IpuTrainMemory, AllReduceCrossesTheGwLinksBetweenRacksOnly) {
  const std::map<std::string, std::string> fast_gw = {{"gw_link_bytes_per_second", "64000000000"}};
  // 8 replicas: two IPU-Machines of one rack (a Pod64's 64 IPUs), joined by IPU-Links only.
  EXPECT_GT(link_busy_cycles("8", {}), 0u);
  EXPECT_EQ(link_busy_cycles("8", {}), link_busy_cycles("8", fast_gw));
  // Racks of 4 IPUs: the ring crosses a GW-Link twice (into the second rack and back).
  auto racks_of_4 = [](std::map<std::string, std::string> o) {
    o["ipus_per_rack"] = "4";
    return o;
  };
  EXPECT_GT(link_busy_cycles("8", racks_of_4({})), link_busy_cycles("8", racks_of_4(fast_gw)));
}

TEST(IpuTrainMemory, AllReduceRingSendsEveryChunkOneHop) {
  // Each of a ring all-reduce's 2 (R - 1) steps sends R chunks, each to the next replica. On a ring
  // every chunk crosses one link; on a chain the last replica's chunk to the first crosses all
  // R - 1 links back: (2R - 2) / R times the link work, 14/8 for R = 8.
  uint64_t ring = link_busy_cycles("8", {});
  uint64_t chain = link_busy_cycles("8", {{"ipu_link_ring", "false"}});
  EXPECT_EQ(chain * 8, ring * 14);
}

TEST(IpuTrainMemory, OffloadedOptimizerStateLeavesTheTilesAndCostsTheLink) {
  TrainOptions o = train_options({}, Recompute::none, true);
  o.optimizer = {OptimizerKind::adam, 1e-3};
  TrainStep on = make_step(8, o);
  o.compile.options["offload_optimizer_state"] = "true";
  TrainStep off = make_step(8, o);
  EXPECT_LE(metrics(off).at("memory.peak_bytes"), metrics(on).at("memory.peak_bytes"));
  // The state is on tiles only while the update runs, never at a forward/backward peak.
  if (metrics(off).at("memory.optimizer_state_bytes") > 0) {
    EXPECT_GE(metrics(on).at("memory.optimizer_state_bytes"),
              metrics(off).at("memory.optimizer_state_bytes"));
  }
}

TEST(IpuTrainMemory, PipelinedTrainingRunsForwardAndBackwardOnEveryIpu) {
  TrainStep s = make_step(
      16,
      train_options({{"num_ipus", "2"}, {"gradient_accumulation", "4"}}, Recompute::none, false),
      2);
  const auto& m = metrics(s);
  EXPECT_EQ(m.at("stages"), 2);
  // Both IPUs hold layers, so both stash activations for the backward pass.
  const auto& table = s.executable().compile_report().tables.at("ipu_tile_memory");
  size_t saved_col = 0;
  for (size_t i = 0; i < table.columns.size(); ++i)
    if (table.columns[i] == "saved_activations") saved_col = i;
  ASSERT_GT(saved_col, 0u);
  double saved[2] = {0, 0};
  for (const auto& row : table.rows)
    saved[int(row[0])] = std::max(saved[int(row[0])], row[saved_col]);
  EXPECT_GT(saved[0], 0);
  EXPECT_GT(saved[1], 0);
  ir::HostTensor x(DType::f32, Shape({16, 3, kHW, kHW})), y(DType::i64, Shape({16}));
  s.step(x, y);
  const auto& r = s.last_report();
  EXPECT_GT(r.metrics.at("phase.backward_cycles"), 0);
  EXPECT_GT(r.metrics.at("phase.pipeline_exchange_cycles"), 0);
  EXPECT_GT(r.bytes_moved.at("ipu_link"), 0);
  // The bubble: IPU 1 starts computing after IPU 0's first forward pass (fill) and IPU 0 computes
  // after IPU 1's last backward pass (drain: its own backward of the last micro-batch).
  const auto& steps =
      r.tables.at("ipu_supersteps");  // ipu, step, op, start, sync, exchange, compute
  double first[2] = {-1, -1}, last[2] = {0, 0};
  for (const auto& row : steps.rows) {
    int ipu = int(row[0]);
    if (ipu > 1 || row[2] < 0 || row[6] == 0) continue;
    double start = row[3] + row[4] + row[5];
    if (first[ipu] < 0) first[ipu] = start;
    last[ipu] = std::max(last[ipu], start + row[6]);
  }
  EXPECT_GT(first[1], first[0]);
  EXPECT_GT(last[0], last[1]);
}

TEST(IpuTrainMemory, PipelinedTrainingFollowsCpu) {
  auto losses = [](const std::string& device, std::map<std::string, std::string> opts) {
    auto net = conv_net(2);
    TrainOptions o = train_options(std::move(opts), Recompute::none, true);
    o.compile.compile_only = false, o.compile.timing_only = false;
    TrainStep s(*net, ir::TensorType{DType::f32, Shape({8, 3, 8, 8})}, Device(device), o);
    ir::HostTensor x = Random(5).tensor(DType::f32, Shape({8, 3, 8, 8}));
    ir::HostTensor y = Random(6).tensor(DType::i64, Shape({8}), kClasses);
    std::vector<float> out;
    for (int i = 0; i < 3; ++i) out.push_back(s.step(x, y));
    return out;
  };
  std::vector<float> cpu = losses("cpu", {});
  for (const char* schedule : {"grouped", "interleaved", "sequential"}) {
    std::vector<float> ipu = losses(
        "ipu-emu:gc200",
        {{"num_ipus", "2"}, {"gradient_accumulation", "4"}, {"pipeline_schedule", schedule}});
    for (size_t i = 0; i < cpu.size(); ++i)
      EXPECT_NEAR(ipu[i], cpu[i], 1e-4 * std::fabs(cpu[i])) << schedule;
  }
}

TEST(IpuTrainMemory, BadOptionsAreOneLineErrorsWithTheNumbers) {
  auto error = [](std::map<std::string, std::string> opts, int64_t batch = 8) -> std::string {
    try {
      make_step(batch, train_options(std::move(opts)), 1);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error({{"gradient_accumulation", "0"}}),
            "ipu-emu: option gradient_accumulation=0 must be an integer from 1 to 1048576");
  EXPECT_EQ(error({{"replication_factor", "512"}}),
            "ipu-emu: num_ipus=512 (512 replica(s) x 1 stage(s)) exceeds the 256 IPUs of preset "
            "gc200 (max_ipus)");
  EXPECT_EQ(error({{"gradient_accumulation", "3"}}),
            "ipu-emu: gradient_accumulation=3 must divide the batch per replica (8 = 8 / 1)");
  EXPECT_EQ(error({{"gradient_accumulation", "4"}, {"micro_batches", "2"}}),
            "ipu-emu: gradient_accumulation=4 and micro_batches=2 disagree (a training step's "
            "micro-batches are its accumulation steps)");
  // Accumulation needs a backward pass.
  auto net = conv_net(1);
  ir::Graph g = nn::trace_module(*net, "x", DType::f32, Shape({8, 3, kHW, kHW}), "net");
  CompileOptions o;
  o.options = {{"gradient_accumulation", "2"}};
  o.compile_only = true;
  try {
    compile(g, Device("ipu-emu:gc200"), o);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()),
              "ipu-emu: gradient_accumulation=2 needs a training step (graph 'net' has no "
              "backward ops); micro_batches splits an inference batch");
  }
}

TEST(IpuTrainMemory, RolesAndPhasesCrossToTheDeviceWorker) {
  auto net = conv_net(1);
  TrainOptions o = train_options({}, Recompute::checkpoints);
  TrainStep s(*net, ir::TensorType{DType::f32, Shape({4, 3, 8, 8})}, Device("cpu"), o);
  const ir::Graph& g = s.train_graph().graph;
  backends::wire::Writer w;
  backends::ipu_emu::write_graph(w, g, false);
  backends::wire::Reader r(w.data());
  ir::Graph back = backends::ipu_emu::read_graph(r);
  ASSERT_EQ(back.num_values(), g.num_values());
  ASSERT_EQ(back.num_nodes(), g.num_nodes());
  std::map<ir::StepPhase, int> phases;
  for (int v = 0; v < g.num_values(); ++v) EXPECT_EQ(back.value(v).role, g.value(v).role) << v;
  for (int n = 0; n < g.num_nodes(); ++n) {
    EXPECT_EQ(back.node(n).phase, g.node(n).phase) << g.node(n).name;
    ++phases[g.node(n).phase];
  }
  EXPECT_GT(phases[ir::StepPhase::backward], 0);
  EXPECT_GT(phases[ir::StepPhase::update], 0);
}

}  // namespace
}  // namespace mimic
