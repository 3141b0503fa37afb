// Analytical cycle counts of one GEMM on one systolic array, per dataflow.
//
// Y[M,N] = A[M,K] x W[K,N] on an array of R rows x C columns. The GEMM is cut into folds: the
// part of the problem that maps onto the array at once. One operand is stationary in the array
// for a fold while the other streams through it for T cycles (Kung & Leiserson; the fold/stream
// decomposition and the per-fold cost follow SCALE-Sim, Samajdar et al., ISPASS 2020):
//
//   dataflow                stationary        folds F                    streamed T
//   weight-stationary (ws)  W block R x C     ceil(K/R) * ceil(N/C) * P  M rows of A
//   output-stationary (os)  Y block R x C     ceil(M/R) * ceil(N/C) * P  K (A and W stream)
//   input-stationary  (is)  A^T block R x C   ceil(K/R) * ceil(M/C) * P  N columns of W
//
// P is the number of bf16 passes (precision default/high/highest = 1/3/6; int8 = 1): each pass
// is a full set of folds with other operand parts. L = R + C - 2 is the skew of the wavefront
// across the array (fill plus drain). Loading (ws, is) or unloading (os) the stationary block
// takes R cycles (one row per cycle, TPUv1: "the 256 cycles it takes to shift a tile in").
//
//   weight double-buffering off (classic, SCALE-Sim):  cycles = F * (R + T + L)
//   weight double-buffering on  (TPUv1 paper):         cycles = R + (F - 1) * max(T, R) + T + L
//
// With double-buffering the next fold's stationary block shifts in while the current fold
// streams (so a fold shorter than R stalls for the difference) and consecutive folds follow each
// other without draining the array; only the first load and the last skew are exposed.
//
// These closed forms are what the matrix unit's fold-by-fold schedule (matrix_unit.h) reduces to
// when every weight tile is on chip in time; the fidelity tests check that equality. Padding:
// partial folds cost as much as full ones, which is the utilization lost to shapes that are not
// multiples of the array. TPUv1 check (S1 sensitivity study): a 600x600 layer takes 9 folds on a
// 256x256 array, ~2 us each when every 64 KiB tile streams from DDR3 (18 us), and 4 folds of 4x
// the bytes on a 512x512 array (32 us); tests/tpu/roofline_test.cpp reproduces both.
#pragma once

#include <cstdint>

#include "models/tpu/tpu_spec.h"

namespace mimic::models::tpu {

struct GemmDims {
  int64_t m = 0, k = 0, n = 0;
};

struct FoldPlan {
  int64_t folds = 0;   // F, passes included
  int64_t stream = 0;  // T
  // Fold-grid extents (without passes): outer x inner chunks, chunk sizes along each.
  int64_t outer_chunks = 0, inner_chunks = 0;
};

inline int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

FoldPlan fold_plan(Dataflow d, const GemmDims& g, int64_t rows, int64_t cols, int64_t passes);

// The closed forms above.
uint64_t gemm_cycles(Dataflow d, const GemmDims& g, int64_t rows, int64_t cols,
                     bool double_buffering, int64_t passes);

// Bytes of weights (W) the array needs for fold `f` (0 <= f < folds): the stationary W tile in
// ws, the W columns streamed in os, the W rows streamed in is; weights are stored padded to the
// array, so partial folds move whole tiles.
uint64_t fold_weight_bytes(Dataflow d, const GemmDims& g, int64_t rows, int64_t cols,
                           int64_t passes, int64_t f, int64_t element_bytes);

}  // namespace mimic::models::tpu
