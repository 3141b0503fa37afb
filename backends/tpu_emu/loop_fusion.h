// Loop fusion, as XLA fuses elementwise ops into loops (kLoop fusions) and into the reductions
// that read them (kInput fusions): a value computed by an elementwise op or a broadcast and read
// only by elementwise ops, broadcasts and reductions of the same step phase never reaches off-chip
// memory. Its producer's tiles stay in vector memory for its readers, so the value costs neither
// HBM traffic nor HBM bytes; the readers still pay their vector work.
//
// Modeled: the HBM reads and writes of every fused intermediate vanish, and so do its bytes in the
// HBM plan (a BatchNormalization or LayerNorm written as primitive ops streams its input once per
// reduction and once for the normalization, as XLA's fusions do, instead of once per op).
// Approximated: each op still runs as its own pass of the vector unit (the fused loop's ALU work is
// the sum of its ops'; a reader waits for its producer's whole pass, which on one vector unit per
// core changes the order of work, not its amount); a value read by several fusions is computed
// once where XLA duplicates cheap producers into each (across the forward and backward passes,
// rematerialize.h does); the fused tiles take no VMEM (XLA keeps them in vector registers). Values
// saved by the forward pass for the backward pass, graph outputs and the inputs and outputs of
// matrix-unit fusions stay in HBM.
#pragma once

#include <vector>

#include "backends/tpu_emu/fusion.h"
#include "frontend/ir/graph.h"

namespace mimic::backends::tpu_emu {
// An elementwise op a fused loop computes (unary, binary and variadic ops; not Dropout or
// Identity).
bool is_loop_elementwise(const ir::Node& n);

// Per value of `g`: true when loop fusion keeps it on chip. `plan` is the matrix-unit fusion plan
// (their groups' values stay in HBM).
std::vector<bool> plan_loop_fusion(const ir::Graph& g, const FusionPlan& plan);

}  // namespace mimic::backends::tpu_emu
