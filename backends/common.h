// Helpers every backend shares.
#pragma once

#include <string>

#include "backends/backend.h"

namespace mimic::backends {

// "f32[8,3,224,224] f32[64,3,7,7] -> f32[8,64,112,112]".
std::string node_shapes(const ir::Graph& g, const ir::Node& n);
// True for nodes whose outputs are all constant (folded): no backend runs them.
bool is_folded(const ir::Graph& g, const ir::Node& n);

}  // namespace mimic::backends
