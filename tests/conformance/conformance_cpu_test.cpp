// The ONNX backend test data on cpu through the runner library: every PyTorch test passes, no
// test fails, and the pass counts do not fall below those measured when this suite was set up
// (a guard against supported tests silently turning into skips).
#include <gtest/gtest.h>

#include <filesystem>

#include "frontend/onnx/conformance.h"

namespace mimic::testing {
namespace {

struct Expectation {
  const char* suite;
  int min_passed;
  bool all_pass;
};

class ConformanceCpu : public ::testing::TestWithParam<Expectation> {};

TEST_P(ConformanceCpu, Suite) {
  const Expectation& e = GetParam();
  std::string dir = std::string(MIMIC_ONNX_TESTDATA) + "/" + e.suite;
  if (!std::filesystem::exists(dir))
    GTEST_SKIP() << dir << " is missing (install libonnx-testdata)";
  conformance::Summary s = conformance::run_tests(conformance::discover(dir), {});
  for (const auto& r : s.results)
    if (r.status == conformance::Status::failed ||
        (e.all_pass && r.status != conformance::Status::passed))
      ADD_FAILURE() << conformance::format_result(r);
  EXPECT_EQ(s.failed, 0);
  EXPECT_GE(s.passed, e.min_passed) << conformance::format_summary(s);
  RecordProperty("passed", s.passed);
  RecordProperty("skipped", s.skipped);
}

INSTANTIATE_TEST_SUITE_P(OnnxBackendTests, ConformanceCpu,
                         ::testing::Values(Expectation{"pytorch-converted", 82, true},
                                           Expectation{"pytorch-operator", 35, true},
                                           Expectation{"node", 619, false},
                                           Expectation{"simple", 7, false}),
                         [](const auto& info) {
                           std::string name = info.param.suite;
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

}  // namespace
}  // namespace mimic::testing
