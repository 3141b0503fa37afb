// The links between IPUs in the SystemC model (models/ipu/ipu_system.cpp): routes around a ring,
// links shared by transfers, GW-Links between racks, cut-through over links of unequal speed,
// host links shared by groups of IPUs.
// One system per process (SystemC elaborates once): six IPUs on a ring, racks of three.
#include <gtest/gtest.h>

#include <vector>

#include "models/ipu/ipu_system.h"

namespace mimic::models::ipu {
namespace {

IpuSpec six_ipu_specs() {
  IpuSpec s = preset("gc200");
  s.name = "test";
  s.tiles = 16;
  s.ipus_per_rack = 3;  // racks {0, 1, 2} and {3, 4, 5}: hops 2-3 and 5-0 are GW-Links
  s.gw_link_bytes_per_second = s.ipu_link_bytes_per_second / 4;
  s.ipus_per_host_link = 4;  // host links {0..3} and {4, 5}
  return s;
}

IpuSystem& system6() {
  static IpuSystem* sys = new IpuSystem(six_ipu_specs(), 6);
  return *sys;
}

const IpuSpec& specs() {
  return system6().specs();
}
uint64_t ipu_link(uint64_t bytes) {
  return specs().ipu_link_cycles(bytes);
}
uint64_t gw_link(uint64_t bytes) {
  return specs().cycles_for(bytes, specs().gw_link_bytes_per_second);
}
uint64_t latency() {
  return specs().ipu_link_latency_cycles;
}

// The exchange cycles of every IPU in one external superstep where IPU t.first sends t.second.
struct Send {
  uint32_t from, to;
  uint64_t bytes;
};
std::vector<uint64_t> exchange_cycles(const std::vector<Send>& sends) {
  BspProgram p;
  p.labels = {"work"};
  Superstep s;
  s.sync = SyncKind::external;
  p.ipus.assign(6, {s});
  for (const Send& t : sends) p.ipus[t.from][0].links.push_back({t.to, t.bytes});
  RunStats r = system6().run(p, TraceTarget{});
  std::vector<uint64_t> out(6, 0);
  for (const auto& rec : r.steps) out[rec.ipu] = rec.exchange;
  return out;
}

TEST(IpuLinks, TwoHopTransfersShareTheirLinks) {
  // 0 -> 2 goes up (2 hops against 4 down) over 0->1 and 1->2; 1 -> 2 shares hop 1->2, which
  // carries IPU 1's transfer first, then IPU 0's (arriving after one hop of latency).
  uint64_t xfer = ipu_link(64000);
  auto ex = exchange_cycles({{0, 2, 64000}, {1, 2, 64000}});
  EXPECT_EQ(ex[2], std::max(xfer, latency()) + xfer + latency());
}

TEST(IpuLinks, HopsBetweenRacksAreGwLinks) {
  EXPECT_GT(gw_link(64000), ipu_link(64000));
  EXPECT_EQ(exchange_cycles({{0, 1, 64000}})[1], ipu_link(64000) + latency());
  EXPECT_EQ(exchange_cycles({{2, 3, 64000}})[3], gw_link(64000) + latency());
  // The ring closes from the last rack back to the first over a GW-Link, both ways.
  EXPECT_EQ(exchange_cycles({{5, 0, 64000}})[0], gw_link(64000) + latency());
  EXPECT_EQ(exchange_cycles({{0, 5, 64000}})[5], gw_link(64000) + latency());
}

TEST(IpuLinks, CutThroughWaitsForTheSlowestHop) {
  // 1 -> 4 (3 hops either way, up on a tie): 1->2 IPU-Link, 2->3 GW-Link, 3->4 IPU-Link. Each hop
  // starts one latency after the previous one, but the tail cannot leave a hop before it has
  // crossed the slower one before it.
  EXPECT_EQ(exchange_cycles({{1, 4, 64000}})[4], latency() + gw_link(64000) + 2 * latency());
}

TEST(IpuLinks, EachHostLinkServesItsIpusOnly) {
  // IPUs 0-3 share one host link, 4-5 the next: every IPU streams in at once.
  BspProgram p;
  p.labels = {"work"};
  Superstep in;
  in.host_to_device_bytes = 3'200'000;
  p.ipus.assign(6, {in});
  RunStats r = system6().run(p, TraceTarget{});
  uint64_t xfer = specs().cycles_for(3'200'000, specs().host_bytes_per_second);
  uint64_t slowest[2] = {0, 0};
  for (const auto& rec : r.steps) {
    uint64_t& m = slowest[rec.ipu / 4];
    m = std::max(m, rec.exchange);
  }
  EXPECT_EQ(slowest[0], 4 * xfer + specs().host_latency_cycles);
  EXPECT_EQ(slowest[1], 2 * xfer + specs().host_latency_cycles);
  EXPECT_EQ(r.host_busy, 6 * xfer);
}

}  // namespace
}  // namespace mimic::models::ipu
