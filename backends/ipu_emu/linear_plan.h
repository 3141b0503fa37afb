// Planning matrix products (MatMul, Gemm, Conv) and windowed vector ops (depthwise convolution,
// pooling) across an IPU's tiles, in the manner of poplin's convolution planner: the problem is
//   out[g, rows, cols] = sum over (in_channels x kernel) of A[g, rows, ...] * B[g, ..., cols]
// (rows = batch x output pixels, cols = output channels per group) and a plan splits groups,
// rows, cols and K over gs x ms x ns x ks tiles. K is the input channels for matrix products and
// the kernel's taps for vector-path ops (poplin's kernel split, which popnn's pooling inherits):
// each of the ks tiles reduces its block of the window (partial sum or max) and the partials are
// exchanged and reduced (summed, or max'ed; average pooling scales after the sum). Each candidate
// is costed with the model's own formulas (tile_costs.h): exchange of operand blocks, AMP compute
// with channel blocks padded to the AMP's widths, and, when K is split, an exchange of partial
// sums and a reduction. The cheapest plan whose temporaries (operand receive buffers, partials,
// reduction buffers) fit in memory_proportion of a tile wins; if none fits, the one with the
// smallest temporaries is kept and the memory plan reports the overflow.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backends/ipu_emu/tile_layout.h"
#include "models/ipu/bsp_program.h"
#include "models/ipu/ipu_spec.h"

namespace mimic::backends::ipu_emu {

struct LinearProblem {
  uint64_t groups = 1, rows = 1, cols = 1, in_channels = 1, kvol = 1;
  models::ipu::NumberFormat in_format = models::ipu::NumberFormat::f32;
  models::ipu::NumberFormat partials = models::ipu::NumberFormat::f32;
  models::ipu::NumberFormat out_format = models::ipu::NumberFormat::f32;
  bool vector_path = false;  // depthwise / pooling: vector ops, K = the kernel's taps
  // Vector path: kernel extents, outermost first (kvol = their product); the K split cuts them
  // as kernel_block() says (empty: the kernel is not split).
  std::vector<uint64_t> kernel;
  uint32_t post_reduce_ops = 0;  // per output after a K split's reduction (average pooling: 1)
  bool weights_stored = false;   // B is constant, stored on the plan's tiles
  bool has_b = true;             // pooling has no B operand
  bool has_bias = false;
  // Input pixels (per channel and group) a tile needs to produce `rows` output rows with the
  // taps of kernel block `kb` (per kernel dimension; empty: the whole kernel).
  std::function<uint64_t(uint64_t rows, const std::vector<uint64_t>& kb)> input_pixels;
  // Bytes each tile holding A (resp. a non-constant B) sends: their placements' shares.
  uint64_t a_send_per_tile = 0, b_send_per_tile = 0;
  uint64_t b_total_bytes = 0;
  std::string label = "matmul";
};

struct LinearPlan {
  uint32_t gs = 1, ms = 1, ns = 1, ks = 1;
  uint64_t g_b = 1, rows_b = 1, n_b = 1, c_b = 1;  // per-tile block
  std::vector<uint64_t> kernel_b;                  // vector path: the tile's kernel block
  uint64_t taps_b = 1;                             // taps per tile (kvol unless vector path)
  uint32_t tiles = 1;
  uint64_t cycles = 0;
  uint64_t exchange_bytes = 0, partials_bytes = 0;  // temporaries per tile
  uint64_t weights_per_tile = 0;
  bool fits = false;
  uint64_t temps() const { return exchange_bytes + partials_bytes; }
  std::string describe() const;
};

// Chooses a plan on at most `tiles` tiles.
LinearPlan plan_linear(const models::ipu::IpuSpec& s, const LinearProblem& p, uint32_t tiles,
                       double memory_proportion);

// The supersteps of `plan` on `span` of IPU tiles; `a_span`/`b_span` hold the operands now.
std::vector<models::ipu::Superstep> linear_steps(const models::ipu::IpuSpec& s,
                                                 const LinearProblem& p, const LinearPlan& plan,
                                                 TileSpan span, TileSpan a_span, TileSpan b_span,
                                                 int32_t op, uint32_t label_main,
                                                 uint32_t label_reduce);

// K-split boundaries: ks + 1 offsets from 0 to in_channels, or for the vector path along the
// kernel's taps in row-major order (every kernel block is a contiguous run of taps).
std::vector<int64_t> k_chunks(const LinearProblem& p, const LinearPlan& plan);

// The vector path's kernel split: `ks` cuts the outermost kernel dimension into ks bands while
// ks <= kernel[0]; beyond that every band is one kernel row and ks / kernel[0] cuts the next
// dimension the same way. Returns the per-tile block (ks must come from kernel_split_candidates).
std::vector<uint64_t> kernel_block(const std::vector<uint64_t>& kernel, uint64_t ks);
std::vector<uint32_t> kernel_split_candidates(const std::vector<uint64_t>& kernel, uint32_t limit);

}  // namespace mimic::backends::ipu_emu
