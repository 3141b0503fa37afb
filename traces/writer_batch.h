// In-memory rows waiting for the writer thread (internal to traces/). A batch keeps its kinds in
// separate vectors and is written devices, tracks, ops, then events, counters and table rows, so a
// row only ever refers to rows of the same or an earlier batch.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/event_sink.h"
#include "traces/trace_writer.h"

namespace mimic::traces {

struct EventRow {
  int32_t track;
  uint32_t name_len;
  uint64_t name_offset;  // into Batch::names
  int64_t op;            // sim::kNoOp for none
  uint64_t ts, dur;
};

struct CounterRow {
  int32_t track;
  uint64_t ts;
  double value;
};

struct DeviceRow {
  int32_t id;
  sim::DeviceDesc desc;
};

struct TrackRow {
  int32_t id, device;
  std::string name, kind;
};

struct OpRow {
  int64_t id;
  sim::OpDesc desc;
};

struct TableRowEntry {
  std::string table;
  std::string columns_json;  // non-empty for a table's first row: defines the table
  int64_t row_index;
  std::string values_json;
};

struct Batch {
  std::vector<DeviceRow> devices;
  std::vector<TrackRow> tracks;
  std::vector<OpRow> ops;
  std::vector<EventRow> events;
  std::string names;  // event names, back to back
  std::vector<CounterRow> counters;
  std::vector<TableRowEntry> table_rows;

  size_t rows() const {
    return devices.size() + tracks.size() + ops.size() + events.size() + counters.size() +
           table_rows.size();
  }
  bool empty() const { return rows() == 0; }
};

// One unit of work for the writer thread, processed in order.
struct WorkItem {
  enum class Kind { begin_run, batch, end_run } kind;
  uint64_t run_key = 0;  // the run's key in this process (its id in the file comes later)
  uint64_t seq = 0;      // position in the queue, for flush()
  // begin_run
  std::shared_ptr<RunMeta> meta;
  std::string uuid;
  int64_t time_ns = 0;  // begin: started, end: ended (Unix ns)
  // batch
  Batch batch;
  // end_run
  bool ok = false;
  std::string error;

  size_t rows() const { return kind == Kind::batch ? batch.rows() : 1; }
};

}  // namespace mimic::traces
