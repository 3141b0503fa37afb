// The SystemC IPU model's timing rules, on hand-written BSP programs: a compute phase lasts as long
// as its slowest tile (worker contexts round-robin), exchange = latency + busiest tile's bytes /
// bandwidth, internal and external syncs, IPU-Link and PCIe transfers that share their links, and
// trace events per phase. One elaborated system per process (SystemC 2.3), shared by the tests.
#include <gtest/gtest.h>

#include <map>

#include "models/ipu/ipu_system.h"
#include "models/ipu/tile_costs.h"

namespace mimic::models::ipu {
namespace {

IpuSpec small_specs() {
  IpuSpec s = preset("gc200");
  s.name = "test";
  s.tiles = 16;
  return s;
}

IpuSystem& system3() {
  static IpuSystem* sys = new IpuSystem(small_specs(), 3);
  return *sys;
}

VertexWork vec(uint64_t elements) {
  return VertexWork{VertexClass::vector, NumberFormat::f32, NumberFormat::f32, 1, elements};
}

Superstep step(SyncKind sync = SyncKind::internal) {
  Superstep s;
  s.sync = sync;
  return s;
}

BspProgram program(std::vector<std::vector<Superstep>> ipus) {
  BspProgram p;
  p.labels = {"work"};
  p.ipus = std::move(ipus);
  while (p.ipus.size() < 3) p.ipus.push_back({});
  return p;
}

class Capture final : public sim::EventSink {
 public:
  sim::DeviceId add_device(const sim::DeviceDesc&) override { return 0; }
  sim::TrackId add_track(sim::DeviceId, const std::string& name, const std::string&) override {
    tracks.push_back(name);
    return static_cast<sim::TrackId>(tracks.size() - 1);
  }
  sim::OpId add_op(const sim::OpDesc&) override { return 0; }
  void event(sim::TrackId t, sim::OpId op, std::string_view name, uint64_t ts,
             uint64_t dur) override {
    events[tracks[t]].push_back({ts, dur, op});
  }
  void counter(sim::TrackId, uint64_t, double) override {}
  struct E {
    uint64_t ts, dur;
    sim::OpId op;
  };
  std::vector<std::string> tracks;
  std::map<std::string, std::vector<E>> events;
};

TEST(IpuModel, ComputePhaseIsTheSlowestTile) {
  const IpuSpec& s = system3().specs();
  Superstep st = step();
  st.compute.push_back({0, 4, {{vec(600), 6}}});  // 6 vertices: one per worker
  st.compute.push_back({5, 1, {{vec(1200), 6}}});
  st.compute.push_back(
      {9, 1, {{vec(600), 1}}});  // one vertex: one worker busy, 1/6 of the issue slots
  RunStats r = system3().run(program({{st}}), TraceTarget{});
  uint64_t w600 = s.vector_vertex_overhead_cycles + 300,
           w1200 = s.vector_vertex_overhead_cycles + 600;
  EXPECT_EQ(vertex_cycles(s, vec(600)), w600);
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].compute, 6 * w1200);
  EXPECT_EQ(r.steps[0].max_tile, 6 * w1200);
  EXPECT_EQ(r.steps[0].sum_tile, 4 * 6 * w600 + 6 * w1200 + 6 * w600);
  EXPECT_EQ(r.steps[0].busy_tiles, 6u);
  EXPECT_EQ(r.steps[0].sync, s.internal_sync_cycles);
  EXPECT_EQ(r.steps[0].exchange, 0u);
  EXPECT_EQ(r.cycles, s.internal_sync_cycles + 6 * w1200);
  EXPECT_EQ(r.ipus[0].tile_busy[5], 6 * w1200);
  EXPECT_EQ(r.ipus[0].tile_busy[9], 6 * w600);
  EXPECT_EQ(r.ipus[0].tile_busy[4], 0u);
  // Seven vertices on six workers: one worker runs two.
  EXPECT_EQ(tile_compute_cycles(s, {{vec(600), 7}}), 6 * 2 * w600);
}

TEST(IpuModel, AmpRatesByPrecision) {
  const IpuSpec& s = system3().specs();
  VertexWork amp{VertexClass::amp, NumberFormat::f16, NumberFormat::f32, 1, 6400};
  EXPECT_EQ(vertex_cycles(s, amp),
            s.amp_vertex_overhead_cycles + 6400 / s.amp_fp16_fp32_macs_per_cycle);
  amp.partials = NumberFormat::f16;
  EXPECT_EQ(vertex_cycles(s, amp),
            s.amp_vertex_overhead_cycles + 6400 / s.amp_fp16_fp16_macs_per_cycle);
  amp.format = NumberFormat::f32;
  EXPECT_EQ(vertex_cycles(s, amp), s.amp_vertex_overhead_cycles + 6400 / s.amp_fp32_macs_per_cycle);
}

TEST(IpuModel, ExchangeIsLatencyPlusBusiestTile) {
  const IpuSpec& s = system3().specs();
  Superstep st = step(SyncKind::none);
  st.exchange.push_back({0, 8, 400, 1000});
  st.exchange.push_back({8, 8, 4000, 100});
  RunStats r = system3().run(program({{st}}), TraceTarget{});
  EXPECT_EQ(r.steps[0].sync, 0u);
  EXPECT_EQ(r.steps[0].exchange, s.exchange_latency_cycles + 4000 / s.exchange_bytes_per_cycle);
}

TEST(IpuModel, ExternalSyncIsABarrierAndLinksCarryData) {
  const IpuSpec& s = system3().specs();
  Superstep slow = step(), fast = step();
  slow.compute.push_back({0, 1, {{vec(12000), 6}}});
  fast.compute.push_back({0, 1, {{vec(120), 6}}});
  Superstep send = step(SyncKind::external), recv = step(SyncKind::external),
            idle = step(SyncKind::external);
  uint64_t bytes = 1'000'000;
  send.links.push_back({1, bytes});
  RunStats r = system3().run(program({{slow, send}, {fast, recv}, {fast, idle}}), TraceTarget{});
  std::map<uint32_t, std::vector<SuperstepRecord>> by_ipu;
  for (const auto& rec : r.steps) by_ipu[rec.ipu].push_back(rec);
  uint64_t release = by_ipu[0][1].start + by_ipu[0][1].sync;
  for (uint32_t i = 1; i < 3; ++i)
    EXPECT_EQ(by_ipu[i][1].start + by_ipu[i][1].sync, release) << "ipu " << i;
  EXPECT_EQ(by_ipu[0][1].sync,
            s.external_sync_cycles);  // the last to arrive waits only for the sync
  EXPECT_GT(by_ipu[1][1].sync, s.external_sync_cycles);
  uint64_t xfer = s.ipu_link_cycles(bytes);
  EXPECT_EQ(by_ipu[0][1].exchange, xfer);  // sender: until the data has left
  EXPECT_EQ(by_ipu[1][1].exchange,
            xfer + s.ipu_link_latency_cycles);  // receiver: until it has arrived
  EXPECT_EQ(by_ipu[2][1].exchange, 0u);
  EXPECT_EQ(r.ipus[0].link_bytes_out, bytes);
}

TEST(IpuModel, ARingLinksTheLastIpuBackToTheFirst) {
  // Three IPUs on a ring: each reaches each other one over a single link (tests/ipu/
  // ipu_links_test.cpp times longer routes, racks and chains).
  const IpuSpec& s = system3().specs();
  Superstep a = step(SyncKind::external), b = step(SyncKind::external),
            c = step(SyncKind::external);
  a.links.push_back({2, 64000});  // 0 -> 2 down the ring, over the link that closes it
  c.links.push_back({0, 64000});  // 2 -> 0 up the ring, the same link the other way
  RunStats r = system3().run(program({{a}, {b}, {c}}), TraceTarget{});
  uint64_t arrival = s.ipu_link_cycles(64000) + s.ipu_link_latency_cycles;
  for (const auto& rec : r.steps)
    if (rec.ipu != 1) EXPECT_EQ(rec.exchange, arrival) << "ipu " << rec.ipu;
}

TEST(IpuModel, HostLinkIsShared) {
  const IpuSpec& s = system3().specs();
  Superstep in = step();
  in.host_to_device_bytes = 3'200'000;
  RunStats r = system3().run(program({{in}, {in}, {in}}), TraceTarget{});
  uint64_t xfer = s.cycles_for(3'200'000, s.host_bytes_per_second);
  std::vector<uint64_t> ex;
  for (const auto& rec : r.steps) ex.push_back(rec.exchange);
  std::sort(ex.begin(), ex.end());
  EXPECT_EQ(ex[0], xfer + s.host_latency_cycles);
  EXPECT_EQ(ex[2], 3 * xfer + s.host_latency_cycles);
  EXPECT_EQ(r.host_busy, 3 * xfer);
}

TEST(IpuModel, TraceEventsPerPhaseAndDeterministicRuns) {
  Superstep st = step();
  st.op = 0;
  st.exchange.push_back({0, 16, 800, 800});
  st.compute.push_back({0, 16, {{vec(3000), 6}}});
  Capture cap;
  TraceTarget t{&cap, 0, {42}};
  RunStats first = system3().run(program({{st, st, st}}), t);
  RunStats second = system3().run(program({{st, st, st}}), TraceTarget{});
  EXPECT_EQ(first.cycles, second.cycles);
  ASSERT_EQ(cap.events["ipu0.compute"].size(), 3u);
  ASSERT_EQ(cap.events["ipu0.exchange"].size(), 3u);
  ASSERT_EQ(cap.events["ipu0.sync"].size(), 3u);
  uint64_t end = 0;
  for (const auto& e : cap.events["ipu0.compute"]) {
    EXPECT_GE(e.ts, end);  // slices on a track never overlap
    EXPECT_EQ(e.op, 42);
    end = e.ts + e.dur;
  }
  EXPECT_EQ(end, first.cycles);
  EXPECT_TRUE(cap.events["ipu1.compute"].empty());
}

TEST(IpuModel, ProgramsAreChecked) {
  Superstep st = step();
  st.compute.push_back({10, 7, {{vec(1), 1}}});  // tiles 10..16 of 16
  EXPECT_THROW(system3().check(program({{st}})), std::invalid_argument);
  Superstep ext = step(SyncKind::external);
  EXPECT_THROW(system3().check(program({{ext}, {}, {}})), std::invalid_argument);
  Superstep link = step();
  link.links.push_back({1, 10});
  EXPECT_THROW(system3().check(program({{link}})), std::invalid_argument);
  BspProgram two;
  two.labels = {"x"};
  two.ipus.resize(2);
  EXPECT_THROW(system3().check(two), std::invalid_argument);
}

}  // namespace
}  // namespace mimic::models::ipu
