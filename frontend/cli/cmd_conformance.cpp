// `mimic conformance`: runs the ONNX backend test data on a device and prints one line per test
// (pass / FAIL with the error / skip with what is unsupported), then "N passed, N failed,
// N skipped". Exit status 1 when any test failed. See frontend/onnx/conformance.h for tolerances.
#include <fmt/format.h>
#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>

#include "frontend/api/compile.h"
#include "frontend/cli/cli_common.h"
#include "frontend/onnx/conformance.h"

namespace mimic::cli {
namespace {

struct ConformanceArgs {
  std::string device = "cpu", precision = "default", filter;
  std::vector<std::string> suites;
  bool json = false;
};

std::vector<conformance::TestCase> select_tests(const ConformanceArgs& a) {
  std::regex pattern;
  try {
    pattern = std::regex(a.filter.empty() ? std::string(".*") : a.filter);
  } catch (const std::regex_error& e) {
    throw InvalidArgument(
        fmt::format("--filter '{}' is not a valid regular expression: {}", a.filter, e.what()));
  }
  std::vector<std::string> roots = a.suites;
  if (roots.empty()) roots.push_back(conformance::kDefaultSuiteRoot);
  std::vector<conformance::TestCase> out;
  for (const std::string& root : roots)
    for (auto& t : conformance::discover(root))
      if (std::regex_search(t.name, pattern)) out.push_back(std::move(t));
  if (out.empty()) throw InvalidArgument(fmt::format("--filter '{}' matches no test", a.filter));
  return out;
}

nlohmann::json to_json(const conformance::TestResult& r) {
  return {{"name", r.name},
          {"status", conformance::status_name(r.status)},
          {"detail", r.detail},
          {"max_abs_error", r.max_abs_error},
          {"data_sets", r.data_sets},
          {"rtol", r.tolerance.rtol},
          {"atol", r.tolerance.atol},
          {"tolerance_basis", r.tolerance.basis},
          {"seconds", r.seconds},
          {"device_ops", r.device_ops},
          {"fallback_ops", r.fallback_ops},
          {"fallback_reasons", r.fallback_reasons}};
}

// The device string and precision fail every test alike when wrong: checked once, up front, by
// compiling a one-op graph (an unknown precision is the backend's InvalidArgument).
void check_device_and_precision(const ConformanceArgs& a) {
  ir::Graph g("precision_check");
  ir::ValueId x = g.add_input("x", ir::DType::f32, ir::Shape({1, 4}));
  g.add_output(g.add_node(ir::OpType::Relu, "relu", {x})[0]);
  CompileOptions o;
  o.precision = a.precision;
  o.compile_only = true;
  compile(g, Device(a.device), o);
}

int run(const ConformanceArgs& a) {
  check_device_and_precision(a);
  std::vector<conformance::TestCase> tests = select_tests(a);
  conformance::RunnerOptions options{a.device, a.precision};
  auto print = [&](const conformance::TestResult& r) {
    if (!a.json) std::cout << conformance::format_result(r) << std::endl;
  };
  conformance::Summary s = conformance::run_tests(tests, options, print);
  if (a.json) {
    nlohmann::json j{{"device", a.device},
                     {"precision", a.precision},
                     {"passed", s.passed},
                     {"failed", s.failed},
                     {"skipped", s.skipped},
                     {"passed_with_fallback", s.passed_with_fallback},
                     {"tests", nlohmann::json::array()}};
    for (const auto& r : s.results) j["tests"].push_back(to_json(r));
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << conformance::format_summary(s) << "\n";
  }
  return s.failed == 0 ? 0 : 1;
}

}  // namespace

Command add_conformance_command(CLI::App& app) {
  auto a = std::make_shared<ConformanceArgs>();
  CLI::App* cmd = app.add_subcommand(
      "conformance", "Run the ONNX backend test data on a device and compare outputs");
  cmd->add_option("--device", a->device, "Device string (see `mimic devices`)")
      ->capture_default_str();
  cmd->add_option("--precision", a->precision,
                  "Matrix precision to compile with (sets the tolerance class too)")
      ->capture_default_str();
  cmd->add_option("--suite", a->suites,
                  fmt::format("Test folder, suite folder or folder of suites (default {})",
                              conformance::kDefaultSuiteRoot));
  cmd->add_option("--filter", a->filter, "Regular expression on test names such as node/test_abs");
  cmd->add_flag("--json", a->json, "Print JSON (one record per test and the counts)");
  return {cmd, [a]() { return run(*a); }};
}

}  // namespace mimic::cli
