#include "frontend/onnx/conformance.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>

#include "base/error.h"
#include "frontend/api/compile.h"
#include "frontend/ir/op_helpers.h"
#include "frontend/onnx/onnx_import.h"
#include "frontend/onnx/onnx_tensor.h"

namespace mimic::conformance {
namespace {

namespace fs = std::filesystem;
using ir::DType;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// Known precision names -> tolerance class; "" when unknown.
std::string precision_class(const std::string& precision) {
  std::string p = lower(precision);
  if (p == "f32" || p == "fp32" || p == "float32" || p == "highest" || p == "float") return "f32";
  if (p == "high" || p == "bf16x3" || p == "bf16_3x" || p == "bf16x3_f32") return "bf16x3";
  if (p == "tf32") return "tf32";
  if (p == "f16" || p == "fp16" || p == "float16" || p == "half") return "f16";
  if (p == "bf16" || p == "bfloat16") return "bf16";
  return "";
}

bool integer_equal(const ir::HostTensor& e, const ir::HostTensor& a, int64_t i) {
  if (e.dtype() == DType::i64) return e.data<int64_t>()[i] == a.data<int64_t>()[i];
  return ir::element_as_double(e, i) == ir::element_as_double(a, i);
}

std::string index_str(const ir::Shape& s, int64_t flat) {
  std::vector<int64_t> idx(s.rank());
  for (int d = s.rank() - 1; d >= 0; --d) {
    idx[d] = s[d] ? flat % s[d] : 0;
    flat = s[d] ? flat / s[d] : 0;
  }
  return fmt::format("[{}]", fmt::join(idx, ","));
}

int file_index(const fs::path& p, const std::string& prefix) {
  std::string stem = p.stem().string();
  try {
    return std::stoi(stem.substr(prefix.size()));
  } catch (const std::exception&) {
    return -1;
  }
}

// input_0.pb, input_1.pb, ... in numeric order.
std::vector<fs::path> numbered_files(const fs::path& dir, const std::string& prefix) {
  std::vector<std::pair<int, fs::path>> found;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && e.path().extension() == ".pb")
      found.emplace_back(file_index(e.path(), prefix), e.path());
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> out;
  for (auto& [i, p] : found) out.push_back(p);
  return out;
}

std::vector<fs::path> data_sets(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0)
      out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

struct NamedTensor {
  std::string name;
  ir::HostTensor tensor;
};

std::vector<NamedTensor> read_tensors(const std::vector<fs::path>& files) {
  std::vector<NamedTensor> out;
  for (const auto& f : files) {
    NamedTensor t;
    t.tensor = onnx_import::read_tensor_file(f.string(), &t.name, /*uint16_is_bf16=*/true);
    out.push_back(std::move(t));
  }
  return out;
}

// Data-set tensors in graph-input order: by name when every name matches, else by position.
std::vector<ir::HostTensor> order_inputs(const ir::Graph& g, std::vector<NamedTensor> data) {
  if (data.size() != g.inputs().size())
    throw InvalidArgument(fmt::format("the model takes {} input(s), the data set has {}",
                                      g.inputs().size(), data.size()));
  std::map<std::string, size_t> by_name;
  for (size_t i = 0; i < data.size(); ++i) by_name[data[i].name] = i;
  bool named = by_name.size() == data.size();
  for (ir::ValueId v : g.inputs()) named = named && by_name.count(g.value(v).name);
  std::vector<ir::HostTensor> out;
  for (size_t i = 0; i < data.size(); ++i)
    out.push_back(named ? data[by_name.at(g.value(g.inputs()[i]).name)].tensor : data[i].tensor);
  return out;
}

// The batch to bind: the first dim of the first input whose declared first dim is symbolic.
int64_t batch_of(const ir::Graph& g, const std::vector<ir::HostTensor>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Shape& s = g.input_type(static_cast<int>(i)).shape;
    if (s.rank() > 0 && s[0] == ir::kBatch && inputs[i].shape().rank() > 0)
      return inputs[i].shape()[0];
  }
  return 0;
}

// Inputs that fix shapes (Reshape's shape, Slice's starts, ...) become constants holding the data
// set's values: mimic compiles static shapes, as XLA does. Inputs that no node reads become zeros
// of their declared type (their data cannot matter; some tests give them other shapes).
// Returns the remaining inputs.
std::vector<ir::HostTensor> freeze_inputs(ir::Graph& g, const std::vector<ir::HostTensor>& inputs) {
  std::vector<int> frozen = ir::shape_defining_inputs(g);
  std::vector<bool> read(g.num_values(), false);
  for (const ir::Node& n : g.nodes())
    for (ir::ValueId v : n.inputs)
      if (v != ir::kNoValue) read[v] = true;
  for (ir::ValueId v : g.outputs()) read[v] = true;
  std::vector<ir::ValueId> ids = g.inputs();
  std::vector<ir::HostTensor> rest;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::TensorType& declared = g.value(ids[i]).type;
    if (std::find(frozen.begin(), frozen.end(), static_cast<int>(i)) != frozen.end())
      g.make_constant(ids[i], inputs[i]);
    else if (!read[ids[i]] && !declared.shape.is_symbolic())
      g.make_constant(ids[i], ir::HostTensor(declared.dtype, declared.shape));
    else
      rest.push_back(inputs[i]);
  }
  return rest;
}

// Runs one data set; returns the failure message or "".
std::string run_data_set(const ir::Graph& model, const fs::path& dir, const RunnerOptions& options,
                         TestResult& r) {
  ir::Graph g = model;
  std::vector<ir::HostTensor> inputs =
      freeze_inputs(g, order_inputs(g, read_tensors(numbered_files(dir, "input_"))));
  std::vector<NamedTensor> expected = read_tensors(numbered_files(dir, "output_"));
  CompileOptions co;
  co.precision = options.precision;
  co.batch = batch_of(g, inputs);
  Executable exe = compile(g, Device(options.device), co);
  if (options.compile_only) return "";
  RunOutput out = exe.run(inputs);
  r.tolerance = tolerance_for(out.report.precision, options.precision);
  if (r.data_sets == 0) {
    r.fallback_ops = out.report.fallback_count();
    r.device_ops = static_cast<int>(out.report.ops.size()) - r.fallback_ops;
    r.fallback_reasons = exe.compile_report().fallback_reasons;
  }
  if (out.outputs.size() != expected.size())
    return fmt::format("{} output(s), expected {}", out.outputs.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    Comparison c = compare(expected[i].tensor, out.outputs[i], r.tolerance);
    r.max_abs_error = std::max(r.max_abs_error, c.max_abs_error);
    if (!c.ok)
      return fmt::format("{}: output {} '{}': {}", dir.filename().string(), i,
                         g.value(g.outputs()[i]).name, c.message);
  }
  return "";
}

}  // namespace

std::vector<std::string> default_suites() {
  return {"node", "pytorch-converted", "pytorch-operator", "simple"};
}

Tolerance tolerance_for(const std::string& report_precision, const std::string& requested) {
  std::string basis = precision_class(report_precision);
  if (basis.empty()) basis = precision_class(requested);
  if (basis == "bf16") return {1e-2, 1e-2, basis};
  if (basis == "f16") return {5e-3, 1e-3, basis};
  if (basis == "tf32") return {5e-3, 1e-3, basis};
  if (basis == "bf16x3") return {1e-3, 1e-5, basis};
  return {1e-3, 1e-7, "f32"};
}

Comparison compare(const ir::HostTensor& expected, const ir::HostTensor& actual,
                   const Tolerance& tol) {
  Comparison c;
  if (expected.dtype() != actual.dtype() || expected.shape() != actual.shape()) {
    c.ok = false;
    c.message = fmt::format("got {}, expected {}", actual.type().str(), expected.type().str());
    return c;
  }
  bool exact = !ir::is_floating(expected.dtype());
  // A 16-bit float output is right to within one unit in its last place (see conformance.h).
  double rtol = tol.rtol;
  if (expected.dtype() == DType::bf16) rtol = std::max(rtol, std::ldexp(1.0, -7));
  if (expected.dtype() == DType::f16) rtol = std::max(rtol, std::ldexp(1.0, -10));
  int64_t bad = 0, worst = -1;
  double worst_excess = -1;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    double e = ir::element_as_double(expected, i), a = ir::element_as_double(actual, i);
    bool ok;
    double err = 0;
    if (exact) {
      ok = integer_equal(expected, actual, i);
      err = std::fabs(a - e);
    } else if (std::isnan(e) || std::isnan(a)) {
      ok = std::isnan(e) && std::isnan(a);
      err = ok ? 0 : INFINITY;
    } else if (std::isinf(e) || std::isinf(a)) {
      ok = e == a;
      err = ok ? 0 : INFINITY;
    } else {
      err = std::fabs(a - e);
      ok = err <= tol.atol + rtol * std::fabs(e);
    }
    c.max_abs_error = std::max(c.max_abs_error, err);
    if (!ok) {
      ++bad;
      double excess = err - (tol.atol + rtol * std::fabs(e));
      if (worst < 0 || excess > worst_excess || std::isnan(excess)) {
        worst = i;
        worst_excess = excess;
      }
    }
  }
  if (bad > 0) {
    c.ok = false;
    c.message = fmt::format(
        "{} of {} elements differ, max abs error {:.3g}; at {} expected {:.8g}, got {:.8g} "
        "(rtol {:g}, atol {:g})",
        bad, expected.numel(), c.max_abs_error, index_str(expected.shape(), worst),
        ir::element_as_double(expected, worst), ir::element_as_double(actual, worst), rtol,
        tol.atol);
  }
  return c;
}

std::vector<TestCase> discover(const std::string& root_dir) {
  fs::path root(root_dir);
  std::error_code ec;
  if (!fs::is_directory(root, ec))
    throw InvalidArgument(fmt::format("test suite folder '{}' does not exist", root_dir));
  auto name_of = [](const fs::path& p) { return p.filename().string(); };
  fs::path canonical = fs::weakly_canonical(root, ec);
  if (fs::exists(root / "model.onnx"))
    return {TestCase{name_of(canonical.parent_path()) + "/" + name_of(canonical), root.string()}};
  std::vector<TestCase> out;
  std::vector<fs::path> children;
  for (const auto& e : fs::directory_iterator(root))
    if (e.is_directory()) children.push_back(e.path());
  std::sort(children.begin(), children.end());
  for (const fs::path& child : children) {
    if (fs::exists(child / "model.onnx")) {
      out.push_back({name_of(canonical) + "/" + name_of(child), child.string()});
      continue;
    }
    std::vector<fs::path> tests;
    for (const auto& e : fs::directory_iterator(child))
      if (e.is_directory() && fs::exists(e.path() / "model.onnx")) tests.push_back(e.path());
    std::sort(tests.begin(), tests.end());
    for (const fs::path& t : tests) out.push_back({name_of(child) + "/" + name_of(t), t.string()});
  }
  if (out.empty())
    throw InvalidArgument(
        fmt::format("no ONNX tests (folders with model.onnx) under '{}'", root_dir));
  return out;
}

const char* status_name(Status s) {
  switch (s) {
    case Status::passed:
      return "pass";
    case Status::failed:
      return "FAIL";
    case Status::skipped:
      return "skip";
  }
  return "?";
}

TestResult run_test(const TestCase& test, const RunnerOptions& options) {
  TestResult r;
  r.name = test.name;
  r.tolerance = tolerance_for("", options.precision);
  auto start = std::chrono::steady_clock::now();
  try {
    fs::path dir(test.dir);
    onnx_import::ImportOptions io;
    io.zero_dim_is_batch = false;  // the test models declare exact shapes, empty tensors included
    onnx_import::ImportedModel model = onnx_import::import_model((dir / "model.onnx").string(), io);
    std::vector<fs::path> sets = data_sets(dir);
    if (sets.empty()) throw IoError("no test_data_set_* folders");
    for (const fs::path& set : sets) {
      std::string failure = run_data_set(model.graph, set, options, r);
      ++r.data_sets;
      if (!failure.empty()) {
        r.status = Status::failed;
        r.detail = failure;
        break;
      }
    }
  } catch (const UnsupportedOpError& e) {
    r.status = Status::skipped;
    r.detail = e.op_types().empty() ? e.what()
                                    : fmt::format("unsupported {}", fmt::join(e.op_types(), ", "));
  } catch (const Error& e) {
    r.status = Status::failed;
    r.detail = fmt::format("{} error: {}", error_kind_name(e.kind()), e.what());
  } catch (const std::exception& e) {
    r.status = Status::failed;
    r.detail = fmt::format("internal error: {}", e.what());
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

Summary run_tests(const std::vector<TestCase>& tests, const RunnerOptions& options,
                  const std::function<void(const TestResult&)>& on_result) {
  Device(options.device).require_available();
  Summary s;
  for (const TestCase& t : tests) {
    TestResult r = run_test(t, options);
    (r.status == Status::passed ? s.passed : r.status == Status::failed ? s.failed : s.skipped)++;
    if (r.status == Status::passed && r.fallback_ops > 0) ++s.passed_with_fallback;
    if (on_result) on_result(r);
    s.results.push_back(std::move(r));
  }
  return s;
}

std::string format_result(const TestResult& r) {
  std::string line = fmt::format("{}  {}", status_name(r.status), r.name);
  if (r.status == Status::passed && r.fallback_ops > 0)
    return line + fmt::format("  (max abs error {:.3g}; cpu fallback for {} of {} ops{}{})",
                              r.max_abs_error, r.fallback_ops, r.fallback_ops + r.device_ops,
                              r.fallback_reasons.empty() ? "" : ": ",
                              fmt::join(r.fallback_reasons, "; "));
  if (r.status == Status::passed)
    return line + fmt::format("  (max abs error {:.3g})", r.max_abs_error);
  return line + ": " + r.detail;
}

std::string format_summary(const Summary& s) {
  std::string line = fmt::format("{} passed, {} failed, {} skipped", s.passed, s.failed, s.skipped);
  if (s.passed_with_fallback > 0)
    line += fmt::format(" ({} of the passed with ops on the cpu fallback)", s.passed_with_fallback);
  return line;
}

}  // namespace mimic::conformance
