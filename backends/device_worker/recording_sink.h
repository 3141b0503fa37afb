// Records everything a run emits so that a device worker can ship it to the parent process, which
// replays it into the real sink (a trace file). Ids are local to the recording and remapped on
// replay.
#pragma once

#include <string>
#include <vector>

#include "backends/device_worker/wire.h"
#include "sim/event_sink.h"

namespace mimic::backends {

class RecordingSink final : public sim::EventSink {
 public:
  sim::DeviceId add_device(const sim::DeviceDesc& device) override;
  sim::TrackId add_track(sim::DeviceId device, const std::string& name,
                         const std::string& kind) override;
  sim::OpId add_op(const sim::OpDesc& op) override;
  void event(sim::TrackId track, sim::OpId op, std::string_view name, uint64_t ts,
             uint64_t dur) override;
  void counter(sim::TrackId track, uint64_t ts, double value) override;
  void table_row(const std::string& table, const std::string& columns_json,
                 const std::string& row_json) override;

  void serialize(wire::Writer& w) const;
  // Replays a serialized recording into `sink`, mapping device/track/op ids.
  static void replay(wire::Reader& r, sim::EventSink& sink);
  size_t event_count() const { return events_.size(); }

 private:
  struct Track {
    sim::DeviceId device;
    std::string name, kind;
  };
  struct Event {
    sim::TrackId track;
    sim::OpId op;
    uint32_t name;  // index into names_
    uint64_t ts, dur;
  };
  struct Counter {
    sim::TrackId track;
    uint64_t ts;
    double value;
  };
  struct TableRow {
    std::string table, columns, row;
  };
  uint32_t intern(std::string_view name);

  std::vector<sim::DeviceDesc> devices_;
  std::vector<Track> tracks_;
  std::vector<sim::OpDesc> ops_;
  std::vector<Event> events_;
  std::vector<Counter> counters_;
  std::vector<TableRow> tables_;
  std::vector<std::string> names_;
};

}  // namespace mimic::backends
