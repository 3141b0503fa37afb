// Static placement of a program's intermediate tensors in one device arena. Every buffer lives
// from the step that writes it first to the step that reads it last; buffers whose lifetimes
// overlap get disjoint byte ranges. Placement is greedy by size, largest first, each at the lowest
// aligned offset that does not collide with an already placed buffer alive at the same time
// ("greedy by size", Pisarchyk & Lee, Efficient Memory Management for Deep Neural Net Inference,
// 2020), which is within a few percent of the lower bound (the peak of live bytes) on CNNs and
// transformers.
#pragma once

#include <cstdint>
#include <vector>

namespace mimic::backends::cuda {

struct BufferLifetime {
  int64_t bytes = 0;
  int first = 0, last = 0;  // steps, inclusive
};

struct MemoryPlan {
  std::vector<int64_t> offsets;  // per buffer, aligned
  int64_t total_bytes = 0;       // arena size
  int64_t peak_live_bytes = 0;   // lower bound: the most bytes alive at one step (aligned sizes)
};

MemoryPlan plan_memory(const std::vector<BufferLifetime>& buffers, int64_t alignment);

// Rounds up to a multiple of `alignment` (a power of two or any positive number).
int64_t align_up(int64_t bytes, int64_t alignment);

}  // namespace mimic::backends::cuda
