// Dense f32 GEMM on oneDNN's sgemm (multithreaded through OpenMP; single-threaded when called
// inside an OpenMP parallel region): C = alpha * op(A) * op(B) + beta * C, row-major, with leading
// dimensions so that kernels can address sub-blocks without copies. Shared by the cpu backend and
// the emulators' numerics, whose bf16/fp16 passes are f32 GEMMs over rounded operands.
#pragma once

#include <cstdint>

namespace mimic {

struct GemmOperand {
  const float* data;
  int64_t ld;       // row stride (elements) of the stored matrix
  bool transposed;  // use the stored matrix transposed
};

// C[M,N] (row stride ldc) = alpha * A[M,K] * B[K,N] + beta * C.
void gemm_f32(int64_t m, int64_t n, int64_t k, float alpha, GemmOperand a, GemmOperand b,
              float beta, float* c, int64_t ldc);

}  // namespace mimic
