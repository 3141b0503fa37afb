// SystemC model of a system of Graphcore-style IPUs executing a BSP program (bsp_program.h).
//
// Modeled, one SystemC process per hardware unit (never one module per tile):
//   per IPU  - supervisor: walks the IPU's supersteps, sync -> exchange -> compute;
//            - tiles: the tile array as data (per-tile busy cycles), stepped once per compute
//              phase; the phase lasts as long as the slowest tile (tile_costs.h);
//            - exchange: on-chip exchange (busiest tile's bytes / per-tile bandwidth + latency),
//              overlapped with this IPU's IPU-Link sends and host (PCIe) streams;
//   system   - sync controller: internal syncs per IPU, external syncs as barriers over all IPUs;
//            - IPU-Links: a ring (or chain) of neighbour links, each direction reserved by
//              transfers (bandwidth, per-hop latency), so that concurrent transfers on a link
//              serialize; the hops between racks (every ipus_per_rack IPUs) are GW-Links;
//            - host links: one per ipus_per_host_link IPUs (a host server's), each direction
//              shared by those IPUs.
// Approximated: exchange has no per-route contention beyond each tile's own bandwidth (the
// fabric is compiler-scheduled with no queues, docs/references.md §D.2); sync and link latencies
// are inferred figures (the preset's sources say which); links route along the chain. Timing
// follows Poplar's IPUModel approach (per-vertex cycle estimates, max over tiles per compute set)
// and the BSP execution model of Jia et al. (docs/references.md §D.2, §E).
#pragma once

#include <memory>
#include <string>
#include <systemc>
#include <vector>

#include "models/ipu/bsp_program.h"
#include "models/ipu/ipu_spec.h"
#include "sim/event_sink.h"
#include "sim/systemc/bsp_clock.h"

namespace mimic::models::ipu {

struct SuperstepRecord {
  uint32_t ipu = 0, index = 0;
  int32_t op = -1;
  uint32_t label = 0;
  uint64_t start = 0;  // cycles since the run began
  uint64_t sync = 0, exchange = 0, compute = 0;
  uint64_t max_tile = 0;  // busiest tile's compute cycles
  uint64_t sum_tile = 0;  // sum over the IPU's tiles (mean = sum / tiles)
  uint32_t busy_tiles = 0;
};

struct IpuUnitStats {
  uint64_t compute = 0, exchange = 0, sync = 0;  // cycles spent in each phase
  uint64_t link_bytes_out = 0, host_bytes_in = 0, host_bytes_out = 0;
  std::vector<uint64_t> tile_busy;  // per tile, compute cycles
};

struct RunStats {
  uint64_t cycles = 0;
  std::vector<SuperstepRecord> steps;
  std::vector<IpuUnitStats> ipus;
  // Cycles the host links / the IPU-Links carried data, summed over their directed lanes (each
  // direction of each link is one lane, busy at most the run's cycles).
  uint64_t host_busy = 0, link_busy = 0;
  uint32_t host_lanes = 0, link_lanes = 0;
};

// Where a run's events go: `op_ids[i]` is the sink's id for the program's op i.
struct TraceTarget {
  sim::EventSink* sink = nullptr;
  sim::DeviceId device = 0;
  std::vector<sim::OpId> op_ids;
};

class IpuSystem {
 public:
  // Elaborates `num_ipus` chips. One IpuSystem per process (SystemC allows one elaboration).
  IpuSystem(const IpuSpec& specs, uint32_t num_ipus);
  ~IpuSystem();
  IpuSystem(const IpuSystem&) = delete;
  IpuSystem& operator=(const IpuSystem&) = delete;

  const IpuSpec& specs() const { return specs_; }
  uint32_t num_ipus() const { return num_ipus_; }

  // Checks the program against this system (tile ranges, IPU count, matching external syncs);
  // throws std::invalid_argument naming the superstep.
  void check(const BspProgram& program) const;
  // Runs the program to completion and returns its timing. Events go to `trace.sink` if set.
  RunStats run(const BspProgram& program, const TraceTarget& trace);

 private:
  struct Impl;
  IpuSpec specs_;
  uint32_t num_ipus_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mimic::models::ipu
