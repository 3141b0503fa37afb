// Cheap elementwise values recomputed in the backward pass instead of saved, as XLA's fusion
// duplicates a cheap elementwise producer into every consumer fusion (forward and backward live in
// one HLO module, so a backward fusion reads the producer's inputs rather than its result).
//
// A forward value qualifies when an elementwise op (or a broadcast) outside the matrix-unit
// fusions computes it from values that are in HBM anyway (a convolution's output, a graph input),
// small ones (at most an eighth of its elements: per-channel statistics, scalars, constants) and
// other qualifying values, and its backward readers are elementwise ops, broadcasts and
// reductions. The backward pass then gets a copy of its producer (named "<node>.remat"), placed
// before its first backward reader, and the backward readers read the copy: loop fusion keeps
// both on chip (loop_fusion.h), so the value is neither written by the forward pass nor read back,
// and it leaves the saved activations, while the backward copy reads the producer's inputs (one
// more read of a value kept in HBM, which then stays alive into the backward pass). A training
// BatchNormalization written with primitive ops then saves its input alone, not its centered and
// normalized copies. Values are unchanged: the copy computes what the original computed.
//
// Within a phase, a reader of a kept value that runs after a reduction of it (plan_late_reads:
// (x - mean) * rstd after the variance of x - mean) gets a copy of the value's producer (named
// "<node>.dup") placed before it, when XLA would duplicate that producer (cheap and effectively
// unary, see DuplicationPlanner): the copy reads the producer's inputs from HBM again, as the
// reader's fusion does on the chip.
#pragma once

#include "frontend/ir/graph.h"

namespace mimic::backends::tpu_emu {

// The graph with qualifying values recomputed; `count` gets their number, `duplicated` the number
// of late reads given a copy of a cheap producer (loop_fusion.h's plan_late_reads). When neither
// rewrote anything, an empty graph is returned instead of a copy of `g`.
ir::Graph rematerialize_cheap_values(const ir::Graph& g, bool bf16_chip, int* count,
                                     int* duplicated);

}  // namespace mimic::backends::tpu_emu
