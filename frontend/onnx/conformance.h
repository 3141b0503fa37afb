// Conformance runner over the ONNX backend test data (Debian's libonnx-testdata: node/,
// pytorch-converted/, pytorch-operator/, simple/; each test is a folder with model.onnx and
// test_data_set_*/input_*.pb, output_*.pb). Each test is imported, compiled for a device, run on
// every data set and compared with the expected outputs.
//
// Outcomes: passed; failed (wrong values, shapes or dtypes, or any error other than the ones
// below); skipped (the importer or the device reports something unsupported: an op, an op
// variant, a dtype such as UINT8 or STRING).
//
// Tolerances: |actual - expected| <= atol + rtol * |expected| elementwise, as
// numpy.testing.assert_allclose in the ONNX backend test runner; NaN matches NaN, infinities must
// match exactly; integer and bool outputs must be equal. rtol/atol follow the precision the device
// computed in (RunReport::precision, else the requested compile precision):
//   f32 (cpu, TPU "highest", IPU "float32", "fp32"):  rtol 1e-3, atol 1e-7 (ONNX's defaults)
//   bf16x3 (TPU "high": three bf16 passes):            rtol 1e-3, atol 1e-5
//   tf32 (10-bit mantissa, f32 accumulation):          rtol 5e-3, atol 1e-3
//   f16 (IPU "float16", "fp16", "half"):               rtol 5e-3, atol 1e-3
//   bf16 (TPU "default": one bf16 pass):               rtol 1e-2, atol 1e-2 (JAX's test_util)
// The looser ones allow one rounding of each matrix-unit operand (unit roundoff 2^-8 for bf16,
// 2^-11 for f16/tf32) plus accumulation over the small reduction lengths of these tests. tf32
// rounds its operands exactly as f16 does, so it gets f16's bounds: on an H200, cuBLAS in TF32
// misses atol 1e-4 by up to 4.5e-4 on pytorch-converted's Conv3d and ConvTranspose2d tests.
// Outputs stored as 16-bit floats are right to within one unit in the last place of their format
// (rtol at least 2^-7 for bf16, 2^-10 for f16): the format cannot hold the exact result and
// conversions differ in rounding (ONNX 1.12's data truncates float->bfloat16; mimic rounds to
// nearest even, as PyTorch and TPUs do).
//
// Static shapes: inputs that fix shapes (Reshape's shape, Slice's starts, reduce axes, ...; see
// ir::shape_defining_inputs) are compiled as constants holding each data set's values, as XLA
// compiles them; inputs no node reads are compiled as zeros. bfloat16 test tensors are stored as
// UINT16 in the data (numpy has no bfloat16) and read as bf16.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "frontend/ir/host_tensor.h"

namespace mimic::conformance {

inline constexpr const char* kDefaultSuiteRoot = "/usr/share/libonnx-testdata/data";
// The suites of kDefaultSuiteRoot that hold runnable tests ("real/" only lists model URLs).
std::vector<std::string> default_suites();

struct Tolerance {
  double rtol = 1e-3, atol = 1e-7;
  std::string basis = "f32";  // the precision class the numbers were chosen for
};
// `report_precision` is what the device says it computed in; `requested` the compile option.
Tolerance tolerance_for(const std::string& report_precision, const std::string& requested = "");

struct Comparison {
  bool ok = true;
  double max_abs_error = 0;
  std::string message;  // why not ok: dtype, shape or the worst element and the count off
};
Comparison compare(const ir::HostTensor& expected, const ir::HostTensor& actual,
                   const Tolerance& tol);

struct TestCase {
  std::string name;  // "node/test_abs"
  std::string dir;
};
// Tests under `root`: a test folder (with model.onnx), a suite folder of tests, or a folder of
// suites. Sorted by name; InvalidArgument when there are none.
std::vector<TestCase> discover(const std::string& root);

enum class Status { passed, failed, skipped };
const char* status_name(Status s);

struct TestResult {
  std::string name;
  Status status = Status::passed;
  std::string detail;  // why it failed or was skipped
  double max_abs_error = 0;
  int data_sets = 0;
  Tolerance tolerance;
  double seconds = 0;
  // Ops of the compiled model (first data set) that ran on the device and that fell back to the
  // cpu backend because the device cannot run them.
  int device_ops = 0, fallback_ops = 0;
  std::vector<std::string> fallback_reasons;  // "LSTM 'node': why the device declined it"
};

struct RunnerOptions {
  std::string device = "cpu";
  std::string precision = "default";
  // Compile each data set's model for the device and stop there (no run, no comparison): a
  // compiler sweep that needs neither the device model nor the time to run it.
  bool compile_only = false;
};

TestResult run_test(const TestCase& test, const RunnerOptions& options);

struct Summary {
  int passed = 0, failed = 0, skipped = 0;
  int passed_with_fallback = 0;  // passed, but some ops ran on the cpu backend
  std::vector<TestResult> results;
};
Summary run_tests(const std::vector<TestCase>& tests, const RunnerOptions& options,
                  const std::function<void(const TestResult&)>& on_result = {});

// "pass  node/test_abs" (with "cpu fallback for N of M ops" when some fell back) / "FAIL
// node/test_x: ..." / "skip  node/test_y: unsupported ...".
std::string format_result(const TestResult& r);
// "N passed, N failed, N skipped", and "(K of them with ops on the cpu fallback)" when K > 0.
std::string format_summary(const Summary& s);

}  // namespace mimic::conformance
