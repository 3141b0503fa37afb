// Lowering of a graph to the CUDA backend's device program (program.h), on the host: per node, the
// kernels and cuBLAS calls with their parameters, the buffers with their lifetimes, the arena plan,
// and the constants to upload. Which nodes the backend runs is decided by unsupported_reason(),
// which looks at the same parameters lowering computes, so that every node it accepts lowers.
#pragma once

#include <string>

#include "backends/cuda/cuda_options.h"
#include "backends/cuda/program.h"
#include "frontend/ir/graph.h"

namespace mimic::backends::cuda {

// `g` is inferred with a bound batch; every non-folded node must be supported. Throws CompileError.
Program lower(const ir::Graph& g, const CudaOptions& options);

// "" when the cuda backend runs `n`, else a short reason ("i8 MatMul", "4 spatial dims", ...).
std::string unsupported_reason(const ir::Graph& g, const ir::Node& n);

}  // namespace mimic::backends::cuda
