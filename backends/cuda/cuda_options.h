// CompileOptions as the CUDA backend reads them. Validated before the device is touched, so bad
// options are reported the same way on machines with and without a GPU.
//   precision: "default" = TF32 tensor cores for f32 MatMul/Gemm/Conv (16-bit inputs use their
//              own tensor-core path with f32 accumulation), "highest" = full fp32 GEMMs.
//   options:   timing=ops|run       per-op CUDA events (default) or only the whole run
//              workspace_mb=N       bound on im2col/col2im scratch per convolution (default 256)
//              graph=off|on         launch every kernel each run (default), or capture the
//                                   run's launches once as a CUDA graph and replay it
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "backends/backend.h"

namespace mimic::backends::cuda {

struct CudaOptions {
  bool tf32 = true;
  bool per_op_timing = true;
  int64_t workspace_bytes = int64_t{256} << 20;
  bool use_graph = false;
};

// Throws InvalidArgument naming the option, its value and what is accepted.
CudaOptions parse_options(const CompileOptions& options);
std::map<std::string, std::string> option_help();

// "0" -> 0, "" -> 0; -1 for anything that is not a non-negative integer.
int parse_device_index(const std::string& arg);

}  // namespace mimic::backends::cuda
