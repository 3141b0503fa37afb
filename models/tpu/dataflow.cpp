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
  if (p.folds == 0) return 0;
  int64_t grid = f / passes;  // folds of one grid cell are consecutive, one per pass
  int64_t outer = grid / p.inner_chunks, inner = grid % p.inner_chunks;
  auto chunk = [](int64_t total, int64_t size, int64_t index) {
    return std::min(size, total - index * size);
  };
  int64_t elements = 0;
  switch (d) {
    case Dataflow::weight_stationary:
      elements = chunk(g.k, rows, inner) * chunk(g.n, cols, outer);
      break;
    case Dataflow::output_stationary:
      elements = g.k * chunk(g.n, cols, inner);
      break;
    case Dataflow::input_stationary:
      elements = chunk(g.k, rows, inner) * g.n;
      break;
  }
  return static_cast<uint64_t>(elements * element_bytes);
}

}  // namespace mimic::models::tpu
