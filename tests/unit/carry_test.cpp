// Carried values (backends::Carry, Executable::set_carries): a value that stays on the device
// from one run to the next. The same small program on every backend: p doubles each run unless
// the guard (sum of x times 0: NaN when x holds an inf) says otherwise; a training step's
// parameters, optimizer state and BatchNorm statistics ride on this (TrainStep).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "base/error.h"
#include "frontend/api/compile.h"

namespace mimic {
namespace {

using ir::DType;
using ir::Shape;

const char* kDevices[] = {"cpu", "tpu-emu:v4", "ipu-emu:gc200"};

// Inputs x, p (f32[256]); outputs y = x + p, p * 2 (carried into p), ReduceSum(x * 0) (guard).
ir::Graph doubling_graph() {
  ir::Graph g("doubling");
  ir::ValueId x = g.add_input("x", DType::f32, Shape({256}));
  ir::ValueId p = g.add_input("p", DType::f32, Shape({256}));
  float two = 2, zero = 0;
  ir::ValueId c2 = g.add_constant("two", ir::HostTensor::from(Shape(), &two));
  ir::ValueId c0 = g.add_constant("zero", ir::HostTensor::from(Shape(), &zero));
  g.add_output(g.add_node(ir::OpType::Add, "y", {x, p}).at(0));
  g.add_output(g.add_node(ir::OpType::Mul, "double", {p, c2}).at(0));
  ir::ValueId zeros = g.add_node(ir::OpType::Mul, "zeros", {x, c0}).at(0);
  g.add_output(
      g.add_node(ir::OpType::ReduceSum, "guard", {zeros}, {{"keepdims", int64_t{0}}}).at(0));
  return g;
}

ir::HostTensor filled(float v) {
  std::vector<float> values(256, v);
  return ir::HostTensor::from(Shape({256}), values.data());
}

float first(const ir::HostTensor& t) {
  return t.data<float>()[0];
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Carries, ValuesStayOnTheDeviceAndTheGuardHoldsThem) {
  for (const char* device : kDevices) {
    SCOPED_TRACE(device);
    CompileOptions o;
    o.precision = std::string(device).rfind("ipu", 0) == 0 ? "float32" : "highest";
    Executable e = compile(doubling_graph(), Device(device), o);
    e.set_carries({{1, 1, 2}}, {filled(1)});
    EXPECT_EQ(e.carries_on_device(), std::string(device) != "cpu");
    ir::HostTensor x = filled(10), bad = filled(10);
    bad.data<float>()[3] = std::numeric_limits<float>::infinity();
    RunOutput r = e.run_carried({x, ir::HostTensor()});
    EXPECT_EQ(first(r.outputs[0]), 11);    // p was 1
    EXPECT_FALSE(r.outputs[1].defined());  // the doubled p stayed on the device
    EXPECT_EQ(first(e.run_carried({x, ir::HostTensor()}).outputs[0]), 12);
    EXPECT_EQ(first(e.read_carry(0)), 4);
    EXPECT_EQ(first(e.run_carried({bad, ir::HostTensor()}).outputs[0]), 14);
    EXPECT_EQ(first(e.read_carry(0)), 4);  // the guard was NaN: p kept its value
    e.write_carry(0, filled(-3));
    EXPECT_EQ(first(e.read_carry(0)), -3);  // written, not yet sent
    EXPECT_EQ(first(e.run_carried({x, ir::HostTensor()}).outputs[0]), 7);
    ir::HostTensor p = e.read_carry(0);
    for (int64_t i = 0; i < p.numel(); ++i) ASSERT_EQ(p.data<float>()[i], -6) << i;
    // A plain run still takes every input from the caller and leaves the carried value alone.
    EXPECT_EQ(first(e.run({x, filled(100)}).outputs[1]), 200);
    EXPECT_EQ(first(e.read_carry(0)), -6);
  }
}

TEST(Carries, OnlyTheUncarriedValuesTravelToTheEmulatedDevice) {
  for (const char* device : {"tpu-emu:v4", "ipu-emu:gc200"}) {
    SCOPED_TRACE(device);
    Executable e = compile(doubling_graph(), Device(device), {});
    e.set_carries({{1, 1, -1}}, {filled(1)});
    auto request = [&] {
      RunOutput r = e.run_carried({filled(0), ir::HostTensor()});
      return r.report.metrics.at("host.request_bytes");
    };
    double with_p = request(), without_p = request();  // the first run sends p to the device
    EXPECT_GE(with_p - without_p, 256 * 4) << with_p << " vs " << without_p;
    EXPECT_LT(without_p, 2 * 256 * 4);
  }
}

TEST(Carries, BadCarriesAreOneLineErrors) {
  Executable e = compile(doubling_graph(), Device("cpu"), {});
  auto set = [&](std::vector<backends::Carry> c, std::vector<ir::HostTensor> init) {
    return error_of([&] { e.set_carries(c, init); });
  };
  EXPECT_EQ(set({{2, 1, -1}}, {filled(0)}),
            "graph 'doubling': carry input 2 <- output 1 (guard -1) is out of range (2 inputs, 3 "
            "outputs)");
  EXPECT_EQ(set({{1, 2, -1}}, {filled(0)}),
            "graph 'doubling': carried input 1 is f32[256], its output 2 is f32[]");
  EXPECT_EQ(set({{1, 1, 0}}, {filled(0)}),
            "graph 'doubling': carry guard output 0 is f32[256], not one f32");
  EXPECT_EQ(set({{1, 1, -1}, {1, 0, -1}}, {filled(0), filled(0)}),
            "graph 'doubling': input 1 or output 0 is carried twice");
  EXPECT_EQ(set({{1, 1, -1}}, {}), "graph 'doubling': 0 initial values for 1 carries");
  EXPECT_EQ(set({{1, 1, -1}}, {ir::HostTensor(DType::f32, Shape({3}))}),
            "carried value 0 (input 1 'p') must be f32[256], got f32[3]");
  e.set_carries({{1, 1, -1}}, {filled(0)});
  EXPECT_EQ(error_of([&] { e.read_carry(1); }), "carry 1 does not exist (1 carries)");
  EXPECT_EQ(error_of([&] { e.write_carry(0, ir::HostTensor()); }),
            "carried value 0 (input 1 'p') must be f32[256], got an undefined tensor");
  EXPECT_EQ(error_of([&] {
              e.run_carried({ir::HostTensor(), ir::HostTensor()});
            }),
            "input 0 'x' must be f32[256], got an undefined tensor");
  EXPECT_EQ(error_of([&] {
              e.run({filled(0), ir::HostTensor()});
            }),
            "input 1 'p' must be f32[256], got an undefined tensor");
}

}  // namespace
}  // namespace mimic
