// Loop fusion, as XLA fuses elementwise ops into loops (kLoop fusions) and into the reductions
// that read them (kInput fusions): a value computed by an elementwise op or a broadcast and read
// only by elementwise ops, broadcasts and reductions of the same step phase never reaches off-chip
// memory. Its producer's tiles stay in vector memory for its readers, so the value costs neither
// HBM traffic nor HBM bytes; the readers still pay their vector work.
//
// Modeled: the HBM reads and writes of every fused intermediate vanish, and so do its bytes in the
// HBM plan (a BatchNormalization or LayerNorm written as primitive ops streams its input once per
// reduction, instead of once per op).
// Approximated: each op still runs as its own pass of the vector unit (the fused loop's ALU work is
// the sum of its ops'; a reader waits for its producer's whole pass, which on one vector unit per
// core changes the order of work, not its amount); a value read by several fusions is computed
// once where XLA duplicates cheap producers into each (across the forward and backward passes,
// rematerialize.h does); the fused tiles take no VMEM (XLA keeps them in vector registers). Values
// saved by the forward pass for the backward pass, graph outputs and the inputs and outputs of
// matrix-unit fusions stay in HBM.
// Known undercount: a kept value whose reader runs after a reduction of that value stays "on chip"
// across the reduction, where no vector memory could hold it and XLA would fuse its producer into
// the reader again, re-reading the producer's inputs. So (x - mean) * rstd after a variance of
// (x - mean)^2 reads x twice, not three times (tpu-emu:v4 ResNet-50 training: one read of every
// BatchNorm input fewer in the forward pass, and one in the gradient, than XLA's fusions).
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

// Sibling multi-output fusion, as XLA's MultiOutputFusion pass (xla/service/multi_output_fusion.h)
// fuses sibling fusions that share an operand and have no path between them, so that the operand
// is read once for all of them: a batch normalization's gradient sums dy and dy * xhat in one pass
// over dy, not two. The TPU compiler is not public; the emulator assumes it does what the open
// backends do.
//
// Per node of `g`: the values it reads from the tiles a sibling already streamed from HBM. A node
// qualifies when it runs as a loop (elementwise, broadcast or reduction, outside the matrix-unit
// fusions), reads the value in full (a value of its own iteration space, not a broadcast operand),
// and an earlier loop of the same step phase streamed the value with no path between the two
// through a value in HBM: none at all (siblings), or one through values kept on chip only (one
// loop fusion, which also reads each operand once: (x - mean) * x streams x once). A loop that
// needs an HBM result of the first (x - sum(x) after sum(x)) streams the value again.
// Approximated as loop fusion is: the siblings still run as separate passes, and the shared tiles
// take no VMEM between them. `kept_on_chip` is plan_loop_fusion's result (those values are not in
// HBM at all).
std::vector<std::vector<ir::ValueId>> plan_sibling_reads(const ir::Graph& g, const FusionPlan& plan,
                                                         const std::vector<bool>& kept_on_chip);

}  // namespace mimic::backends::tpu_emu
