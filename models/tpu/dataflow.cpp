#include "models/tpu/dataflow.h"

#include <algorithm>

namespace mimic::models::tpu {

FoldPlan fold_plan(Dataflow d, const GemmDims& g, int64_t rows, int64_t cols, int64_t passes) {
  FoldPlan p;
  switch (d) {
    case Dataflow::weight_stationary:
      p.outer_chunks = ceil_div(g.n, cols);  // column blocks of W
      p.inner_chunks = ceil_div(g.k, rows);  // row blocks of W (accumulated)
      p.stream = g.m;
      break;
    case Dataflow::output_stationary:
      p.outer_chunks = ceil_div(g.m, rows);
      p.inner_chunks = ceil_div(g.n, cols);
      p.stream = g.k;
      break;
    case Dataflow::input_stationary:
      p.outer_chunks = ceil_div(g.m, cols);
      p.inner_chunks = ceil_div(g.k, rows);
      p.stream = g.n;
      break;
  }
  p.folds = p.outer_chunks * p.inner_chunks * passes;
  return p;
}

uint64_t gemm_cycles(Dataflow d, const GemmDims& g, int64_t rows, int64_t cols,
                     bool double_buffering, int64_t passes) {
  FoldPlan p = fold_plan(d, g, rows, cols, passes);
  if (p.folds == 0 || p.stream == 0) return 0;
  int64_t r = rows, t = p.stream, skew = rows + cols - 2, f = p.folds;
  if (!double_buffering) return static_cast<uint64_t>(f * (r + t + skew));
  return static_cast<uint64_t>(r + (f - 1) * std::max(t, r) + t + skew);
}

uint64_t fold_weight_bytes(Dataflow d, const GemmDims& g, int64_t rows, int64_t cols,
                           int64_t passes, int64_t f, int64_t element_bytes) {
  FoldPlan p = fold_plan(d, g, rows, cols, passes);
  if (p.folds == 0 || f < 0 || f >= p.folds) return 0;
  // Weights are stored padded to the array in both dimensions (S1: 64 KiB tiles of 256x256 in the
  // weight memory; S3: "weight matrices are padded to 128 (256 on v6e)"), so a fold moves a whole
  // tile along the dimensions the array holds.
  int64_t elements = 0;
  switch (d) {
    case Dataflow::weight_stationary:
      elements = rows * cols;
      break;
    case Dataflow::output_stationary:
      elements = g.k * cols;
      break;
    case Dataflow::input_stationary:
      elements = rows * g.n;
      break;
  }
  return static_cast<uint64_t>(elements * element_bytes);
}

}  // namespace mimic::models::tpu
