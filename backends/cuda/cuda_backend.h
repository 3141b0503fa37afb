// The cuda backend: runs mimic graphs on NVIDIA GPUs ("cuda:0", "cuda:1", ...) with cuBLAS GEMMs
// and mimic's own kernels (backends/cuda/kernels), traced per op with CUDA events. Built when CMake
// finds a CUDA toolkit; on machines without a driver or GPU, its device is listed as unavailable
// with the CUDA runtime's reason and compiling for it raises DeviceUnavailableError.
#pragma once

#include <memory>

#include "backends/backend.h"

namespace mimic::backends {

std::unique_ptr<Backend> make_cuda_backend();

}  // namespace mimic::backends
