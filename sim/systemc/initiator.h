// TLM-2.0 initiator helpers for loosely-timed models with temporal decoupling.
//
// `Initiator` owns one initiator socket and a reusable generic payload, and issues blocking
// transactions that start at a given offset from the current simulated time; it returns the
// offset at which the transaction completes (the target adds its latency and queueing to the
// delay, per the LT convention). `LocalTime` wraps tlm_quantumkeeper for one process: a unit
// advances its local time while it computes or waits for transfers, and synchronizes with the
// SystemC kernel (one context switch) when its quantum is used up or when others must see the
// result, typically once per instruction.
//
// Usage inside an SC_THREAD:
//   sc_time done = read_port.transport(tlm::TLM_READ_COMMAND, addr, bytes, local.offset());
//   local.advance_to(done);   // local time = completion of the read
//   local.sync();             // wait() until simulated time catches up
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/tlm_quantumkeeper.h>
#include <systemc>
#include <tlm>

#include "sim/systemc/clock_domain.h"
#include "sim/systemc/memory_target.h"

namespace mimic::sim::systemc {

class Initiator {
 public:
  tlm_utils::simple_initiator_socket<Initiator> initiator_socket;

  // Construct inside the owning module's constructor (the socket joins that module).
  explicit Initiator(const char* socket_name);

  // Issues one transaction of `bytes` at `address`, starting `start_offset` after the current
  // simulated time; returns the offset at which it completes. `runs` > 1 describes a strided
  // transfer of that many contiguous pieces (AccessPattern extension). The payload carries no
  // data unless `data` is given (timing-only targets ignore it). Throws std::runtime_error naming
  // the socket when the target answers with an error (e.g. an address outside its capacity).
  sc_core::sc_time transport(tlm::tlm_command cmd, uint64_t address, uint64_t bytes,
                             const sc_core::sc_time& start_offset, uint64_t runs = 1,
                             uint8_t* data = nullptr);

 private:
  tlm::tlm_generic_payload payload_;
  AccessPattern pattern_;
  uint8_t dummy_ = 0;
};

class LocalTime {
 public:
  explicit LocalTime(const ClockDomain& domain);

  // Local time ahead of the kernel's time stamp.
  sc_core::sc_time offset() const { return keeper_.get_local_time(); }
  // Absolute local time in whole cycles of the domain.
  Cycles now() const;
  void advance(Cycles c);
  // Moves local time forward to `offset` (never backward), rounded up to the next clock edge.
  void advance_to(const sc_core::sc_time& offset);
  // Catches the kernel up with local time (wait()s when ahead).
  void sync();

 private:
  const ClockDomain& domain_;
  tlm_utils::tlm_quantumkeeper keeper_;
};

}  // namespace mimic::sim::systemc
