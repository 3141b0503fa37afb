// Host tensor memory: large buffers are recycled between tensors of the same size (host_memory.h),
// a zero-filled tensor is zero whatever its recycled buffer held, and the bytes kept stay under
// the cap. Builds with AddressSanitizer keep no buffers (the cap is 0), so reuse is checked only
// where the cache is on.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "frontend/ir/host_memory.h"
#include "frontend/ir/host_tensor.h"

namespace mimic::ir {
namespace {

TEST(HostMemory, RecycledBuffersServeTheNextTensorOfTheSameSize) {
  release_host_cache();
  const Shape shape({256, 1024});  // 1 MiB
  const void* first = nullptr;
  {
    HostTensor t = HostTensor::uninitialized(DType::f32, shape);
    std::fill(t.data<float>(), t.data<float>() + t.numel(), 7.0f);
    first = t.raw();
  }
  const HostCacheStats before = host_cache_stats();
  HostTensor zeroed(DType::f32, shape);
  const float* z = zeroed.data<float>();
  EXPECT_TRUE(std::all_of(z, z + zeroed.numel(), [](float v) { return v == 0.0f; }));
  const HostCacheStats after = host_cache_stats();
  if (after.limit_bytes == 0) GTEST_SKIP() << "the host cache is off in this build";
  EXPECT_EQ(zeroed.raw(), first);
  EXPECT_EQ(after.hits, before.hits + 1);
  EXPECT_EQ(after.cached_bytes, before.cached_bytes - (int64_t{1} << 20));
}

TEST(HostMemory, SmallTensorsBypassTheCacheAndKeptBytesStayUnderTheCap) {
  release_host_cache();
  const HostCacheStats start = host_cache_stats();
  { HostTensor small(DType::f32, Shape({1000})); }
  EXPECT_EQ(host_cache_stats().hits + host_cache_stats().misses, start.hits + start.misses);
  {
    std::vector<HostTensor> many;
    for (int64_t k = 1; k <= 40; ++k)
      many.push_back(HostTensor::uninitialized(DType::f32, Shape({k * (int64_t{1} << 18)})));
  }
  const HostCacheStats kept = host_cache_stats();
  EXPECT_LE(kept.cached_bytes, kept.limit_bytes);
  release_host_cache();
  EXPECT_EQ(host_cache_stats().cached_bytes, 0);
}

}  // namespace
}  // namespace mimic::ir
