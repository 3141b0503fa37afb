// Executes a CUDA-backend program (backends/cuda/program.h) on the host: buffers in host memory,
// every per-element and per-row instruction through the same device_math.h bodies the GPU kernels
// run, GEMMs as column-major loops over exactly the arguments cuBLAS receives. What it does not
// exercise: launch configurations, the warp-parallel row paths of kernels/reduce.cu, cuBLAS itself.
#pragma once

#include <vector>

#include "backends/cuda/program.h"
#include "frontend/ir/host_tensor.h"

namespace mimic::testing {

// planned_arena: arena buffers at their planned offsets in one block (checks the memory plan);
// separate_buffers: one allocation per buffer (an out-of-bounds access is caught by ASan).
enum class EmulatedMemory { planned_arena, separate_buffers };
// automatic: 32-bit index arithmetic where the GPU launcher would choose it; wide: always 64-bit.
enum class EmulatedIndex { automatic, wide };

std::vector<ir::HostTensor> emulate_program(const backends::cuda::Program& program,
                                            const std::vector<ir::HostTensor>& inputs,
                                            EmulatedMemory memory = EmulatedMemory::planned_arena,
                                            EmulatedIndex index = EmulatedIndex::automatic);

}  // namespace mimic::testing
