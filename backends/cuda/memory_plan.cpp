#include "backends/cuda/memory_plan.h"

#include <fmt/format.h>
#include <algorithm>
#include <map>
#include <numeric>

#include "base/error.h"

namespace mimic::backends::cuda {

int64_t align_up(int64_t bytes, int64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

MemoryPlan plan_memory(const std::vector<BufferLifetime>& buffers, int64_t alignment) {
  if (alignment <= 0)
    throw InvalidArgument(fmt::format("memory plan: alignment {} must be positive", alignment));
  MemoryPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return buffers[a].bytes > buffers[b].bytes; });
  struct Placed {
    int64_t begin, end;
    int first, last;
  };
  std::vector<Placed> placed;
  for (size_t index : order) {
    const BufferLifetime& b = buffers[index];
    if (b.bytes < 0 || b.last < b.first)
      throw InvalidArgument(fmt::format("memory plan: buffer {} has {} bytes and lifetime [{}, {}]",
                                        index, b.bytes, b.first, b.last));
    int64_t size = align_up(std::max<int64_t>(b.bytes, 1), alignment);
    // Ranges of the placed buffers alive at the same time, sorted by offset.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (const Placed& p : placed)
      if (p.first <= b.last && b.first <= p.last) busy.emplace_back(p.begin, p.end);
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (const auto& [begin, end] : busy) {
      if (offset + size <= begin) break;
      offset = std::max(offset, end);
    }
    plan.offsets[index] = offset;
    placed.push_back({offset, offset + size, b.first, b.last});
    plan.total_bytes = std::max(plan.total_bytes, offset + size);
  }
  std::map<int, int64_t> delta;
  for (const BufferLifetime& b : buffers) {
    int64_t size = align_up(std::max<int64_t>(b.bytes, 1), alignment);
    delta[b.first] += size;
    delta[b.last + 1] -= size;
  }
  int64_t live = 0;
  for (const auto& [step, d] : delta) {
    live += d;
    plan.peak_live_bytes = std::max(plan.peak_live_bytes, live);
  }
  return plan;
}

}  // namespace mimic::backends::cuda
