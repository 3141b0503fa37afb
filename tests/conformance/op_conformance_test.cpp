// Every op case (op_cases.h) on every registered device against the cpu backend's reference
// kernels: the case compiles, each node runs where the backend's supports_op() puts it, a node
// falls back to cpu only where expected_fallbacks() lists it (and a listed node that runs on the
// device fails the list too), and the outputs match within the case's tolerance for the device's
// matrix arithmetic. A device that is unavailable here (cuda:0 without a GPU) skips with the
// reason. CTest runs one test per device (tests/conformance/CMakeLists.txt), so an emulator's
// worker process is started once for all of that device's cases.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

#include "backends/common.h"
#include "backends/registry.h"
#include "frontend/api/compile.h"
#include "tests/conformance/op_cases.h"

namespace mimic::testing {
namespace {

// One device and precision the cases run on. `numerics` is the class of its matrix arithmetic,
// which scales the matrix cases' tolerances (op_cases.h).
struct DeviceUnderTest {
  std::string id;  // test-name part: "tpu_emu_v4_default"
  std::string device;
  std::string precision;
  std::string numerics;
  std::map<std::string, std::string> options;
};

const std::vector<DeviceUnderTest>& devices() {
  static const std::vector<DeviceUnderTest> list = {
      {"cpu_onednn", "cpu", "default", "f32", {{"kernels", "onednn"}}},
      {"tpu_emu_v4_highest", "tpu-emu:v4", "highest", "f32", {}},
      {"tpu_emu_v4_default", "tpu-emu:v4", "default", "bf16", {}},
      {"ipu_emu_gc200_float32", "ipu-emu:gc200", "float32", "f32", {}},
      {"ipu_emu_gc200_float16", "ipu-emu:gc200", "float16", "f16_storage", {}},
      {"cuda_0_highest", "cuda:0", "highest", "f32", {}},
      {"cuda_0_default", "cuda:0", "default", "tf32", {}},
  };
  return list;
}

const std::vector<OpCase>& cases() {
  static const std::vector<OpCase> all = op_cases();
  return all;
}

// The oracle: the cpu backend's reference kernels (no oneDNN), computed once per case.
const std::vector<ir::HostTensor>& reference_outputs(size_t case_index) {
  static std::map<size_t, std::vector<ir::HostTensor>> cache;
  auto it = cache.find(case_index);
  if (it != cache.end()) return it->second;
  const OpCase& c = cases()[case_index];
  CompileOptions o;
  o.options = {{"kernels", "reference"}};
  return cache[case_index] = compile(c.graph, Device("cpu"), o).run(c.inputs).outputs;
}

std::string fallback_reason(const backends::CompileReport& r, const std::string& node) {
  for (size_t i = 0; i < r.fallback_nodes.size(); ++i)
    if (r.fallback_nodes[i] == node && i < r.fallback_reasons.size()) return r.fallback_reasons[i];
  return "(no reason recorded)";
}

// Placement: every node runs where supports_op() says, and falls back exactly where
// expected_fallbacks() lists it.
void check_placement(const DeviceUnderTest& d, const OpCase& c, const Executable& exe) {
  const backends::Backend* b = backends::Registry::global().find(exe.device().backend());
  ASSERT_NE(b, nullptr);
  const ir::Graph& g = exe.graph();
  const backends::CompileReport& r = exe.compile_report();
  std::set<std::string> fell(r.fallback_nodes.begin(), r.fallback_nodes.end());
  for (const ir::Node& n : g.nodes()) {
    if (backends::is_folded(g, n)) continue;
    bool fell_back = fell.count(n.name) != 0;
    bool claims = b->supports_op(g, n, exe.device().arg(), exe.options());
    EXPECT_EQ(fell_back, !claims) << ir::op_name(n.op) << " '" << n.name << "': supports_op() says "
                                  << (claims ? "yes" : "no") << " but the node "
                                  << (fell_back ? "fell back to cpu" : "ran on the device");
    std::string expected = expected_fallback(b->name(), c.name, n.op);
    if (fell_back && expected.empty())
      ADD_FAILURE() << "unexpected fallback on " << d.device << ": " << fallback_reason(r, n.name)
                    << " (support it, or list it in expected_fallbacks() with the reason)";
    if (!fell_back && !expected.empty())
      ADD_FAILURE() << "no longer falls back on " << d.device << ": " << ir::op_name(n.op) << " '"
                    << n.name << "' runs on the device, but expected_fallbacks() lists it ("
                    << expected << "): remove the entry";
  }
}

// Emulators: a run whose nodes ran on the device takes cycles, and a timing-only run of the same
// program takes exactly as many (timing and numerics come from one instruction stream).
void check_timing(const DeviceUnderTest& d, const OpCase& c, CompileOptions o,
                  const backends::RunReport& full) {
  Device device(d.device);
  if (device.backend() != "tpu-emu" && device.backend() != "ipu-emu") return;
  int on_device = 0;
  for (const backends::OpReport& op : full.ops) on_device += op.fallback ? 0 : 1;
  if (on_device > 0) EXPECT_GT(full.cycles, 0u) << on_device << " ops ran on the device";
  o.timing_only = true;
  Executable timing = compile(c.graph, device, o);
  EXPECT_EQ(timing.run(c.inputs).report.cycles, full.cycles)
      << "timing-only cycles differ from the full run's";
}

using Param = std::tuple<size_t, size_t>;  // (device, case)

class OpConformance : public ::testing::TestWithParam<Param> {};

TEST_P(OpConformance, MatchesCpuReference) {
  const DeviceUnderTest& d = devices()[std::get<0>(GetParam())];
  size_t case_index = std::get<1>(GetParam());
  const OpCase& c = cases()[case_index];
  Device device(d.device);
  backends::DeviceInfo info = device.info();
  if (!info.available) GTEST_SKIP() << d.device << " is unavailable: " << info.reason;
  CompileOptions o;
  o.precision = d.precision;
  o.options = d.options;
  // The cases' own options are the cuda backend's (workspace sizes, ...).
  if (device.backend() == "cuda") o.options.insert(c.options.begin(), c.options.end());
  const std::vector<ir::HostTensor>& want = reference_outputs(case_index);
  Executable exe = compile(c.graph, device, o);
  check_placement(d, c, exe);
  RunOutput out = exe.run(c.inputs);
  EXPECT_EQ(static_cast<size_t>(out.report.fallback_count()),
            exe.compile_report().fallback_nodes.size())
      << "the run report's fallback ops differ from the compile report's";
  check_timing(d, c, o, out.report);
  ASSERT_EQ(out.outputs.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    Tolerance tol = tolerance_for(c, want[i].dtype(), d.numerics);
    EXPECT_EQ(compare_tensors(out.outputs[i], want[i], tol), "")
        << "output " << i << " (" << error_summary(out.outputs[i], want[i], tol) << ")";
  }
}

std::string safe(std::string s) {
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return devices()[std::get<0>(info.param)].id + "__" + safe(cases()[std::get<1>(info.param)].name);
}

INSTANTIATE_TEST_SUITE_P(Cases, OpConformance,
                         ::testing::Combine(::testing::Range<size_t>(0, devices().size()),
                                            ::testing::Range<size_t>(0, cases().size())),
                         param_name);

TEST(OpCases, CoverEveryOpOfTheIr) {
  std::set<ir::OpType> seen;
  std::set<std::string> names;
  for (const OpCase& c : cases()) {
    EXPECT_TRUE(names.insert(c.name).second) << "duplicate case " << c.name;
    for (const ir::Node& n : c.graph.nodes()) seen.insert(n.op);
  }
  std::vector<std::string> missing;
  for (int i = 0; i < ir::op_count(); ++i) {
    ir::OpType op = ir::op_at(i);
    if (!seen.count(op) && !ops_without_cases().count(op)) missing.push_back(ir::op_name(op));
  }
  EXPECT_TRUE(missing.empty()) << "ops without a case: "
                               << fmt::format("{}", fmt::join(missing, ", "));
}

// Every expected fallback names a registered backend and matches a node of some case.
TEST(OpCases, ExpectedFallbacksMatchCases) {
  for (const ExpectedFallback& e : expected_fallbacks()) {
    EXPECT_NE(backends::Registry::global().find(e.backend), nullptr) << e.backend;
    bool used = false;
    for (const OpCase& c : cases())
      for (const ir::Node& n : c.graph.nodes()) used = used || matches(e, c.name, n.op);
    EXPECT_TRUE(used) << e.backend << " '" << e.cases << "' (" << e.reason
                      << ") matches no node of any case";
  }
}

// Every registered backend runs the cases on at least one of its devices.
TEST(OpCases, EveryRegisteredBackendHasADevice) {
  std::set<std::string> covered;
  for (const DeviceUnderTest& d : devices()) covered.insert(Device(d.device).backend());
  for (const backends::Backend* b : backends::Registry::global().all())
    EXPECT_TRUE(covered.count(b->name())) << b->name() << " runs no op case: add it to devices()";
}

// The device ids CTest runs (one test each, MIMIC_OP_CONFORMANCE_DEVICES in CMakeLists.txt) are
// exactly this file's devices, so no device's cases are silently left out of ctest.
TEST(OpCases, CTestRunsEveryDevice) {
  std::vector<std::string> ids;
  for (const DeviceUnderTest& d : devices()) ids.push_back(d.id);
  EXPECT_EQ(fmt::format("{}", fmt::join(ids, ",")), MIMIC_OP_CONFORMANCE_DEVICES);
}

}  // namespace
}  // namespace mimic::testing
