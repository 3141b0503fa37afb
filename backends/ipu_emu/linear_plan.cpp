#include "backends/ipu_emu/linear_plan.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "models/ipu/tile_costs.h"

namespace mimic::backends::ipu_emu {
namespace {

using models::ipu::ExchangeGroup;
using models::ipu::format_bytes;
using models::ipu::IpuSpec;
using models::ipu::NumberFormat;
using models::ipu::Superstep;
using models::ipu::SyncKind;
using models::ipu::VertexBatch;
using models::ipu::VertexClass;
using models::ipu::VertexWork;

// Split factors worth trying for a dimension of size d on at most `limit` tiles: every factor up
// to 16, then roughly geometric steps; each normalized so that no tile is left without work.
std::vector<uint32_t> split_candidates(uint64_t d, uint32_t limit) {
  std::set<uint32_t> out;
  uint64_t top = std::min<uint64_t>(d, limit);
  auto add = [&](uint64_t s) {
    if (s < 1 || s > top) return;
    uint64_t block = ceil_div(d, s);
    out.insert(static_cast<uint32_t>(ceil_div(d, block)));
  };
  for (uint64_t s = 1; s <= 16; ++s) add(s);
  for (double s = 16; s <= static_cast<double>(top); s *= 1.25) add(static_cast<uint64_t>(s));
  add(top);
  return {out.begin(), out.end()};
}

// Everything one tile of a plan does (all tiles of a plan do the same, ragged edges rounded up).
struct TileWork {
  uint64_t a_block = 0, b_block = 0, b_share = 0, out_block = 0;
  uint64_t recv = 0;  // step 1 receive bytes
  std::vector<VertexBatch> main;
  bool reduce = false, post = false;
  uint64_t reduce_bytes = 0;        // step 2 send = receive bytes
  std::vector<VertexBatch> second;  // reduction or bias/cast vertices
};

TileWork tile_work(const IpuSpec& s, const LinearProblem& p, const LinearPlan& plan) {
  TileWork w;
  uint64_t in_bytes = format_bytes(p.in_format), p_bytes = format_bytes(p.partials);
  w.a_block = plan.g_b * plan.c_b * p.input_pixels(plan.rows_b, plan.kernel_b) * in_bytes;
  w.b_block = p.has_b ? plan.g_b * plan.n_b * plan.c_b * plan.taps_b * in_bytes : 0;
  w.b_share = p.weights_stored ? ceil_div(w.b_block, plan.ms) : 0;
  w.recv = w.a_block + w.b_block - w.b_share;
  w.out_block = plan.g_b * plan.rows_b * plan.n_b;
  if (p.vector_path) {
    // One vector op per output element and tap of the tile's kernel block.
    VertexWork v{VertexClass::vector, p.in_format, p.in_format, 1, 0};
    w.main = models::ipu::split_over_workers(v, w.out_block, plan.taps_b, s.worker_contexts);
  } else {
    uint64_t og = s.amp_output_channels;
    uint64_t ig =
        p.in_format == NumberFormat::f16 ? s.amp_fp16_input_channels : s.amp_fp32_input_channels;
    uint64_t units = plan.g_b * plan.rows_b * ceil_div(plan.n_b, og);
    // A block of fewer than `og` output channels still costs a full AMP pass (idle lanes).
    uint64_t per_unit = og * p.kvol * round_up(plan.c_b, ig);
    VertexWork v{VertexClass::amp, p.in_format, p.partials, 1, 0};
    w.main = models::ipu::split_over_workers(v, units, per_unit, s.worker_contexts);
  }
  bool cast = !p.vector_path && p.partials != p.out_format;
  uint32_t extra = (p.has_bias ? 1 : 0) + (cast ? 1 : 0);
  if (plan.ks > 1) {
    // Each tile owns 1/ks of the outputs: it receives the other ks - 1 partials of those and
    // reduces them (then bias, cast, or the average's scale).
    w.reduce = true;
    w.reduce_bytes = ceil_div(w.out_block * p_bytes * (plan.ks - 1), plan.ks);
    VertexWork v{VertexClass::vector, p.partials, p.partials,
                 plan.ks - 1 + extra + p.post_reduce_ops, 0};
    w.second =
        models::ipu::split_over_workers(v, ceil_div(w.out_block, plan.ks), 1, s.worker_contexts);
  } else if (extra) {
    w.post = true;
    VertexWork v{VertexClass::vector, p.partials, p.partials, extra, 0};
    w.second = models::ipu::split_over_workers(v, w.out_block, 1, s.worker_contexts);
  }
  return w;
}

void cost(const IpuSpec& s, const LinearProblem& p, LinearPlan& plan, double memory_proportion) {
  TileWork w = tile_work(s, p, plan);
  uint64_t p_bytes = format_bytes(p.partials);
  uint64_t x1 = std::max({models::ipu::exchange_cycles(s, p.a_send_per_tile, 0),
                          models::ipu::exchange_cycles(s, p.b_send_per_tile, 0),
                          models::ipu::exchange_cycles(s, w.b_share, w.recv)});
  uint64_t cycles = s.internal_sync_cycles + x1 + models::ipu::tile_compute_cycles(s, w.main);
  if (w.reduce || w.post) {
    cycles += s.internal_sync_cycles + models::ipu::tile_compute_cycles(s, w.second);
    if (w.reduce) cycles += models::ipu::exchange_cycles(s, w.reduce_bytes, w.reduce_bytes);
  }
  plan.cycles = cycles;
  plan.exchange_bytes = w.recv;
  bool cast = !p.vector_path && p.partials != p.out_format;
  plan.partials_bytes =
      plan.ks > 1 ? w.out_block * p_bytes + w.reduce_bytes : (cast ? w.out_block * p_bytes : 0);
  plan.weights_per_tile = p.weights_stored ? ceil_div(p.b_total_bytes, plan.tiles) : 0;
  double budget = memory_proportion * static_cast<double>(s.tile_sram_bytes);
  plan.fits = static_cast<double>(plan.temps()) <= budget &&
              plan.temps() + plan.weights_per_tile + s.tile_base_code_bytes <= s.tile_sram_bytes;
}

// A plan's split factors and the per-tile blocks they give.
LinearPlan blocks(const LinearProblem& p, uint32_t gs, uint32_t ms, uint32_t ns, uint32_t ks) {
  LinearPlan plan;
  plan.gs = gs, plan.ms = ms, plan.ns = ns, plan.ks = ks;
  plan.g_b = ceil_div(p.groups, gs), plan.rows_b = ceil_div(p.rows, ms);
  plan.n_b = ceil_div(p.cols, ns);
  if (p.vector_path) {
    plan.kernel_b = kernel_block(p.kernel, ks);
    plan.taps_b = p.kernel.empty() ? ceil_div(p.kvol, ks) : 1;
    for (uint64_t k : plan.kernel_b) plan.taps_b *= k;
  } else {
    plan.c_b = ceil_div(p.in_channels, ks);
    plan.taps_b = p.kvol;
  }
  plan.tiles = static_cast<uint32_t>(uint64_t(gs) * ns * ks * ms);
  return plan;
}

bool better(const LinearPlan& a, const LinearPlan& b) {
  if (a.fits != b.fits) return a.fits;
  if (!a.fits) return a.temps() + a.weights_per_tile < b.temps() + b.weights_per_tile;
  if (a.cycles != b.cycles) return a.cycles < b.cycles;
  return a.tiles < b.tiles;
}

}  // namespace

std::string LinearPlan::describe() const {
  std::string kernel;  // vector path with a K split: the tile's kernel block
  if (ks > 1 && !kernel_b.empty()) kernel = fmt::format(" (kernel {})", fmt::join(kernel_b, "x"));
  return fmt::format("groups/{} rows/{} cols/{} k/{}{} on {} tiles", gs, ms, ns, ks, kernel, tiles);
}

LinearPlan plan_linear(const IpuSpec& s, const LinearProblem& p, uint32_t tiles,
                       double memory_proportion) {
  LinearPlan best;
  bool have = false;
  auto gsc = split_candidates(p.groups, tiles);
  auto nsc = p.vector_path ? std::vector<uint32_t>{1} : split_candidates(p.cols, tiles);
  auto ksc = p.vector_path ? kernel_split_candidates(p.kernel, tiles)
                           : split_candidates(p.in_channels, tiles);
  auto msc = split_candidates(p.rows, tiles);
  for (uint32_t gs : gsc)
    for (uint32_t ns : nsc) {
      if (uint64_t(gs) * ns > tiles) break;
      for (uint32_t ks : ksc) {
        if (uint64_t(gs) * ns * ks > tiles) break;
        for (uint32_t ms : msc) {
          uint64_t used = uint64_t(gs) * ns * ks * ms;
          if (used > tiles) break;
          LinearPlan plan = blocks(p, gs, ms, ns, ks);
          cost(s, p, plan, memory_proportion);
          if (!have || better(plan, best)) best = plan, have = true;
        }
      }
    }
  return best;
}

std::vector<Superstep> linear_steps(const IpuSpec& s, const LinearProblem& p,
                                    const LinearPlan& plan, TileSpan span, TileSpan a_span,
                                    TileSpan b_span, int32_t op, uint32_t label_main,
                                    uint32_t label_reduce) {
  TileWork w = tile_work(s, p, plan);
  uint32_t tiles = static_cast<uint32_t>(s.tiles);
  std::vector<Superstep> steps(1);
  Superstep& first = steps[0];
  first.op = op;
  first.label = label_main;
  first.sync = SyncKind::internal;
  add_exchange(first.exchange, a_span, tiles, p.a_send_per_tile, 0);
  if (!p.weights_stored) add_exchange(first.exchange, b_span, tiles, p.b_send_per_tile, 0);
  add_exchange(first.exchange, span, tiles, w.b_share, w.recv);
  add_compute(first.compute, span, tiles, w.main);
  if (w.reduce || w.post) {
    Superstep second;
    second.op = op;
    second.label = label_reduce;
    second.sync = SyncKind::internal;
    if (w.reduce) add_exchange(second.exchange, span, tiles, w.reduce_bytes, w.reduce_bytes);
    add_compute(second.compute, span, tiles, w.second);
    steps.push_back(std::move(second));
  }
  return steps;
}

std::vector<int64_t> k_chunks(const LinearProblem& p, const LinearPlan& plan) {
  std::vector<int64_t> out;
  if (p.vector_path && !p.kernel.empty()) {
    // Kernel blocks in row-major order: the flattened offset of every block's first tap. Blocks
    // cut whole kernel rows or one row's run along the next dimension, so each is contiguous.
    size_t rank = p.kernel.size();
    std::vector<uint64_t> start(rank, 0);
    for (bool more = true; more;) {
      uint64_t offset = 0;
      for (size_t d = 0; d < rank; ++d) offset = offset * p.kernel[d] + start[d];
      out.push_back(static_cast<int64_t>(offset));
      more = false;
      for (size_t d = rank; d-- > 0 && !more;) {  // next block, innermost dimension first
        // A plan without kernel blocking (degenerate pools) takes each dimension whole.
        bool blocked = d < plan.kernel_b.size() && plan.kernel_b[d] > 0;
        start[d] += blocked ? plan.kernel_b[d] : p.kernel[d];
        more = start[d] < p.kernel[d];
        if (!more) start[d] = 0;
      }
    }
    out.push_back(static_cast<int64_t>(p.kvol));
    return out;
  }
  uint64_t total = p.vector_path ? p.kvol : p.in_channels;
  uint64_t block = p.vector_path ? plan.taps_b : plan.c_b;
  out.push_back(0);
  for (uint64_t c = block; c < total; c += block) out.push_back(static_cast<int64_t>(c));
  out.push_back(static_cast<int64_t>(total));
  return out;
}

std::vector<uint64_t> kernel_block(const std::vector<uint64_t>& kernel, uint64_t ks) {
  if (kernel.empty()) return {};
  std::vector<uint64_t> block = kernel;
  if (ks <= kernel[0]) {
    block[0] = ceil_div(kernel[0], std::max<uint64_t>(ks, 1));
    return block;
  }
  std::vector<uint64_t> inner =
      kernel_block(std::vector<uint64_t>(kernel.begin() + 1, kernel.end()), ks / kernel[0]);
  block[0] = 1;
  std::copy(inner.begin(), inner.end(), block.begin() + 1);
  return block;
}

std::vector<uint32_t> kernel_split_candidates(const std::vector<uint64_t>& kernel, uint32_t limit) {
  if (kernel.empty()) return {1};
  std::vector<uint32_t> out = split_candidates(kernel[0], limit);
  if (kernel.size() > 1 && kernel[0] <= limit) {
    auto k0 = static_cast<uint32_t>(kernel[0]);
    std::vector<uint64_t> rest(kernel.begin() + 1, kernel.end());
    for (uint32_t s : kernel_split_candidates(rest, limit / k0))
      if (s > 1) out.push_back(k0 * s);
  }
  return out;
}

}  // namespace mimic::backends::ipu_emu
