#include "frontend/ir/host_memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <list>
#include <mutex>

#include "base/error.h"
#include "frontend/ir/memory_limit.h"

namespace mimic::ir {
namespace {

constexpr size_t kMinCached = size_t{256} << 10;
constexpr size_t kPage = 4096;

// GCC defines __SANITIZE_ADDRESS__ under -fsanitize=address; clang answers __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define MIMIC_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MIMIC_ADDRESS_SANITIZER 1
#endif
#endif
#ifdef MIMIC_ADDRESS_SANITIZER
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

int64_t cache_limit() {
  if (kSanitized) return 0;
  if (const char* env = std::getenv("MIMIC_HOST_CACHE_MB"); env && *env)
    return std::max<int64_t>(0, std::atoll(env)) << 20;
  int64_t quarter = physical_memory_bytes() / 4;
  return std::min<int64_t>(quarter > 0 ? quarter : int64_t{1} << 30, int64_t{4} << 30);
}

// The kept buffers, oldest first; a request takes the newest of its size, and a buffer that
// would pass the cap evicts the oldest.
class HostCache {
 public:
  void* take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = kept_.rbegin(); it != kept_.rend(); ++it) {
      if (it->bytes != bytes) continue;
      void* p = it->data;
      stats_.cached_bytes -= static_cast<int64_t>(bytes);
      kept_.erase(std::next(it).base());
      ++stats_.hits;
      return p;
    }
    ++stats_.misses;
    return nullptr;
  }

  void give(void* p, size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t size = static_cast<int64_t>(bytes);
    if (size > stats_.limit_bytes) return std::free(p);
    while (stats_.cached_bytes + size > stats_.limit_bytes) evict_oldest();
    kept_.push_back({p, bytes});
    stats_.cached_bytes += size;
  }

  void release() {
    std::lock_guard<std::mutex> lock(mu_);
    while (!kept_.empty()) evict_oldest();
  }

  HostCacheStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

  explicit HostCache(int64_t limit) : limit_(limit) { stats_.limit_bytes = limit; }
  int64_t limit() const { return limit_; }  // fixed at start: read without the lock

 private:
  struct Kept {
    void* data;
    size_t bytes;
  };
  void evict_oldest() {
    std::free(kept_.front().data);
    stats_.cached_bytes -= static_cast<int64_t>(kept_.front().bytes);
    kept_.pop_front();
  }

  const int64_t limit_;
  std::mutex mu_;
  std::list<Kept> kept_;
  HostCacheStats stats_;
};

// Never destroyed: tensors in static storage are freed after every other static is gone.
HostCache& cache() {
  static HostCache* c = new HostCache(cache_limit());
  return *c;
}

void* allocate_aligned(size_t bytes) {
  void* p = std::aligned_alloc(64, bytes);
  if (!p) {  // memory held for reuse is the first to give back
    cache().release();
    p = std::aligned_alloc(64, bytes);
  }
  if (!p) throw RuntimeError(fmt::format("out of host memory allocating {} bytes", bytes));
  return p;
}

}  // namespace

std::shared_ptr<void> allocate_host(size_t bytes) {
  if (bytes < kMinCached || cache().limit() == 0)
    return std::shared_ptr<void>(allocate_aligned((std::max<size_t>(bytes, 1) + 63) / 64 * 64),
                                 std::free);
  const size_t rounded = (bytes + kPage - 1) / kPage * kPage;
  void* p = cache().take(rounded);
  if (!p) p = allocate_aligned(rounded);
  return std::shared_ptr<void>(p, [rounded](void* q) { cache().give(q, rounded); });
}

HostCacheStats host_cache_stats() {
  return cache().stats();
}

void release_host_cache() {
  cache().release();
}

}  // namespace mimic::ir
