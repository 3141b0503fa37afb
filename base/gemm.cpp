#include "base/gemm.h"

#include <dnnl.h>

#include <algorithm>

#include "base/error.h"

namespace mimic {

void gemm_f32(int64_t m, int64_t n, int64_t k, float alpha, GemmOperand a, GemmOperand b,
              float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) {
      float* row = c + i * ldc;
      if (beta == 0.0f)
        std::fill(row, row + n, 0.0f);
      else
        std::transform(row, row + n, row, [beta](float v) { return v * beta; });
    }
    return;
  }
  dnnl_status_t status = dnnl_sgemm(a.transposed ? 'T' : 'N', b.transposed ? 'T' : 'N', m, n, k,
                                    alpha, a.data, a.ld, b.data, b.ld, beta, c, ldc);
  if (status != dnnl_success)
    throw Error(ErrorKind::runtime, "oneDNN sgemm failed (status " + std::to_string(status) +
                                         ") on " + std::to_string(m) + "x" + std::to_string(n) +
                                         "x" + std::to_string(k));
}

}  // namespace mimic
