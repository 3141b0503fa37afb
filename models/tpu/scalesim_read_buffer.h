// SCALE-Sim v2's stalling read buffer (scalesim/memory/read_buffer.py), the ifmap and filter
// buffers of its USER interface-bandwidth mode, reproduced decision for decision (no code of it is
// used). Its semantics, as the compatibility mode must follow them:
//   - the operand's prefetch order (the "fetch sequence", null entries included) is laid out in
//     lines of `bandwidth` words: the DRAM requests; its non-null words are grouped, in order, into
//     sets of ceil(words / 100) (duplicates counted): the buffer's lines. The active half holds
//     ceil(half / set) consecutive sets, the prefetch half ceil(rest / set), circularly;
//   - before the first demand row, ceil(half / bandwidth) request lines fill the active half over
//     the cycles just before cycle 0 (the DRAM stream starts at a negative cycle);
//   - a demanded word that no active set holds moves the active window by the prefetch half's sets
//     and issues ceil(rest / bandwidth) more request lines, one per cycle, answered one cycle
//     later: the row stalls until the last answer;
//   - every request line counts `bandwidth` DRAM reads, null words included;
//   - which words a request line carries (SCALE-Sim computes the next line from the prefetch's size
//     alone, not from where it started) changes its trace files, not its reports, and is not
//     tracked.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace mimic::models::tpu::scalesim {

class StallingReadBuffer {
 public:
  // Calls its argument on every entry of the prefetch order, in order: an offset from the
  // operand's base address, or -1 for a null entry. Called twice.
  using FetchOrder = std::function<void(const std::function<void(int32_t)>&)>;

  // `entries`: the length of the prefetch order; `span`: one more than the largest offset;
  // `what`/`layer` name it in errors.
  StallingReadBuffer(int64_t size_kb, int64_t bandwidth, const FetchOrder& fetch, int64_t entries,
                     int64_t span, std::string what, std::string layer);

  // Serves one demand row issued at `cycle` (offsets from the base, no nulls); returns the cycles
  // it stalls beyond the one-cycle hit latency.
  int64_t serve(const std::vector<int32_t>& row, int64_t cycle);

  int64_t reads() const { return reads_; }
  // First and last DRAM answer cycles.
  int64_t dram_start() const { return dram_start_; }
  int64_t dram_stop() const { return last_answer_; }

 private:
  bool active(int32_t offset) const;
  void prefetch();

  int64_t bandwidth_, active_words_, prefetch_words_;
  std::string what_, layer_;
  // The sets that hold each offset, ascending: sets_[first_[o] .. first_[o + 1]).
  std::vector<uint32_t> first_;  // indexes below 2^28 (scalesim_compat.cpp bounds the words)
  std::vector<int32_t> sets_;
  int64_t num_sets_ = 0, active_sets_ = 0, prefetch_sets_ = 0, request_lines_ = 0;
  int64_t window_start_ = 0, window_end_ = 0;
  int64_t last_answer_ = 0, dram_start_ = 0, reads_ = 0;
};

}  // namespace mimic::models::tpu::scalesim
