// Cycle costs of the IPU's units, shared by the compiler (to choose plans) and the SystemC model
// (to time them): one set of formulas, two users.
//
// Modeled: a tile's worker contexts are barrel-scheduled, each issuing one instruction every
// `worker_contexts` tile cycles, so a vertex of W worker cycles occupies its worker for
// W * worker_contexts tile cycles and a compute phase on a tile lasts as long as its busiest worker
// (Poplar's per-tile compute-set estimate, docs/references.md §E; the max-over-workers rule is an
// inference there too). Vertex costs follow the shape of Poplar's cycle estimators:
//   AMP:    overhead + ceil(MACs / AMP MACs per instruction)        (poplin ConvPartial*)
//   vector: overhead + ceil(n / vector width) * cycles per vector   (popops basicOpLoopCycles)
// Exchange: latency + the busiest tile's max(send, receive) bytes / exchange bytes per cycle.
// Approximated: no bank conflicts, no instruction-level pipeline stalls, AMP efficiency only
// through block padding (amp_*_channels) and the per-vertex overhead.
#pragma once

#include <cstdint>
#include <vector>

#include "models/ipu/bsp_program.h"
#include "models/ipu/ipu_spec.h"

namespace mimic::models::ipu {

uint64_t amp_macs_per_cycle(const IpuSpec& s, NumberFormat in, NumberFormat partials);

// Worker cycles of one vertex.
uint64_t vertex_cycles(const IpuSpec& s, const VertexWork& v);

// Tile cycles of a tile running `vertices` (round-robin over the worker contexts).
uint64_t tile_compute_cycles(const IpuSpec& s, const std::vector<VertexBatch>& vertices);

// Exchange phase cycles for one tile sending/receiving these bytes (latency included).
uint64_t exchange_cycles(const IpuSpec& s, uint64_t send_bytes, uint64_t recv_bytes);

// Splits `units` indivisible units of work (rows, elements), each of `amount_per_unit`, into at
// most `parts` vertices of near-equal size (one per worker when there is enough work); returns the
// batches (at most two distinct sizes).
std::vector<VertexBatch> split_over_workers(const VertexWork& work, uint64_t units,
                                            uint64_t amount_per_unit, uint64_t parts);

}  // namespace mimic::models::ipu
