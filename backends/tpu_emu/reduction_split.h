// A reduction over axes that are not adjacent (BatchNormalization's batch statistics in a training
// step reduce NCHW over axes 0, 2 and 3) is split into one reduction per block of adjacent axes,
// innermost block first, as XLA's TPU compiler splits reductions into ones it can tile. Sum, mean
// (equal counts per block), max, min and sum of squares (then sums) compose exactly up to the
// order of f32 additions.
#pragma once

#include <optional>

#include "frontend/ir/graph.h"

namespace mimic::backends::tpu_emu {

// True for a reduction this pass can split (op, constant axes, at least two blocks).
bool splittable_reduction(const ir::Graph& g, const ir::Node& n);

// `g` with every splittable reduction split; std::nullopt when there is none. Inputs, outputs,
// value roles and node phases are kept.
std::optional<ir::Graph> split_reductions(const ir::Graph& g);

}  // namespace mimic::backends::tpu_emu
