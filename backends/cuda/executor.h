// Enqueues a program's instructions on a CUDA stream: kernel launches (kernels/launch.h) and cuBLAS
// calls (cublasGemmStridedBatchedEx) with buffers resolved to device addresses.
#pragma once

#include <vector>

#include "backends/cuda/device_runtime.h"
#include "backends/cuda/program.h"

namespace mimic::backends::cuda {

struct DeviceBuffers {
  std::vector<char*> base;  // per program buffer
  ErrorSlot* error = nullptr;
  char* ptr(const BufRef& r) const { return r.valid() ? base[r.buffer] + r.offset : nullptr; }
};

void enqueue(const Instr& instr, const DeviceBuffers& buffers, cudaStream_t stream,
             cublasHandle_t blas);

}  // namespace mimic::backends::cuda
