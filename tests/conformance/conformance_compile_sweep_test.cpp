// Every ONNX backend test (libonnx-testdata: node, pytorch-converted, pytorch-operator, simple)
// that passes on cpu is a valid model: every emulated device's compiler must
// either compile it or reject it with a user-facing error (unsupported, out of memory, ...), never
// with an `internal:` error or an unexpected exception. Compile only: the device models do not
// run, so the sweep covers every preset of every emulated backend in a few minutes.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "frontend/api/device.h"
#include "frontend/onnx/conformance.h"

namespace mimic::testing {
namespace {

// The tests of every suite (node, pytorch-converted, pytorch-operator, simple) that pass on cpu.
std::vector<conformance::TestCase> cpu_passing_tests() {
  std::vector<conformance::TestCase> out;
  for (const std::string& suite : conformance::default_suites()) {
    std::string dir = std::string(MIMIC_ONNX_TESTDATA) + "/" + suite;
    if (!std::filesystem::exists(dir)) continue;
    std::vector<conformance::TestCase> tests = conformance::discover(dir);
    conformance::Summary s = conformance::run_tests(tests, {});
    for (size_t i = 0; i < tests.size(); ++i)
      if (s.results[i].status == conformance::Status::passed) out.push_back(tests[i]);
  }
  return out;
}

std::vector<std::string> emulated_devices() {
  std::vector<std::string> out;
  for (const backends::DeviceInfo& d : devices())
    if ((d.backend == "tpu-emu" || d.backend == "ipu-emu") && d.available) out.push_back(d.name);
  return out;
}

bool is_internal(const std::string& detail) {
  return detail.find("internal:") != std::string::npos ||
         detail.find("internal error") != std::string::npos;
}

TEST(ConformanceCompileSweep, NoEmulatedCompilerRaisesInternalErrorsOnValidModels) {
  static const std::vector<conformance::TestCase> tests = cpu_passing_tests();
  if (tests.empty()) GTEST_SKIP() << MIMIC_ONNX_TESTDATA << " is missing (libonnx-testdata)";
  std::vector<std::string> emulated = emulated_devices();
  ASSERT_FALSE(emulated.empty());
  for (const std::string& device : emulated) {
    conformance::RunnerOptions o;
    o.device = device;
    o.compile_only = true;
    o.precision = device.rfind("ipu-emu", 0) == 0 ? "float32" : "highest";
    conformance::Summary s = conformance::run_tests(tests, o);
    int internal = 0;
    for (const conformance::TestResult& r : s.results)
      if (is_internal(r.detail)) {
        ++internal;
        ADD_FAILURE() << device << ": " << conformance::format_result(r);
      }
    EXPECT_EQ(internal, 0) << device << ": " << conformance::format_summary(s);
    EXPECT_GT(s.passed, static_cast<int>(tests.size()) / 2)
        << device << " compiles fewer than half of the " << tests.size()
        << " cpu-passing tests: " << conformance::format_summary(s);
    RecordProperty(device, conformance::format_summary(s));
  }
}

}  // namespace
}  // namespace mimic::testing
