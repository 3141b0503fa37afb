// Recomputation (XLA's rematerialization, PopTorch's recomputation; Chen et al. 2016, "Training
// Deep Nets with Sublinear Memory Cost"): a training step keeps fewer forward activations alive
// until their backward use and recomputes the others from the kept ones ("checkpoints") just
// before the backward node that needs them. The recomputed nodes are real nodes of the step
// (named "recompute/<forward node>", phase backward), so every backend runs them and every
// emulator prices them: the memory saved and the cycles paid are both measured, not estimated.
#pragma once

#include <string>
#include <vector>

#include "frontend/api/train_graph.h"

namespace mimic {

enum class Recompute {
  none,
  // Keep the outputs of the matrix ops (Conv, ConvTranspose, MatMul, Gemm) and recompute the
  // cheap ones between them (normalizations, activations, pools, elementwise ops, reshapes):
  // PopART's "Standard" recomputation, XLA's per-layer rematerialization of a conv/dense block.
  checkpoints,
  // Keep only the values that cross the boundaries of about sqrt(n) segments of the forward
  // pass (Chen et al.'s sqrt(n) schedule) and recompute each segment whole before its backward:
  // about one extra forward pass for activations of O(sqrt(n)) layers. Named checkpoints
  // (apply_recompute's `checkpoints`) replace the sqrt(n) boundaries, as PopTorch's
  // recomputationCheckpoint, IPU TensorFlow's pipeline splits on one IPU and PyTorch's
  // torch.utils.checkpoint segments place them by hand.
  full
};

Recompute parse_recompute(const std::string& name);  // none|checkpoints|full
const char* recompute_name(Recompute mode);

// Rewrites t.graph in place (same inputs and outputs, so TrainGraph's slots stay valid). Graph
// inputs, constants and values that are graph outputs are never recomputed (the IR has no random
// ops: dropout masks are inputs of the step). `checkpoints` (mode full only): the forward nodes
// whose outputs are kept, by name (e.g. "layer1.0.relu"); InvalidArgument for a name that is no
// forward node, or with another mode. Returns the number of nodes added.
int apply_recompute(TrainGraph& t, Recompute mode,
                    const std::vector<std::string>& checkpoints = {});

}  // namespace mimic
