// Where tensors and work live on an IPU's tiles. A span is a run of consecutive tiles that may wrap
// around the end of the IPU (tile T-1 is followed by tile 0), so that successive ops can start
// where the previous one stopped and weights spread over the whole chip instead of piling up on
// the first tiles. A placement spreads a tensor evenly over a span (Poplar's linear mapping).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>

#include "models/ipu/bsp_program.h"

namespace mimic::backends::ipu_emu {

inline uint64_t ceil_div(uint64_t a, uint64_t b) {
  return b == 0 ? 0 : (a + b - 1) / b;
}
inline uint64_t round_up(uint64_t a, uint64_t b) {
  return ceil_div(a, b) * b;
}

struct TileSpan {
  uint32_t first = 0, count = 0;  // count <= tiles of the IPU
};

// Calls fn(first, count) for the one or two contiguous tile ranges of `span` on an IPU of `tiles`.
inline void for_each_range(const TileSpan& span, uint32_t tiles,
                           const std::function<void(uint32_t, uint32_t)>& fn) {
  if (span.count == 0) return;
  uint32_t first = span.first % tiles;
  uint32_t head = std::min<uint32_t>(span.count, tiles - first);
  fn(first, head);
  if (span.count > head) fn(0, span.count - head);
}

// A tensor spread evenly over a span: `bytes_per_tile` is the largest share (ceil).
struct Placement {
  uint32_t ipu = 0;
  TileSpan span;
  uint64_t total_bytes = 0;
  uint64_t bytes_per_tile = 0;
};

inline Placement spread(uint32_t ipu, TileSpan span, uint64_t bytes) {
  return Placement{ipu, span, bytes, span.count ? ceil_div(bytes, span.count) : 0};
}

// Hands out spans round-robin over an IPU's tiles.
class TileCursor {
 public:
  explicit TileCursor(uint32_t tiles) : tiles_(tiles) {}
  TileSpan take(uint32_t count) {
    count = std::min(std::max<uint32_t>(count, 1), tiles_);
    TileSpan s{next_, count};
    next_ = (next_ + count) % tiles_;
    return s;
  }
  uint32_t tiles() const { return tiles_; }

 private:
  uint32_t tiles_;
  uint32_t next_ = 0;
};

// Appends one exchange group per contiguous range of the span.
inline void add_exchange(std::vector<models::ipu::ExchangeGroup>& out, const TileSpan& span,
                         uint32_t tiles, uint64_t send, uint64_t recv) {
  if (send == 0 && recv == 0) return;
  for_each_range(span, tiles, [&](uint32_t first, uint32_t count) {
    out.push_back({first, count, send, recv});
  });
}

inline void add_compute(std::vector<models::ipu::TileGroup>& out, const TileSpan& span,
                        uint32_t tiles, const std::vector<models::ipu::VertexBatch>& vertices) {
  if (vertices.empty()) return;
  for_each_range(span, tiles, [&](uint32_t first, uint32_t count) {
    out.push_back({first, count, vertices});
  });
}

}  // namespace mimic::backends::ipu_emu
