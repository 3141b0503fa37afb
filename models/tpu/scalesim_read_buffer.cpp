#include "models/tpu/scalesim_read_buffer.h"

#include <algorithm>
#include <utility>

#include "base/error.h"
#include "models/tpu/dataflow.h"

namespace mimic::models::tpu::scalesim {

StallingReadBuffer::StallingReadBuffer(int64_t size_kb, int64_t bandwidth, const FetchOrder& fetch,
                                       int64_t entries, int64_t span, std::string what,
                                       std::string layer)
    : bandwidth_(bandwidth), what_(std::move(what)), layer_(std::move(layer)) {
  const int64_t words = size_kb * 1024;
  active_words_ = (words + 1) / 2;  // ceil(words * 0.5): SCALE-Sim's active fraction
  prefetch_words_ = words - active_words_;
  const int64_t set_words = ceil_div(words, 100);
  // The sets that hold each offset: count them per offset, then fill (compressed rows).
  std::vector<int32_t> last_set(static_cast<size_t>(span), -1);
  first_.assign(static_cast<size_t>(span) + 1, 0);
  int64_t non_null = 0;
  fetch([&](int32_t o) {
    if (o < 0) return;
    const auto set = static_cast<int32_t>(non_null++ / set_words);
    if (last_set[o] != set) ++first_[o + 1];
    last_set[o] = set;
  });
  for (size_t o = 0; o < static_cast<size_t>(span); ++o) first_[o + 1] += first_[o];
  sets_.resize(static_cast<size_t>(first_.back()));
  std::vector<uint32_t> fill(first_.begin(), first_.end() - 1);
  std::fill(last_set.begin(), last_set.end(), -1);
  non_null = 0;
  fetch([&](int32_t o) {
    if (o < 0) return;
    const auto set = static_cast<int32_t>(non_null++ / set_words);
    if (last_set[o] != set) sets_[fill[o]++] = set;
    last_set[o] = set;
  });
  // A last set that is still open (possibly empty) counts as one.
  num_sets_ = non_null / set_words + 1;
  active_sets_ = std::min(ceil_div(active_words_, set_words), num_sets_);
  prefetch_sets_ = std::min(ceil_div(prefetch_words_, set_words), num_sets_ - active_sets_);
  request_lines_ = ceil_div(entries, bandwidth_);
  // The active half is filled before cycle 0: its request lines end one cycle before it and are
  // answered one cycle later.
  const int64_t lines = std::min(ceil_div(active_words_, bandwidth_), request_lines_);
  reads_ = lines * bandwidth_;
  dram_start_ = -lines;
  last_answer_ = -1;
  window_start_ = 0;
  window_end_ = active_sets_;
}

bool StallingReadBuffer::active(int32_t offset) const {
  const auto begin = sets_.begin() + first_[offset], end = sets_.begin() + first_[offset + 1];
  if (begin == end) return false;
  if (window_start_ < window_end_) {
    const auto it = std::lower_bound(begin, end, window_start_);
    return it != end && *it < window_end_;
  }
  // The window wraps around (or covers every set when its ends meet).
  return *(end - 1) >= window_start_ || *begin < window_end_;
}

void StallingReadBuffer::prefetch() {
  window_start_ = (window_start_ + prefetch_sets_) % num_sets_;
  window_end_ = (window_start_ + active_sets_) % num_sets_;
  // Never longer than the operand's request lines (SCALE-Sim would fail there): a miss needs more
  // sets than the active half holds, so more non-null words than the half, and the prefetch half
  // is no larger than the active one.
  const int64_t lines = ceil_div(prefetch_words_, bandwidth_);
  reads_ += lines * bandwidth_;
  // Requests issue one per cycle after the previous answer; each is answered one cycle later.
  last_answer_ += lines + 1;
}

int64_t StallingReadBuffer::serve(const std::vector<int32_t>& row, int64_t cycle) {
  int64_t offset = 1;  // the hit latency
  for (int32_t o : row) {
    // The prefetch order holds every word the demand reads, and the window moves by no more sets
    // than it spans, so it reaches any set within num_sets_ moves.
    for (int64_t moves = 0; !active(o); ++moves) {
      if (moves > num_sets_ || first_[o] == first_[o + 1])
        throw RuntimeError("scalesim: internal: layer '" + layer_ + "': " + what_ + " word " +
                           std::to_string(o) + " is never in the active half of the read buffer");
      prefetch();
      offset += std::max<int64_t>(0, last_answer_ - (cycle + offset));
    }
  }
  return offset - 1;
}

}  // namespace mimic::models::tpu::scalesim
