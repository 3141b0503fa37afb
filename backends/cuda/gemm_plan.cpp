#include "backends/cuda/gemm_plan.h"

#include <climits>

#include "backends/cuda/tensor_layout.h"

namespace mimic::backends::cuda {

GemmCall row_major_gemm(int64_t m, int64_t n, int64_t k, RowOperand a, RowOperand b, RowOperand c,
                        int64_t batch) {
  GemmCall call;
  ColMajorGemm& g = call.g;
  g.trans_a = b.trans;
  g.trans_b = a.trans;
  g.m = n;
  g.n = m;
  g.k = k;
  g.lda = b.ld;
  g.ldb = a.ld;
  g.ldc = c.ld;
  g.stride_a = b.stride;
  g.stride_b = a.stride;
  g.stride_c = c.stride;
  g.batch = batch;
  call.a_offset = a.offset;
  call.b_offset = b.offset;
  call.c_offset = c.offset;
  return call;
}

MatmulPlan plan_matmul(const ir::Shape& sa, const ir::Shape& sb) {
  ir::Shape a = sa.rank() == 1 ? ir::Shape({1, sa[0]}) : sa;
  ir::Shape b = sb.rank() == 1 ? ir::Shape({sb[0], 1}) : sb;
  MatmulPlan plan;
  plan.m = a.dim(-2);
  plan.k = a.dim(-1);
  plan.n = b.dim(-1);
  ir::Shape ba(std::vector<int64_t>(a.dims().begin(), a.dims().end() - 2));
  ir::Shape bb(std::vector<int64_t>(b.dims().begin(), b.dims().end() - 2));
  ir::Shape batch = ir::broadcast_shapes(ba, bb, "MatMul");
  plan.batches = batch.rank() ? batch.numel() : 1;
  int64_t m = plan.m, n = plan.n, k = plan.k;
  // One B for every matrix of A: a single tall GEMM over batches * M rows.
  if (bb.rank() == 0) {
    plan.calls.push_back(row_major_gemm(plan.batches * m, n, k, {0, k, 0, false}, {0, n, 0, false},
                                        {0, n, 0, false}));
    return plan;
  }
  // Batch strides in matrices, merged; the innermost merged dim becomes cuBLAS's batch.
  StridedLayout l =
      merge_dims(batch.dims(), {row_major_strides(batch.dims()), broadcast_strides(ba, batch),
                                broadcast_strides(bb, batch)});
  int r = l.rank();
  int64_t inner = l.size[r - 1], outer = 1;
  for (int d = 0; d + 1 < r; ++d) outer *= l.size[d];
  for (int64_t o = 0; o < outer; ++o) {
    int64_t rem = o, oa = 0, ob = 0, oc = 0;
    for (int d = r - 2; d >= 0; --d) {
      int64_t i = rem % l.size[d];
      rem /= l.size[d];
      oc += i * l.strides[0][d];
      oa += i * l.strides[1][d];
      ob += i * l.strides[2][d];
    }
    plan.calls.push_back(
        row_major_gemm(m, n, k, {oa * m * k, k, l.strides[1][r - 1] * m * k, false},
                       {ob * k * n, n, l.strides[2][r - 1] * k * n, false},
                       {oc * m * n, n, l.strides[0][r - 1] * m * n, false}, inner));
  }
  return plan;
}

bool fits_cublas(const GemmCall& call) {
  const ColMajorGemm& g = call.g;
  for (int64_t v : {g.m, g.n, g.k, g.lda, g.ldb, g.ldc, g.batch})
    if (v > INT_MAX) return false;
  return true;
}

}  // namespace mimic::backends::cuda
