// Tiling and emission of one GEMM kernel (see lower_matmul.cpp for the lowering that builds it).
//
// Work is split across cores by rows (or by columns when there are fewer than 8 rows per core),
// then into tiles of rows x columns that fit half of on-chip memory double-buffered: the row tile
// is as tall as the accumulators and memory allow, the column tile as wide as possible (whole
// array-width chunks; narrower only when a few rows of output already overflow, as with NCHW
// tiles padded to 128 lanes). When even a few rows of input overflow (thousands of NCHW channel
// planes), the reduction is split too: the input tile holds a chunk of channels (K columns) and
// the matrix units accumulate the chunks in their accumulators; a convolution whose one channel
// of input rows still overflows (a weight gradient: dy as a kernel of the output's size over the
// whole input) splits its kernel rows as well, each chunk reading the input rows its kernel rows
// reach, as a convolution emitter tiles any reduction dimension; the numerics of the block are
// then attached to the chunk that completes the sum (one GEMM over the whole K range). Inside a
// tile the core's matrix units share the columns (in array-width chunks) or the rows, whichever
// the dataflow formula says is faster. NCHW costs bytes (tiles padded along W), relayout work on
// the vector unit and the minor-dimension granularity of DMA, not on-chip capacity. A weight
// gradient read in place (GemmDesc::AView::filter) tiles as a product with a long reduction: each
// input tile is the x rows under a chunk of the forward's output positions, transposed on the
// vector unit, and dy streams through the weight port.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "backends/tpu_emu/lowering.h"

namespace mimic::backends::tpu_emu {

class MatmulTiler {
 public:
  MatmulTiler(Context& c, const ir::Node& head, const models::tpu::GemmDesc& d, int32_t kernel,
              int64_t w_eb);
  void run();

 private:
  struct CorePlan {
    int64_t r0 = 0, r1 = 0, c0 = 0, c1 = 0;
    int64_t tile_rows = 0, tile_cols = 0;
    int64_t chunk_channels = 0;  // input channels (conv) or K columns (matrix) per input tile
    int64_t kernel_rows = 0;     // conv: kernel rows per input tile (all of kh unless K splits)
    int64_t k0 = 0, k1 = 0;      // the core's share of the reduction (channels or K columns)
    bool split_columns = false;  // across matrix units
    // Across matrix units by the reduction instead: each unit takes a share of K for the whole
    // tile, its own weights, and the epilogue adds the units' partial sums. Chosen when the tile's
    // rows split across the units would leave each too few to cover a weight load (a weight
    // gradient: C x KH x KW rows, a reduction over every output position, dy as the weights).
    bool split_reduction = false;
    bool stage_weights = false;  // DMA the core's weights into on-chip memory once per batch
    bool empty() const { return r1 <= r0 || c1 <= c0; }
  };
  struct TileBytes {
    uint64_t a = 0, r = 0, y = 0;  // input, residual and output slots
  };
  CorePlan plan_core(int64_t core) const;
  bool splits_reduction(const CorePlan& cp, int64_t rows, int64_t mxus) const;
  // A weight gradient with images for every core splits its reduction (the forward's images)
  // across the cores, as a data-parallel step does; each core's partial sums join the next
  // lower core's in its epilogue (through `partial_`), and core 0 writes Y.
  bool split_reduction_across_cores() const;
  // Splits the reduction of a tile (input channels, then a wide kernel's rows) to fit on chip.
  void choose_k_chunks(CorePlan& cp, int64_t split_rows, int64_t min_rows) const;
  TileBytes tile_bytes(const CorePlan& cp, int64_t tm, int64_t tn) const;
  // Row tiles [r0, r1) of a core for tile height tm.
  std::vector<std::pair<int64_t, int64_t>> row_tiles(const CorePlan& cp, int64_t tm) const;
  uint64_t working_set(const CorePlan& cp, int64_t tm, int64_t tn, bool stage) const;
  // Input tile of rows [r0, r1) holding `channels` input channels (conv) or K columns (matrix):
  // bytes moved from the tensor's home in its layout, or (`footprint`) bytes it takes on chip
  // once relaid channels-minor (NCHW tiles are transposed as they stream in, (8, 128) tile by
  // tile).
  // `kernel_rows` (conv, 0: all): the input rows that many kernel rows reach.
  int64_t a_bytes(int64_t r0, int64_t r1, int64_t channels, int64_t* runs, bool footprint = false,
                  int64_t kernel_rows = 0) const;
  int64_t full_channels() const;  // per group (conv) or K (matrix)
  int64_t k_of(int64_t channels, int64_t kernel_rows) const {
    return conv_ ? channels * kernel_rows * d_.conv.kw : channels;
  }
  int64_t y_bytes(int64_t r0, int64_t r1, int64_t cols, int64_t eb, int64_t* runs,
                  bool footprint = false) const;
  uint64_t staged_weight_bytes(int64_t cols) const;
  void reserve(const CorePlan& cp, int core);
  void emit_core(int64_t batch, int core, const CorePlan& cp);
  // Loads an input tile (and relayouts NCHW); returns what the matrix units read.
  std::vector<int64_t> load_input(int core, int64_t r0, int64_t r1, int64_t channels,
                                  int64_t kernel_rows);
  // Streams rows [r0, r1) x ncols of `tensor` (the residual, or partial sums) for the epilogue.
  void load_residual(int core, int par, int64_t r0, int64_t r1, int64_t ncols, int32_t tensor,
                     models::tpu::Level home, int64_t eb, std::vector<int64_t>& epi_reads);
  // `extra_ops`: vector ops per element on top of the kernel's epilogue (adding partial sums).
  void emit_epilogue(int core, int par, int64_t r0, int64_t r1, int64_t ncols, uint32_t extra_ops,
                     const std::vector<int64_t>& epi_reads);
  void emit_column_tile(int64_t batch, int core, const CorePlan& cp, int64_t r0, int64_t r1,
                        int64_t c0, int64_t c1, const std::vector<int64_t>* a_read, int64_t w_read,
                        models::tpu::Level w_source, uint64_t w_address);
  models::tpu::Instruction dma(int core, int unit, models::tpu::Level src, models::tpu::Level dst,
                               uint64_t bytes, uint64_t runs, uint64_t src_address,
                               uint64_t dst_address) const;

  Context& c_;
  const ir::Node& head_;
  const models::tpu::GemmDesc& d_;
  int32_t kernel_;
  int64_t w_eb_;
  models::tpu::Level a_home_, y_home_, w_home_, r_home_;
  int64_t a_eb_, y_eb_, r_eb_;
  bool conv_, filter_, nchw_, a_slot_needed_;
  uint64_t half_;
  int64_t acc_rows_;
  uint32_t epilogue_ops_;
  std::vector<int64_t> row_parity_, col_parity_;
  int32_t partial_ = -1;  // split_reduction_across_cores(): the partial sums passed down
};

}  // namespace mimic::backends::tpu_emu
