// Planning matrix products (MatMul, Gemm, Conv) and windowed vector ops (depthwise convolution,
// pooling) across an IPU's tiles, in the manner of poplin's convolution planner: the problem is
//   out[g, rows, cols] = sum over (in_channels x kernel) of A[g, rows, ...] * B[g, ..., cols]
// (rows = batch x output pixels, cols = output channels per group) and a plan splits groups,
// rows, cols and input channels (the K split) over gs x ms x ns x ks tiles. Each candidate is
// costed with the model's own formulas (tile_costs.h): exchange of operand blocks, AMP compute
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
#include "models/ipu/ipu_specs.h"

namespace mimic::backends::ipu_emu {

struct LinearProblem {
  uint64_t groups = 1, rows = 1, cols = 1, in_channels = 1, kvol = 1;
  models::ipu::NumberFormat in_format = models::ipu::NumberFormat::f32;
  models::ipu::NumberFormat partials = models::ipu::NumberFormat::f32;
  models::ipu::NumberFormat out_format = models::ipu::NumberFormat::f32;
  bool vector_path = false;     // depthwise / pooling: vector MACs, no K split
  bool weights_stored = false;  // B is constant, stored on the plan's tiles
  bool has_b = true;            // pooling has no B operand
  bool has_bias = false;
  // Input pixels (per channel and group) a tile needs to produce `rows` output rows.
  std::function<uint64_t(uint64_t rows)> input_pixels;
  // Bytes each tile holding A (resp. a non-constant B) sends: their placements' shares.
  uint64_t a_send_per_tile = 0, b_send_per_tile = 0;
  uint64_t b_total_bytes = 0;
  std::string label = "matmul";
};

struct LinearPlan {
  uint32_t gs = 1, ms = 1, ns = 1, ks = 1;
  uint64_t g_b = 1, rows_b = 1, n_b = 1, c_b = 1;  // per-tile block
  uint32_t tiles = 1;
  uint64_t cycles = 0;
  uint64_t exchange_bytes = 0, partials_bytes = 0;  // temporaries per tile
  uint64_t weights_per_tile = 0;
  bool fits = false;
  uint64_t temps() const { return exchange_bytes + partials_bytes; }
  std::string describe() const;
};

// Chooses a plan on at most `tiles` tiles.
LinearPlan plan_linear(const models::ipu::IpuSpecs& s, const LinearProblem& p, uint32_t tiles,
                       double memory_proportion);

// The supersteps of `plan` on `span` of IPU tiles; `a_span`/`b_span` hold the operands now.
std::vector<models::ipu::Superstep> linear_steps(const models::ipu::IpuSpecs& s,
                                                 const LinearProblem& p, const LinearPlan& plan,
                                                 TileSpan span, TileSpan a_span, TileSpan b_span,
                                                 int32_t op, uint32_t label_main,
                                                 uint32_t label_reduce);

// K-split boundaries along in_channels: ks + 1 offsets from 0 to in_channels.
std::vector<int64_t> k_chunks(const LinearPlan& plan, uint64_t in_channels);

}  // namespace mimic::backends::ipu_emu
