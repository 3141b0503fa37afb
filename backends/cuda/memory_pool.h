// A caching device-memory allocator: blocks freed by one run or executable are kept and reused by
// the next request that fits, so steady-state runs never call cudaMalloc (which synchronizes the
// device). Sizes are rounded to 512 B below 1 MiB and to 2 MiB above; a request takes the smallest
// cached block that is large enough but not more than twice the rounded size. When the device
// refuses an allocation, the cache is returned to the device and the request retried once.
// The bookkeeping is independent of CUDA (RawAllocator), so it is tested on hosts without a GPU.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace mimic::backends::cuda {

class RawAllocator {
 public:
  virtual ~RawAllocator() = default;
  // nullptr when the memory is not available (never throws for that).
  virtual void* allocate(int64_t bytes) = 0;
  virtual void release(void* ptr) = 0;
  // Bytes the device could still give, for error messages (-1 if unknown).
  virtual int64_t available_bytes() const { return -1; }
};

struct PoolStats {
  int64_t in_use_bytes = 0, cached_bytes = 0, peak_in_use_bytes = 0;
  int64_t device_allocations = 0, reuses = 0;
};

class MemoryPool {
 public:
  explicit MemoryPool(RawAllocator& raw) : raw_(raw) {}
  ~MemoryPool();
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;

  // Throws OutOfMemoryError naming `what` and the bytes when the device has no room.
  void* allocate(int64_t bytes, const std::string& what);
  void release(void* ptr);
  // Returns every cached block to the device.
  void trim();
  PoolStats stats() const;

  static int64_t rounded_size(int64_t bytes);

 private:
  void trim_locked();

  RawAllocator& raw_;
  mutable std::mutex mutex_;
  std::multimap<int64_t, void*> cached_;  // size -> block
  std::map<void*, int64_t> live_;         // block -> size
  PoolStats stats_;
};

}  // namespace mimic::backends::cuda
