// The cpu backend: runs every IR op on the host (the numerics oracle for all other backends).
#pragma once

#include <memory>
#include <vector>

#include "backends/backend.h"
#include "frontend/ir/shape_inference.h"

namespace mimic::backends::cpu {

std::unique_ptr<Backend> make_backend();

// Evaluates single nodes for constant folding during shape inference.
std::unique_ptr<ir::ConstantEvaluator> make_evaluator();

// Runs one node on host tensors (inputs in node order, nullptr-free; omitted optional inputs as
// undefined tensors). Used by the evaluator and by emulators for host-side ops.
std::vector<ir::HostTensor> run_node(const ir::Graph& g, const ir::Node& n,
                                     const std::vector<ir::HostTensor>& inputs);

}  // namespace mimic::backends::cpu
