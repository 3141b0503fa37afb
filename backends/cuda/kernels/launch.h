// Host entry points of the CUDA kernels (kernels/*.cu). Each enqueues its kernel on `stream` and
// returns at once; buffers are device pointers. Launch errors surface through cudaGetLastError().
#pragma once

#include <cuda_runtime_api.h>

#include "backends/cuda/kernels/params.h"

namespace mimic::backends::cuda {

void launch_unary(const UnaryParams& p, const void* x, void* y, cudaStream_t stream);
void launch_binary(const BinaryParams& p, const void* a, const void* b, void* y,
                   cudaStream_t stream);
void launch_variadic(const VariadicParams& p, const void* const* inputs, void* y,
                     cudaStream_t stream);
void launch_where(const WhereParams& p, const void* cond, const void* x, const void* y, void* out,
                  cudaStream_t stream);
void launch_cast(const CastParams& p, const void* x, void* y, cudaStream_t stream);
void launch_copy(const CopyParams& p, const void* x, void* y, cudaStream_t stream);
void launch_gather(const GatherParams& p, const void* data, const void* indices, void* y,
                   ErrorSlot* err, cudaStream_t stream);
void launch_scatter_rows(const ScatterRowsParams& p, const void* indices, const void* updates,
                         void* y, ErrorSlot* err, cudaStream_t stream);
void launch_gather_elements(const GatherElementsParams& p, const void* data, const void* indices,
                            void* y, ErrorSlot* err, cudaStream_t stream);
void launch_pad(const PadParams& p, const void* x, void* y, cudaStream_t stream);
void launch_trilu(const TriluParams& p, const void* x, void* y, cudaStream_t stream);
void launch_im2col(const Im2colParams& p, const void* x, void* col, cudaStream_t stream);
void launch_col2im(const Col2imParams& p, const float* col, void* y, cudaStream_t stream);
void launch_depthwise(const DepthwiseParams& p, const void* x, const void* w, const void* bias,
                      void* y, cudaStream_t stream);
void launch_bias(const BiasParams& p, const void* x, const void* bias, void* y,
                 cudaStream_t stream);
void launch_pool(const PoolParams& p, const void* x, void* y, cudaStream_t stream);
void launch_batch_norm(const BatchNormParams& p, const void* x, const float* mul, const float* add,
                       void* y, cudaStream_t stream);
void launch_bn_prep(const BnPrepParams& p, const void* scale, const void* bias, const void* mean,
                    const void* var, float* mul, float* add, cudaStream_t stream);
void launch_lrn(const LrnParams& p, const void* x, void* y, cudaStream_t stream);

void launch_reduce(const ReduceParams& p, const void* x, void* y, cudaStream_t stream);
void launch_arg_reduce(const ArgReduceParams& p, const void* x, int64_t* y, cudaStream_t stream);
void launch_softmax(const SoftmaxParams& p, const void* x, void* y, cudaStream_t stream);
void launch_row_norm(const RowNormParams& p, const void* x, const void* scale, const void* bias,
                     void* y, float* mean, float* inv_std, cudaStream_t stream);
void launch_cumsum(const CumSumParams& p, const void* x, void* y, cudaStream_t stream);

}  // namespace mimic::backends::cuda
