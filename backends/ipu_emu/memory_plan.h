// Per-tile memory plan of one IPU, in the categories Poplar's memory report uses: always-live
// weights (constants), code (runtime base, control code per compute set and exchange, vertex code
// per vertex type) and vertex state (one per MultiVertex of up to one vertex per worker), plus,
// at the program point where the tile is fullest, live
// tensors by category and the running op's temporaries (exchange receive buffers, partial sums).
// In a training step the live tensors split by ir::ValueRole: parameters, optimizer state and
// BatchNorm buffers stay resident for the whole step, gradients live from the backward op that
// makes them to the update, forward activations a backward op reads are "saved_activations"
// (stashed for the backward pass), and gradient accumulation adds a resident accumulator per
// gradient. Liveness is per buffer: a tensor lives from the op that produces it to its last
// reader (views share their source's buffer); tensors streamed from the host or other IPUs live
// from the start. Approximated: no allocation gaps or memory-bank constraints (PopVision's
// "gaps"), even shares over a tensor's tiles.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/ipu_emu/lowering.h"
#include "models/ipu/ipu_spec.h"

namespace mimic::backends::ipu_emu {

// What a live tensor counts as (report names: category_name()).
enum class Category : uint8_t {
  activation,
  data,
  gradient,
  gradient_accumulator,
  optimizer_state,
  buffer,
  saved_activations,
  weight,
};
inline constexpr size_t kTensorCategories = 8;
const char* category_name(Category c);

struct TileMemory {
  uint64_t weights = 0, activations = 0, partials = 0, exchange = 0, code = 0, vertex_state = 0;
  // Live tensors at the peak by category; `activations` is their sum less weight.
  uint64_t live[kTensorCategories] = {};
  int32_t peak_op = -1;  // index into MemoryInputs::ops at the tile's peak (-1: before any op)
  uint64_t total() const {
    return weights + activations + partials + exchange + code + vertex_state;
  }
};

struct Buffer {
  Placement place;
  int first_op = -1;  // live from this op (-1: from the start)
  int last_op = 0;    // through this op
  Category category = Category::activation;
  uint32_t copies = 1;   // pipelined training: micro-batches stashed at once
  bool stashed = false;  // a forward value (activation or data) a backward op reads
};

struct MemoryInputs {
  std::vector<const LoweredOp*> ops;  // in execution order
  std::vector<Buffer> buffers;
};

struct IpuMemoryPlan {
  std::vector<TileMemory> tiles;
  uint32_t fullest_tile = 0;
  uint64_t fullest_bytes = 0;
  // The IPU's stash over all its tiles: forward values kept for the backward pass, times the
  // micro-batches a pipeline holds at once.
  uint64_t stashed_bytes = 0;
};

IpuMemoryPlan plan_memory(const models::ipu::IpuSpec& specs, const MemoryInputs& in);

}  // namespace mimic::backends::ipu_emu
