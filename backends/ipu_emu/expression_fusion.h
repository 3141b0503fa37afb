// Elementwise expression fusion, as Graphcore's frameworks hand chains of elementwise ops to
// popops::map as one expression, for which poplibs generates a single vertex
// (lib/popops/ExpressionGenerator.cpp: GenerateCodeletFromMapExpr): the chain runs as one compute
// set, and its intermediate values never exist in tile memory.
//
// An elementwise op is fused into the op that runs right after it (in execution order, on the same
// IPU, in the same pass of a training step) when that op is elementwise too and is the only reader
// of its result, which is of the reader's own size (not a broadcast operand), not a graph output
// and not kept across the step. A square x * x is fused the same way into a ReduceSum or
// ReduceMean that runs right after it and alone reads it, as poplibs sums a BatchNorm's squares
// with one popops SQUARE_ADD reduction (poplin/Norms.cpp, normReduce).
// Modeled: the fused value takes no memory; the pair is one compute set (control code and vertex
// state counted once, for the reader) behind one sync. Approximated: each op keeps its own
// exchange of its other operands and its own per-element cost (the expression vertex's saved
// loads and stores of the intermediate are not credited).
#pragma once

#include <vector>

#include "frontend/ir/graph.h"

namespace mimic::backends::ipu_emu {

// x * x: a square poplibs' SQUARE_ADD reduction computes inside a sum.
bool is_square(const ir::Node& n);

// Per position of `order` (device nodes in execution order, `stage` of each): true when that
// node's result is fused into the next node's expression. `kept` marks values that live across
// the step (resident parameters and state).
std::vector<bool> plan_expression_fusion(const ir::Graph& g, const std::vector<int>& order,
                                         const std::vector<uint32_t>& stage,
                                         const std::vector<bool>& kept);

}  // namespace mimic::backends::ipu_emu
