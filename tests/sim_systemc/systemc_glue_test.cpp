// sim/systemc: exact cycle <-> time conversion, and the TLM memory target's bandwidth, latency,
// access granularity, strided runs, contention between initiators (including transfers issued
// ahead of time by temporally decoupled initiators) and address checks. One elaboration for the
// whole binary (SystemC allows one per process); transactions are issued at simulated time 0.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <vector>

#include "sim/systemc/clock_domain.h"
#include "sim/systemc/initiator.h"
#include "sim/systemc/kernel.h"
#include "sim/systemc/memory_target.h"

namespace mimic::sim::systemc {
namespace {

using sc_core::sc_time;

// Two initiators bound to one target.
struct Pair : sc_core::sc_module {
  Initiator first, second;
  std::unique_ptr<MemoryTarget> memory;
  Pair(sc_core::sc_module_name name, const ClockDomain& clock, MemoryTargetSpec spec)
      : sc_module(name), first("first_socket"), second("second_socket") {
    memory = std::make_unique<MemoryTarget>("memory", clock, spec);
    first.initiator_socket.bind(memory->target_socket);
    second.initiator_socket.bind(memory->target_socket);
  }
};

struct Design {
  ClockDomain clock{"ghz", Clock{1'000'000'000}};
  std::vector<std::unique_ptr<Pair>> pairs;
  Design() {
    // 1 byte per ns, 10-cycle latency, 64-byte granule, 1 MB.
    MemoryTargetSpec spec{1'000'000, 1'000'000'000, 10, 64, false};
    for (int i = 0; i < 6; ++i)
      pairs.push_back(std::make_unique<Pair>(("pair" + std::to_string(i)).c_str(), clock, spec));
    start_if_needed();
  }
};

Design& design() {
  static Design* d = new Design();
  return *d;
}

uint64_t ns(const sc_time& t) {
  return to_ps(t) / 1000;
}

TEST(ClockDomain, ConvertsCyclesExactly) {
  ClockDomain& c = design().clock;
  EXPECT_EQ(c.period_ps(), 1000u);
  EXPECT_EQ(to_ps(c.to_time(Cycles(3))), 3000u);
  EXPECT_EQ(c.to_cycles(from_ps(2999)).count(), 2u);
  EXPECT_EQ(c.ceil_cycles(from_ps(2001)).count(), 3u);
  EXPECT_EQ(Clock{700'000'000}.period_ps(), 1429u);  // integer picoseconds
  EXPECT_EQ(transfer_ps(1000, 1'000'000'000), 1'000'000u);
  EXPECT_EQ(transfer_ps(1, 3), 333'333'333'334u);  // rounded up
}

TEST(MemoryTarget, BandwidthLatencyAndContention) {
  Pair& p = *design().pairs[0];
  // 1000 bytes at 1 B/ns = 1000 ns (granules: 16 x 64 = 1024 ns), + 10 ns latency.
  EXPECT_EQ(ns(p.first.transport(tlm::TLM_READ_COMMAND, 0, 1024, sc_core::SC_ZERO_TIME)), 1034u);
  // Issued at the same time by the other initiator: queues behind the first on the pipe.
  EXPECT_EQ(ns(p.second.transport(tlm::TLM_WRITE_COMMAND, 4096, 1024, sc_core::SC_ZERO_TIME)),
            2058u);
  EXPECT_EQ(p.memory->counters().bytes_read, 1024u);
  EXPECT_EQ(p.memory->counters().bytes_written, 1024u);
  EXPECT_EQ(p.memory->counters().transactions, 2u);
}

TEST(MemoryTarget, AccessGranuleAndStridedRuns) {
  Pair& p = *design().pairs[1];
  EXPECT_EQ(ns(p.first.transport(tlm::TLM_READ_COMMAND, 0, 10, sc_core::SC_ZERO_TIME)), 64u + 10);
  // 640 bytes in 10 runs of 64: 640 ns; in 20 runs of 32 (each rounded to 64): 1280 ns.
  Pair& q = *design().pairs[2];
  EXPECT_EQ(ns(q.first.transport(tlm::TLM_READ_COMMAND, 0, 640, sc_core::SC_ZERO_TIME, 10)), 650u);
  EXPECT_EQ(
      ns(q.first.transport(tlm::TLM_READ_COMMAND, 0, 640, from_ps(1'000'000'000), 20)) - 1'000'000,
      1290u);
}

TEST(MemoryTarget, LaterIssuedEarlierArrivingTransfersUseTheGap) {
  Pair& p = *design().pairs[3];
  // The first initiator runs ahead: a transfer arriving at 5000 ns.
  EXPECT_EQ(ns(p.first.transport(tlm::TLM_READ_COMMAND, 0, 1024, from_ps(5'000'000))), 6034u);
  // The second, issued later but arriving at 0, does not wait behind it.
  EXPECT_EQ(ns(p.second.transport(tlm::TLM_READ_COMMAND, 0, 1024, sc_core::SC_ZERO_TIME)), 1034u);
  // One that does not fit the gap before 5000 ns is split around the reserved interval:
  // [2000, 5000) then [6024, 7120), + 10 ns latency.
  EXPECT_EQ(ns(p.second.transport(tlm::TLM_READ_COMMAND, 0, 4096, from_ps(2'000'000))), 7130u);
  // A small one arriving at 0 fits the gap still free between 1024 and 2000 ns; a large one
  // waits for the pipe to be free after 7120 ns.
  EXPECT_EQ(ns(p.first.transport(tlm::TLM_READ_COMMAND, 0, 64, sc_core::SC_ZERO_TIME)),
            1024u + 64 + 10);
  EXPECT_EQ(ns(p.first.transport(tlm::TLM_READ_COMMAND, 0, 1024, from_ps(2'000'000))),
            7120u + 1024 + 10);
}

TEST(MemoryTarget, AddressOutsideCapacityIsAnError) {
  Pair& p = *design().pairs[4];
  EXPECT_THROW(p.first.transport(tlm::TLM_READ_COMMAND, 999'000, 2048, sc_core::SC_ZERO_TIME),
               std::runtime_error);
  EXPECT_EQ(p.memory->counters().transactions, 0u);
}

TEST(LocalTime, AdvancesInCyclesAndRoundsToEdges) {
  LocalTime t(design().clock);
  t.advance(Cycles(5));
  EXPECT_EQ(t.now().count(), 5u);
  t.advance_to(from_ps(7'200));  // 7.2 cycles -> next edge
  EXPECT_EQ(t.now().count(), 8u);
  t.advance_to(from_ps(1'000));  // never backwards
  EXPECT_EQ(t.now().count(), 8u);
}

}  // namespace
}  // namespace mimic::sim::systemc
