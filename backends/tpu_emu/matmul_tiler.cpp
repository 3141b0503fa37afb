#include "backends/tpu_emu/matmul_tiler.h"

#include <fmt/format.h>
#include <algorithm>

#include "backends/tpu_emu/layout.h"
#include "models/tpu/dataflow.h"

namespace mimic::backends::tpu_emu {

using namespace models::tpu;

namespace {
// Slot ids of a matmul kernel: A (input rows) and R (residual), O (output) pairs, staged weights,
// and the matrix units' accumulators (no on-chip bytes).
enum SlotId { kA0 = 0, kR0 = 2, kO0 = 4, kW = 6, kAcc0 = 16 };
}  // namespace

MatmulTiler::MatmulTiler(Context& c, const ir::Node& head, const GemmDesc& d, int32_t kernel,
                         int64_t w_eb)
    : c_(c), head_(head), d_(d), kernel_(kernel), w_eb_(w_eb) {
  a_home_ = c.home(d.a);
  y_home_ = c.home(d.y);
  w_home_ = c.home(d.w);
  r_home_ = d.epi.residual >= 0 ? c.home(d.epi.residual) : Level::onchip;
  a_eb_ = c.element_bytes(d.a);
  y_eb_ = c.element_bytes(d.y);
  r_eb_ = d.epi.residual >= 0 ? c.element_bytes(d.epi.residual) : 4;
  conv_ = d.a_view == GemmDesc::AView::conv;
  filter_ = d.a_view == GemmDesc::AView::filter;
  nchw_ = conv_ && !d.conv.channels_last;
  a_slot_needed_ = a_home_ != Level::onchip || nchw_ || filter_;
  half_ = c.em->half_bytes();
  acc_rows_ = std::max<int64_t>(8, c.spec.mxu.accumulator_bytes / (c.spec.mxu.cols * 4 * 2));
  epilogue_ops_ =
      1 + (d.epi.bias >= 0) + (d.epi.residual >= 0) + (nchw_ ? 1 : 0) +
      (d.epi.store == Rounding::int8 ? 2 : 0) +
      (d.epi.activation != VectorFunc::identity ? vector_ops_per_element(d.epi.activation) : 0);
  if (c.spec.vpu.fused_epilogue) epilogue_ops_ = 1;  // one pipelined pass (TPUv1 activation unit)
  row_parity_.assign(c.spec.cores, 0);
  col_parity_.assign(c.spec.cores, 0);
}

int64_t MatmulTiler::full_channels() const {
  return conv_ ? d_.conv.c / d_.conv.groups : d_.k;
}

int64_t MatmulTiler::a_bytes(int64_t r0, int64_t r1, int64_t channels, int64_t* runs,
                             bool footprint, int64_t kernel_rows) const {
  if (conv_) {
    Window w = d_.conv;
    if (footprint) w.channels_last = true;
    if (kernel_rows > 0) w.kh = kernel_rows;
    return conv_input_tile_bytes(w, r0, r1, channels, a_eb_, c_.spec.vpu, runs);
  }
  if (filter_) {  // x's rows under `channels` output positions, for the rows' input channels
    const int64_t taps = d_.conv.kh * d_.conv.kw, x_channels = (r1 - 1) / taps - r0 / taps + 1;
    return conv_input_tile_bytes(d_.conv, 0, channels, x_channels, a_eb_, c_.spec.vpu, runs);
  }
  *runs = d_.a_transposed ? channels : (channels < d_.k ? r1 - r0 : 1);
  return (d_.a_transposed ? tiled_elements(channels, r1 - r0, c_.spec.vpu)
                          : tiled_elements(r1 - r0, channels, c_.spec.vpu)) *
         a_eb_;
}

int64_t MatmulTiler::y_bytes(int64_t r0, int64_t r1, int64_t cols, int64_t eb, int64_t* runs,
                             bool footprint) const {
  if (conv_) {
    Window w = d_.conv;
    if (footprint) w.channels_last = true;
    return conv_output_tile_bytes(w, r0, r1, cols, eb, c_.spec.vpu, runs);
  }
  *runs = cols < d_.n ? r1 - r0 : 1;
  return tiled_elements(r1 - r0, cols, c_.spec.vpu) * eb;
}

uint64_t MatmulTiler::staged_weight_bytes(int64_t cols) const {
  return static_cast<uint64_t>(tiled_elements(d_.k, cols, c_.spec.vpu) * (d_.on_vpu ? 4 : w_eb_) +
                               cols * 4);
}

std::vector<std::pair<int64_t, int64_t>> MatmulTiler::row_tiles(const CorePlan& cp,
                                                                int64_t tm) const {
  std::vector<std::pair<int64_t, int64_t>> tiles;
  // Tiles of (nearly) equal height no taller than tm, heights multiples of `unit`.
  auto balanced = [&](int64_t begin, int64_t end, int64_t unit) {
    if (end - begin <= tm) {
      tiles.emplace_back(begin, end);
      return;
    }
    int64_t units = ceil_div(end - begin, unit), per = std::max<int64_t>(1, tm / unit);
    int64_t count = ceil_div(units, per), step = ceil_div(units, count) * unit;
    for (int64_t r0 = begin; r0 < end; r0 += step) tiles.emplace_back(r0, std::min(end, r0 + step));
  };
  if (!conv_) {
    balanced(cp.r0, cp.r1, 8);
    return tiles;
  }
  // Convolutions: whole images per tile, or whole output rows within one image, so that no tile
  // pays the (8, 128) padding of two partial planes.
  const int64_t ohw = d_.conv.oh * d_.conv.ow, ow = d_.conv.ow;
  if (tm >= ohw && cp.r0 % ohw == 0) {
    balanced(cp.r0, cp.r1, ohw);
    return tiles;
  }
  int64_t step = std::max(ow, tm / ow * ow);
  for (int64_t r0 = cp.r0; r0 < cp.r1;) {
    int64_t image_end = (r0 / ohw + 1) * ohw;
    int64_t r1 = std::min({cp.r1, r0 + step, image_end});
    tiles.emplace_back(r0, r1);
    r0 = r1;
  }
  return tiles;
}

MatmulTiler::TileBytes MatmulTiler::tile_bytes(const CorePlan& cp, int64_t tm, int64_t tn) const {
  // The largest tile of the core: tiles that straddle images touch more (padded) rows.
  TileBytes t;
  int64_t runs;
  for (const auto& [r0, r1] : row_tiles(cp, tm)) {
    if (a_slot_needed_)
      t.a = std::max(t.a, static_cast<uint64_t>(
                              a_bytes(r0, r1, cp.chunk_channels, &runs, true, cp.kernel_rows)));
    if (d_.epi.residual >= 0 && r_home_ != Level::onchip)
      t.r = std::max(t.r, static_cast<uint64_t>(y_bytes(r0, r1, tn, r_eb_, &runs, true)));
    if (split_reduction_across_cores())  // the partial sums of the core above
      t.r = std::max(t.r, static_cast<uint64_t>(y_bytes(r0, r1, tn, 4, &runs, true)));
    if (y_home_ != Level::onchip)
      t.y = std::max(t.y, static_cast<uint64_t>(y_bytes(r0, r1, tn, y_eb_, &runs, true)));
  }
  return t;
}

uint64_t MatmulTiler::working_set(const CorePlan& cp, int64_t tm, int64_t tn, bool stage) const {
  TileBytes t = tile_bytes(cp, tm, tn);
  auto slot = [](uint64_t b) { return (b + 511) / 512 * 512; };  // the emitter's slot granularity
  return 2 * (slot(t.a) + slot(t.r) + slot(t.y)) +
         (stage ? slot(staged_weight_bytes(cp.c1 - cp.c0)) : 0);
}

// Input channels per tile: all, unless a few rows of them already take half of the budget. A
// kernel larger than its output (a weight gradient's convolution: every output row reads the whole
// input) then splits its kernel rows until a tile holds `split_rows` rows (as many as the
// accumulators), so that the matrix units stream many rows per weight load instead of one.
void MatmulTiler::choose_k_chunks(CorePlan& cp, int64_t split_rows, int64_t min_rows) const {
  const int64_t cols_pe = c_.spec.mxu.cols;
  cp.chunk_channels = cp.k1 - cp.k0;
  cp.kernel_rows = conv_ ? d_.conv.kh : 0;
  while (a_slot_needed_ && cp.chunk_channels > 1 &&
         2 * tile_bytes(cp, min_rows, cols_pe).a > half_ / 2)
    cp.chunk_channels =
        cp.chunk_channels > 16 ? round_up(cp.chunk_channels / 2, 8) : cp.chunk_channels / 2;
  const bool wide_kernel = conv_ && d_.conv.kh * d_.conv.kw > d_.conv.oh * d_.conv.ow;
  const int64_t rows = wide_kernel ? split_rows : min_rows;
  // A plain product with a long reduction (a weight gradient: K = batch x sequence) splits K until
  // a tile of `split_rows` rows fits, as it would a wide kernel: few rows per weight load would
  // leave the matrix units loading weights most of the time.
  while (!conv_ && a_slot_needed_ && cp.chunk_channels > cols_pe &&
         2 * tile_bytes(cp, split_rows, cols_pe).a > half_ / 2)
    cp.chunk_channels = round_up(cp.chunk_channels / 2, cols_pe);
  while (a_slot_needed_ && cp.kernel_rows > 1 && 2 * tile_bytes(cp, rows, cols_pe).a > half_ / 2)
    cp.kernel_rows = ceil_div(cp.kernel_rows, 2);
}

bool MatmulTiler::split_reduction_across_cores() const {
  return filter_ && c_.spec.cores > 1 && d_.conv.n >= c_.spec.cores;
}

bool MatmulTiler::splits_reduction(const CorePlan& cp, int64_t rows, int64_t mxus) const {
  const TpuSpec& spec = c_.spec;
  if (mxus <= 1 || cp.split_columns || d_.on_vpu || ceil_div(rows, mxus) >= spec.mxu.rows)
    return false;
  const int64_t cols = std::min<int64_t>(cp.tile_cols, spec.mxu.cols);
  uint64_t by_rows =
      gemm_cycles(spec.mxu.dataflow, {ceil_div(rows, mxus), d_.k, cols}, spec.mxu.rows,
                  spec.mxu.cols, spec.mxu.weight_double_buffering, c_.p.passes);
  uint64_t by_k = gemm_cycles(spec.mxu.dataflow, {rows, ceil_div(d_.k, mxus), cols}, spec.mxu.rows,
                              spec.mxu.cols, spec.mxu.weight_double_buffering, c_.p.passes);
  return by_k < by_rows;
}

MatmulTiler::CorePlan MatmulTiler::plan_core(int64_t core) const {
  const TpuSpec& spec = c_.spec;
  const int64_t cores = spec.cores, cols_pe = spec.mxu.cols,
                mxus = d_.on_vpu ? 1 : spec.mxu.per_core;
  CorePlan cp;
  cp.k0 = 0;
  cp.k1 = full_channels();
  if (split_reduction_across_cores()) {
    const int64_t positions = d_.conv.oh * d_.conv.ow, n = d_.conv.n;
    cp.k0 = n * core / cores * positions;
    cp.k1 = n * (core + 1) / cores * positions;
    cp.r1 = d_.m;
    cp.c1 = d_.n;
  } else if (cores == 1 || d_.m >= cores * 8) {
    // Convolutions split at image boundaries (or output rows when there are fewer images).
    int64_t align = !conv_ ? 8 : d_.conv.n >= cores ? d_.conv.oh * d_.conv.ow : d_.conv.ow;
    cp.r0 = std::min(d_.m, round_up(d_.m * core / cores, align));
    cp.r1 = core + 1 == cores ? d_.m : std::min(d_.m, round_up(d_.m * (core + 1) / cores, align));
    cp.c0 = 0;
    cp.c1 = d_.n;
  } else {
    int64_t chunks = ceil_div(d_.n, cols_pe);
    cp.c0 = std::min(d_.n, chunks * core / cores * cols_pe);
    cp.c1 = core + 1 == cores ? d_.n : std::min(d_.n, chunks * (core + 1) / cores * cols_pe);
    cp.r0 = 0;
    cp.r1 = d_.m;
  }
  if (cp.empty()) return cp;
  const int64_t rows = cp.r1 - cp.r0, ncols = cp.c1 - cp.c0;
  const int64_t min_rows = std::min<int64_t>(rows, conv_ ? d_.conv.ow : 8);
  int64_t runs;
  choose_k_chunks(cp, std::min(rows, acc_rows_), min_rows);
  int64_t tn_chunks = ceil_div(ncols, cols_pe);
  while (tn_chunks > 1 &&
         working_set(cp, min_rows, std::min(ncols, tn_chunks * cols_pe), false) > half_)
    tn_chunks = ceil_div(tn_chunks, 2);
  cp.tile_cols = std::min(ncols, tn_chunks * cols_pe);
  if (working_set(cp, min_rows, cp.tile_cols, false) > half_)
    c_.untileable(head_, working_set(cp, min_rows, cp.tile_cols, false),
                  fmt::format("GEMM M={} K={} N={} batch={}: a tile of {} rows x {} columns x {} "
                              "input channels needs "
                              "{} bytes of input and {} bytes of output, double-buffered",
                              d_.m, d_.k, d_.n, d_.batch, min_rows, cp.tile_cols, cp.chunk_channels,
                              a_bytes(cp.r0, cp.r0 + min_rows, cp.chunk_channels, &runs, true,
                                      cp.kernel_rows),
                              y_bytes(cp.r0, cp.r0 + min_rows, cp.tile_cols, y_eb_, &runs, true)));
  // v1/edge stream weights from their home through the weight FIFO, never through the UB (TPUv1).
  bool can_stage = !d_.on_vpu && !spec.activations_on_chip && w_home_ != Level::onchip;
  cp.stage_weights =
      d_.on_vpu || (can_stage && working_set(cp, min_rows, cp.tile_cols, true) <= half_);
  if (mxus > 1 && tn_chunks >= mxus) {
    uint64_t by_cols =
        gemm_cycles(spec.mxu.dataflow, {rows, d_.k, ceil_div(tn_chunks, mxus) * cols_pe},
                    spec.mxu.rows, cols_pe, spec.mxu.weight_double_buffering, c_.p.passes);
    uint64_t by_rows =
        gemm_cycles(spec.mxu.dataflow, {ceil_div(rows, mxus), d_.k, cp.tile_cols}, spec.mxu.rows,
                    cols_pe, spec.mxu.weight_double_buffering, c_.p.passes);
    cp.split_columns = by_cols <= by_rows;
  }
  cp.split_reduction = splits_reduction(cp, rows, mxus);
  int64_t cap =
      std::min(rows, acc_rows_ * (cp.split_columns || cp.split_reduction || mxus == 1 ? 1 : mxus));
  int64_t lo = min_rows, hi = std::max(cap, min_rows);
  while (lo < hi) {  // the tallest row tile that fits
    int64_t mid = (lo + hi + 1) / 2;
    if (working_set(cp, mid, cp.tile_cols, cp.stage_weights) <= half_)
      lo = mid;
    else
      hi = mid - 1;
  }
  cp.tile_rows = lo >= rows ? rows : std::max<int64_t>(min_rows, lo / 8 * 8);
  // Tiles that straddle images make the size non-monotonic in the tile height: step down until
  // the rounded height fits too (the smallest height was checked above).
  while (cp.tile_rows > min_rows &&
         working_set(cp, cp.tile_rows, cp.tile_cols, cp.stage_weights) > half_)
    cp.tile_rows = std::max(min_rows, cp.tile_rows - 8);
  return cp;
}

Instruction MatmulTiler::dma(int core, int unit, Level src, Level dst, uint64_t bytes,
                             uint64_t runs, uint64_t src_address, uint64_t dst_address) const {
  Instruction in;
  in.opcode = Opcode::dma;
  // Host transfers go through the chip's host DMA engine, which core 0 drives.
  in.core = static_cast<uint8_t>(src == Level::host || dst == Level::host ? 0 : core);
  in.unit = static_cast<uint16_t>(unit % c_.spec.dma.engines_per_core);
  in.src = src;
  in.dst = dst;
  in.bytes = std::max<uint64_t>(bytes, 1);
  in.runs = std::max<uint64_t>(runs, 1);
  in.src_address = src_address;
  in.dst_address = dst_address;
  return in;
}

void MatmulTiler::reserve(const CorePlan& cp, int core) {
  Emitter& em = *c_.em;
  TileBytes t = tile_bytes(cp, cp.tile_rows, cp.tile_cols);
  for (int s = 0; s < 2; ++s) {
    if (t.a) em.slot(core, kA0 + s, t.a);
    if (t.r) em.slot(core, kR0 + s, t.r);
    if (t.y) em.slot(core, kO0 + s, t.y);
  }
  if (cp.stage_weights) em.slot(core, kW, staged_weight_bytes(cp.c1 - cp.c0));
}

void MatmulTiler::run() {
  std::vector<CorePlan> plans;
  for (int64_t core = 0; core < c_.spec.cores; ++core) plans.push_back(plan_core(core));
  for (const CorePlan& cp : plans)
    if (!cp.empty() && conv_ && cp.kernel_rows < d_.conv.kh) {
      ++c_.kernel_row_splits;
      break;
    }
  Emitter& em = *c_.em;
  if (split_reduction_across_cores()) partial_ = c_.scratch(head_.name + ".partial", {d_.m, d_.n});
  em.begin_kernel(kernel_);
  for (int core = 0; core < c_.spec.cores; ++core)
    if (!plans[core].empty()) reserve(plans[core], core);
  // Cores that pass partial sums down run first in program order, so that each reads the sums
  // of the core above after they are written.
  for (int64_t b = 0; b < d_.batch; ++b)
    for (int k = 0; k < c_.spec.cores; ++k) {
      const int core = partial_ >= 0 ? static_cast<int>(c_.spec.cores) - 1 - k : k;
      if (!plans[core].empty()) emit_core(b, core, plans[core]);
    }
  std::vector<int32_t> inputs{d_.a, d_.w};
  if (d_.epi.residual >= 0) inputs.push_back(d_.epi.residual);
  em.end_kernel(inputs, {d_.y});
  if (partial_ >= 0) c_.release(partial_);
}

std::vector<int64_t> MatmulTiler::load_input(int core, int64_t r0, int64_t r1, int64_t channels,
                                             int64_t kernel_rows) {
  Emitter& em = *c_.em;
  if (!a_slot_needed_) return {d_.a};
  auto as = em.slot(core, kA0 + static_cast<int>(row_parity_[core]++ % 2));
  int64_t runs = 1, bytes = a_bytes(r0, r1, channels, &runs, false, kernel_rows),
          on_chip = a_bytes(r0, r1, channels, &runs, true, kernel_rows);
  if (a_home_ != Level::onchip) {
    Instruction in =
        dma(core, 0, a_home_, Level::onchip, bytes, runs, c_.p.tensors[d_.a].address, as.address);
    in.dst_bytes = static_cast<uint64_t>(on_chip);  // relaid channels-minor as it lands
    em.emit(in, {d_.a}, {as.resource});
  }
  // NCHW planes -> channels-minor rows for the matrix units; a weight gradient's x rows ->
  // positions along the lanes (the transpose path, as XLA's TPU backend transposes in vregs).
  if (nchw_ || filter_) {
    Instruction v;
    v.opcode = Opcode::vector;
    v.core = static_cast<uint8_t>(core);
    v.elements = static_cast<uint64_t>(bytes / a_eb_);
    v.ops_per_element = vector_ops_per_element(VectorFunc::transpose);
    em.emit(v, {a_home_ == Level::onchip ? int64_t{d_.a} : as.resource}, {as.resource});
  }
  return {as.resource};
}

void MatmulTiler::emit_core(int64_t b, int core, const CorePlan& cp) {
  Emitter& em = *c_.em;
  uint64_t w_address = c_.p.tensors[d_.w].address;
  Level w_source = w_home_;
  int64_t w_read = d_.w;
  if (cp.stage_weights && w_home_ != Level::onchip) {
    auto ws = em.slot(core, kW);
    em.emit(dma(core, 0, w_home_, Level::onchip, staged_weight_bytes(cp.c1 - cp.c0),
                cp.c1 - cp.c0 < d_.n ? static_cast<uint64_t>(d_.k) : 1, w_address, ws.address),
            {d_.w}, {ws.resource});
    w_address = ws.address;
    w_source = Level::onchip;
    w_read = ws.resource;
  }
  const bool split_k = cp.chunk_channels < cp.k1 - cp.k0 || (conv_ && cp.kernel_rows < d_.conv.kh);
  for (const auto& [r0, r1] : row_tiles(cp, cp.tile_rows)) {
    std::vector<int64_t> a_read;
    if (!split_k) a_read = load_input(core, r0, r1, cp.chunk_channels, cp.kernel_rows);
    for (int64_t c0 = cp.c0; c0 < cp.c1; c0 += cp.tile_cols)
      emit_column_tile(b, core, cp, r0, r1, c0, std::min(cp.c1, c0 + cp.tile_cols),
                       split_k ? nullptr : &a_read, w_read, w_source, w_address);
  }
}

// The residual's rows of this tile, streamed on chip unless they live there (an epilogue read).
void MatmulTiler::load_residual(int core, int par, int64_t r0, int64_t r1, int64_t ncols,
                                int32_t tensor, Level home, int64_t eb,
                                std::vector<int64_t>& epi_reads) {
  Emitter& em = *c_.em;
  if (home != Level::onchip) {
    auto rs = em.slot(core, kR0 + par);
    int64_t runs = 1, bytes = y_bytes(r0, r1, ncols, eb, &runs);
    Instruction in =
        dma(core, 0, home, Level::onchip, bytes, runs, c_.p.tensors[tensor].address, rs.address);
    in.dst_bytes = static_cast<uint64_t>(y_bytes(r0, r1, ncols, eb, &runs, true));
    em.emit(in, {tensor}, {rs.resource});
    epi_reads.push_back(rs.resource);
  } else {
    epi_reads.push_back(tensor);
  }
}

// The epilogue on the vector unit (bias, residual, activation, relayout, requantization), then
// the store of the tile to the output's home.
void MatmulTiler::emit_epilogue(int core, int par, int64_t r0, int64_t r1, int64_t ncols,
                                uint32_t extra_ops, const std::vector<int64_t>& epi_reads) {
  Emitter& em = *c_.em;
  const TpuSpec& spec = c_.spec;
  Instruction v;
  v.opcode = Opcode::vector;
  v.core = static_cast<uint8_t>(core);
  v.elements = static_cast<uint64_t>(tiled_elements(r1 - r0, ncols, spec.vpu));
  v.ops_per_element = epilogue_ops_ + extra_ops;
  const int32_t out = partial_ >= 0 && core > 0 ? partial_ : d_.y;
  if (y_home_ == Level::onchip && out == d_.y) {
    em.emit(v, epi_reads, {d_.y});
    return;
  }
  auto os = em.slot(core, kO0 + par);
  em.emit(v, epi_reads, {os.resource});
  int64_t runs = 1, bytes = y_bytes(r0, r1, ncols, y_eb_, &runs);
  Instruction store = dma(core, 1, Level::onchip, out == d_.y ? y_home_ : Level::offchip,
                          static_cast<uint64_t>(y_bytes(r0, r1, ncols, y_eb_, &runs, true)), 1,
                          os.address, c_.p.tensors[out].address);
  store.dst_bytes = static_cast<uint64_t>(bytes);
  store.runs = static_cast<uint64_t>(std::max<int64_t>(runs, 1));
  em.emit(store, {os.resource}, {out});
}

void MatmulTiler::emit_column_tile(int64_t b, int core, const CorePlan& cp, int64_t r0, int64_t r1,
                                   int64_t c0, int64_t c1, const std::vector<int64_t>* a_read,
                                   int64_t w_read, Level w_source, uint64_t w_address) {
  Emitter& em = *c_.em;
  const TpuSpec& spec = c_.spec;
  const int par = static_cast<int>(col_parity_[core]++ % 2);
  const int64_t ncols = c1 - c0, cols_pe = spec.mxu.cols;
  std::vector<int64_t> epi_reads;
  if (d_.epi.residual >= 0)
    load_residual(core, par, r0, r1, ncols, d_.epi.residual, r_home_, r_eb_, epi_reads);
  const bool adds_partial = partial_ >= 0 && core + 1 < c_.spec.cores;
  if (adds_partial) load_residual(core, par, r0, r1, ncols, partial_, Level::offchip, 4, epi_reads);
  const int64_t units = d_.on_vpu ? 1 : spec.mxu.per_core, chunks = ceil_div(ncols, cols_pe);
  std::vector<bool> used(units, false);
  const int64_t kh = conv_ ? d_.conv.kh : 1, kernel_rows = conv_ ? cp.kernel_rows : 1;
  for (int64_t kr0 = 0; kr0 < kh; kr0 += kernel_rows)
    for (int64_t ch0 = cp.k0; ch0 < cp.k1; ch0 += cp.chunk_channels) {
      const int64_t ch1 = std::min(cp.k1, ch0 + cp.chunk_channels),
                    kr1 = std::min(kh, kr0 + kernel_rows);
      // The block's numerics (one GEMM over the whole K range) go with the chunk that completes
      // it: on core 0 when the cores share the reduction.
      const bool last_chunk = ch1 == cp.k1 && kr1 == kh && (partial_ < 0 || core == 0);
      std::vector<int64_t> chunk_read =
          a_read ? *a_read : load_input(core, r0, r1, ch1 - ch0, conv_ ? kr1 - kr0 : 0);
      for (int64_t j = 0; j < units; ++j) {
        int64_t mr0 = r0, mr1 = r1, mc0 = c0, mc1 = c1, kc0 = ch0, kc1 = ch1;
        if (units > 1 && cp.split_reduction) {
          kc0 = ch0 + (ch1 - ch0) * j / units;
          kc1 = ch0 + (ch1 - ch0) * (j + 1) / units;
          if (kc1 <= kc0) continue;
        } else if (units > 1 && cp.split_columns) {
          mc0 = c0 + std::min(ncols, chunks * j / units * cols_pe);
          mc1 = c0 + std::min(ncols, chunks * (j + 1) / units * cols_pe);
        } else if (units > 1) {
          mr0 = std::min(r1, r0 + round_up((r1 - r0) * j / units, 8));
          mr1 = j + 1 == units ? r1 : std::min(r1, r0 + round_up((r1 - r0) * (j + 1) / units, 8));
        }
        if (mr1 <= mr0 || mc1 <= mc0) continue;
        Instruction in;
        in.core = static_cast<uint8_t>(core);
        // Split by the reduction, the last unit's instruction completes the block.
        in.computes = last_chunk && (!cp.split_reduction || kc1 == ch1);
        in.batch = b;
        in.r0 = mr0;
        in.r1 = mr1;
        in.c0 = mc0;
        in.c1 = mc1;
        if (d_.on_vpu) {  // fp32 matrix-vector product on the vector unit
          in.opcode = Opcode::vector;
          in.elements = static_cast<uint64_t>((mr1 - mr0) * d_.k * (mc1 - mc0));
          in.ops_per_element = vector_ops_per_element(VectorFunc::matvec);
        } else {
          in.opcode = Opcode::matmul;
          in.unit = static_cast<uint16_t>(j);
          in.m = mr1 - mr0;
          in.k = k_of(kc1 - kc0, kr1 - kr0);
          in.n = mc1 - mc0;
          in.passes = c_.p.passes;
          in.weight_source = w_source;
          in.weight_address = w_address;
        }
        std::vector<int64_t> reads = chunk_read;
        reads.push_back(w_read);
        auto acc = em.slot(core, kAcc0 + static_cast<int>(2 * j) + par);
        em.emit(in, reads, {acc.resource});
        if (!used[j]) epi_reads.push_back(acc.resource);
        used[j] = true;
      }
    }
  // The epilogue adds the units' partial sums of a reduction split across them.
  const uint32_t sums = cp.split_reduction
                            ? static_cast<uint32_t>(std::count(used.begin(), used.end(), true)) - 1
                            : 0;
  emit_epilogue(core, par, r0, r1, ncols, (adds_partial ? 1 : 0) + sums, epi_reads);
}

}  // namespace mimic::backends::tpu_emu
