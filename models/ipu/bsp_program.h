// The device program of the IPU model: per IPU, a list of BSP supersteps. Each superstep is
//   sync -> exchange (tile <-> tile on chip, IPU <-> IPU over IPU-Links, host <-> IPU over PCIe)
//        -> compute (vertices on tiles, run by the tiles' worker contexts).
// Work is described, not timed: vertices say how many MACs / elements / bytes they process and the
// model's tile unit turns them into cycles (tile_costs.h), so the compiler's estimates and the
// simulation come from the same formulas. Tiles with identical work form one group, so a program
// stays small for thousands of tiles. Nothing here knows the graph IR.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mimic::models::ipu {

enum class NumberFormat : uint8_t { f32 = 0, f16 = 1 };

inline uint64_t format_bytes(NumberFormat f) {
  return f == NumberFormat::f16 ? 2 : 4;
}

enum class VertexClass : uint8_t {
  amp = 0,             // matrix product on the AMP unit (amount = MACs, padded to AMP blocks)
  vector = 1,          // elementwise / reduction on the vector datapath (amount = elements)
  transcendental = 2,  // exp, log, tanh, erf, ... (amount = elements, not vectorized)
  copy = 3,            // on-tile data rearrangement (amount = bytes)
};

struct VertexWork {
  VertexClass cls = VertexClass::vector;
  NumberFormat format = NumberFormat::f32;    // input elements
  NumberFormat partials = NumberFormat::f32;  // AMP accumulators
  uint32_t cycles_per_vector = 1;             // vector: worker instructions per vector of elements
  uint64_t amount = 0;
};

// `count` identical vertices on every tile of the group; vertices are dealt to the tile's worker
// contexts round-robin in program order.
struct VertexBatch {
  VertexWork work;
  uint32_t count = 1;
};

// Tiles first_tile .. first_tile + tile_count - 1 (of one IPU) all run the same vertices.
struct TileGroup {
  uint32_t first_tile = 0, tile_count = 0;
  std::vector<VertexBatch> vertices;
};

// Bytes each tile of the range sends and receives in one exchange phase. Sends are multicast: a
// tile's data is sent once whatever the number of receivers.
struct ExchangeGroup {
  uint32_t first_tile = 0, tile_count = 0;
  uint64_t send_bytes = 0, recv_bytes = 0;
};

enum class SyncKind : uint8_t { none = 0, internal = 1, external = 2 };

struct LinkTransfer {
  uint32_t to_ipu = 0;
  uint64_t bytes = 0;
};

struct Superstep {
  int32_t op = -1;     // index into the compiler's op table, -1 for none (traces, per-op cycles)
  uint32_t label = 0;  // index into BspProgram::labels ("conv", "reduce", "stream in", ...)
  SyncKind sync = SyncKind::internal;
  std::vector<ExchangeGroup> exchange;
  std::vector<LinkTransfer> links;  // sent from this IPU
  uint64_t host_to_device_bytes = 0, device_to_host_bytes = 0;
  std::vector<TileGroup> compute;
};

// Per IPU lists, of one replica: the system runs `replicas` copies of them, so that replicas share
// one program instead of holding a copy each. IPU r x ipus.size() + i of the system runs list i,
// and a link transfer to IPU t of a list goes to IPU (r x ipus.size() + t) mod num_ipus() (replica
// 0's IPU t, shifted to the sender's replica). External syncs are global barriers: every IPU's list
// has the same number of them.
struct BspProgram {
  std::vector<std::string> labels;
  std::vector<std::vector<Superstep>> ipus;
  uint32_t replicas = 1;

  uint32_t num_ipus() const { return replicas * static_cast<uint32_t>(ipus.size()); }
  const std::vector<Superstep>& list(uint32_t ipu) const { return ipus[ipu % ipus.size()]; }
  uint32_t link_target(uint32_t ipu, uint32_t to) const {
    return (ipu - ipu % static_cast<uint32_t>(ipus.size()) + to) % num_ipus();
  }
};

}  // namespace mimic::models::ipu
