// Host memory for tensors, with large buffers recycled between tensors of the same size.
//
// A training step frees and allocates the same activation and gradient sizes every step. Through
// malloc, a buffer above glibc's mmap threshold is a fresh mapping each time, whose pages fault in
// and are cleared by the kernel on first touch: on a ResNet-50 step at batch 8 that was more time
// than the elementwise work itself. As PyTorch's caching allocator does on CUDA (and TensorFlow's
// BFC allocator on the host), a freed buffer of at least 256 KiB is kept and handed to the next
// request of the same size, rounded up to whole 4 KiB pages. The bytes kept are capped: at
// MIMIC_HOST_CACHE_MB when set (0 turns the cache off), else at a quarter of physical memory and
// at most 4 GiB; a buffer that would pass the cap is freed. Builds with AddressSanitizer keep no
// buffers, so that a use after free is still reported.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace mimic::ir {

// `bytes` (at least 1) of 64-byte aligned, uninitialized host memory, returned to the cache or the
// system when the last owner drops it. Throws RuntimeError naming the bytes when the host has none.
std::shared_ptr<void> allocate_host(size_t bytes);

struct HostCacheStats {
  int64_t cached_bytes = 0;  // kept now, not owned by any tensor
  int64_t limit_bytes = 0;   // the cap
  int64_t hits = 0;          // requests served from the cache
  int64_t misses = 0;        // cacheable requests that allocated
};
HostCacheStats host_cache_stats();
// Frees every kept buffer (tensors alive keep theirs).
void release_host_cache();

}  // namespace mimic::ir
