// The cuda backend on a real GPU: every op case and the zoo models against the cpu backend under
// both precision modes, the run report, the trace (GPU stream and host launch tracks linked by a
// correlation id), runtime errors, the memory pool. Each test calls GTEST_SKIP() with the CUDA
// runtime's reason when no GPU can be used, so the suite is green (skipped) on machines without
// one.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <iostream>
#include <map>

#include "base/error.h"
#include "frontend/api/compile.h"
#include "frontend/api/random.h"
#include "frontend/api/run_observer.h"
#include "frontend/api/train.h"
#include "frontend/api/zoo.h"
#include "tests/conformance/op_cases.h"
#include "tests/conformance/op_cases_util.h"
#include "tests/unit/train_test_util.h"

namespace mimic::testing {
namespace {

std::string gpu_unavailable() {
  backends::DeviceInfo d = Device("cuda:0").info();
  return d.available ? "" : d.reason;
}

#define REQUIRE_GPU()                                           \
  do {                                                          \
    std::string why = gpu_unavailable();                        \
    if (!why.empty()) GTEST_SKIP() << "no usable GPU: " << why; \
  } while (0)

// The cases the cuda backend runs entirely on the GPU (op_conformance_test checks the others'
// expected fallbacks).
const std::vector<OpCase>& cases() {
  static const std::vector<OpCase> on_gpu = [] {
    std::vector<OpCase> out;
    for (OpCase& c : op_cases())
      if (runs_entirely_on("cuda", c)) out.push_back(std::move(c));
    return out;
  }();
  return on_gpu;
}

CompileOptions gpu_options(const std::string& precision,
                           const std::map<std::string, std::string>& options = {}) {
  CompileOptions o;
  o.precision = precision;
  o.strict = true;  // a node that would fall back to cpu is a failure here
  o.options = options;
  return o;
}

class GpuOp : public ::testing::TestWithParam<size_t> {};

TEST_P(GpuOp, MatchesCpu) {
  REQUIRE_GPU();
  const OpCase& c = cases()[GetParam()];
  std::vector<ir::HostTensor> want = compile(c.graph, Device("cpu")).run(c.inputs).outputs;
  for (const char* precision : {"highest", "default"}) {
    SCOPED_TRACE(std::string(c.name) + " precision=" + precision);
    Executable exe = compile(c.graph, Device("cuda:0"), gpu_options(precision, c.options));
    RunOutput out = exe.run(c.inputs);
    ASSERT_EQ(out.outputs.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      Tolerance tol = tolerance_for(c, want[i].dtype(), std::string(precision) == "default");
      EXPECT_EQ(compare_tensors(out.outputs[i], want[i], tol), "") << "output " << i;
      std::cout << "observed: " << c.name << " " << precision << " output " << i << ": "
                << error_summary(out.outputs[i], want[i], tol) << "\n";
    }
    EXPECT_EQ(out.report.fallback_count(), 0);
  }
}

std::string case_name(const ::testing::TestParamInfo<size_t>& info) {
  std::string s = cases()[info.param].name;
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(AllCases, GpuOp, ::testing::Range<size_t>(0, cases().size()), case_name);

// Reductions, softmax and layer norm at the sizes real models reach (long rows, a million elements,
// odd lengths, reductions over the leading axis): block counts, grid-stride loops and multi-block
// reductions that the small op cases never exercise. Tolerance relative to max|want|, since the
// GPU's tree sums and the cpu's sequential ones round differently over a million terms. Cases are
// built in the test body: their inputs are large, and every test process registers all of them.
struct LargeCase {
  std::string name;
  std::function<OpCase()> make;
};

std::vector<LargeCase> large_cases() {
  using ir::DType;
  using ir::OpType;
  using ir::Shape;
  std::vector<LargeCase> out;
  struct R {
    const char* name;
    Shape x;
    std::vector<int64_t> axes;
  };
  for (OpType op : {OpType::ReduceSum, OpType::ReduceMean, OpType::ReduceMax, OpType::ReduceL2,
                    OpType::ReduceLogSumExp})
    for (const R& r :
         {R{"row_of_1M", Shape({2, 1 << 20}), {-1}}, R{"odd_1000003", Shape({1000003}), {0}},
          R{"leading_axis", Shape({4096, 3, 257}), {0}},
          R{"global_pool", Shape({32, 3136, 64}), {1}}}) {
      std::string name = std::string(ir::op_name(op)) + "/" + r.name;
      out.push_back({name, [=] {
                       CaseBuilder b(name);
                       b.op(op, {b.in(DType::f32, r.x), b.ints(r.axes)});
                       return b.done();
                     }});
    }
  for (OpType op : {OpType::Softmax, OpType::LogSoftmax}) {
    std::string name = std::string(ir::op_name(op)) + "/vocab_50257";
    out.push_back(
        {name, [=] {
           CaseBuilder b(name);
           b.op(op, {b.in(DType::f32, Shape({8, 50257}), -8, 8)}, {{"axis", int64_t{-1}}});
           return b.done();
         }});
  }
  out.push_back({"LayerNormalization/hidden_8192", [] {
                   CaseBuilder b("LayerNormalization/hidden_8192");
                   b.op(OpType::LayerNormalization,
                        {b.in(DType::f32, Shape({512, 8192})),
                         b.random_constant(DType::f32, Shape({8192}), 0.5, 1.5),
                         b.random_constant(DType::f32, Shape({8192}))});
                   return b.done();
                 }});
  return out;
}

class GpuLarge : public ::testing::TestWithParam<LargeCase> {};

TEST_P(GpuLarge, MatchesCpu) {
  REQUIRE_GPU();
  OpCase c = GetParam().make();
  std::vector<ir::HostTensor> want = compile(c.graph, Device("cpu")).run(c.inputs).outputs;
  RunOutput out = compile(c.graph, Device("cuda:0"), gpu_options("highest")).run(c.inputs);
  Tolerance tol{1e-5, 1e-4};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(compare_tensors(out.outputs[i], want[i], tol), "") << c.name << " output " << i;
    std::cout << "observed: " << c.name << " output " << i << ": "
              << error_summary(out.outputs[i], want[i], tol) << "\n";
  }
}

void PrintTo(const LargeCase& c, std::ostream* os) {
  *os << c.name;
}

std::string large_name(const ::testing::TestParamInfo<LargeCase>& info) {
  std::string s = info.param.name;
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(RealSizes, GpuLarge, ::testing::ValuesIn(large_cases()), large_name);

struct ZooCase {
  std::string model, layout;
  std::map<std::string, int64_t> params;
  int64_t batch;
};

void PrintTo(const ZooCase& z, std::ostream* os) {
  *os << z.model << " " << z.layout << " batch " << z.batch;
}

class GpuZoo : public ::testing::TestWithParam<ZooCase> {};

// Whole networks: fp32 GEMMs within 1e-5 of the largest output, TF32 within 6e-3 (on an H200:
// at most 9.7e-7 and 1.4e-3, BERT both times).
TEST_P(GpuZoo, MatchesCpu) {
  REQUIRE_GPU();
  const ZooCase& z = GetParam();
  zoo::ModelOptions o{z.layout, 5, z.params};
  zoo::Model m = zoo::make(z.model, o);
  ir::Graph g = zoo::build(z.model, o);
  CompileOptions co;
  co.batch = z.batch;
  Executable cpu = compile(g, Device("cpu"), co);
  std::vector<ir::HostTensor> inputs =
      random_inputs(cpu.graph(), 11, m.int_input_high > 0 ? m.int_input_high : 100);
  std::vector<ir::HostTensor> want = cpu.run(inputs).outputs;
  for (const char* precision : {"highest", "default"}) {
    CompileOptions go = gpu_options(precision);
    go.batch = z.batch;
    RunOutput out = compile(g, Device("cuda:0"), go).run(inputs);
    double tol = std::string(precision) == "highest" ? 1e-5 : 6e-3;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(compare_tensors(out.outputs[i], want[i], {tol, tol}), "")
          << precision << " output " << i;
      std::cout << "observed: " << z.model << " " << z.layout << " " << precision << " output " << i
                << ": " << error_summary(out.outputs[i], want[i], {tol, tol}) << "\n";
    }
    EXPECT_EQ(out.report.precision, std::string(precision) == "highest" ? "fp32" : "tf32");
  }
}

std::vector<ZooCase> zoo_cases() {
  std::map<std::string, int64_t> small{{"image_size", 64}, {"classes", 10}};
  return {{"mlp", "nchw", {{"layers", 3}, {"hidden", 256}, {"in_features", 784}}, 16},
          {"resnet18", "nchw", small, 4},
          {"resnet18", "nhwc", small, 4},
          {"resnet50", "nchw", small, 4},
          {"resnet50", "nhwc", small, 2},
          {"mobilenet_v2", "nchw", small, 4},
          {"mobilenet_v2", "nhwc", small, 4},
          {"bert",
           "nchw",
           {{"layers", 2}, {"hidden", 128}, {"heads", 4}, {"seq", 64}, {"vocab", 1000}},
           4}};
}

std::string zoo_name(const ::testing::TestParamInfo<ZooCase>& info) {
  return info.param.model + "_" + info.param.layout;
}

INSTANTIATE_TEST_SUITE_P(Models, GpuZoo, ::testing::ValuesIn(zoo_cases()), zoo_name);

// ---- reports and traces ----

class RecordingSink final : public sim::EventSink {
 public:
  struct Event {
    sim::TrackId track;
    sim::OpId op;
    std::string name;
    uint64_t ts, dur;
  };
  sim::DeviceId add_device(const sim::DeviceDesc& d) override {
    devices.push_back(d);
    return static_cast<sim::DeviceId>(devices.size() - 1);
  }
  sim::TrackId add_track(sim::DeviceId, const std::string& name, const std::string& kind) override {
    tracks.push_back({name, kind});
    return static_cast<sim::TrackId>(tracks.size() - 1);
  }
  sim::OpId add_op(const sim::OpDesc& op) override {
    ops.push_back(op);
    return static_cast<sim::OpId>(ops.size() - 1);
  }
  void event(sim::TrackId track, sim::OpId op, std::string_view name, uint64_t ts,
             uint64_t dur) override {
    events.push_back({track, op, std::string(name), ts, dur});
  }
  void counter(sim::TrackId, uint64_t, double) override {}
  std::vector<sim::DeviceDesc> devices;
  std::vector<std::pair<std::string, std::string>> tracks;
  std::vector<sim::OpDesc> ops;
  std::vector<Event> events;
};

class RecordingObserver final : public RunObserver {
 public:
  sim::EventSink& begin_run(const RunInfo&) override { return sink; }
  void end_run(bool ok, const std::string&) override { this->ok = ok; }
  RecordingSink sink;
  bool ok = false;
};

ir::Graph mlp_graph(ir::DType t) {
  ir::Graph g("mlp");
  ir::ValueId x = g.add_input("x", t, ir::Shape({32, 256}));
  ir::ValueId w = g.add_input("w", t, ir::Shape({256, 512}));
  ir::ValueId h = g.add_node(ir::OpType::MatMul, "fc", {x, w})[0];
  ir::ValueId r = g.add_node(ir::OpType::Relu, "relu", {h})[0];
  g.add_output(g.add_node(ir::OpType::Softmax, "softmax", {r})[0]);
  return g;
}

std::vector<ir::HostTensor> inputs_for(const ir::Graph& g) {
  return random_inputs(prepare_graph(g, 0), 3);
}

TEST(GpuReport, PrecisionPerOpTimesAndTotals) {
  REQUIRE_GPU();
  ir::Graph g = mlp_graph(ir::DType::f32);
  std::vector<ir::HostTensor> in = inputs_for(g);
  RunOutput def = compile(g, Device("cuda:0"), gpu_options("default")).run(in);
  EXPECT_EQ(def.report.precision, "tf32");
  EXPECT_EQ(def.report.device, "cuda:0");
  EXPECT_EQ(def.report.backend, "cuda");
  ASSERT_EQ(def.report.ops.size(), 3u);
  double sum = 0;
  for (const auto& op : def.report.ops) {
    EXPECT_GT(op.device_seconds, 0) << op.node;
    EXPECT_GT(op.wall_ns, 0) << op.node;
    EXPECT_EQ(op.backend, "cuda");
    sum += op.device_seconds;
  }
  EXPECT_GT(def.report.device_seconds, 0);
  EXPECT_LE(sum, def.report.device_seconds * 1.05);
  EXPECT_GT(def.report.wall_seconds, def.report.device_seconds * 0.5);
  EXPECT_GT(def.report.peak_flops_per_s, 0);
  EXPECT_GT(def.report.metrics.at("gpu_total_seconds"), 0);
  EXPECT_EQ(def.report.bytes_moved.at("host_to_device"), (32 * 256 + 256 * 512) * 4);
  EXPECT_EQ(compile(g, Device("cuda:0"), gpu_options("highest")).run(in).report.precision, "fp32");
  ir::Graph g16 = mlp_graph(ir::DType::bf16);
  EXPECT_EQ(
      compile(g16, Device("cuda:0"), gpu_options("default")).run(inputs_for(g16)).report.precision,
      "bf16");
}

TEST(GpuTrace, GpuAndHostTracksLinkedByCorrelationId) {
  REQUIRE_GPU();
  ir::Graph g = mlp_graph(ir::DType::f32);
  RecordingObserver obs;
  Executable exe = compile(g, Device("cuda:0"), gpu_options("default"));
  std::vector<ir::HostTensor> in = inputs_for(g);
  push_run_observer(&obs);
  exe.run(in);
  pop_run_observer(&obs);
  RecordingSink& s = obs.sink;
  ASSERT_TRUE(obs.ok);
  ASSERT_EQ(s.devices.size(), 1u);
  EXPECT_EQ(s.devices[0].backend, "cuda");
  EXPECT_EQ(s.devices[0].unit, sim::TimeUnit::ns);
  EXPECT_NE(s.devices[0].properties_json.find("compute_capability"), std::string::npos);
  ASSERT_EQ(s.tracks.size(), 2u);
  EXPECT_EQ(s.tracks[0], std::make_pair(std::string("stream 0"), std::string("compute")));
  EXPECT_EQ(s.tracks[1], std::make_pair(std::string("host launch"), std::string("host")));
  ASSERT_EQ(s.ops.size(), 3u);
  std::map<sim::OpId, std::vector<RecordingSink::Event>> by_op;
  uint64_t last_end = 0;
  for (const auto& e : s.events) {
    if (e.op != sim::kNoOp) by_op[e.op].push_back(e);
    if (e.track == 0) {
      EXPECT_GE(e.ts, last_end) << "slices on the stream track never overlap";
      last_end = e.ts + e.dur;
    }
  }
  for (const auto& [op, events] : by_op) {
    ASSERT_EQ(events.size(), 2u) << s.ops[op].node;
    EXPECT_NE(events[0].track, events[1].track);
    EXPECT_EQ(events[0].name, events[1].name);
    EXPECT_NE(events[0].name.find("[corr "), std::string::npos) << events[0].name;
    EXPECT_EQ(s.ops[op].backend, "cuda");
  }
}

// An embedding lookup: Gather of a [5, 2] table by three i64 ids ("lookup").
ir::Graph gather_graph() {
  ir::Graph g("gather");
  ir::HostTensor table(ir::DType::f32, ir::Shape({5, 2}));
  ir::ValueId data = g.add_constant("table", table);
  ir::ValueId idx = g.add_input("ids", ir::DType::i64, ir::Shape({3}));
  g.add_output(g.add_node(ir::OpType::Gather, "lookup", {data, idx})[0]);
  return g;
}

TEST(GpuErrors, OutOfRangeGatherIndexNamesTheNode) {
  REQUIRE_GPU();
  ir::Graph g = gather_graph();
  Executable exe = compile(g, Device("cuda:0"), gpu_options("default"));
  ir::HostTensor ids(ir::DType::i64, ir::Shape({3}));
  ids.data<int64_t>()[2] = 9;
  try {
    exe.run({ids});
    FAIL();
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("'lookup'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("index 9"), std::string::npos) << e.what();
  }
  ids.data<int64_t>()[2] = 4;
  EXPECT_NO_THROW(exe.run({ids})) << "the device stays usable after a bad index";
}

TEST(GpuMemory, RepeatedRunsReuseThePool) {
  REQUIRE_GPU();
  ir::Graph g = mlp_graph(ir::DType::f32);
  std::vector<ir::HostTensor> in = inputs_for(g);
  Executable exe = compile(g, Device("cuda:0"), gpu_options("default"));
  RunOutput first = exe.run(in);
  RunOutput second = exe.run(in);
  EXPECT_EQ(second.report.metrics.at("pool_device_allocations"),
            first.report.metrics.at("pool_device_allocations"));
  for (int64_t i = 0; i < first.outputs[0].numel(); ++i)
    ASSERT_EQ(first.outputs[0].data<float>()[i], second.outputs[0].data<float>()[i])
        << "runs are deterministic";
}

TEST(GpuOptions, TimingRunSkipsPerOpEvents) {
  REQUIRE_GPU();
  ir::Graph g = mlp_graph(ir::DType::f32);
  RunOutput out =
      compile(g, Device("cuda:0"), gpu_options("default", {{"timing", "run"}})).run(inputs_for(g));
  for (const auto& op : out.report.ops) EXPECT_EQ(op.device_seconds, 0);
  EXPECT_GT(out.report.device_seconds, 0);
  ASSERT_FALSE(out.report.notes.empty());
}

// graph=on replays one captured CUDA graph: fresh inputs on every replay, the same numbers as
// launching each kernel, per-op times still measured, and a bad index still reported.
TEST(GpuGraph, ReplaysMatchPerKernelLaunches) {
  REQUIRE_GPU();
  for (const char* model : {"resnet18", "bert"}) {
    SCOPED_TRACE(model);
    std::map<std::string, int64_t> params =
        std::string(model) == "bert"
            ? std::map<std::string, int64_t>{{"layers", 2},
                                             {"hidden", 128},
                                             {"heads", 4},
                                             {"seq", 32},
                                             {"vocab", 1000}}
            : std::map<std::string, int64_t>{{"image_size", 64}, {"classes", 10}};
    zoo::ModelOptions mo{"nchw", 5, params};
    zoo::Model m = zoo::make(model, mo);
    ir::Graph g = zoo::build(model, mo);
    CompileOptions plain = gpu_options("highest");
    plain.batch = 2;
    CompileOptions graph = gpu_options("highest", {{"graph", "on"}});
    graph.batch = 2;
    Executable launched = compile(g, Device("cuda:0"), plain);
    Executable replayed = compile(g, Device("cuda:0"), graph);
    int64_t high = m.int_input_high > 0 ? m.int_input_high : 100;
    for (uint64_t seed : {1u, 2u, 3u}) {
      std::vector<ir::HostTensor> in = random_inputs(launched.graph(), seed, high);
      RunOutput want = launched.run(in);
      RunOutput got = replayed.run(in);
      for (size_t i = 0; i < want.outputs.size(); ++i)
        EXPECT_EQ(compare_tensors(got.outputs[i], want.outputs[i], {1e-6, 1e-6}), "")
            << "seed " << seed << " output " << i;
      double busy = 0;
      for (const auto& op : got.report.ops) busy += op.device_seconds;
      EXPECT_GT(busy, 0);
      EXPECT_LE(busy, got.report.device_seconds * 1.05);
      bool noted = false;
      for (const std::string& n : got.report.notes) noted = noted || n.find("graph=on") == 6;
      EXPECT_TRUE(noted);
    }
  }
}

TEST(GpuGraph, BadIndexIsReportedFromAReplay) {
  REQUIRE_GPU();
  ir::Graph g = gather_graph();
  Executable exe = compile(g, Device("cuda:0"), gpu_options("default", {{"graph", "on"}}));
  ir::HostTensor ids(ir::DType::i64, ir::Shape({3}));
  EXPECT_NO_THROW(exe.run({ids}));
  ids.data<int64_t>()[1] = -7;
  try {
    exe.run({ids});
    FAIL();
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("'lookup'"), std::string::npos) << e.what();
  }
  ids.data<int64_t>()[1] = 4;
  EXPECT_NO_THROW(exe.run({ids}));
}

// A training step (forward, cross-entropy, backward, SGD with momentum) on the GPU follows cpu:
// within 1e-4 of the loss over 10 steps at "highest", within 2% with TF32 at "default".
std::vector<float> train_losses(const std::string& device, const std::string& precision) {
  auto m = train_test::small_cnn();
  TrainOptions o;
  o.optimizer = {OptimizerKind::sgd, 0.05, 0.9};
  o.compile.precision = precision;
  ir::TensorType in{ir::DType::f32, ir::Shape({8, 3, 8, 8})};
  TrainStep step(*m, in, Device(device), o);
  std::cout << device << " " << precision << ": "
            << step.executable().compile_report().fallback_nodes.size()
            << " node(s) of the train step on cpu:";
  for (const std::string& node : step.executable().compile_report().fallback_nodes)
    std::cout << " " << node;
  std::cout << "\n";
  ir::HostTensor x = Random(5).tensor(ir::DType::f32, in.shape);
  ir::HostTensor y = Random(6).tensor(ir::DType::i64, ir::Shape({8}), 10);
  std::vector<float> out;
  for (int i = 0; i < 10; ++i) out.push_back(step.step(x, y));
  return out;
}

TEST(GpuTrain, TrainStepFollowsCpu) {
  REQUIRE_GPU();
  std::vector<float> cpu = train_losses("cpu", "default");
  for (auto [precision, rtol] :
       {std::pair<const char*, double>{"highest", 1e-4}, {"default", 2e-2}}) {
    std::vector<float> gpu = train_losses("cuda:0", precision);
    ASSERT_EQ(gpu.size(), cpu.size());
    for (size_t i = 0; i < cpu.size(); ++i)
      EXPECT_NEAR(gpu[i], cpu[i], rtol * std::fabs(cpu[i])) << precision << " step " << i + 1;
    std::cout << "observed: train step " << precision << ": first loss " << gpu.front() << " vs "
              << cpu.front() << ", last " << gpu.back() << " vs " << cpu.back() << "\n";
    EXPECT_LT(gpu.back(), gpu.front());
  }
}

TEST(GpuFallback, UnsupportedNodesRunOnCpuBetweenGpuSegments) {
  REQUIRE_GPU();
  ir::Graph g("mixed");
  ir::ValueId x = g.add_input("x", ir::DType::f32, ir::Shape({4, 8}));
  ir::ValueId q = g.add_node(ir::OpType::Cast, "to_i8", {x}, {{"to", std::string("i8")}})[0];
  ir::ValueId w = g.add_constant("w", ir::HostTensor(ir::DType::i8, ir::Shape({8, 3})));
  ir::ValueId mm = g.add_node(ir::OpType::MatMul, "qmm", {q, w})[0];  // i8 MatMul: cpu
  ir::ValueId f = g.add_node(ir::OpType::Cast, "to_f32", {mm}, {{"to", std::string("f32")}})[0];
  g.add_output(g.add_node(ir::OpType::Relu, "relu", {f})[0]);
  CompileOptions o;
  Executable exe = compile(g, Device("cuda:0"), o);
  EXPECT_EQ(exe.compile_report().fallback_nodes, std::vector<std::string>{"qmm"});
  RunOutput out = exe.run(inputs_for(g));
  EXPECT_EQ(out.report.fallback_count(), 1);
  o.strict = true;
  EXPECT_THROW(compile(g, Device("cuda:0"), o), UnsupportedOpError);
}

}  // namespace
}  // namespace mimic::testing
