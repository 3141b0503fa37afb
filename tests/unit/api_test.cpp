// The C++ front end: device strings, eager ops, nn modules, compile/run validation, run observers,
// and placement with cpu fallback (through a test backend that only runs Relu).
#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"
#include "backends/registry.h"
#include "base/error.h"
#include "frontend/api/compile.h"
#include "frontend/api/nn.h"
#include "frontend/api/ops.h"

namespace mimic {
namespace {

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(DeviceStrings, ParseAndReportAvailability) {
  Device cpu("cpu");
  EXPECT_EQ(cpu.backend(), "cpu");
  EXPECT_TRUE(cpu.available());
  Device tpu("tpu-emu:path/to/chip.json");
  EXPECT_EQ(tpu.arg(), "path/to/chip.json");
  EXPECT_THROW(Device(""), InvalidArgument);
  std::string msg = message_of([] { Device("gpu:0"); });
  EXPECT_NE(msg.find("unknown device 'gpu:0': known backends are cpu"), std::string::npos) << msg;
  EXPECT_FALSE(Device("cpu:3").available());
  bool listed_cpu = false;
  for (const auto& d : devices()) {
    if (d.name == "cpu") listed_cpu = d.available;
    if (!d.available) {
      EXPECT_FALSE(d.reason.empty()) << d.name;
    }
  }
  EXPECT_TRUE(listed_cpu);
}

TEST(EagerOps, ComputeOnAccessAndCheckShapesAtTheCall) {
  Tensor a = Tensor::from<float>({1, 2, 3, 4, 5, 6}, ir::Shape({2, 3}));
  Tensor b = Tensor::from<float>({1, 0, 0, 1, 1, 1}, ir::Shape({3, 2}));
  Tensor c = relu(matmul(a, b) - Tensor::from<float>({4}, ir::Shape({1})));
  EXPECT_EQ(c.shape(), ir::Shape({2, 2}));
  EXPECT_EQ(c.to_floats(), (std::vector<float>{0, 1, 6, 7}));
  std::string msg = message_of([&] { matmul(a, a); });
  EXPECT_NE(msg.find("(MatMul): inner dimensions differ: [2,3] x [2,3]"), std::string::npos) << msg;
}

TEST(EagerOps, TensorsOnDifferentDevicesAreRejected) {
  Tensor a = Tensor::from<float>({1}, ir::Shape({1}));
  Tensor b = Tensor::from<float>({1}, ir::Shape({1}), Device("tpu-emu:v4"));
  std::string msg = message_of([&] { add(a, b); });
  EXPECT_NE(msg.find("inputs are on different devices (cpu and tpu-emu:v4)"), std::string::npos)
      << msg;
}

TEST(NnModules, SequentialForwardAndTrace) {
  nn::Sequential model{std::make_shared<nn::Linear>(4, 8), std::make_shared<nn::ReLU>(),
                       std::make_shared<nn::Linear>(8, 2)};
  model.set_name("mlp");
  EXPECT_EQ(model.parameter_count(), 4 * 8 + 8 + 8 * 2 + 2);
  Tensor x = Tensor::from<float>(std::vector<float>(12, 0.5f), ir::Shape({3, 4}));
  Tensor y = model(x);
  EXPECT_EQ(y.shape(), ir::Shape({3, 2}));
  std::vector<float> eager = y.to_floats();
  ir::Graph g = nn::trace_module(model, "x", ir::DType::f32, ir::Shape({ir::kBatch, 4}), "mlp");
  EXPECT_TRUE(g.has_symbolic_batch());
  EXPECT_EQ(g.node(0).name, "mlp.0.matmul");
  CompileOptions o;
  o.batch = 3;
  RunOutput out = compile(g, "cpu", o).run({x.host()});
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(out.outputs[0].data<float>()[i], eager[i]);
}

TEST(Compile, ValidatesBatchAndInputs) {
  nn::Linear layer(4, 2);
  ir::Graph g = nn::trace_module(layer, "x", ir::DType::f32, ir::Shape({ir::kBatch, 4}), "linear");
  std::string msg = message_of([&] { compile(g, "cpu"); });
  EXPECT_NE(msg.find("symbolic batch dimension: give a batch size > 0 (got 0)"), std::string::npos)
      << msg;
  CompileOptions o;
  o.batch = 2;
  Executable exe = compile(g, "cpu", o);
  msg = message_of([&] { exe.run({}); });
  EXPECT_NE(msg.find("takes 1 input(s), got 0"), std::string::npos) << msg;
  msg = message_of([&] { exe.run({ir::HostTensor(ir::DType::f32, ir::Shape({3, 4}))}); });
  EXPECT_NE(msg.find("input 0 'x' must be f32[2,4], got f32[3,4]"), std::string::npos) << msg;
  o.compile_only = true;
  msg = message_of([&] {
    compile(g, "cpu", o).run({ir::HostTensor(ir::DType::f32, ir::Shape({2, 4}))});
  });
  EXPECT_NE(msg.find("compile_only"), std::string::npos) << msg;
  EXPECT_THROW(compile(g, "cuda:0", o), DeviceUnavailableError);
}

class Recorder final : public RunObserver, public sim::NullSink {
 public:
  sim::EventSink& begin_run(const RunInfo& info) override {
    model = info.model;
    return *this;
  }
  void end_run(bool ok, const std::string& error) override {
    runs++;
    last_ok = ok;
    last_error = error;
  }
  void event(sim::TrackId, sim::OpId, std::string_view, uint64_t, uint64_t) override { events++; }
  std::string model, last_error;
  int runs = 0, events = 0;
  bool last_ok = false;
};

TEST(RunObservers, SeeEveryRunAndItsEvents) {
  nn::Sequential model{std::make_shared<nn::Linear>(4, 4), std::make_shared<nn::ReLU>()};
  ir::Graph g = nn::trace_module(model, "x", ir::DType::f32, ir::Shape({2, 4}), "tiny");
  Executable exe = compile(g, "cpu");
  Recorder rec;
  push_run_observer(&rec);
  exe.run({ir::HostTensor(ir::DType::f32, ir::Shape({2, 4}))});
  EXPECT_THROW(exe.run({ir::HostTensor(ir::DType::f32, ir::Shape({2, 5}))}), InvalidArgument);
  pop_run_observer(&rec);
  exe.run({ir::HostTensor(ir::DType::f32, ir::Shape({2, 4}))});
  EXPECT_EQ(rec.runs, 1);    // input validation happens before a run starts
  EXPECT_EQ(rec.events, 3);  // matmul, bias, relu
  EXPECT_EQ(rec.model, "tiny");
  EXPECT_TRUE(rec.last_ok);
}

// A device that runs only Relu (on the host): everything else must fall back to cpu.
class ReluOnlyBackend final : public backends::Backend {
 public:
  std::string name() const override { return "relu-only"; }
  std::vector<backends::DeviceInfo> enumerate() const override { return {probe("")}; }
  backends::DeviceInfo probe(const std::string&) const override {
    return {"relu-only", "relu-only", true, "", "test"};
  }
  bool supports_op(const ir::Graph&, const ir::Node& n, const std::string&,
                   const backends::CompileOptions&) const override {
    return n.op == ir::OpType::Relu;
  }
  std::unique_ptr<backends::Executable> compile(const ir::Graph& g, const std::string&,
                                                const backends::CompileOptions& o) const override {
    for (const auto& n : g.nodes()) EXPECT_EQ(n.op, ir::OpType::Relu);
    return backends::cpu::make_backend()->compile(g, "", {});
  }
};

TEST(Placement, UnsupportedOpsFallBackToCpuOrFailWhenStrict) {
  static bool registered = [] {
    backends::Registry::global().add(std::make_unique<ReluOnlyBackend>());
    return true;
  }();
  (void)registered;
  nn::Sequential model{std::make_shared<nn::Linear>(4, 4), std::make_shared<nn::ReLU>(),
                       std::make_shared<nn::Linear>(4, 2)};
  ir::Graph g = nn::trace_module(model, "x", ir::DType::f32, ir::Shape({2, 4}), "mixed");
  ir::HostTensor x(ir::DType::f32, ir::Shape({2, 4}));
  for (int i = 0; i < 8; ++i) x.data<float>()[i] = 0.25f * i - 1;
  RunOutput on_device = compile(g, "relu-only").run({x});
  RunOutput on_cpu = compile(g, "cpu").run({x});
  ASSERT_EQ(on_device.report.ops.size(), 5u);
  EXPECT_EQ(on_device.report.fallback_count(), 4);
  EXPECT_FALSE(on_device.report.ops[2].fallback);  // the Relu ran on the device
  for (int i = 0; i < 4; ++i)
    EXPECT_FLOAT_EQ(on_device.outputs[0].data<float>()[i], on_cpu.outputs[0].data<float>()[i]);
  CompileOptions strict;
  strict.strict = true;
  std::string msg = message_of([&] { compile(g, "relu-only", strict); });
  EXPECT_NE(msg.find("4 op(s) cannot run on this device: MatMul '0.matmul': "), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("; Add '0.bias': "), std::string::npos) << msg;
  EXPECT_NE(msg.find("; and 1 more"), std::string::npos) << msg;
}

}  // namespace
}  // namespace mimic
