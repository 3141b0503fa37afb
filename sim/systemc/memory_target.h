// A bandwidth- and latency-limited memory as a TLM-2.0 loosely-timed target.
//
// Modeled: one transfer pipe of `bytes_per_s` shared by every initiator bound to the target
// (contention), a fixed access latency per transaction, a minimum access granularity (a
// transaction of fewer bytes costs `min_access_bytes`; strided transfers pay it per run),
// capacity checks on addresses, and per-direction byte and busy-time counters. Timing follows
// the Accellera LT convention: the target adds its delay to the `delay` argument of b_transport
// and returns at once.
//
// Contention uses a calendar of the pipe's busy intervals: a transaction arriving at time t takes
// the free pipe time from t on, gap after gap, until its bytes are placed, and completes when its
// last byte is. With temporal decoupling initiators issue transactions ahead of simulated time;
// the calendar lets a later-issued transaction that arrives earlier use the pipe before an
// earlier-issued one that arrives later (a single "pipe free at" timestamp would make it wait
// behind the future), and a transaction may be split over several gaps (bandwidth sharing).
// Approximated: a transaction never preempts one already placed; no banks, refresh or read/write
// turnaround (DRAM details below transaction granularity).
//
// Data: by default the target models timing only and never touches the payload's data (the
// device models keep tensors elsewhere). With `store_data` it keeps a backing store and
// performs reads and writes, for models that move real bytes through TLM.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <tlm_utils/multi_passthrough_target_socket.h>
#include <systemc>
#include <tlm>

#include "sim/systemc/clock_domain.h"

namespace mimic::sim::systemc {

// Optional payload extension: the transaction is `runs` contiguous pieces of equal size (a
// strided DMA), each rounded up to the target's access granule.
struct AccessPattern : tlm::tlm_extension<AccessPattern> {
  uint64_t runs = 1;
  tlm::tlm_extension_base* clone() const override { return new AccessPattern(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    runs = static_cast<const AccessPattern&>(other).runs;
  }
};

struct MemoryTargetSpec {
  uint64_t capacity_bytes = 0;    // address range [0, capacity)
  uint64_t bytes_per_s = 0;       // pipe bandwidth; 0 = unlimited
  uint64_t latency_cycles = 0;    // per transaction, in the target's clock domain
  uint64_t min_access_bytes = 1;  // access granularity
  bool store_data = false;
};

struct MemoryCounters {
  uint64_t bytes_read = 0, bytes_written = 0, transactions = 0;
  uint64_t busy_ps = 0;  // time the pipe spent transferring
};

class MemoryTarget : public sc_core::sc_module {
 public:
  // Any number of initiators may bind (contention between them is the point).
  tlm_utils::multi_passthrough_target_socket<MemoryTarget> target_socket;

  MemoryTarget(sc_core::sc_module_name name, const ClockDomain& domain, MemoryTargetSpec spec);

  const MemoryTargetSpec& spec() const { return spec_; }
  const MemoryCounters& counters() const { return counters_; }
  void reset_counters() { counters_ = {}; }

 private:
  void b_transport(int initiator, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);

  const ClockDomain& domain_;
  MemoryTargetSpec spec_;
  MemoryCounters counters_;
  // Reserves `occupied_ps` of pipe time from `arrival_ps` on; returns when the last of it ends.
  uint64_t reserve(uint64_t arrival_ps, uint64_t occupied_ps);
  std::map<uint64_t, uint64_t> busy_;  // coalesced busy intervals of the pipe: start -> end (ps)
  std::vector<uint8_t> store_;
};

}  // namespace mimic::sim::systemc
