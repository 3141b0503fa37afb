#include "backends/cuda/executor.h"

#include <fmt/format.h>

#include "backends/cuda/cublas_loader.h"
#include "backends/cuda/kernels/launch.h"
#include "base/error.h"

namespace mimic::backends::cuda {
namespace {

cudaDataType_t blas_type(DT dt) {
  switch (dt) {
    case DT::f16:
      return CUDA_R_16F;
    case DT::bf16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_32F;
  }
}

void gemm(const GemmInstr& in, const DeviceBuffers& b, cublasHandle_t blas) {
  const ColMajorGemm& g = in.g;
  // cuBLAS's first operand is the row-major B (gemm_plan.h).
  cublasComputeType_t compute = in.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  check_cublas(
      cublas().gemm_strided_batched(
          blas, g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
          static_cast<int>(g.m), static_cast<int>(g.n), static_cast<int>(g.k), &in.alpha,
          b.ptr(in.b), blas_type(in.b_dt), static_cast<int>(g.lda), g.stride_a, b.ptr(in.a),
          blas_type(in.a_dt), static_cast<int>(g.ldb), g.stride_b, &in.beta, b.ptr(in.c),
          blas_type(in.c_dt), static_cast<int>(g.ldc), g.stride_c, static_cast<int>(g.batch),
          compute, CUBLAS_GEMM_DEFAULT),
      fmt::format("GEMM m={} n={} k={} batch={}", g.m, g.n, g.k, g.batch));
}

struct Enqueue {
  const DeviceBuffers& b;
  cudaStream_t s;
  cublasHandle_t blas;

  void operator()(const GemmInstr& i) const { gemm(i, b, blas); }
  void operator()(const UnaryInstr& i) const { launch_unary(i.p, b.ptr(i.x), b.ptr(i.y), s); }
  void operator()(const BinaryInstr& i) const {
    launch_binary(i.p, b.ptr(i.a), b.ptr(i.b), b.ptr(i.y), s);
  }
  void operator()(const VariadicInstr& i) const {
    const void* in[kMaxVariadic] = {};
    for (size_t k = 0; k < i.inputs.size() && k < kMaxVariadic; ++k) in[k] = b.ptr(i.inputs[k]);
    launch_variadic(i.p, in, b.ptr(i.y), s);
  }
  void operator()(const WhereInstr& i) const {
    launch_where(i.p, b.ptr(i.cond), b.ptr(i.x), b.ptr(i.y), b.ptr(i.out), s);
  }
  void operator()(const CastInstr& i) const { launch_cast(i.p, b.ptr(i.x), b.ptr(i.y), s); }
  void operator()(const CopyInstr& i) const { launch_copy(i.p, b.ptr(i.x), b.ptr(i.y), s); }
  void operator()(const Copy2dInstr& i) const {
    check_cuda(cudaMemcpy2DAsync(b.ptr(i.y), static_cast<size_t>(i.p.dst_pitch), b.ptr(i.x),
                                 static_cast<size_t>(i.p.src_pitch), static_cast<size_t>(i.p.width),
                                 static_cast<size_t>(i.p.rows), cudaMemcpyDeviceToDevice, s),
               "cudaMemcpy2DAsync");
  }
  void operator()(const GatherInstr& i) const {
    launch_gather(i.p, b.ptr(i.data), b.ptr(i.indices), b.ptr(i.y), b.error, s);
  }
  void operator()(const ScatterRowsInstr& i) const {
    launch_scatter_rows(i.p, b.ptr(i.indices), b.ptr(i.updates), b.ptr(i.y), b.error, s);
  }
  void operator()(const GatherElementsInstr& i) const {
    launch_gather_elements(i.p, b.ptr(i.data), b.ptr(i.indices), b.ptr(i.y), b.error, s);
  }
  void operator()(const PadInstr& i) const { launch_pad(i.p, b.ptr(i.x), b.ptr(i.y), s); }
  void operator()(const TriluInstr& i) const { launch_trilu(i.p, b.ptr(i.x), b.ptr(i.y), s); }
  void operator()(const Im2colInstr& i) const { launch_im2col(i.p, b.ptr(i.x), b.ptr(i.col), s); }
  void operator()(const Col2imInstr& i) const {
    launch_col2im(i.p, reinterpret_cast<const float*>(b.ptr(i.col)), b.ptr(i.y), s);
  }
  void operator()(const DepthwiseInstr& i) const {
    launch_depthwise(i.p, b.ptr(i.x), b.ptr(i.w), b.ptr(i.bias), b.ptr(i.y), s);
  }
  void operator()(const BiasInstr& i) const {
    launch_bias(i.p, b.ptr(i.x), b.ptr(i.bias), b.ptr(i.y), s);
  }
  void operator()(const PoolInstr& i) const { launch_pool(i.p, b.ptr(i.x), b.ptr(i.y), s); }
  void operator()(const BatchNormInstr& i) const {
    launch_batch_norm(i.p, b.ptr(i.x), reinterpret_cast<const float*>(b.ptr(i.mul)),
                      reinterpret_cast<const float*>(b.ptr(i.add)), b.ptr(i.y), s);
  }
  void operator()(const BnPrepInstr& i) const {
    launch_bn_prep(i.p, b.ptr(i.scale), b.ptr(i.bias), b.ptr(i.mean), b.ptr(i.var),
                   reinterpret_cast<float*>(b.ptr(i.mul)), reinterpret_cast<float*>(b.ptr(i.add)),
                   s);
  }
  void operator()(const LrnInstr& i) const { launch_lrn(i.p, b.ptr(i.x), b.ptr(i.y), s); }
  void operator()(const ReduceInstr& i) const { launch_reduce(i.p, b.ptr(i.x), b.ptr(i.y), s); }
  void operator()(const ArgReduceInstr& i) const {
    launch_arg_reduce(i.p, b.ptr(i.x), reinterpret_cast<int64_t*>(b.ptr(i.y)), s);
  }
  void operator()(const SoftmaxInstr& i) const { launch_softmax(i.p, b.ptr(i.x), b.ptr(i.y), s); }
  void operator()(const RowNormInstr& i) const {
    launch_row_norm(i.p, b.ptr(i.x), b.ptr(i.scale), b.ptr(i.bias), b.ptr(i.y),
                    reinterpret_cast<float*>(b.ptr(i.mean)),
                    reinterpret_cast<float*>(b.ptr(i.inv_std)), s);
  }
  void operator()(const CumSumInstr& i) const { launch_cumsum(i.p, b.ptr(i.x), b.ptr(i.y), s); }
};

}  // namespace

void enqueue(const Instr& instr, const DeviceBuffers& buffers, cudaStream_t stream,
             cublasHandle_t blas) {
  std::visit(Enqueue{buffers, stream, blas}, instr);
}

}  // namespace mimic::backends::cuda
