// The gradient-rule table (autodiff_cases.cpp) on every device: each case's backward graph (loss
// and the gradient of every input) compiled for tpu-emu:v4 at precision "highest" (f32 matrix
// passes), ipu-emu:gc200 at "float32" and cuda:0 (skipped with the reason when no GPU is there)
// must give the cpu backend's gradients within 1e-4 * max(1, |cpu gradient|_inf) per element;
// the cpu gradients themselves are checked against finite differences by autodiff_test.cpp. Ops a
// device does not lower run on cpu (per-op fallback); the test prints which ops fell back.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <set>

#include "frontend/api/compile.h"
#include "tests/unit/autodiff_cases.h"

namespace mimic::test {
namespace {

struct DeviceCase {
  std::string device, precision;
};

double inf_norm(const ir::HostTensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.numel(); ++i) m = std::max(m, std::fabs(double{t.data<float>()[i]}));
  return m;
}

// Checks one case on `device`; returns the op types that fell back to cpu.
std::set<std::string> check_on_device(const Case& c, const Device& device,
                                      const CompileOptions& options) {
  SCOPED_TRACE(c.name);
  CaseGraphs cg = build_case(c);
  std::vector<ir::HostTensor> want = compile(cg.backward, Device("cpu")).run(cg.data).outputs;
  Executable exe = compile(cg.backward, device, options);
  std::vector<ir::HostTensor> got = exe.run(cg.data).outputs;
  EXPECT_EQ(got.size(), want.size());
  for (size_t o = 0; o < std::min(got.size(), want.size()); ++o) {
    double tol = 1e-4 * std::max(1.0, inf_norm(want[o]));
    for (int64_t i = 0; i < want[o].numel(); ++i) {
      double g = got[o].data<float>()[i], w = want[o].data<float>()[i];
      if (!(std::fabs(g - w) <= tol)) {
        ADD_FAILURE() << "output " << o << " element " << i << ": " << g << " vs cpu " << w;
        break;
      }
    }
  }
  std::set<std::string> fell_back;
  for (const std::string& node : exe.compile_report().fallback_nodes)
    for (const ir::Node& n : exe.graph().nodes())
      if (n.name == node) fell_back.insert(ir::op_name(n.op));
  return fell_back;
}

class AutodiffOnDevice : public ::testing::TestWithParam<DeviceCase> {};

TEST_P(AutodiffOnDevice, EveryRuleMatchesCpuGradients) {
  Device device(GetParam().device);
  if (!device.available()) GTEST_SKIP() << GetParam().device << ": " << device.info().reason;
  CompileOptions options;
  options.precision = GetParam().precision;
  std::map<std::string, std::set<std::string>> fallbacks;  // op -> cases
  for (const Case& c : all_cases())
    for (const std::string& op : check_on_device(c, device, options)) fallbacks[op].insert(c.name);
  std::cout << GetParam().device << ": " << all_cases().size() << " cases; ops run on cpu:";
  for (const auto& [op, cases] : fallbacks) std::cout << " " << op << " (" << cases.size() << ")";
  std::cout << (fallbacks.empty() ? " none\n" : "\n");
}

INSTANTIATE_TEST_SUITE_P(Devices, AutodiffOnDevice,
                         ::testing::Values(DeviceCase{"tpu-emu:v4", "highest"},
                                           DeviceCase{"ipu-emu:gc200", "float32"},
                                           DeviceCase{"cuda:0", "default"}),
                         [](const auto& info) {
                           std::string n = info.param.device;
                           std::replace_if(
                               n.begin(), n.end(), [](char ch) { return !std::isalnum(ch); }, '_');
                           return n;
                         });

}  // namespace
}  // namespace mimic::test
