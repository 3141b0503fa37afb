// The op conformance cases: small graphs (one op, or a short chain where storage aliasing
// matters) with inputs, covering every op of the IR with the variants the kernels distinguish
// (dtypes, layouts, broadcasting patterns, groups, strides, padding modes, the CUDA kernels' warp
// and per-thread row paths). They run on every registered device against the cpu backend's
// reference kernels (op_conformance_test), on the GPU (cuda_device_test) and on the host emulator
// of the lowered CUDA program (cuda_emulated_test).
//
// Tolerances (|got - want| <= atol * max|want| + rtol * |want|, elementwise):
//   integer and bool outputs, data movement: exact
//   f32, no matrix op:           rtol 2e-5, atol 1e-6  (CUDA vs glibc math functions differ by
//   ulps) f32 matrix op, fp32 GEMMs:   rtol 1e-4, atol 1e-4  (summation order) f32 matrix op, TF32
//   GEMMs:   rtol 1e-2, atol 5e-3  (10-bit mantissa operands) f16 outputs:                 rtol
//   4e-3, atol 2e-3  (a few fp16 ulps) bf16 outputs:                rtol 2e-2, atol 1e-2  (a few
//   bf16 ulps)
// Devices whose matrix units round operands (TPU default: one bf16 pass) get the bounds of that
// format on their matrix cases; IPU float16 holds every tensor as f16 (tolerance_for with a
// numerics class).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "frontend/ir/graph.h"

namespace mimic::testing {

struct OpCase {
  std::string name;  // "Conv/nhwc_3x3_s2_bias"
  ir::Graph graph;
  std::vector<ir::HostTensor> inputs;
  std::map<std::string, std::string> options;  // cuda backend options for this case
  bool matrix = false;                         // runs GEMMs (TF32 under precision=default)
  bool data_movement = false;                  // results must match bit for bit
};

std::vector<OpCase> op_cases();

// IR ops without a case of their own, with the reason.
const std::map<ir::OpType, std::string>& ops_without_cases();

// Nodes the named backend places on the cpu fallback by design: every node whose op is in `ops`
// (empty: any op) in a case whose name matches one of the '|'-separated globs of `cases`
// (fnmatch: "Pad/edge|Reduce*/axes_0_2_dropped"). The conformance test checks the list both ways:
// a listed node that runs on the device fails it, as does an unlisted node that falls back.
struct ExpectedFallback {
  std::string backend;  // "cuda", "tpu-emu", "ipu-emu"
  std::vector<ir::OpType> ops;
  std::string cases;
  std::string reason;
};
const std::vector<ExpectedFallback>& expected_fallbacks();
bool matches(const ExpectedFallback& e, const std::string& case_name, ir::OpType op);
// The listed reason when `backend` is expected to run `op` of case `case_name` on cpu, else "".
std::string expected_fallback(const std::string& backend, const std::string& case_name,
                              ir::OpType op);
// True when `backend` runs every node of `c` itself (no expected fallback).
bool runs_entirely_on(const std::string& backend, const OpCase& c);

struct Tolerance {
  double rtol = 0, atol = 0;
};
Tolerance tolerance_for(const OpCase& c, ir::DType output, bool tf32);
// `numerics`: the class of the device's matrix arithmetic: "f32" (fp32 or bf16x6/bf16x3 passes),
// "tf32", "bf16" (one bf16 pass), or "f16_storage" (IPU float16: every f32 tensor is held as f16,
// so every floating output, data movement included, is off by a few f16 ulps: rtol and atol 4e-3,
// twice the largest error seen).
Tolerance tolerance_for(const OpCase& c, ir::DType output, const std::string& numerics);

// "" when `got` matches `want` within `tol`, else the first mismatch ("element 7: got 1.5,
// want 1.25").
std::string compare_tensors(const ir::HostTensor& got, const ir::HostTensor& want, Tolerance tol);

// "max|got - want| / max|want| = 3.1e-07, 2% of the tolerance": printed by the GPU tests for every
// case, so the tolerances can be set from what the GPU produces (ctest's LastTest.log keeps it).
std::string error_summary(const ir::HostTensor& got, const ir::HostTensor& want, Tolerance tol);

}  // namespace mimic::testing
