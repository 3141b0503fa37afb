#include "models/tpu/scalesim_compat.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "base/error.h"
#include "models/tpu/dataflow.h"
#include "models/tpu/scalesim_read_buffer.h"

namespace mimic::models::tpu::scalesim {
namespace {

// Addresses of the three operand matrices (SCALE-Sim's operand_matrix): ifmap(p, j) for ofmap
// pixel p and window element j (-1 where the window overruns the ifmap), filter(j, f) and
// ofmap(p, f). The ifmap's per-pixel and per-window-element parts are tabulated once.
class Operands {
 public:
  Operands(const ArchConfig& a, const Layer& l, const LayerGemm& g) : a_(a), g_(g) {
    pix_.resize(static_cast<size_t>(g.m));
    for (int64_t p = 0; p < g.m; ++p) {
      const int64_t r = (p / g.ofmap_w) * l.stride_h, c = (p % g.ofmap_w) * l.stride_w;
      pix_[p] = {r, c, (r * l.ifmap_w + c) * l.channels};
    }
    win_.resize(static_cast<size_t>(g.k));
    const int64_t row_len = l.filter_w * l.channels;
    for (int64_t j = 0; j < g.k; ++j) {
      const int64_t r = j / row_len, c = (j % row_len) / l.channels, ch = j % l.channels;
      win_[j] = {r, c, (r * l.ifmap_w + c) * l.channels + ch};
    }
    h_ = l.ifmap_h;
    w_ = l.ifmap_w;
  }
  int64_t ifmap(int64_t p, int64_t j) const {
    const Part& a = pix_[p];
    const Part& b = win_[j];
    if (a.row + b.row >= h_ || a.col + b.col >= w_) return -1;
    return a.addr + b.addr + a_.ifmap_offset;
  }
  int64_t filter(int64_t j, int64_t f) const { return a_.filter_offset + f * g_.k + j; }
  int64_t ofmap(int64_t p, int64_t f) const { return a_.ofmap_offset + g_.n * p + f; }

 private:
  struct Part {
    int64_t row, col, addr;
  };
  const ArchConfig& a_;
  const LayerGemm& g_;
  std::vector<Part> pix_, win_;
  int64_t h_ = 0, w_ = 0;
};

enum class Operand { ifmap, filter, ofmap };

// One operand's demand within a fold: `rows` data rows (padded to the array when `flip`) after
// `prefix` null rows, column c delayed by c rows when `skew`. Data element (d, c) reads operand
// (x, y) with x = x_base + d, y = y_base + c (or the transpose when !x_from_row).
struct Block {
  Operand op;
  int64_t width, prefix, rows;
  bool skew, flip;
  int64_t valid_rows, valid_cols;
  bool x_from_row;
  int64_t x_base, y_base;
};

// Column range [lo, hi) of fold-local demand row y that holds data, before the flip/valid checks.
std::pair<int64_t, int64_t> data_cols(const Block& b, int64_t y) {
  const int64_t d = y - b.prefix, hi_all = std::min(b.width, b.valid_cols);
  if (!b.skew)
    return (d >= 0 && d < b.rows) ? std::make_pair(int64_t{0}, hi_all)
                                  : std::make_pair(int64_t{0}, int64_t{0});
  const int64_t lo = std::max<int64_t>(0, d - b.rows + 1), hi = std::min(hi_all, d + 1);
  return {lo, std::max(lo, hi)};
}

// SCALE-Sim's estimate-bandwidth read buffer: DRAM reads are the distinct addresses of each
// prefetch epoch (the epoch closes when 50 sets of floor(words/100) new addresses are complete);
// the DRAM stream's cycles follow its prefetch bookkeeping.
class ReadBuffer {
 public:
  ReadBuffer(int64_t size_kb, int64_t base, int64_t span, const std::string& what,
             const std::string& layer)
      : set_words_(size_kb * 1024 / 100),
        epoch_words_(50 * set_words_),
        base_(base),
        what_(what),
        layer_(layer) {
    stamp_.assign(static_cast<size_t>(span), 0);
  }
  void row(int64_t cycle) {
    if (!first_seen_) {
      first_seen_ = true;
      first_request_ = cycle;
    }
  }
  void access(int64_t addr, int64_t cycle) {
    uint32_t& s = stamp_[static_cast<size_t>(addr - base_)];
    if (s == epoch_) return;
    s = epoch_;
    ++reads_;
    if (++in_epoch_ == epoch_words_) close_epoch(cycle);
  }
  void finish() {
    if (epochs_ == 0) {
      const int64_t words = ceil_div(reads_, set_words_) * set_words_;
      const int64_t n = ceil_div(words, 10);
      if (n <= 0) fail("it prefetches no " + what_ + " data");
      record(-1 - n, -2);
    } else {
      if (last_end_ < last_start_) fail("two " + what_ + " prefetch epochs end in one cycle");
      record(last_start_, last_end_);
    }
  }
  int64_t reads() const { return reads_; }
  Span dram() const { return dram_; }

 private:
  void close_epoch(int64_t cycle) {
    if (epochs_ == 0) {
      const int64_t end = first_request_ - 2;  // one cycle ahead, minus the port latency
      record(end - ceil_div(epoch_words_, 10) + 1, end);
      last_start_ = end + 1;
    } else {
      if (last_end_ < last_start_) fail("two " + what_ + " prefetch epochs end in one cycle");
      record(last_start_, last_end_);
      last_start_ = last_end_ + 1;
    }
    last_end_ = cycle;
    ++epochs_;
    ++epoch_;
    in_epoch_ = 0;
  }
  // A prefetch issued over cycles [start, end], answered one cycle later by the DRAM port.
  void record(int64_t start, int64_t end) {
    if (!recorded_) dram_.start = start + 1;
    recorded_ = true;
    dram_.stop = end + 1;
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw CompileError("scalesim: layer '" + layer_ + "'" +
                       ": SCALE-Sim v2 divides by zero here (" + why + ", buffer of " +
                       std::to_string(set_words_ * 100) + " words); no result to reproduce");
  }

  int64_t set_words_, epoch_words_, base_;
  std::string what_, layer_;
  std::vector<uint32_t> stamp_;
  uint32_t epoch_ = 1;
  int64_t reads_ = 0, in_epoch_ = 0, epochs_ = 0;
  bool first_seen_ = false, recorded_ = false;
  int64_t first_request_ = 0, last_start_ = 0, last_end_ = 0;
  Span dram_;
};

// SCALE-Sim's ofmap write buffer: words gather in lines of `bw` words; once more than the drain
// half is occupied (and no drain is in progress) the partial line is flushed and ceil(half/bw)
// lines drain, one per cycle, counting every drained line as full except the last one. A word
// written while a drain is in progress and the buffer is full stalls the array to the drain's end.
class WriteBuffer {
 public:
  WriteBuffer(int64_t size_kb, int64_t bw) : bw_(bw) {
    total_ = size_kb * 1024;
    const int64_t active = (total_ + 1) / 2;  // ceil(total * 0.5)
    drain_size_ = total_ - active;
    free_ = total_;
  }
  // Writes `n` words in the row issued at `cycle`; returns the row's stall (cycles).
  int64_t write(int64_t n, int64_t cycle) {
    int64_t offset = 0, cur = cycle;
    for (int64_t e = 0; e < n; ++e) {
      if (++line_idx_ == bw_) {
        push_line(bw_);
        line_idx_ = 0;
      }
      --free_;
      if (cur < drain_end_) {
        if (free_ <= 0) {
          offset += drain_end_ - cur;
          cur = drain_end_;
        }
      } else if (free_ < total_ - drain_size_) {
        flush_partial();
        drain_end_ = drain(cur);
      }
    }
    return offset;
  }
  void finish(int64_t cycle) {
    flush_partial();
    while (lines_ > 0) cycle = drain(cycle) + 1;
  }
  int64_t writes() const { return writes_; }
  Span dram() const { return dram_; }

 private:
  void push_line(int64_t fill) {
    if (!runs_.empty() && runs_.back().first == fill)
      ++runs_.back().second;
    else
      runs_.emplace_back(fill, 1);
    ++lines_;
  }
  void flush_partial() {
    if (line_idx_ == 0) return;
    push_line(line_idx_);
    line_idx_ = 0;
  }
  int64_t drain(int64_t start) {
    const int64_t num = std::min(ceil_div(drain_size_, bw_), lines_);
    int64_t left = num, last_fill = 0;
    while (left > 0) {
      auto& run = runs_.front();
      const int64_t take = std::min(left, run.second);
      last_fill = run.first;
      left -= take;
      if ((run.second -= take) == 0) runs_.pop_front();
    }
    lines_ -= num;
    const int64_t data = num * bw_ - (bw_ - last_fill);
    writes_ += data;
    free_ += data;
    if (!drained_) dram_.start = start;
    drained_ = true;
    dram_.stop = start + num - 1;
    return start + num - 1;
  }

  int64_t bw_, total_ = 0, drain_size_ = 0, free_ = 0;
  int64_t line_idx_ = 0, lines_ = 0, drain_end_ = 0, writes_ = 0;
  std::deque<std::pair<int64_t, int64_t>> runs_;  // (words in line, lines) of undrained lines
  bool drained_ = false;
  Span dram_;
};

// The fold-level shape of one dataflow: SCALE-Sim's Sr, Sc, T and, per fold, the three blocks.
struct Mapping {
  int64_t sr = 0, sc = 0, t = 0;
  int64_t fold_rows = 0, util_cycles = 0;  // demand rows per fold; cycles in the compute-util ratio
};

Mapping mapping(const ArchConfig& a, const LayerGemm& g) {
  const int64_t r = a.rows, c = a.cols;
  Mapping m;
  switch (a.dataflow) {
    case Dataflow::output_stationary:
      m = {g.m, g.n, g.k, 0, 0};
      m.fold_rows = m.util_cycles = m.t + r + c - 2;
      break;
    case Dataflow::weight_stationary:
      m = {g.k, g.n, g.m, 0, 0};
      m.fold_rows = 2 * r + c + m.t - 2;
      m.util_cycles = 2 * r + 2 * c + m.t - 3;
      break;
    case Dataflow::input_stationary:
      m = {g.k, g.m, g.n, 0, 0};
      m.fold_rows = 2 * r + c + m.t - 2;
      m.util_cycles = 2 * r + 2 * c + m.t - 3;
      break;
  }
  return m;
}

// The ifmap, filter and ofmap blocks of fold (fr, fc); wr x wc is the used part of the array.
void fold_blocks(const ArchConfig& a, const Mapping& m, int64_t fr, int64_t fc, int64_t wr,
                 int64_t wc, Block out[3]) {
  const int64_t r = a.rows, c = a.cols, rb = fr * r, cb = fc * c;
  switch (a.dataflow) {
    case Dataflow::output_stationary:
      out[0] = {Operand::ifmap, r, 0, m.t, true, false, m.t, wr, false, rb, 0};
      out[1] = {Operand::filter, c, 0, m.t, true, false, m.t, wc, true, 0, cb};
      out[2] = {Operand::ofmap, c, m.t - 1, r, true, true, wr, wc, true, rb, cb};
      break;
    case Dataflow::weight_stationary:
      out[0] = {Operand::ifmap, r, r, m.t, true, false, m.t, wr, true, 0, rb};
      out[1] = {Operand::filter, c, 0, r, false, true, wr, wc, true, rb, cb};
      out[2] = {Operand::ofmap, c, 2 * r - 1, m.t, true, false, m.t, wc, true, 0, cb};
      break;
    case Dataflow::input_stationary:
      out[0] = {Operand::ifmap, c, 0, r, false, true, wr, wc, false, cb, rb};
      out[1] = {Operand::filter, r, r, m.t, true, false, m.t, wr, false, rb, 0};
      out[2] = {Operand::ofmap, c, 2 * r - 1, m.t, true, false, m.t, wc, false, cb, 0};
      break;
  }
}

// Operand address of data element (row d of the block, column col), or -1.
int64_t element(const Operands& ops, const Block& b, int64_t y, int64_t col) {
  const int64_t d = y - b.prefix - (b.skew ? col : 0);
  const int64_t src = b.flip ? b.rows - 1 - d : d;
  if (src >= b.valid_rows) return -1;
  const int64_t x = b.x_base + (b.x_from_row ? src : col),
                z = b.y_base + (b.x_from_row ? col : src);
  switch (b.op) {
    case Operand::ifmap:
      return ops.ifmap(x, z);
    case Operand::filter:
      return ops.filter(x, z);
    case Operand::ofmap:
      return ops.ofmap(x, z);
  }
  return -1;
}

void widen(Span& s, bool& seen, int64_t cycle) {
  if (!seen) s.start = cycle;
  seen = true;
  s.stop = cycle;
}

// Sizes this emulation holds in memory: a 4-byte stamp per ifmap and filter word, 24 bytes per
// ofmap pixel (the ofmap is no larger than the ifmap); 2^26 words is a 4096x4096x4 ifmap.
constexpr int64_t kMaxWords = int64_t{1} << 26;
constexpr int64_t kMaxArraySide = int64_t{1} << 20;
constexpr int64_t kMaxSramKb = int64_t{1} << 32;

// How SCALE-Sim's USER-mode read buffer prefetches an operand (create_*_prefetch_mat of
// systolic_compute_{os,ws,is}): per fold, a block of `block_rows` rows of `cols` entries (nulls
// past `valid`), the folds stacked, then read along anti-diagonals where `diagonal` (the order of
// skewed demand) or row by row. Entry (t, i) of a fold is the operand at (i, t) when `index_first`,
// else at (t, i), i counting across folds.
struct FetchLayout {
  Operand op;
  int64_t folds, block_rows, cols, valid;
  bool diagonal, index_first;
};

FetchLayout fetch_layout(const ArchConfig& a, const Mapping& m, Operand op) {
  const int64_t rf = ceil_div(m.sr, a.rows), cf = ceil_div(m.sc, a.cols), r = a.rows, c = a.cols;
  const bool ifmap = op == Operand::ifmap;
  switch (a.dataflow) {
    case Dataflow::output_stationary:
      return ifmap ? FetchLayout{op, rf, m.t, r, m.sr, true, true}
                   : FetchLayout{op, cf, m.t, c, m.sc, true, false};
    case Dataflow::weight_stationary:
      return ifmap ? FetchLayout{op, rf, m.t, r, m.sr, true, false}
                   : FetchLayout{op, cf, m.sr, c, m.sc, false, false};
    case Dataflow::input_stationary:
      break;
  }
  return ifmap ? FetchLayout{op, cf, m.sr, c, m.sc, false, true}
               : FetchLayout{op, rf, m.t, r, m.sr, true, true};
}

// Non-null entries of the prefetch order a USER-mode buffer holds in memory (4 bytes each): 1 GiB;
// entries it visits, nulls included (twice, a few nanoseconds each).
constexpr int64_t kMaxFetchWords = int64_t{1} << 28;
constexpr int64_t kMaxFetchEntries = int64_t{1} << 32;

// Calls `visit` on every entry of `f`'s prefetch order, in order: an offset from `base` or -1.
void for_each_fetch(const Operands& ops, const FetchLayout& f, int64_t base,
                    const std::function<void(int32_t)>& visit) {
  const int64_t rows = f.folds * f.block_rows;
  const auto at = [&](int64_t row, int64_t col) -> int32_t {
    const int64_t t = row % f.block_rows, i = (row / f.block_rows) * f.cols + col;
    if (i >= f.valid) return -1;
    const int64_t x = f.index_first ? i : t, y = f.index_first ? t : i;
    const int64_t addr = f.op == Operand::ifmap ? ops.ifmap(x, y) : ops.filter(x, y);
    return addr < 0 ? -1 : static_cast<int32_t>(addr - base);
  };
  if (!f.diagonal) {
    for (int64_t row = 0; row < rows; ++row)
      for (int64_t col = 0; col < f.cols; ++col) visit(at(row, col));
    return;
  }
  for (int64_t d = 0; d < rows + f.cols; ++d)
    for (int64_t row = std::min(d, rows - 1); row >= std::max<int64_t>(0, d - f.cols + 1); --row)
      visit(at(row, d - row));
}

// A USER-mode read buffer fed `op`'s prefetch order.
StallingReadBuffer stalling_buffer(const ArchConfig& a, const Operands& ops, const Mapping& m,
                                   Operand op, int64_t size_kb, int64_t base, int64_t span,
                                   const std::string& layer) {
  const FetchLayout f = fetch_layout(a, m, op);
  return StallingReadBuffer(
      size_kb, a.user_bandwidth,
      [&](const std::function<void(int32_t)>& visit) { for_each_fetch(ops, f, base, visit); },
      f.folds * f.block_rows * f.cols, span, op == Operand::ifmap ? "ifmap" : "filter", layer);
}

// Refuses a USER-mode layer whose read buffers this emulation cannot hold, before anything is
// allocated. Nulls (padding) are visited but not stored: the stored words are at most the
// operand's.
void check_user_mode(const ArchConfig& a, const Layer& l, const Mapping& m) {
  for (Operand op : {Operand::ifmap, Operand::filter}) {
    const FetchLayout f = fetch_layout(a, m, op);
    const std::string at = "scalesim: layer '" + l.name + "': the USER-mode " +
                           (op == Operand::ifmap ? "ifmap" : "filter");
    if (static_cast<__int128>(f.valid) * f.block_rows > kMaxFetchWords)
      throw InvalidArgument(at +
                            " read buffer would hold more than 2^28 words; too large for "
                            "this emulation");
    if (static_cast<__int128>(f.folds) * f.block_rows * f.cols > kMaxFetchEntries)
      throw InvalidArgument(at +
                            " prefetch order, padded to the array's width, has more than "
                            "2^32 entries; too large for this emulation");
  }
}

// One read operand's buffer: SCALE-Sim's estimate buffer (CALC) or its stalling one (USER).
class ReadSide {
 public:
  ReadSide(const ArchConfig& a, const Operands& ops, const Mapping& m, Operand op, int64_t size_kb,
           int64_t base, int64_t span, const std::string& layer)
      : base_(base) {
    if (a.user_bandwidth > 0)
      user_.emplace(stalling_buffer(a, ops, m, op, size_kb, base, span, layer));
    else
      calc_.emplace(size_kb, base, span, op == Operand::ifmap ? "ifmap" : "filter", layer);
  }
  // Serves demand row y of block b issued at `cycle`: returns the row's stall and widens the
  // operand's SRAM span to the cycle the row is served.
  int64_t serve(const Operands& ops, const Block& b, int64_t y, int64_t cycle, Span& sram,
                bool& seen) {
    row_.clear();
    const auto [lo, hi] = data_cols(b, y);
    for (int64_t col = lo; col < hi; ++col) {
      const int64_t addr = element(ops, b, y, col);
      if (addr >= 0) row_.push_back(static_cast<int32_t>(addr - base_));
    }
    int64_t stall = 0;
    if (user_) {
      stall = user_->serve(row_, cycle);
    } else if (!row_.empty()) {
      calc_->row(cycle);
      for (int32_t o : row_) calc_->access(base_ + o, cycle);
    }
    if (!row_.empty()) widen(sram, seen, cycle + 1 + stall);
    return stall;
  }
  void finish() {
    if (calc_) calc_->finish();
  }
  int64_t reads() const { return user_ ? user_->reads() : calc_->reads(); }
  Span dram() const {
    return user_ ? Span{user_->dram_start(), user_->dram_stop()} : calc_->dram();
  }

 private:
  int64_t base_;
  std::optional<ReadBuffer> calc_;
  std::optional<StallingReadBuffer> user_;
  std::vector<int32_t> row_;
};

int64_t write_row_words(const Block& b, int64_t y) {
  const auto [lo, hi] = data_cols(b, y);
  if (!b.flip) return hi - lo;
  int64_t n = 0;
  for (int64_t col = lo; col < hi; ++col)
    n += (b.rows - 1 - (y - b.prefix - (b.skew ? col : 0))) < b.valid_rows;
  return n;
}

// a * b * c, saturated above kMaxWords.
int64_t words(int64_t a, int64_t b, int64_t c = 1) {
  const __int128 p = static_cast<__int128>(a) * b * c;
  return p > kMaxWords ? kMaxWords + 1 : static_cast<int64_t>(p);
}

void check(const ArchConfig& a, const Layer& l) {
  const std::string at = "scalesim: layer '" + l.name + "': ";
  const std::pair<const char*, int64_t> positive[] = {{"ArrayHeight", a.rows},
                                                      {"ArrayWidth", a.cols},
                                                      {"IfmapSramSzkB", a.ifmap_sram_kb},
                                                      {"FilterSramSzkB", a.filter_sram_kb},
                                                      {"OfmapSramSzkB", a.ofmap_sram_kb},
                                                      {"IFMAP Height", l.ifmap_h},
                                                      {"IFMAP Width", l.ifmap_w},
                                                      {"Filter Height", l.filter_h},
                                                      {"Filter Width", l.filter_w},
                                                      {"Channels", l.channels},
                                                      {"Num Filter", l.num_filters},
                                                      {"Stride height", l.stride_h},
                                                      {"Stride width", l.stride_w}};
  for (const auto& [what, v] : positive)
    if (v < 1) throw InvalidArgument(at + what + " must be >= 1, got " + std::to_string(v));
  if (a.rows > kMaxArraySide || a.cols > kMaxArraySide)
    throw InvalidArgument(at + "array " + std::to_string(a.rows) + "x" + std::to_string(a.cols) +
                          " is larger than " + std::to_string(kMaxArraySide) + " a side");
  for (int64_t kb : {a.ifmap_sram_kb, a.filter_sram_kb, a.ofmap_sram_kb})
    if (kb > kMaxSramKb)
      throw InvalidArgument(at + "SRAM of " + std::to_string(kb) + " kB is larger than " +
                            std::to_string(kMaxSramKb) + " kB");
  if (l.filter_h > l.ifmap_h || l.filter_w > l.ifmap_w)
    throw InvalidArgument(at + "filter " + std::to_string(l.filter_h) + "x" +
                          std::to_string(l.filter_w) + " is larger than the ifmap " +
                          std::to_string(l.ifmap_h) + "x" + std::to_string(l.ifmap_w));
  // The filter window is no larger than the ifmap, so K <= H*W*C bounds the GEMM's K too.
  const int64_t ifmap = words(l.ifmap_h, l.ifmap_w, l.channels);
  const int64_t filter = words(words(l.filter_h, l.filter_w, l.channels), l.num_filters);
  if (ifmap > kMaxWords || filter > kMaxWords)
    throw InvalidArgument(at + "ifmap or filter has more than 2^26 words (ifmap " +
                          std::to_string(l.ifmap_h) + "x" + std::to_string(l.ifmap_w) + "x" +
                          std::to_string(l.channels) + ", " + std::to_string(l.num_filters) +
                          " filters); too large for this emulation");
}

struct FoldAverages {
  double mapping_eff = 0, compute_util = 0;
};

// Streams the layer's demand, fold by fold and row by row, through the three buffers: cycles,
// stalls, DRAM counts and every stream's first and last cycle.
FoldAverages replay(const ArchConfig& a, const Layer& l, const LayerGemm& g, const Mapping& m,
                    LayerReport& rep) {
  const Operands ops(a, l, g);
  const int64_t row_folds = ceil_div(m.sr, a.rows), col_folds = ceil_div(m.sc, a.cols);
  ReadSide ifmap_buf(a, ops, m, Operand::ifmap, a.ifmap_sram_kb, a.ifmap_offset,
                     l.ifmap_h * l.ifmap_w * l.channels, l.name);
  ReadSide filter_buf(a, ops, m, Operand::filter, a.filter_sram_kb, a.filter_offset, g.k * g.n,
                      l.name);
  WriteBuffer ofmap_buf(a.ofmap_sram_kb, a.user_bandwidth > 0 ? a.user_bandwidth : a.cols);
  bool seen[3] = {false, false, false};
  std::vector<double> mapping_eff, compute_util;
  int64_t row = 0, stall = 0, last_out = 0;
  for (int64_t fc = 0; fc < col_folds; ++fc) {
    for (int64_t fr = 0; fr < row_folds; ++fr) {
      const int64_t wr = std::min(a.rows, m.sr - fr * a.rows),
                    wc = std::min(a.cols, m.sc - fc * a.cols);
      Block b[3];
      fold_blocks(a, m, fr, fc, wr, wc, b);
      mapping_eff.push_back(static_cast<double>(wr * wc) / static_cast<double>(a.rows * a.cols));
      compute_util.push_back(static_cast<double>(wr * wc * m.t) /
                             static_cast<double>(a.rows * a.cols * m.util_cycles));
      for (int64_t y = 0; y < m.fold_rows; ++y, ++row) {
        const int64_t cycle = row + stall;
        const int64_t ifmap_stall = ifmap_buf.serve(ops, b[0], y, cycle, rep.sram_ifmap, seen[0]);
        const int64_t filter_stall =
            filter_buf.serve(ops, b[1], y, cycle, rep.sram_filter, seen[1]);
        const int64_t words = write_row_words(b[2], y);
        const int64_t ofmap_stall = words > 0 ? ofmap_buf.write(words, cycle) : 0;
        last_out = cycle + ofmap_stall;
        if (words > 0) widen(rep.sram_ofmap, seen[2], last_out);
        stall += std::max({ifmap_stall, filter_stall, ofmap_stall});
      }
    }
  }
  if (last_out == 0)
    throw CompileError("scalesim: layer '" + l.name +
                       "': one demand row in all; SCALE-Sim v2 divides by zero "
                       "(0 total cycles); no result to reproduce");
  ifmap_buf.finish();
  filter_buf.finish();
  ofmap_buf.finish(last_out);
  rep.total_cycles = last_out;
  rep.stall_cycles = stall;
  rep.dram_ifmap_reads = ifmap_buf.reads();
  rep.dram_filter_reads = filter_buf.reads();
  rep.dram_ofmap_writes = ofmap_buf.writes();
  rep.dram_ifmap = ifmap_buf.dram();
  rep.dram_filter = filter_buf.dram();
  rep.dram_ofmap = ofmap_buf.dram();
  const double folds = static_cast<double>(row_folds * col_folds);
  return {python_sum(mapping_eff) / folds, python_sum(compute_util) / folds};
}

// SRAM reads and writes: the demand blocks' shapes summed over folds (see the header).
void sram_counts(const ArchConfig& a, const Mapping& m, LayerReport& rep) {
  const int64_t row_folds = ceil_div(m.sr, a.rows), col_folds = ceil_div(m.sc, a.cols);
  switch (a.dataflow) {
    case Dataflow::output_stationary:
      rep.sram_ifmap_reads = col_folds * m.t * m.sr;
      rep.sram_filter_reads = row_folds * m.t * m.sc;
      rep.sram_ofmap_writes = m.sr * m.sc + row_folds * col_folds * (a.rows + a.cols);
      break;
    case Dataflow::weight_stationary:
      rep.sram_ifmap_reads = col_folds * m.t * m.sr;
      rep.sram_filter_reads = m.sr * m.sc;
      rep.sram_ofmap_writes = row_folds * m.t * m.sc;
      break;
    case Dataflow::input_stationary:
      rep.sram_ifmap_reads = m.sr * m.sc;
      rep.sram_filter_reads = col_folds * m.t * m.sr;
      rep.sram_ofmap_writes = row_folds * m.t * m.sc;
      break;
  }
}

}  // namespace

LayerGemm layer_gemm(const Layer& l) {
  LayerGemm g;
  g.ofmap_h = ceil_div(l.ifmap_h - l.filter_h + l.stride_h, l.stride_h);
  g.ofmap_w = ceil_div(l.ifmap_w - l.filter_w + l.stride_w, l.stride_w);
  g.m = g.ofmap_h * g.ofmap_w;
  g.k = l.filter_h * l.filter_w * l.channels;
  g.n = l.num_filters;
  return g;
}

double python_sum(const std::vector<double>& values) {
  if (values.empty()) return 0.0;
  double f = values[0], c = 0.0;
  for (size_t i = 1; i < values.size(); ++i) {
    const double x = values[i], t = f + x;
    c += std::fabs(f) >= std::fabs(x) ? (f - t) + x : (x - t) + f;
    f = t;
  }
  if (c != 0.0 && std::isfinite(c)) f += c;
  return f;
}

LayerReport simulate_layer(const ArchConfig& a, const Layer& l) {
  check(a, l);
  const LayerGemm g = layer_gemm(l);
  const Mapping m = mapping(a, g);
  if (a.user_bandwidth > 0) check_user_mode(a, l, m);
  LayerReport rep;
  const FoldAverages avg = replay(a, l, g, m, rep);
  sram_counts(a, m, rep);
  const int64_t macs = a.rows * a.cols;
  // Python divides integers exactly rounded; doubles agree while both sides are below 2^53.
  const auto ratio = [](__int128 num, __int128 den) {
    return static_cast<double>(num) / static_cast<double>(den);
  };
  rep.overall_util_pct = ratio(static_cast<__int128>(g.m) * g.n * g.k * 100,
                               static_cast<__int128>(rep.total_cycles) * macs);
  rep.mapping_eff_pct = avg.mapping_eff * 100;
  rep.compute_util_pct = avg.compute_util * 100;
  const int64_t sram[3] = {rep.sram_ifmap_reads, rep.sram_filter_reads, rep.sram_ofmap_writes};
  const int64_t dram[3] = {rep.dram_ifmap_reads, rep.dram_filter_reads, rep.dram_ofmap_writes};
  const Span spans[3] = {rep.dram_ifmap, rep.dram_filter, rep.dram_ofmap};
  for (int i = 0; i < 3; ++i) {
    rep.avg_sram_bw[i] = ratio(sram[i], rep.total_cycles);
    rep.avg_dram_bw[i] = ratio(dram[i], spans[i].stop - spans[i].start + 1);
  }
  return rep;
}

}  // namespace mimic::models::tpu::scalesim
