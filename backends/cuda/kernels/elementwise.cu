// Per-element kernels: one thread per output element (grid-stride loop) running the bodies of
// device_math.h. One instantiation of the loop per body keeps nvcc's work small; dtypes and ops
// are runtime switches that are uniform across a launch.
#include "backends/cuda/kernels/device_math_nn.h"
#include "backends/cuda/kernels/each.cuh"
#include "backends/cuda/kernels/launch.h"

namespace mimic::backends::cuda {
namespace {

// Launches functor F with 32-bit index arithmetic when every offset fits, else 64-bit.
template <template <typename> class F, typename P, typename... Args>
void launch_indexed(int64_t n, const P& p, cudaStream_t stream, Args... args) {
  if (index32(p))
    launch_each(n, F<int32_t>{p, args...}, stream);
  else
    launch_each(n, F<int64_t>{p, args...}, stream);
}

struct UnaryF {
  UnaryParams p;
  const void* x;
  void* y;
  __device__ void operator()(int64_t i) const { unary_body(p, x, y, i); }
};

template <typename I>
struct BinaryF {
  BinaryParams p;
  const void *a, *b;
  void* y;
  __device__ void operator()(int64_t i) const { binary_body<I>(p, a, b, y, static_cast<I>(i)); }
};

struct Pointers {
  const void* p[kMaxVariadic];
};

template <typename I>
struct VariadicF {
  VariadicParams p;
  Pointers in;
  void* y;
  __device__ void operator()(int64_t i) const { variadic_body<I>(p, in.p, y, static_cast<I>(i)); }
};

template <typename I>
struct WhereF {
  WhereParams p;
  const void *c, *x, *y;
  void* out;
  __device__ void operator()(int64_t i) const { where_body<I>(p, c, x, y, out, static_cast<I>(i)); }
};

struct CastF {
  CastParams p;
  const void* x;
  void* y;
  __device__ void operator()(int64_t i) const { cast_body(p, x, y, i); }
};

template <typename I>
struct CopyF {
  CopyParams p;
  const void* x;
  void* y;
  __device__ void operator()(int64_t i) const { copy_body<I>(p, x, y, static_cast<I>(i)); }
};

struct GatherF {
  GatherParams p;
  const void *data, *idx;
  void* y;
  ErrorSlot* err;
  __device__ void operator()(int64_t i) const { gather_body(p, data, idx, y, err, i); }
};

struct ScatterRowsF {
  ScatterRowsParams p;
  const void *idx, *upd;
  void* y;
  ErrorSlot* err;
  __device__ void operator()(int64_t k) const { scatter_rows_body(p, idx, upd, y, err, k); }
};

struct GatherElementsF {
  GatherElementsParams p;
  const void *data, *idx;
  void* y;
  ErrorSlot* err;
  __device__ void operator()(int64_t i) const { gather_elements_body(p, data, idx, y, err, i); }
};

template <typename I>
struct PadF {
  PadParams p;
  const void* x;
  void* y;
  __device__ void operator()(int64_t i) const { pad_body<I>(p, x, y, static_cast<I>(i)); }
};

struct TriluF {
  TriluParams p;
  const void* x;
  void* y;
  __device__ void operator()(int64_t i) const { trilu_body(p, x, y, i); }
};

template <typename I>
struct Im2colF {
  Im2colParams p;
  const void* x;
  void* col;
  __device__ void operator()(int64_t i) const { im2col_body<I>(p, x, col, static_cast<I>(i)); }
};

template <typename I>
struct Col2imF {
  Col2imParams p;
  const float* col;
  void* y;
  __device__ void operator()(int64_t i) const { col2im_body<I>(p, col, y, static_cast<I>(i)); }
};

template <typename I>
struct DepthwiseF {
  DepthwiseParams p;
  const void *x, *w, *bias;
  void* y;
  __device__ void operator()(int64_t i) const {
    depthwise_body<I>(p, x, w, bias, y, static_cast<I>(i));
  }
};

template <typename I>
struct BiasF {
  BiasParams p;
  const void *x, *bias;
  void* y;
  __device__ void operator()(int64_t i) const { bias_body<I>(p, x, bias, y, static_cast<I>(i)); }
};

template <typename I>
struct PoolF {
  PoolParams p;
  const void* x;
  void* y;
  __device__ void operator()(int64_t i) const { pool_body<I>(p, x, y, static_cast<I>(i)); }
};

template <typename I>
struct BatchNormF {
  BatchNormParams p;
  const void* x;
  const float *mul, *add;
  void* y;
  __device__ void operator()(int64_t i) const {
    batch_norm_body<I>(p, x, mul, add, y, static_cast<I>(i));
  }
};

struct BnPrepF {
  BnPrepParams p;
  const void *scale, *bias, *mean, *var;
  float *mul, *add;
  __device__ void operator()(int64_t c) const {
    bn_prep_body(p, scale, bias, mean, var, mul, add, c);
  }
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
  launch_indexed<BinaryF>(p.n, p, s, a, b, y);
}

void launch_variadic(const VariadicParams& p, const void* const* inputs, void* y, cudaStream_t s) {
  Pointers in{};
  for (int k = 0; k < p.count && k < kMaxVariadic; ++k) in.p[k] = inputs[k];
  launch_indexed<VariadicF>(p.n, p, s, in, y);
}

void launch_where(const WhereParams& p, const void* c, const void* x, const void* y, void* out,
                  cudaStream_t s) {
  launch_indexed<WhereF>(p.n, p, s, c, x, y, out);
}

void launch_cast(const CastParams& p, const void* x, void* y, cudaStream_t s) {
  launch_each(p.n, CastF{p, x, y}, s);
}

void launch_copy(const CopyParams& p, const void* x, void* y, cudaStream_t s) {
  launch_indexed<CopyF>(p.n, p, s, x, y);
}

void launch_gather(const GatherParams& p, const void* data, const void* idx, void* y,
                   ErrorSlot* err, cudaStream_t s) {
  launch_each(p.outer * p.count * p.inner, GatherF{p, data, idx, y, err}, s);
}

void launch_scatter_rows(const ScatterRowsParams& p, const void* idx, const void* upd, void* y,
                         ErrorSlot* err, cudaStream_t s) {
  launch_each(p.inner, ScatterRowsF{p, idx, upd, y, err}, s);
}

void launch_gather_elements(const GatherElementsParams& p, const void* data, const void* idx,
                            void* y, ErrorSlot* err, cudaStream_t s) {
  launch_each(p.n, GatherElementsF{p, data, idx, y, err}, s);
}

void launch_pad(const PadParams& p, const void* x, void* y, cudaStream_t s) {
  launch_indexed<PadF>(p.n, p, s, x, y);
}

void launch_trilu(const TriluParams& p, const void* x, void* y, cudaStream_t s) {
  launch_each(p.n, TriluF{p, x, y}, s);
}

void launch_im2col(const Im2colParams& p, const void* x, void* col, cudaStream_t s) {
  launch_indexed<Im2colF>(p.n, p, s, x, col);
}

void launch_col2im(const Col2imParams& p, const float* col, void* y, cudaStream_t s) {
  launch_indexed<Col2imF>(p.n, p, s, col, y);
}

void launch_depthwise(const DepthwiseParams& p, const void* x, const void* w, const void* bias,
                      void* y, cudaStream_t s) {
  launch_indexed<DepthwiseF>(p.n, p, s, x, w, bias, y);
}

void launch_bias(const BiasParams& p, const void* x, const void* bias, void* y, cudaStream_t s) {
  launch_indexed<BiasF>(p.n, p, s, x, bias, y);
}

void launch_pool(const PoolParams& p, const void* x, void* y, cudaStream_t s) {
  launch_indexed<PoolF>(p.n, p, s, x, y);
}

void launch_batch_norm(const BatchNormParams& p, const void* x, const float* mul, const float* add,
                       void* y, cudaStream_t s) {
  launch_indexed<BatchNormF>(p.n, p, s, x, mul, add, y);
}

void launch_bn_prep(const BnPrepParams& p, const void* scale, const void* bias, const void* mean,
                    const void* var, float* mul, float* add, cudaStream_t s) {
  launch_each(p.channels, BnPrepF{p, scale, bias, mean, var, mul, add}, s);
}

void launch_lrn(const LrnParams& p, const void* x, void* y, cudaStream_t s) {
  launch_each(p.n, LrnF{p, x, y}, s);
}

}  // namespace mimic::backends::cuda
