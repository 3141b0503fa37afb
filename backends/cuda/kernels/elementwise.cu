// Per-element kernels: one thread per output element (grid-stride loop) running the bodies of
// device_math.h. One instantiation of the loop per body keeps nvcc's work small; dtypes and ops
// are runtime switches that are uniform across a launch.
#include "backends/cuda/kernels/device_math.h"
#include "backends/cuda/kernels/each.cuh"
#include "backends/cuda/kernels/launch.h"

namespace mimic::backends::cuda {
namespace {

struct UnaryF {
  UnaryParams p;
  const void* x;
  void* y;
  __device__ void operator()(int64_t i) const { unary_body(p, x, y, i); }
};

struct BinaryF {
  BinaryParams p;
  const void *a, *b;
  void* y;
  __device__ void operator()(int64_t i) const { binary_body(p, a, b, y, i); }
};

struct Pointers {
  const void* p[kMaxVariadic];
};

struct VariadicF {
  VariadicParams p;
  Pointers in;
  void* y;
  __device__ void operator()(int64_t i) const { variadic_body(p, in.p, y, i); }
};

struct WhereF {
  WhereParams p;
  const void *c, *x, *y;
  void* out;
  __device__ void operator()(int64_t i) const { where_body(p, c, x, y, out, i); }
};

struct CastF {
  CastParams p;
  const void* x;
  void* y;
  __device__ void operator()(int64_t i) const { cast_body(p, x, y, i); }
};

struct CopyF {
  CopyParams p;
  const void* x;
  void* y;
  __device__ void operator()(int64_t i) const { copy_body(p, x, y, i); }
};

struct GatherF {
  GatherParams p;
  const void *data, *idx;
  void* y;
  ErrorSlot* err;
  __device__ void operator()(int64_t i) const { gather_body(p, data, idx, y, err, i); }
};

struct GatherElementsF {
  GatherElementsParams p;
  const void *data, *idx;
  void* y;
  ErrorSlot* err;
  __device__ void operator()(int64_t i) const { gather_elements_body(p, data, idx, y, err, i); }
};

struct PadF {
  PadParams p;
  const void* x;
  void* y;
  __device__ void operator()(int64_t i) const { pad_body(p, x, y, i); }
};

struct TriluF {
  TriluParams p;
  const void* x;
  void* y;
  __device__ void operator()(int64_t i) const { trilu_body(p, x, y, i); }
};

struct Im2colF {
  Im2colParams p;
  const void* x;
  void* col;
  __device__ void operator()(int64_t i) const { im2col_body(p, x, col, i); }
};

struct Col2imF {
  Col2imParams p;
  const float* col;
  void* y;
  __device__ void operator()(int64_t i) const { col2im_body(p, col, y, i); }
};

struct DepthwiseF {
  DepthwiseParams p;
  const void *x, *w, *bias;
  void* y;
  __device__ void operator()(int64_t i) const { depthwise_body(p, x, w, bias, y, i); }
};

struct BiasF {
  BiasParams p;
  const void *x, *bias;
  void* y;
  __device__ void operator()(int64_t i) const { bias_body(p, x, bias, y, i); }
};

struct PoolF {
  PoolParams p;
  const void* x;
  void* y;
  __device__ void operator()(int64_t i) const { pool_body(p, x, y, i); }
};

struct BatchNormF {
  BatchNormParams p;
  const void* x;
  const float *mul, *add;
  void* y;
  __device__ void operator()(int64_t i) const { batch_norm_body(p, x, mul, add, y, i); }
};

struct BnPrepF {
  BnPrepParams p;
  const void *scale, *bias, *mean, *var;
  float *mul, *add;
  __device__ void operator()(int64_t c) const { bn_prep_body(p, scale, bias, mean, var, mul, add, c); }
};

struct LrnF {
  LrnParams p;
  const void* x;
  void* y;
  __device__ void operator()(int64_t i) const { lrn_body(p, x, y, i); }
};

}  // namespace

void launch_unary(const UnaryParams& p, const void* x, void* y, cudaStream_t s) {
  launch_each(p.n, UnaryF{p, x, y}, s);
}

void launch_binary(const BinaryParams& p, const void* a, const void* b, void* y, cudaStream_t s) {
  launch_each(p.n, BinaryF{p, a, b, y}, s);
}

void launch_variadic(const VariadicParams& p, const void* const* inputs, void* y, cudaStream_t s) {
  Pointers in{};
  for (int k = 0; k < p.count && k < kMaxVariadic; ++k) in.p[k] = inputs[k];
  launch_each(p.n, VariadicF{p, in, y}, s);
}

void launch_where(const WhereParams& p, const void* c, const void* x, const void* y, void* out,
                  cudaStream_t s) {
  launch_each(p.n, WhereF{p, c, x, y, out}, s);
}

void launch_cast(const CastParams& p, const void* x, void* y, cudaStream_t s) {
  launch_each(p.n, CastF{p, x, y}, s);
}

void launch_copy(const CopyParams& p, const void* x, void* y, cudaStream_t s) {
  launch_each(p.n, CopyF{p, x, y}, s);
}

void launch_gather(const GatherParams& p, const void* data, const void* idx, void* y, ErrorSlot* err,
                   cudaStream_t s) {
  launch_each(p.outer * p.count * p.inner, GatherF{p, data, idx, y, err}, s);
}

void launch_gather_elements(const GatherElementsParams& p, const void* data, const void* idx, void* y,
                            ErrorSlot* err, cudaStream_t s) {
  launch_each(p.n, GatherElementsF{p, data, idx, y, err}, s);
}

void launch_pad(const PadParams& p, const void* x, void* y, cudaStream_t s) { launch_each(p.n, PadF{p, x, y}, s); }

void launch_trilu(const TriluParams& p, const void* x, void* y, cudaStream_t s) {
  launch_each(p.n, TriluF{p, x, y}, s);
}

void launch_im2col(const Im2colParams& p, const void* x, void* col, cudaStream_t s) {
  launch_each(p.n, Im2colF{p, x, col}, s);
}

void launch_col2im(const Col2imParams& p, const float* col, void* y, cudaStream_t s) {
  launch_each(p.n, Col2imF{p, col, y}, s);
}

void launch_depthwise(const DepthwiseParams& p, const void* x, const void* w, const void* bias, void* y,
                      cudaStream_t s) {
  launch_each(p.n, DepthwiseF{p, x, w, bias, y}, s);
}

void launch_bias(const BiasParams& p, const void* x, const void* bias, void* y, cudaStream_t s) {
  launch_each(p.n, BiasF{p, x, bias, y}, s);
}

void launch_pool(const PoolParams& p, const void* x, void* y, cudaStream_t s) {
  launch_each(p.n, PoolF{p, x, y}, s);
}

void launch_batch_norm(const BatchNormParams& p, const void* x, const float* mul, const float* add, void* y,
                       cudaStream_t s) {
  launch_each(p.n, BatchNormF{p, x, mul, add, y}, s);
}

void launch_bn_prep(const BnPrepParams& p, const void* scale, const void* bias, const void* mean,
                    const void* var, float* mul, float* add, cudaStream_t s) {
  launch_each(p.channels, BnPrepF{p, scale, bias, mean, var, mul, add}, s);
}

void launch_lrn(const LrnParams& p, const void* x, void* y, cudaStream_t s) { launch_each(p.n, LrnF{p, x, y}, s); }

}  // namespace mimic::backends::cuda
