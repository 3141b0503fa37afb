#include "backends/device_worker/recording_sink.h"

#include <unordered_map>

namespace mimic::backends {

sim::DeviceId RecordingSink::add_device(const sim::DeviceDesc& device) {
  devices_.push_back(device);
  return static_cast<sim::DeviceId>(devices_.size() - 1);
}

sim::TrackId RecordingSink::add_track(sim::DeviceId device, const std::string& name,
                                      const std::string& kind) {
  tracks_.push_back({device, name, kind});
  return static_cast<sim::TrackId>(tracks_.size() - 1);
}

sim::OpId RecordingSink::add_op(const sim::OpDesc& op) {
  ops_.push_back(op);
  return static_cast<sim::OpId>(ops_.size() - 1);
}

uint32_t RecordingSink::intern(std::string_view name) {
  // Names repeat (one per instruction kind): keep the last few lookups cheap.
  for (size_t i = names_.size(); i > 0 && i + 8 > names_.size(); --i)
    if (names_[i - 1] == name) return static_cast<uint32_t>(i - 1);
  for (size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) return static_cast<uint32_t>(i);
  names_.emplace_back(name);
  return static_cast<uint32_t>(names_.size() - 1);
}

void RecordingSink::event(sim::TrackId track, sim::OpId op, std::string_view name, uint64_t ts,
                          uint64_t dur) {
  events_.push_back({track, op, intern(name), ts, dur});
}

void RecordingSink::counter(sim::TrackId track, uint64_t ts, double value) {
  counters_.push_back({track, ts, value});
}

void RecordingSink::table_row(const std::string& table, const std::string& columns_json,
                              const std::string& row_json) {
  tables_.push_back({table, columns_json, row_json});
}

void RecordingSink::serialize(wire::Writer& w) const {
  w.u64(devices_.size());
  for (const auto& d : devices_) {
    w.str(d.backend);
    w.str(d.preset);
    w.u64(d.clock_hz);
    w.u8(static_cast<uint8_t>(d.unit));
    w.str(d.properties_json);
  }
  w.u64(tracks_.size());
  for (const auto& t : tracks_) {
    w.pod(t.device);
    w.str(t.name);
    w.str(t.kind);
  }
  w.u64(ops_.size());
  for (const auto& o : ops_) {
    w.str(o.node);
    w.str(o.op_type);
    w.str(o.shapes);
    w.str(o.dtype);
    w.i64(o.flops);
    w.i64(o.bytes_in);
    w.i64(o.bytes_out);
    w.str(o.backend);
    w.boolean(o.fallback);
  }
  w.u64(names_.size());
  for (const auto& n : names_) w.str(n);
  w.pods(events_);
  w.pods(counters_);
  w.u64(tables_.size());
  for (const auto& t : tables_) {
    w.str(t.table);
    w.str(t.columns);
    w.str(t.row);
  }
}

void RecordingSink::replay(wire::Reader& r, sim::EventSink& sink) {
  std::vector<sim::DeviceId> devices;
  for (uint64_t i = 0, n = r.u64(); i < n; ++i) {
    sim::DeviceDesc d;
    d.backend = r.str();
    d.preset = r.str();
    d.clock_hz = r.u64();
    d.unit = static_cast<sim::TimeUnit>(r.u8());
    d.properties_json = r.str();
    devices.push_back(sink.add_device(d));
  }
  std::vector<sim::TrackId> tracks;
  for (uint64_t i = 0, n = r.u64(); i < n; ++i) {
    auto device = r.pod<sim::DeviceId>();
    std::string name = r.str(), kind = r.str();
    tracks.push_back(sink.add_track(devices.at(device), name, kind));
  }
  std::vector<sim::OpId> ops;
  for (uint64_t i = 0, n = r.u64(); i < n; ++i) {
    sim::OpDesc o;
    o.node = r.str();
    o.op_type = r.str();
    o.shapes = r.str();
    o.dtype = r.str();
    o.flops = r.i64();
    o.bytes_in = r.i64();
    o.bytes_out = r.i64();
    o.backend = r.str();
    o.fallback = r.boolean();
    ops.push_back(sink.add_op(o));
  }
  std::vector<std::string> names;
  for (uint64_t i = 0, n = r.u64(); i < n; ++i) names.push_back(r.str());
  for (const Event& e : r.pods<Event>())
    sink.event(tracks.at(e.track), e.op >= 0 ? ops.at(e.op) : sim::kNoOp, names.at(e.name), e.ts,
               e.dur);
  for (const Counter& c : r.pods<Counter>()) sink.counter(tracks.at(c.track), c.ts, c.value);
  for (uint64_t i = 0, n = r.u64(); i < n; ++i) {
    std::string table = r.str(), columns = r.str(), row = r.str();
    sink.table_row(table, columns, row);
  }
}

}  // namespace mimic::backends
