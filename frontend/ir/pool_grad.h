// Pooling gradients as window ops of the IR, for the gradient rules and for backends without a
// MaxPoolGrad kernel: a pool's window tensor ([K, N, C, out...]: window element k of every output
// position, one strided Slice per kernel offset) and its transpose (a ConvTranspose with one-hot
// kernels that adds each window's values back at their input positions). Every op runs on the
// chips' vector and matrix units.
#pragma once

#include "frontend/ir/graph_builder.h"
#include "frontend/ir/nn_geometry.h"

namespace mimic::ir {

// [K, N, C, out...] of channels-first `x`; padding reads `pad_value`.
ValueId window_tensor(GraphBuilder& b, ValueId x, const WindowGeometry& w, double pad_value);

// The transpose of window_tensor(): [K, N, C, out...] values added at their input positions.
ValueId scatter_windows(GraphBuilder& b, ValueId windows, const WindowGeometry& w);

// MaxPoolGrad node `n` (inputs X, Y, dY already in b's graph; channels first or last) as window
// ops: each window's dY at the first element equal to Y. f32 only.
ValueId expand_max_pool_grad(GraphBuilder& b, const Node& n);

// The gradient of MaxPoolGrad's dY: each window reads `g` (shaped like X) at its first element
// equal to Y, giving a tensor shaped like Y.
ValueId max_pool_grad_of_dy(GraphBuilder& b, const Node& n, ValueId g);

}  // namespace mimic::ir
