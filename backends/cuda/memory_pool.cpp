#include "backends/cuda/memory_pool.h"

#include <fmt/format.h>
#include <algorithm>

#include "base/error.h"

namespace mimic::backends::cuda {

MemoryPool::~MemoryPool() {
  std::lock_guard<std::mutex> lock(mutex_);
  trim_locked();
  for (auto& [ptr, size] : live_) raw_.release(ptr);
}

int64_t MemoryPool::rounded_size(int64_t bytes) {
  constexpr int64_t kSmall = 512, kLarge = int64_t{2} << 20, kLimit = int64_t{1} << 20;
  bytes = std::max<int64_t>(bytes, 1);
  int64_t unit = bytes < kLimit ? kSmall : kLarge;
  return (bytes + unit - 1) / unit * unit;
}

void* MemoryPool::allocate(int64_t bytes, const std::string& what) {
  if (bytes < 0)
    throw InvalidArgument(fmt::format("cuda memory pool: negative size {} for {}", bytes, what));
  int64_t size = rounded_size(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = cached_.lower_bound(size);
  if (it != cached_.end() && it->first <= 2 * size) {
    void* ptr = it->second;
    int64_t block = it->first;
    cached_.erase(it);
    stats_.cached_bytes -= block;
    live_[ptr] = block;
    stats_.in_use_bytes += block;
    stats_.peak_in_use_bytes = std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes);
    ++stats_.reuses;
    return ptr;
  }
  void* ptr = raw_.allocate(size);
  if (!ptr && !cached_.empty()) {
    trim_locked();
    ptr = raw_.allocate(size);
  }
  if (!ptr) {
    int64_t available = raw_.available_bytes();
    throw OutOfMemoryError(
        fmt::format("cuda: out of device memory allocating {} bytes ({:.1f} MiB) for {}: {} bytes "
                    "in use by mimic{}",
                    size, size / 1048576.0, what, stats_.in_use_bytes,
                    available >= 0 ? fmt::format(", {} bytes free on the device", available) : ""),
        -1, stats_.in_use_bytes + size, available, what);
  }
  live_[ptr] = size;
  stats_.in_use_bytes += size;
  stats_.peak_in_use_bytes = std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes);
  ++stats_.device_allocations;
  return ptr;
}

void MemoryPool::release(void* ptr) {
  if (!ptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(ptr);
  if (it == live_.end())
    throw InvalidArgument("cuda memory pool: releasing a block it did not allocate");
  cached_.emplace(it->second, ptr);
  stats_.in_use_bytes -= it->second;
  stats_.cached_bytes += it->second;
  live_.erase(it);
}

void MemoryPool::trim() {
  std::lock_guard<std::mutex> lock(mutex_);
  trim_locked();
}

void MemoryPool::trim_locked() {
  for (auto& [size, ptr] : cached_) raw_.release(ptr);
  cached_.clear();
  stats_.cached_bytes = 0;
}

PoolStats MemoryPool::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace mimic::backends::cuda
