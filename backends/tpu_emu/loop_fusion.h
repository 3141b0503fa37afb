// Loop fusion, as XLA fuses elementwise ops into loops (kLoop fusions) and into the reductions
// that read them (kInput fusions): a value computed by an elementwise op or a broadcast and read
// only by elementwise ops, broadcasts and reductions of the same step phase never reaches off-chip
// memory. Its producer's tiles stay in vector memory for its readers, so the value costs neither
// HBM traffic nor HBM bytes; the readers still pay their vector work.
//
// Modeled: the HBM reads and writes of every fused intermediate vanish, and so do its bytes in the
// HBM plan (a BatchNormalization or LayerNorm written as primitive ops streams its input once per
// pass, the statistics' and the normalization's, instead of once per op).
// Approximated: each op still runs as its own pass of the vector unit (the fused loop's ALU work is
// the sum of its ops'; a reader waits for its producer's whole pass, which on one vector unit per
// core changes the order of work, not its amount); a value read by several fusions is computed
// once where XLA duplicates cheap producers into each (across the forward and backward passes,
// rematerialize.h does); the fused tiles take no VMEM (XLA keeps them in vector registers). Values
// saved by the forward pass for the backward pass, graph outputs and the inputs and outputs of
// matrix-unit fusions stay in HBM.
// A kept value read after a reduction of it (a normalization after its variance) is not held
// across the reduction: XLA fuses a cheap producer into the late reader again, which reads the
// producer's inputs again (rematerialize.h makes that copy), and writes the value to HBM for the
// late reader otherwise (write_back_late_reads). So (x - mean) * rstd after a two-pass variance of
// x - mean reads x three times, as XLA's fusions do; a training BatchNorm on a TPU device takes
// the one-pass variance XLA computes (train_graph.h), which reads x twice.
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

// Per node of `g`: the values kept on chip (`kept_on_chip`) that it reads after a fusion barrier
// (a reduction, a matrix-unit op, a copy) that depends on them, as (x - mean) * rstd reads x - mean
// after the variance's reduction of it. No loop holds such a value across the barrier: XLA fuses
// its producer into the reader again, which reads the producer's inputs again, when the producer
// is cheap to duplicate (rematerialize.h), and writes it to HBM otherwise.
std::vector<std::vector<ir::ValueId>> plan_late_reads(const ir::Graph& g,
                                                      const std::vector<bool>& kept_on_chip);

// The late reads left once rematerialize.h duplicated the cheap producers: the value is written to
// HBM by the loop that computes it and read back by its late readers, while its other readers take
// it from that loop's tiles, as XLA's producer-consumer multi-output fusion writes a relu gradient
// beside the batch-norm gradient's sums that read it. Clears those values in `kept_on_chip`,
// counts them in `*written`, and returns per node the values it reads on chip that way (for
// plan_sibling_reads' result).
std::vector<std::vector<ir::ValueId>> write_back_late_reads(const ir::Graph& g,
                                                            std::vector<bool>& kept_on_chip,
                                                            int* written);

}  // namespace mimic::backends::tpu_emu
