#include "models/ipu/ipu_system.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <queue>
#include <stdexcept>
#include <tuple>

#include "base/error.h"
#include "models/ipu/tile_costs.h"

namespace mimic::models::ipu {
namespace {

using sc_core::sc_event;
using sim::Cycles;
using sim::systemc::BspClock;

// What every unit of one run shares: the program, the clock, where stats and events go.
struct RunContext {
  const BspProgram* program = nullptr;
  const TraceTarget* trace = nullptr;
  RunStats* stats = nullptr;
  uint64_t t0 = 0;                        // cycle at which the run began
  std::vector<sim::TrackId> link_tracks;  // per directed hop, created lazily
  std::vector<sim::TrackId> host_tracks;  // per host link and direction, created lazily
};

sim::OpId op_id(const RunContext& run, int32_t op) {
  if (op < 0 || static_cast<size_t>(op) >= run.trace->op_ids.size()) return sim::kNoOp;
  return run.trace->op_ids[op];
}

// Internal syncs take a fixed time per IPU; external syncs are barriers over every IPU.
class SyncController {
 public:
  SyncController(const IpuSpec& specs, const BspClock& clock, uint32_t ipus)
      : specs_(specs), clock_(clock), ipus_(ipus) {}

  void sync(SyncKind kind) {
    if (kind == SyncKind::internal) clock_.wait(Cycles(specs_.internal_sync_cycles));
    if (kind != SyncKind::external) return;
    if (++arrived_ == ipus_) {
      arrived_ = 0;
      release_.notify(clock_.time(Cycles(specs_.external_sync_cycles)));
    }
    sc_core::wait(release_);
  }

  // Zero-time barrier: every IPU has posted its link sends of this superstep; the last to arrive
  // runs `last` (schedules the transfers) before releasing the others.
  template <typename Fn>
  void all_posted(Fn last) {
    if (++posted_ == ipus_) {
      posted_ = 0;
      last();
      posted_event_.notify(sc_core::SC_ZERO_TIME);
    }
    sc_core::wait(posted_event_);
  }

 private:
  const IpuSpec& specs_;
  const BspClock& clock_;
  uint32_t ipus_;
  uint32_t arrived_ = 0, posted_ = 0;
  sc_event release_, posted_event_;
};

// The IPUs' links: a chain, or a ring when the preset's links close (ipu_link_ring, and more than
// two IPUs); hop h joins IPU h and h + 1 (the last hop of a ring joins the last IPU and the first),
// each direction carrying one transfer at a time. A hop between racks (ipus_per_rack) is a GW-Link,
// the others IPU-Links. A transfer takes the direction with fewer hops (up on a tie).
// Transfers of one superstep are posted by every IPU first, then scheduled together, hop by hop in
// the order they reach each hop (ties by source IPU), so the result does not depend on the order
// in which SystemC runs the IPUs' processes.
class LinkFabric {
 public:
  LinkFabric(const IpuSpec& specs, uint32_t ipus)
      : specs_(specs),
        ipus_(ipus),
        hops_(specs.ipu_link_ring && ipus > 2 ? ipus : (ipus > 0 ? ipus - 1 : 0)),
        busy_(2 * hops_, 0),
        done_(ipus, 0) {}

  void reset() {
    std::fill(busy_.begin(), busy_.end(), 0);
    std::fill(done_.begin(), done_.end(), 0);
    posted_.clear();
  }

  void post(uint32_t from, uint32_t to, uint64_t bytes, int32_t op) {
    if (from != to && bytes) posted_.push_back({from, to, bytes, op});
  }

  // Schedules every posted transfer starting at cycle `now`; afterwards done(ipu) is the cycle by
  // which everything IPU `ipu` sent has left it and everything sent to it has arrived.
  void schedule(RunContext& run, uint64_t now) {
    struct Ready {
      uint64_t time;
      uint32_t from;
      size_t transfer;
      uint32_t at;    // IPU the transfer is leaving
      uint64_t tail;  // cycle its last byte left the previous hop (0 at the source)
      bool operator>(const Ready& o) const {
        return std::tie(time, from, transfer) > std::tie(o.time, o.from, o.transfer);
      }
    };
    std::priority_queue<Ready, std::vector<Ready>, std::greater<Ready>> queue;
    for (size_t i = 0; i < posted_.size(); ++i)
      queue.push({now, posted_[i].from, i, posted_[i].from, 0});
    while (!queue.empty()) {
      Ready r = queue.top();
      queue.pop();
      const Transfer& t = posted_[r.transfer];
      const uint64_t lat = specs_.ipu_link_latency_cycles;
      bool up = goes_up(t);
      uint32_t next = up ? (r.at + 1) % ipus_ : (r.at + ipus_ - 1) % ipus_;
      uint32_t link = up ? r.at : next;  // hop `link` joins IPU link and link + 1
      bool gw = between_racks(link);
      uint64_t xfer = gw ? specs_.cycles_for(t.bytes, specs_.gw_link_bytes_per_second)
                         : specs_.ipu_link_cycles(t.bytes);
      size_t hop = 2 * link + (up ? 0 : 1);
      // Cut-through: the head moves on one latency after it entered the hop; the tail leaves the
      // hop no earlier than one latency after it left the previous one.
      uint64_t start = std::max(r.time, busy_[hop]);
      uint64_t end = std::max(start + xfer, r.at == t.from ? 0 : r.tail + lat);
      busy_[hop] = end;
      busy_cycles_ += xfer;
      emit(run, hop, gw, r.at, next, t.op, start, end - start);
      if (r.at == t.from) done_[t.from] = std::max(done_[t.from], end);
      if (next == t.to)
        done_[t.to] = std::max(done_[t.to], end + lat);
      else
        queue.push({start + lat, t.from, r.transfer, next, end});
    }
    posted_.clear();
  }

  uint64_t take_done(uint32_t ipu) {
    uint64_t d = done_[ipu];
    done_[ipu] = 0;
    return d;
  }
  uint64_t busy_cycles() const { return busy_cycles_; }
  uint32_t lanes() const { return static_cast<uint32_t>(busy_.size()); }
  void clear_busy() { busy_cycles_ = 0; }

 private:
  struct Transfer {
    uint32_t from, to;
    uint64_t bytes;
    int32_t op;
  };

  bool goes_up(const Transfer& t) const {
    if (hops_ < ipus_) return t.to > t.from;  // a chain
    uint32_t up_hops = (t.to + ipus_ - t.from) % ipus_;
    return up_hops <= ipus_ - up_hops;
  }
  bool between_racks(uint32_t link) const {
    return link / specs_.ipus_per_rack != ((link + 1) % ipus_) / specs_.ipus_per_rack;
  }

  void emit(RunContext& run, size_t hop, bool gw, uint32_t a, uint32_t b, int32_t op,
            uint64_t start, uint64_t dur) {
    if (!run.trace->sink) return;
    const char* kind = gw ? "gw-link" : "ipu-link";
    if (run.link_tracks.size() < busy_.size()) run.link_tracks.assign(busy_.size(), -1);
    if (run.link_tracks[hop] < 0)
      run.link_tracks[hop] = run.trace->sink->add_track(
          run.trace->device, fmt::format("{} {}->{}", kind, a, b), "link");
    run.trace->sink->event(run.link_tracks[hop], op_id(run, op), kind, start - run.t0, dur);
  }

  const IpuSpec& specs_;
  uint32_t ipus_, hops_;
  std::vector<uint64_t> busy_;
  std::vector<uint64_t> done_;
  std::vector<Transfer> posted_;
  uint64_t busy_cycles_ = 0;
};

// The host links: one per ipus_per_host_link IPUs (a host server's, feeding their machines),
// each direction carrying one transfer at a time.
class HostLink {
 public:
  HostLink(const IpuSpec& specs, uint32_t ipus) : specs_(specs), busy_(2 * links(specs, ipus), 0) {}
  void reset() { std::fill(busy_.begin(), busy_.end(), 0); }
  // Returns the cycle the transfer from or to IPU `ipu` completes.
  uint64_t transfer(RunContext& run, uint32_t ipu, bool to_device, uint64_t bytes, uint64_t now,
                    int32_t op) {
    if (bytes == 0) return now;
    size_t lane = 2 * (ipu / specs_.ipus_per_host_link) + (to_device ? 0 : 1);
    uint64_t& busy = busy_[lane];
    uint64_t xfer = specs_.cycles_for(bytes, specs_.host_bytes_per_second);
    uint64_t start = std::max(now, busy);
    busy = start + xfer;
    busy_cycles_ += xfer;
    if (run.trace->sink)
      run.trace->sink->event(track(run, lane), op_id(run, op),
                             to_device ? "stream in" : "stream out", start - run.t0, xfer);
    return busy + specs_.host_latency_cycles;
  }
  uint64_t busy_cycles() const { return busy_cycles_; }
  uint32_t lanes() const { return static_cast<uint32_t>(busy_.size()); }
  void clear_busy() { busy_cycles_ = 0; }

 private:
  static uint32_t links(const IpuSpec& specs, uint32_t ipus) {
    return std::max<uint32_t>(1, (ipus + specs.ipus_per_host_link - 1) / specs.ipus_per_host_link);
  }
  sim::TrackId track(RunContext& run, size_t lane) {
    if (run.host_tracks.size() < busy_.size()) run.host_tracks.assign(busy_.size(), -1);
    if (run.host_tracks[lane] < 0) {
      std::string name = lane % 2 == 0 ? "host->ipu" : "ipu->host";
      if (busy_.size() > 2) name += fmt::format(" link {}", lane / 2);
      run.host_tracks[lane] = run.trace->sink->add_track(run.trace->device, name, "host");
    }
    return run.host_tracks[lane];
  }

  const IpuSpec& specs_;
  std::vector<uint64_t> busy_;
  uint64_t busy_cycles_ = 0;
};

struct SystemUnits {
  SystemUnits(const IpuSpec& s, uint32_t n)
      : clock(s.clock_hz), sync(s, clock, n), links(s, n), host(s, n) {}
  BspClock clock;
  SyncController sync;
  LinkFabric links;
  HostLink host;
  RunContext run;
};

class IpuChip : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(IpuChip);
  IpuChip(sc_core::sc_module_name name, const IpuSpec& specs, uint32_t index, SystemUnits& units)
      : sc_module(name), specs_(specs), index_(index), units_(units), tile_busy_(specs.tiles, 0) {
    SC_THREAD(supervisor);
    SC_THREAD(tiles);
    SC_THREAD(exchange);
  }

  sc_event start;
  bool finished = false;
  uint64_t end_cycle = 0;
  IpuUnitStats stats;

  void reset() {
    finished = false;
    std::fill(tile_busy_.begin(), tile_busy_.end(), 0);
    stats = IpuUnitStats{};
  }
  void create_tracks() {
    RunContext& run = units_.run;
    if (!run.trace->sink) return;
    auto& sink = *run.trace->sink;
    sync_track_ = sink.add_track(run.trace->device, fmt::format("ipu{}.sync", index_), "sync");
    exchange_track_ =
        sink.add_track(run.trace->device, fmt::format("ipu{}.exchange", index_), "exchange");
    compute_track_ =
        sink.add_track(run.trace->device, fmt::format("ipu{}.compute", index_), "compute");
    tiles_track_ =
        sink.add_track(run.trace->device, fmt::format("ipu{}.busy_tiles", index_), "counter");
  }

 private:
  uint64_t now() const { return units_.clock.now().count(); }

  void supervisor() {
    while (true) {
      sc_core::wait(start);
      RunContext& run = units_.run;
      const auto& steps = run.program->list(index_);
      for (uint32_t i = 0; i < steps.size(); ++i) {
        current_ = &steps[i];
        SuperstepRecord rec;
        rec.ipu = index_;
        rec.index = i;
        rec.op = current_->op;
        rec.label = current_->label;
        rec.start = now() - run.t0;
        uint64_t t = now();
        units_.sync.sync(current_->sync);
        rec.sync = now() - t;
        t = now();
        exchange_start_.notify(sc_core::SC_ZERO_TIME);
        sc_core::wait(exchange_done_);
        rec.exchange = now() - t;
        t = now();
        compute_start_.notify(sc_core::SC_ZERO_TIME);
        sc_core::wait(compute_done_);
        rec.compute = now() - t;
        rec.max_tile = last_max_tile_;
        rec.sum_tile = last_sum_tile_;
        rec.busy_tiles = last_busy_tiles_;
        record(rec);
      }
      end_cycle = now();
      finished = true;
    }
  }

  void record(const SuperstepRecord& rec) {
    stats.sync += rec.sync;
    stats.exchange += rec.exchange;
    stats.compute += rec.compute;
    RunContext& run = units_.run;
    run.stats->steps.push_back(rec);
    if (!run.trace->sink) return;
    auto& sink = *run.trace->sink;
    sim::OpId op = op_id(run, rec.op);
    const std::string& label = run.program->labels.at(rec.label);
    uint64_t ts = rec.start;
    bool external = current_->sync == SyncKind::external;
    if (rec.sync) sink.event(sync_track_, op, external ? "external sync" : "sync", ts, rec.sync);
    ts += rec.sync;
    if (rec.exchange) sink.event(exchange_track_, op, label, ts, rec.exchange);
    ts += rec.exchange;
    if (rec.compute) {
      sink.event(compute_track_, op, label, ts, rec.compute);
      sink.counter(tiles_track_, ts, rec.busy_tiles);
      sink.counter(tiles_track_, ts + rec.compute, 0);
    }
  }

  // The tile array: per-tile state is data, stepped once per compute phase.
  void tiles() {
    while (true) {
      sc_core::wait(compute_start_);
      uint64_t longest = 0, sum = 0, busy = 0;
      for (const TileGroup& g : current_->compute) {
        uint64_t c = tile_compute_cycles(specs_, g.vertices);
        for (uint32_t t = g.first_tile; t < g.first_tile + g.tile_count; ++t) tile_busy_[t] += c;
        longest = std::max(longest, c);
        sum += c * g.tile_count;
        busy += c ? g.tile_count : 0;
      }
      last_max_tile_ = longest;
      last_sum_tile_ = sum;
      last_busy_tiles_ = static_cast<uint32_t>(busy);
      units_.clock.wait(Cycles(longest));
      compute_done_.notify(sc_core::SC_ZERO_TIME);
    }
  }

  // On-chip exchange overlapped with this IPU's IPU-Link sends and host streams.
  void exchange() {
    while (true) {
      sc_core::wait(exchange_start_);
      const Superstep& s = *current_;
      RunContext& run = units_.run;
      uint64_t start = now(), end = start;
      for (const ExchangeGroup& g : s.exchange)
        end = std::max(end, start + exchange_cycles(specs_, g.send_bytes, g.recv_bytes));
      if (s.host_to_device_bytes) {
        end = std::max(
            end, units_.host.transfer(run, index_, true, s.host_to_device_bytes, start, s.op));
        stats.host_bytes_in += s.host_to_device_bytes;
      }
      if (s.device_to_host_bytes) {
        end = std::max(
            end, units_.host.transfer(run, index_, false, s.device_to_host_bytes, start, s.op));
        stats.host_bytes_out += s.device_to_host_bytes;
      }
      for (const LinkTransfer& l : s.links) {
        units_.links.post(index_, units_.run.program->link_target(index_, l.to_ipu), l.bytes, s.op);
        stats.link_bytes_out += l.bytes;
      }
      if (s.sync == SyncKind::external) {
        // Sent data must have left, and data sent to this IPU arrived, before it computes.
        units_.sync.all_posted([&] { units_.links.schedule(run, start); });
        end = std::max(end, units_.links.take_done(index_));
      }
      units_.clock.wait(Cycles(end - now()));
      exchange_done_.notify(sc_core::SC_ZERO_TIME);
    }
  }

 public:
  const std::vector<uint64_t>& tile_busy() const { return tile_busy_; }

 private:
  const IpuSpec& specs_;
  uint32_t index_;
  SystemUnits& units_;
  std::vector<uint64_t> tile_busy_;
  const Superstep* current_ = nullptr;
  sc_event compute_start_, compute_done_, exchange_start_, exchange_done_;
  uint64_t last_max_tile_ = 0, last_sum_tile_ = 0;
  uint32_t last_busy_tiles_ = 0;
  sim::TrackId sync_track_ = 0, exchange_track_ = 0, compute_track_ = 0, tiles_track_ = 0;
};

}  // namespace

struct IpuSystem::Impl {
  Impl(const IpuSpec& specs, uint32_t n) : units(specs, n) {
    for (uint32_t i = 0; i < n; ++i)
      chips.push_back(std::make_unique<IpuChip>(fmt::format("ipu{}", i).c_str(), specs, i, units));
  }
  SystemUnits units;
  std::vector<std::unique_ptr<IpuChip>> chips;
};

IpuSystem::IpuSystem(const IpuSpec& specs, uint32_t num_ipus) : specs_(specs), num_ipus_(num_ipus) {
  validate(specs_);
  if (num_ipus == 0 || num_ipus > specs_.max_ipus)
    throw std::invalid_argument(fmt::format("ipu-emu: {} IPUs requested, the {} system has 1 to {}",
                                            num_ipus, specs_.name, specs_.max_ipus));
  impl_ = std::make_unique<Impl>(specs_, num_ipus);
  sim::systemc::bsp_elaborate();
}

IpuSystem::~IpuSystem() = default;

void IpuSystem::check(const BspProgram& p) const {
  if (p.ipus.empty() || p.num_ipus() != num_ipus_)
    throw std::invalid_argument(
        fmt::format("ipu-emu: program for {} IPUs on a system of {}", p.num_ipus(), num_ipus_));
  size_t externals = SIZE_MAX;
  for (uint32_t i = 0; i < p.ipus.size(); ++i) {
    size_t ext = 0;
    for (size_t k = 0; k < p.ipus[i].size(); ++k) {
      const Superstep& s = p.ipus[i][k];
      auto bad = [&](const std::string& what) {
        return std::invalid_argument(
            fmt::format("ipu-emu: program ipu {} superstep {}: {}", i, k, what));
      };
      if (s.label >= p.labels.size()) throw bad("label out of range");
      for (const auto& g : s.compute)
        if (uint64_t(g.first_tile) + g.tile_count > specs_.tiles)
          throw bad("compute tiles out of range");
      for (const auto& g : s.exchange)
        if (uint64_t(g.first_tile) + g.tile_count > specs_.tiles)
          throw bad("exchange tiles out of range");
      for (const auto& l : s.links)
        if (l.to_ipu >= num_ipus_) throw bad(fmt::format("link to IPU {} out of range", l.to_ipu));
      if (!s.links.empty() && s.sync != SyncKind::external)
        throw bad("IPU-Link transfers need an external sync");
      ext += s.sync == SyncKind::external;
    }
    if (externals != SIZE_MAX && ext != externals)
      throw std::invalid_argument(fmt::format(
          "ipu-emu: program: IPU {} has {} external syncs, IPU 0 has {}", i, ext, externals));
    externals = ext;
  }
}

RunStats IpuSystem::run(const BspProgram& program, const TraceTarget& trace) {
  check(program);
  RunStats stats;
  SystemUnits& u = impl_->units;
  u.run = RunContext{};
  u.run.program = &program;
  u.run.trace = &trace;
  u.run.stats = &stats;
  u.run.t0 = u.clock.now().count();
  u.links.reset();
  u.links.clear_busy();
  u.host.reset();
  u.host.clear_busy();
  // Host link reservations are absolute cycles: start them at the run's beginning.
  for (auto& chip : impl_->chips) {
    chip->reset();
    chip->create_tracks();
    chip->start.notify(sc_core::SC_ZERO_TIME);
  }
  sim::systemc::bsp_run_until_idle();
  uint64_t end = u.run.t0;
  for (auto& chip : impl_->chips) {
    if (!chip->finished)
      throw RuntimeError("ipu-emu: the simulation stopped before the program finished");
    end = std::max(end, chip->end_cycle);
    chip->stats.tile_busy = chip->tile_busy();
    stats.ipus.push_back(std::move(chip->stats));
  }
  stats.cycles = end - u.run.t0;
  stats.host_busy = u.host.busy_cycles();
  stats.link_busy = u.links.busy_cycles();
  stats.host_lanes = u.host.lanes();
  stats.link_lanes = u.links.lanes();
  std::stable_sort(stats.steps.begin(), stats.steps.end(),
                   [](const SuperstepRecord& a, const SuperstepRecord& b) {
                     return a.ipu != b.ipu ? a.ipu < b.ipu : a.index < b.index;
                   });
  u.run = RunContext{};
  return stats;
}

}  // namespace mimic::models::ipu
