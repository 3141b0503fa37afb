// A compiled program bound to one GPU: constants uploaded once at compile time, pinned staging
// buffers for inputs and outputs, CUDA events around every step. run() copies the inputs in,
// enqueues every step on the device's stream, copies the outputs back, and reports per-op GPU time
// (events), host launch time, and traces both on two tracks linked by a correlation id.
#pragma once

#include <memory>
#include <string>

#include "backends/backend.h"
#include "backends/cuda/cuda_options.h"
#include "backends/cuda/program.h"

namespace mimic::backends::cuda {

class DeviceContext;

std::unique_ptr<Executable> make_executable(DeviceContext& device, Program program,
                                            const CudaOptions& options, bool compile_only,
                                            CompileReport report);

}  // namespace mimic::backends::cuda
