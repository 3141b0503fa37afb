// The GEMMs the SystemC model benchmarks run: ResNet-50 at batch 8 as implicit GEMMs
// (M = batch x output pixels, K = kernel x in channels, N = out channels): a 3x3 conv of each
// stage, a 1x1 expand of stage 3, and the FC layer; and what crosses the host link (images in,
// logits out).
#pragma once

#include <cstdint>
#include <vector>

namespace mimic::bench {

template <typename Int>
struct GemmLayer {
  Int m, k, n;  // Y[m x n] = A[m x k] x W[k x n]
};

template <typename Int>
std::vector<GemmLayer<Int>> resnet50_b8_gemms() {
  return {{8 * 56 * 56, 9 * 64, 64}, {8 * 28 * 28, 9 * 128, 128}, {8 * 14 * 14, 9 * 256, 256},
          {8 * 14 * 14, 256, 1024},  {8 * 7 * 7, 9 * 512, 512},   {8, 2048, 1000}};
}

constexpr uint64_t kImageElements = 8 * 3 * 224 * 224, kLogitElements = 8 * 1000;

}  // namespace mimic::bench
