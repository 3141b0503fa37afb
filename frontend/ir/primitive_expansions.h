// Ops written with the IR's primitive ops for backends without a kernel of their own (tpu-emu):
// InstanceNormalization as reductions and elementwise ops (what XLA emits for instance and group
// normalization on a TPU: it has no normalization unit), DepthToSpace and SpaceToDepth as a
// reshape, a transpose and a reshape (ONNX's own definition of both).
#pragma once

#include "frontend/ir/graph_builder.h"

namespace mimic::ir {

// Node `n`'s ops for inputs `in` (values of b's graph); returns its output.
ValueId expand_instance_norm(GraphBuilder& b, const Node& n, const std::vector<ValueId>& in);
ValueId expand_depth_space(GraphBuilder& b, const Node& n, ValueId x);

}  // namespace mimic::ir
