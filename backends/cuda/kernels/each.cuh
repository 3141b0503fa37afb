// The grid-stride "one thread per element" launcher shared by the kernel files.
#pragma once

#include <algorithm>
#include <cstdint>

namespace mimic::backends::cuda {

constexpr int kThreads = 256;

template <typename F>
__global__ void __launch_bounds__(kThreads) each_kernel(int64_t n, F f) {
  int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    f(i);
}

template <typename F>
void launch_each(int64_t n, const F& f, cudaStream_t stream) {
  if (n <= 0) return;
  int64_t blocks = std::min<int64_t>((n + kThreads - 1) / kThreads, int64_t{1} << 20);
  each_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(n, f);
}

}  // namespace mimic::backends::cuda
