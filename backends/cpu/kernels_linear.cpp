// MatMul (numpy semantics, broadcast batch dims) and Gemm on the f32 GEMM; i8 x i8 -> i32 MatMul
// with exact integer accumulation.
#include <fmt/format.h>
#include <omp.h>

#include "backends/cpu/kernels.h"
#include "backends/cpu/tensor_iter.h"
#include "backends/cpu/threading.h"
#include "base/error.h"
#include "base/gemm.h"

namespace mimic::backends::cpu {
namespace {

struct MatmulPlan {
  int64_t m, n, k;
  ir::Shape batch;                       // broadcast batch shape
  std::vector<int64_t> a_batch_strides;  // in matrices
  std::vector<int64_t> b_batch_strides;
};

MatmulPlan plan(const ir::Shape& sa, const ir::Shape& sb) {
  ir::Shape a = sa.rank() == 1 ? ir::Shape({1, sa[0]}) : sa;
  ir::Shape b = sb.rank() == 1 ? ir::Shape({sb[0], 1}) : sb;
  MatmulPlan p{a.dim(-2), b.dim(-1), a.dim(-1), {}, {}, {}};
  ir::Shape ba(std::vector<int64_t>(a.dims().begin(), a.dims().end() - 2));
  ir::Shape bb(std::vector<int64_t>(b.dims().begin(), b.dims().end() - 2));
  p.batch = ir::broadcast_shapes(ba, bb, "MatMul");
  p.a_batch_strides = broadcast_strides(ba, p.batch);
  p.b_batch_strides = broadcast_strides(bb, p.batch);
  return p;
}

int64_t batch_offset(int64_t index, const ir::Shape& batch, const std::vector<int64_t>& strides) {
  int64_t off = 0;
  for (int d = batch.rank() - 1; d >= 0; --d) {
    off += (index % batch[d]) * strides[d];
    index /= batch[d];
  }
  return off;
}

void matmul_f32(const KernelArgs& a) {
  MatmulPlan p = plan(a.input(0).shape(), a.input(1).shape());
  const float* x = f32(a.input(0));
  const float* w = f32(a.input(1));
  float* y = f32(a.output(0));
  int64_t batches = p.batch.rank() ? p.batch.numel() : 1;
  int64_t a_mat = p.m * p.k, b_mat = p.k * p.n, c_mat = p.m * p.n;
  // A batch of matrices times one shared B is one tall GEMM. Many small products run one per
  // thread (Eigen stays single-threaded inside an OpenMP parallel region).
  bool shared_b = a.input(1).shape().rank() <= 2;
  bool a_full = true;
  for (int64_t s : p.a_batch_strides) a_full = a_full && s != 0;
  if (shared_b && a_full) {
    gemm_f32(batches * p.m, p.n, p.k, 1.0f, {x, p.k, false}, {w, p.n, false}, 0.0f, y, p.n);
    return;
  }
  bool many_small = batches >= omp_get_max_threads() && c_mat * p.k < (int64_t{1} << 24);
  if (many_small) {
#pragma omp parallel for schedule(dynamic)
    for (int64_t i = 0; i < batches; ++i)
      gemm_f32(p.m, p.n, p.k, 1.0f,
               {x + batch_offset(i, p.batch, p.a_batch_strides) * a_mat, p.k, false},
               {w + batch_offset(i, p.batch, p.b_batch_strides) * b_mat, p.n, false}, 0.0f,
               y + i * c_mat, p.n);
    return;
  }
  for (int64_t i = 0; i < batches; ++i)
    gemm_f32(p.m, p.n, p.k, 1.0f,
             {x + batch_offset(i, p.batch, p.a_batch_strides) * a_mat, p.k, false},
             {w + batch_offset(i, p.batch, p.b_batch_strides) * b_mat, p.n, false}, 0.0f,
             y + i * c_mat, p.n);
}

void matmul_i8(const KernelArgs& a) {
  MatmulPlan p = plan(a.input(0).shape(), a.input(1).shape());
  const int8_t* x = a.input(0).data<int8_t>();
  const int8_t* w = a.input(1).data<int8_t>();
  int32_t* y = a.output(0).data<int32_t>();
  int64_t batches = p.batch.rank() ? p.batch.numel() : 1;
#pragma omp parallel for collapse(2) if (batches * p.m > parallel_threshold(16))
  for (int64_t bi = 0; bi < batches; ++bi)
    for (int64_t i = 0; i < p.m; ++i) {
      const int8_t* xa = x + batch_offset(bi, p.batch, p.a_batch_strides) * p.m * p.k + i * p.k;
      const int8_t* wb = w + batch_offset(bi, p.batch, p.b_batch_strides) * p.k * p.n;
      int32_t* yr = y + (bi * p.m + i) * p.n;
      for (int64_t j = 0; j < p.n; ++j) yr[j] = 0;
      for (int64_t kk = 0; kk < p.k; ++kk) {
        int32_t xv = xa[kk];
        for (int64_t j = 0; j < p.n; ++j) yr[j] += xv * wb[kk * p.n + j];
      }
    }
}

}  // namespace

void matmul_kernel(const KernelArgs& a) {
  if (a.input(0).dtype() == ir::DType::i8) return matmul_i8(a);
  matmul_f32(a);
}

void gemm_kernel(const KernelArgs& a) {
  const ir::Attributes& at = a.node.attrs;
  bool ta = at.get_int("transA", 0) != 0, tb = at.get_int("transB", 0) != 0;
  float alpha = static_cast<float>(at.get_float("alpha", 1.0));
  float beta = static_cast<float>(at.get_float("beta", 1.0));
  const ir::Shape& sa = a.input(0).shape();
  const ir::Shape& sb = a.input(1).shape();
  ir::HostTensor& out = a.output(0);
  int64_t m = out.shape()[0], n = out.shape()[1], k = ta ? sa[0] : sa[1];
  float* y = f32(out);
  if (a.has_input(2) && beta != 0.0f) {
    strided_copy(y, a.input(2).raw(), out.shape().dims(),
                 broadcast_strides(a.input(2).shape(), out.shape()), 0, 4);
  } else {
    beta = 0.0f;
  }
  gemm_f32(m, n, k, alpha, {f32(a.input(0)), sa[1], ta}, {f32(a.input(1)), sb[1], tb}, beta, y, n);
}

}  // namespace mimic::backends::cpu
