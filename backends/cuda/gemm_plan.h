// Row-major matrix products expressed as cuBLAS (column-major) strided-batched GEMM calls.
//
// A row-major matrix X[r, c] with leading dimension ld is, read column-major, X^T[c, r] with the
// same ld. So C = A B (row-major) is C^T = B^T A^T (column-major): cuBLAS gets B as its first
// operand, A as its second, m = N, n = M. MatMul's numpy batch broadcasting becomes one
// strided-batched call when the batch dims merge into one dim with a constant stride per operand (0
// for a broadcast operand), otherwise one call per index of the outer batch dims.
#pragma once

#include <cstdint>
#include <vector>

#include "frontend/ir/shape.h"

namespace mimic::backends::cuda {

// The arguments of cublasGemmStridedBatchedEx, column-major. `a` and `b` here are cuBLAS's
// operands: a is the row-major product's B, b its A.
struct ColMajorGemm {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0, batch = 1;
};

// A row-major operand: element offset, leading dimension (row stride), batch stride, transposed.
struct RowOperand {
  int64_t offset = 0, ld = 0, stride = 0;
  bool trans = false;
};

// One call: C[M, N] = op(A)[M, K] op(B)[K, N] for `batch` matrices; offsets in elements of the
// row-major operands' buffers.
struct GemmCall {
  ColMajorGemm g;
  int64_t a_offset = 0, b_offset = 0, c_offset = 0;
};

GemmCall row_major_gemm(int64_t m, int64_t n, int64_t k, RowOperand a, RowOperand b, RowOperand c,
                        int64_t batch = 1);

// MatMul with numpy semantics (1-D operands promoted, batch dims broadcast).
struct MatmulPlan {
  int64_t m = 0, n = 0, k = 0, batches = 1;
  std::vector<GemmCall> calls;
};
MatmulPlan plan_matmul(const ir::Shape& a, const ir::Shape& b);

// True when every size and leading dimension fits cuBLAS's 32-bit int arguments.
bool fits_cublas(const GemmCall& call);

}  // namespace mimic::backends::cuda
