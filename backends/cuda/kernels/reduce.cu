// Row kernels: reductions, ArgMax/ArgMin, the softmax family, LayerNorm/InstanceNorm, CumSum.
// Rows that are contiguous (inner == 1) get one warp each, lanes striding over the row and
// combining partial results with shuffles (double accumulators, like the cpu kernels); strided
// rows get one thread per output running the sequential body of device_math.h.
#include "backends/cuda/kernels/device_math_nn.h"
#include "backends/cuda/kernels/each.cuh"
#include "backends/cuda/kernels/launch.h"

namespace mimic::backends::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;
constexpr unsigned kFullMask = 0xffffffffu;

unsigned row_blocks(int64_t rows) {
  return static_cast<unsigned>(
      std::min<int64_t>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock, int64_t{1} << 20));
}

__device__ int64_t first_row() {
  return static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
}
__device__ int64_t row_step() {
  return static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
}

__device__ double warp_sum(double v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(kFullMask, v, o);
  return v;
}

__device__ double warp_merge(OpType op, double v) {
  for (int o = 16; o > 0; o /= 2) v = reduce_merge(op, v, __shfl_xor_sync(kFullMask, v, o));
  return v;
}

__device__ float warp_max(float v) {
  for (int o = 16; o > 0; o /= 2) v = max_std(v, __shfl_xor_sync(kFullMask, v, o));
  return v;
}

__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    reduce_rows(ReduceParams p, const void* x, void* y) {
  int lane = threadIdx.x & 31;
  for (int64_t row = first_row(); row < p.outer; row += row_step()) {
    int64_t base = row * p.extent;
    double acc;
    if (p.op == OpType::ReduceLogSumExp) {
      double mx = -INFINITY;
      for (int64_t r = lane; r < p.extent; r += 32)
        mx = max_std_d(mx, load_f(x, p.in_dt, base + r));
      mx = warp_merge(OpType::ReduceMax, mx);
      if (mx == INFINITY || mx == -INFINITY) {
        acc = mx;
      } else {
        double s = 0;
        for (int64_t r = lane; r < p.extent; r += 32) s += exp(load_f(x, p.in_dt, base + r) - mx);
        acc = mx + log(warp_sum(s));
      }
    } else {
      acc = reduce_init(p.op);
      for (int64_t r = lane; r < p.extent; r += 32)
        acc = reduce_step(p.op, acc, load_f(x, p.in_dt, base + r));
      acc = reduce_finish(p.op, warp_merge(p.op, acc), p.extent);
    }
    if (lane == 0) store_f(y, p.out_dt, row, static_cast<float>(acc));
  }
}

template <typename V>
__device__ void arg_row(const ArgReduceParams& p, const void* x, int64_t* y, int64_t row,
                        int lane) {
  int64_t base = row * p.extent, bi = -1;
  V bv = 0;
  for (int64_t r = lane; r < p.extent; r += 32) {
    V v = dt_is_float(p.dt) ? static_cast<V>(load_f(x, p.dt, base + r))
                            : static_cast<V>(load_i(x, p.dt, base + r));
    if (bi < 0 || arg_better(p, v, r, bv, bi)) {
      bv = v;
      bi = r;
    }
  }
  for (int o = 16; o > 0; o /= 2) {
    V ov = __shfl_xor_sync(kFullMask, bv, o);
    int64_t oi = __shfl_xor_sync(kFullMask, bi, o);
    if (oi >= 0 && (bi < 0 || arg_better(p, ov, oi, bv, bi))) {
      bv = ov;
      bi = oi;
    }
  }
  if (lane == 0) y[row] = bi < 0 ? 0 : bi;
}

__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    arg_rows(ArgReduceParams p, const void* x, int64_t* y) {
  int lane = threadIdx.x & 31;
  for (int64_t row = first_row(); row < p.outer; row += row_step()) {
    if (dt_is_float(p.dt))
      arg_row<float>(p, x, y, row, lane);
    else
      arg_row<long long>(p, x, y, row, lane);
  }
}

__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    softmax_rows(SoftmaxParams p, const void* x, void* y) {
  int lane = threadIdx.x & 31;
  for (int64_t row = first_row(); row < p.outer; row += row_step()) {
    int64_t base = row * p.dim;
    if (p.op == OpType::Hardmax) {
      ArgReduceParams a{p.dt, 1, 0, p.outer, p.dim, 1};
      int64_t arg = 0;
      // The first index of the maximum, as the cpu's strict '>' scan finds it.
      float bv = -INFINITY;
      int64_t bi = -1;
      for (int64_t r = lane; r < p.dim; r += 32) {
        float v = load_f(x, p.dt, base + r);
        if (bi < 0 || arg_better(a, v, r, bv, bi)) {
          bv = v;
          bi = r;
        }
      }
      for (int o = 16; o > 0; o /= 2) {
        float ov = __shfl_xor_sync(kFullMask, bv, o);
        int64_t oi = __shfl_xor_sync(kFullMask, bi, o);
        if (oi >= 0 && (bi < 0 || arg_better(a, ov, oi, bv, bi))) {
          bv = ov;
          bi = oi;
        }
      }
      arg = bi < 0 ? 0 : bi;
      for (int64_t r = lane; r < p.dim; r += 32) store_f(y, p.dt, base + r, r == arg ? 1.0f : 0.0f);
      continue;
    }
    float mx = -INFINITY;
    for (int64_t r = lane; r < p.dim; r += 32) {
      float v = load_f(x, p.dt, base + r);
      if (v > mx) mx = v;
    }
    mx = warp_max(mx);
    double sum = 0;
    for (int64_t r = lane; r < p.dim; r += 32)
      sum += exp(static_cast<double>(load_f(x, p.dt, base + r) - mx));
    sum = warp_sum(sum);
    if (p.op == OpType::LogSoftmax) {
      float log_sum = static_cast<float>(log(sum));
      for (int64_t r = lane; r < p.dim; r += 32)
        store_f(y, p.dt, base + r, load_f(x, p.dt, base + r) - mx - log_sum);
    } else {
      float inv = static_cast<float>(1.0 / sum);
      for (int64_t r = lane; r < p.dim; r += 32)
        store_f(y, p.dt, base + r, expf(load_f(x, p.dt, base + r) - mx) * inv);
    }
  }
}

__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    row_norm_rows(RowNormParams p, const void* x, const void* scale, const void* bias, void* y,
                  float* mean_out, float* inv_out) {
  int lane = threadIdx.x & 31;
  for (int64_t row = first_row(); row < p.rows; row += row_step()) {
    int64_t base = row * p.length;
    double sum = 0;
    for (int64_t k = lane; k < p.length; k += 32) sum += load_f(x, p.dt, base + k);
    double mean = warp_sum(sum) / static_cast<double>(p.length);
    double sq = 0;
    for (int64_t k = lane; k < p.length; k += 32) {
      double d = load_f(x, p.dt, base + k) - mean;
      sq += d * d;
    }
    double inv = 1.0 / sqrt(warp_sum(sq) / static_cast<double>(p.length) + p.epsilon);
    for (int64_t k = lane; k < p.length; k += 32)
      store_f(y, p.dt, base + k,
              row_norm_value(p, scale, bias, load_f(x, p.dt, base + k), mean, inv, row, k));
    if (lane == 0 && mean_out) mean_out[row] = static_cast<float>(mean);
    if (lane == 0 && inv_out) inv_out[row] = static_cast<float>(inv);
  }
}

struct ReduceF {
  ReduceParams p;
  const void* x;
  void* y;
  __device__ void operator()(int64_t j) const { reduce_body(p, x, y, j); }
};

struct ArgF {
  ArgReduceParams p;
  const void* x;
  int64_t* y;
  __device__ void operator()(int64_t j) const { arg_reduce_body(p, x, y, j); }
};

struct SoftmaxF {
  SoftmaxParams p;
  const void* x;
  void* y;
  __device__ void operator()(int64_t j) const { softmax_body(p, x, y, j); }
};

struct RowNormF {
  RowNormParams p;
  const void *x, *scale, *bias;
  void* y;
  float *mean, *inv;
  __device__ void operator()(int64_t row) const {
    row_norm_body(p, x, scale, bias, y, mean, inv, row);
  }
};

struct CumSumF {
  CumSumParams p;
  const void* x;
  void* y;
  __device__ void operator()(int64_t j) const { cumsum_body(p, x, y, j); }
};

constexpr unsigned kRowThreads = kWarpsPerBlock * 32;

}  // namespace

void launch_reduce(const ReduceParams& p, const void* x, void* y, cudaStream_t s) {
  if (p.outer <= 0 || p.inner <= 0) return;
  if (p.inner == 1 && dt_is_float(p.in_dt) && p.extent >= 32) {
    reduce_rows<<<row_blocks(p.outer), kRowThreads, 0, s>>>(p, x, y);
    return;
  }
  launch_each(p.outer * p.inner, ReduceF{p, x, y}, s);
}

void launch_arg_reduce(const ArgReduceParams& p, const void* x, int64_t* y, cudaStream_t s) {
  if (p.outer <= 0 || p.inner <= 0) return;
  if (p.inner == 1 && p.extent >= 32) {
    arg_rows<<<row_blocks(p.outer), kRowThreads, 0, s>>>(p, x, y);
    return;
  }
  launch_each(p.outer * p.inner, ArgF{p, x, y}, s);
}

void launch_softmax(const SoftmaxParams& p, const void* x, void* y, cudaStream_t s) {
  if (p.outer <= 0 || p.inner <= 0) return;
  if (p.inner == 1 && p.dim >= 32) {
    softmax_rows<<<row_blocks(p.outer), kRowThreads, 0, s>>>(p, x, y);
    return;
  }
  launch_each(p.outer * p.inner, SoftmaxF{p, x, y}, s);
}

void launch_row_norm(const RowNormParams& p, const void* x, const void* scale, const void* bias,
                     void* y, float* mean, float* inv_std, cudaStream_t s) {
  if (p.rows <= 0) return;
  if (p.length >= 32) {
    row_norm_rows<<<row_blocks(p.rows), kRowThreads, 0, s>>>(p, x, scale, bias, y, mean, inv_std);
    return;
  }
  launch_each(p.rows, RowNormF{p, x, scale, bias, y, mean, inv_std}, s);
}

void launch_cumsum(const CumSumParams& p, const void* x, void* y, cudaStream_t s) {
  launch_each(p.outer * p.inner, CumSumF{p, x, y}, s);
}

}  // namespace mimic::backends::cuda
