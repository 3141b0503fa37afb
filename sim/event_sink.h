// The interface through which backends and hardware models report what happened during a run:
// devices, tracks (one per hardware unit or queue; slices on one track never overlap), ops, timed
// events and counters. Time is an integer in the device's native unit: cycles for emulators,
// nanoseconds for physical devices. traces/ implements it with SQLite; nothing here knows SQL.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace mimic::sim {

enum class TimeUnit { cycles, ns };

struct DeviceDesc {
  std::string backend;    // "cpu", "tpu-emu", "ipu-emu", "cuda"
  std::string preset;     // "v4", "gc200", a JSON file name, or "" for physical devices
  uint64_t clock_hz = 0;  // cycles per second; 1e9 for ns time
  TimeUnit unit = TimeUnit::ns;
  std::string properties_json;  // preset fields, driver versions, ...
};

struct OpDesc {
  std::string node;     // graph node name
  std::string op_type;  // "Conv"
  std::string shapes;   // "f32[8,3,224,224] f32[64,3,7,7] -> f32[8,64,112,112]"
  std::string dtype;
  int64_t flops = 0;
  int64_t bytes_in = 0, bytes_out = 0;
  std::string backend;    // backend that ran it
  bool fallback = false;  // ran on the cpu backend because its device could not
};

using DeviceId = int32_t;
using TrackId = int32_t;
using OpId = int64_t;
inline constexpr OpId kNoOp = -1;

class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual DeviceId add_device(const DeviceDesc& device) = 0;
  // `kind` groups tracks: "compute", "dma", "vector", "host", "memory", ...
  virtual TrackId add_track(DeviceId device, const std::string& name, const std::string& kind) = 0;
  virtual OpId add_op(const OpDesc& op) = 0;
  virtual void event(TrackId track, OpId op, std::string_view name, uint64_t ts, uint64_t dur) = 0;
  virtual void counter(TrackId track, uint64_t ts, double value) = 0;
  // Named per-run tables that do not fit events (e.g. per-tile memory use). `columns_json` is an
  // array of column names, `row_json` an array of values.
  virtual void table_row(const std::string& table, const std::string& columns_json,
                         const std::string& row_json) {}
};

// Discards everything: for runs without a trace.
class NullSink : public EventSink {
 public:
  DeviceId add_device(const DeviceDesc&) override { return 0; }
  TrackId add_track(DeviceId, const std::string&, const std::string&) override { return 0; }
  OpId add_op(const OpDesc&) override { return 0; }
  void event(TrackId, OpId, std::string_view, uint64_t, uint64_t) override {}
  void counter(TrackId, uint64_t, double) override {}
};

}  // namespace mimic::sim
