// Writing runs to a trace file. A TraceWriter owns one file and one background thread that does
// all SQLite work; each run gets a RunWriter, the sim::EventSink that backends and hardware models
// emit to. The sink's calls only append to an in-memory batch (no disk, no SQL): the thread takes
// a batch when it holds ~10K rows or every ~100 ms and commits it in one transaction.
//
// Guarantees:
// - Batches are committed in the order they were emitted; a process that dies (even kill -9)
//   leaves a readable file with every committed batch and its run's status 'running'.
// - Several processes may append to one file at once: every transaction retries while another
//   process holds the write lock (busy timeout, then back-off) until OpenOptions::lock_give_up.
// - A write failure (disk full, I/O error) is kept and rethrown as IoError by the next sink call,
//   flush() or close(); nothing is dropped silently.
// - Memory is bounded: when more than max_pending_rows wait for the disk, emitters wait.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/event_sink.h"
#include "traces/schema.h"

namespace mimic::traces {

struct WriterOptions : OpenOptions {
  size_t batch_rows = 10000;                      // rows per batch handed to the writer thread
  std::chrono::milliseconds flush_interval{100};  // a partial batch waits at most this long
  size_t max_pending_rows = 4'000'000;            // emitters wait beyond this many unwritten rows
};

// What a run is, for the run table (the front end fills it from mimic::RunInfo).
struct RunMeta {
  std::string model;
  int64_t batch = 0;
  std::string layout, precision, device, tag;
  std::string config_json;  // "" is stored as "{}"
};

struct WriterState;
struct RunState;

class RunWriter final : public sim::EventSink {
 public:
  ~RunWriter() override;  // a run never finished is recorded as failed ("abandoned")
  RunWriter(const RunWriter&) = delete;
  RunWriter& operator=(const RunWriter&) = delete;

  // EventSink. Ids are local to the run, dense from 0. Each add_device is a new device (the
  // segments of a placed run each register theirs); bad ids and unknown units are InvalidArgument.
  sim::DeviceId add_device(const sim::DeviceDesc& device) override;
  sim::TrackId add_track(sim::DeviceId device, const std::string& name,
                         const std::string& kind) override;
  sim::OpId add_op(const sim::OpDesc& op) override;
  void event(sim::TrackId track, sim::OpId op, std::string_view name, uint64_t ts,
             uint64_t dur) override;
  void counter(sim::TrackId track, uint64_t ts, double value) override;
  // `columns_json`: array of column names (fixed per table and run); `row_json`: array of values.
  void table_row(const std::string& table, const std::string& columns_json,
                 const std::string& row_json) override;

  // Ends the run: status 'done' when ok, else 'failed' with `error`. Does not wait for the disk.
  // Later calls are ignored.
  void finish(bool ok, const std::string& error = "");
  const std::string& uuid() const { return uuid_; }
  // The run's id in the file; waits until its row is written.
  int64_t run_id();

 private:
  friend class TraceWriter;
  RunWriter(std::shared_ptr<WriterState> state, std::unique_ptr<RunState> run, std::string uuid);
  void check_track(sim::TrackId track, const char* what) const;

  std::shared_ptr<WriterState> state_;
  std::unique_ptr<RunState> run_;  // listed in state_ while the run is open
  std::string uuid_;
};

class TraceWriter {
 public:
  // Opens or creates `path` (see open_for_write for the errors) and starts the writer thread.
  explicit TraceWriter(const std::string& path, const WriterOptions& options = {});
  ~TraceWriter();  // close() that never throws; runs still open are recorded as failed
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Starts a run (its row is written with status 'running' right away, by the writer thread).
  std::unique_ptr<RunWriter> begin_run(const RunMeta& meta);
  // Waits until everything emitted so far is committed. Throws the writer's IoError if any.
  void flush();
  // Ends open runs as failed, flushes, stops the thread and closes the file. Throws like flush().
  void close();
  const std::string& path() const { return path_; }
  // Ids of the runs begun through this writer, in order (flushes first).
  std::vector<int64_t> run_ids();

 private:
  std::string path_;
  std::shared_ptr<WriterState> state_;
};

// A random RFC 4122 version-4 UUID ("8-4-4-4-12" hex).
std::string make_uuid();

}  // namespace mimic::traces
