#include "traces/trace_writer.h"

#include <fmt/format.h>

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>
#include <unordered_map>

#include "traces/ingest.h"

namespace mimic::traces {
namespace {

int64_t unix_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string backend_of(const std::string& device) {
  return device.substr(0, device.find(':'));
}

}  // namespace

std::string make_uuid() {
  static std::mutex m;
  static std::mt19937_64 rng{[] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
  }()};
  uint64_t hi, lo;
  {
    std::lock_guard<std::mutex> lock(m);
    hi = rng();
    lo = rng();
  }
  hi = (hi & ~0xf000ull) | 0x4000ull;        // version 4
  lo = (lo & ~(3ull << 62)) | (2ull << 62);  // RFC 4122 variant
  return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", hi >> 32, (hi >> 16) & 0xffff,
                     hi & 0xffff, lo >> 48, lo & 0xffffffffffffull);
}

// One open run: ids handed out so far and the batch being filled. Guarded by WriterState::mu.
struct RunState {
  uint64_t key = 0;
  std::string device_backend;  // from RunMeta::device: ops run by another backend are fallbacks
  int32_t devices = 0, tracks = 0;
  int64_t ops = 0;
  std::unordered_map<std::string, std::pair<std::string, int64_t>> tables;  // columns, next row
  Batch current;
  bool ended = false;  // finished, or ended by TraceWriter::close()
};

// Everything the emitting threads and the writer thread share.
struct WriterState {
  WriterOptions options;
  Db db;
  std::unique_ptr<Ingestor> ingestor;
  std::thread thread;

  std::mutex mu;
  std::condition_variable work_cv, done_cv, space_cv;
  std::deque<WorkItem> queue;
  std::unordered_map<uint64_t, RunState*> runs;   // open runs (owned by their RunWriter)
  std::vector<uint64_t> run_keys;                 // every run begun, in order
  std::unordered_map<uint64_t, int64_t> run_ids;  // run key -> id in the file, once written
  uint64_t next_key = 1, enqueued_seq = 0, committed_seq = 0;
  size_t pending_rows = 0;
  bool stop = false;
  bool failed = false;  // the writer thread hit an error; `error` says which
  std::string error;

  // Callers hold `mu`. Emitting threads wait while too many rows are unwritten; the writer
  // thread itself never waits (`from_writer`).
  void enqueue(WorkItem item, std::unique_lock<std::mutex>& lock, bool from_writer = false) {
    if (!from_writer)
      space_cv.wait(lock,
                    [&] { return pending_rows < options.max_pending_rows || failed || stop; });
    item.seq = ++enqueued_seq;
    pending_rows += item.rows();
    queue.push_back(std::move(item));
    work_cv.notify_one();
  }
  void hand_over(RunState& run, std::unique_lock<std::mutex>& lock, bool from_writer = false) {
    if (run.current.empty()) return;
    WorkItem item;
    item.kind = WorkItem::Kind::batch;
    item.run_key = run.key;
    item.batch = std::move(run.current);
    run.current = Batch();
    run.current.events.reserve(options.batch_rows);
    enqueue(std::move(item), lock, from_writer);
  }
  void end_run(RunState& run, bool ok, const std::string& error_text,
               std::unique_lock<std::mutex>& lock) {
    hand_over(run, lock);
    WorkItem end;
    end.kind = WorkItem::Kind::end_run;
    end.run_key = run.key;
    end.ok = ok;
    end.error = error_text;
    end.time_ns = unix_ns();
    enqueue(std::move(end), lock);
    run.ended = true;
    runs.erase(run.key);
  }
  void throw_if_failed() const {
    if (failed) throw IoError(error);
  }
  void writer_loop();
  void wait_committed(std::unique_lock<std::mutex>& lock) {
    for (auto& [key, run] : runs) hand_over(*run, lock);
    uint64_t target = enqueued_seq;
    work_cv.notify_one();
    done_cv.wait(lock, [&] { return committed_seq >= target || failed; });
    throw_if_failed();
  }
};

void WriterState::writer_loop() {
  // Large enough that a writer that fell behind catches up in few commits, small enough that a
  // concurrent process waits well under a second for the lock.
  const size_t max_rows_per_transaction = std::max<size_t>(options.batch_rows * 16, 1);
  std::unique_lock<std::mutex> lock(mu);
  for (;;) {
    work_cv.wait_for(lock, options.flush_interval, [&] { return stop || !queue.empty(); });
    if (failed) {  // after a write error nothing more is written; the error is reported instead
      queue.clear();
      pending_rows = 0;
      space_cv.notify_all();
      if (stop) return;
      continue;
    }
    if (queue.empty())  // the interval passed: partial batches go out now
      for (auto& [key, run] : runs) hand_over(*run, lock, true);
    if (queue.empty()) {
      if (stop) return;
      continue;
    }
    std::vector<WorkItem> work;
    size_t rows = 0;
    while (!queue.empty() &&
           (work.empty() || rows + queue.front().rows() <= max_rows_per_transaction)) {
      rows += queue.front().rows();
      work.push_back(std::move(queue.front()));
      queue.pop_front();
    }
    lock.unlock();
    std::string failure;
    try {
      ingestor->write(work);
    } catch (const std::exception& e) {
      failure = e.what();
    }
    lock.lock();
    pending_rows -= rows;
    if (!failure.empty()) {
      failed = true;
      error = failure;
      pending_rows = 0;
      queue.clear();
    } else {
      committed_seq = work.back().seq;
      for (const WorkItem& item : work)
        if (item.kind == WorkItem::Kind::begin_run)
          run_ids[item.run_key] = ingestor->run_id(item.run_key);
    }
    done_cv.notify_all();
    space_cv.notify_all();
  }
}

// ---- TraceWriter ----

TraceWriter::TraceWriter(const std::string& path, const WriterOptions& options)
    : path_(path), state_(std::make_shared<WriterState>()) {
  if (options.batch_rows == 0) throw InvalidArgument("trace writer: batch_rows must be at least 1");
  state_->options = options;
  state_->db = open_for_write(path, options);
  state_->ingestor = std::make_unique<Ingestor>(state_->db, options);
  state_->thread = std::thread([s = state_.get()] { s->writer_loop(); });
}

TraceWriter::~TraceWriter() {
  try {
    close();
  } catch (const std::exception&) {
    // Destructors do not throw; close() reports the same error to callers that ask.
  }
}

std::unique_ptr<RunWriter> TraceWriter::begin_run(const RunMeta& meta) {
  std::unique_lock<std::mutex> lock(state_->mu);
  if (state_->stop) throw IoError(fmt::format("trace '{}' is closed", path_));
  state_->throw_if_failed();
  auto run = std::make_unique<RunState>();
  run->key = state_->next_key++;
  run->device_backend = backend_of(meta.device);
  WorkItem begin;
  begin.kind = WorkItem::Kind::begin_run;
  begin.run_key = run->key;
  begin.meta = std::make_shared<RunMeta>(meta);
  begin.uuid = make_uuid();
  begin.time_ns = unix_ns();
  std::string uuid = begin.uuid;
  state_->runs.emplace(run->key, run.get());
  state_->run_keys.push_back(run->key);
  state_->enqueue(std::move(begin), lock);
  return std::unique_ptr<RunWriter>(new RunWriter(state_, std::move(run), uuid));
}

void TraceWriter::flush() {
  std::unique_lock<std::mutex> lock(state_->mu);
  if (!state_->thread.joinable()) return state_->throw_if_failed();
  state_->wait_committed(lock);
}

void TraceWriter::close() {
  {
    std::unique_lock<std::mutex> lock(state_->mu);
    if (!state_->thread.joinable()) return state_->throw_if_failed();
    while (!state_->runs.empty())
      state_->end_run(*state_->runs.begin()->second, false, "trace closed before the run finished",
                      lock);
    state_->stop = true;
    state_->work_cv.notify_one();
    state_->space_cv.notify_all();
  }
  state_->thread.join();
  state_->ingestor.reset();
  state_->db = Db();
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->throw_if_failed();
}

std::vector<int64_t> TraceWriter::run_ids() {
  flush();
  std::lock_guard<std::mutex> lock(state_->mu);
  std::vector<int64_t> ids;
  for (uint64_t key : state_->run_keys) {
    auto it = state_->run_ids.find(key);
    if (it != state_->run_ids.end()) ids.push_back(it->second);
  }
  return ids;
}

// ---- RunWriter ----

RunWriter::RunWriter(std::shared_ptr<WriterState> state, std::unique_ptr<RunState> run,
                     std::string uuid)
    : state_(std::move(state)), run_(std::move(run)), uuid_(std::move(uuid)) {}

RunWriter::~RunWriter() {
  finish(false, "run abandoned: its writer was destroyed before finish()");
}

void RunWriter::finish(bool ok, const std::string& error) {
  std::unique_lock<std::mutex> lock(state_->mu);
  if (run_->ended) return;
  if (state_->failed) {  // nothing more can be recorded; forget the run
    run_->ended = true;
    state_->runs.erase(run_->key);
    return;
  }
  state_->end_run(*run_, ok, error, lock);
}

int64_t RunWriter::run_id() {
  std::unique_lock<std::mutex> lock(state_->mu);
  if (state_->thread.joinable()) state_->wait_committed(lock);
  state_->throw_if_failed();
  auto it = state_->run_ids.find(run_->key);
  return it == state_->run_ids.end() ? -1 : it->second;
}

namespace {

// The sink's entry points hold the state lock; these checks run under it.
void check_open(const WriterState& s, const RunState& run) {
  if (s.failed) throw IoError(s.error);
  if (run.ended) throw InvalidArgument("trace: event sink used after its run ended");
}

}  // namespace

void RunWriter::check_track(sim::TrackId track, const char* what) const {
  if (track < 0 || track >= run_->tracks)
    throw InvalidArgument(fmt::format("trace: {} on track {}, but the run has {} track(s)", what,
                                      track, run_->tracks));
}

sim::DeviceId RunWriter::add_device(const sim::DeviceDesc& device) {
  std::unique_lock<std::mutex> lock(state_->mu);
  check_open(*state_, *run_);
  DeviceRow row{run_->devices, device};
  if (device.unit == sim::TimeUnit::cycles && device.clock_hz == 0)
    throw InvalidArgument(
        fmt::format("trace: device '{}' counts time in cycles but has clock_hz 0", device.backend));
  if (device.unit == sim::TimeUnit::ns) row.desc.clock_hz = 1'000'000'000;
  run_->current.devices.push_back(std::move(row));
  return run_->devices++;
}

sim::TrackId RunWriter::add_track(sim::DeviceId device, const std::string& name,
                                  const std::string& kind) {
  std::unique_lock<std::mutex> lock(state_->mu);
  check_open(*state_, *run_);
  if (device < 0 || device >= run_->devices)
    throw InvalidArgument(
        fmt::format("trace: track '{}' on device {}, but the run has {} device(s)", name, device,
                    run_->devices));
  run_->current.tracks.push_back(TrackRow{run_->tracks, device, name, kind});
  return run_->tracks++;
}

sim::OpId RunWriter::add_op(const sim::OpDesc& op) {
  std::unique_lock<std::mutex> lock(state_->mu);
  check_open(*state_, *run_);
  OpRow row{run_->ops, op};
  if (!run_->device_backend.empty() && op.backend != run_->device_backend) row.desc.fallback = true;
  run_->current.ops.push_back(std::move(row));
  if (run_->current.rows() >= state_->options.batch_rows) state_->hand_over(*run_, lock);
  return run_->ops++;
}

void RunWriter::event(sim::TrackId track, sim::OpId op, std::string_view name, uint64_t ts,
                      uint64_t dur) {
  std::unique_lock<std::mutex> lock(state_->mu);
  if (state_->failed || run_->ended) check_open(*state_, *run_);
  if (track < 0 || track >= run_->tracks) check_track(track, "event");
  if (op != sim::kNoOp && (op < 0 || op >= run_->ops))
    throw InvalidArgument(fmt::format("trace: event '{}' refers to op {}, but the run has {} op(s)",
                                      name, op, run_->ops));
  Batch& b = run_->current;
  b.events.push_back(
      EventRow{track, static_cast<uint32_t>(name.size()), b.names.size(), op, ts, dur});
  b.names.append(name);
  if (b.events.size() >= state_->options.batch_rows) state_->hand_over(*run_, lock);
}

void RunWriter::counter(sim::TrackId track, uint64_t ts, double value) {
  std::unique_lock<std::mutex> lock(state_->mu);
  check_open(*state_, *run_);
  check_track(track, "counter");
  run_->current.counters.push_back(CounterRow{track, ts, value});
  if (run_->current.rows() >= state_->options.batch_rows) state_->hand_over(*run_, lock);
}

void RunWriter::table_row(const std::string& table, const std::string& columns_json,
                          const std::string& row_json) {
  nlohmann::json columns = nlohmann::json::parse(columns_json, nullptr, false);
  nlohmann::json row = nlohmann::json::parse(row_json, nullptr, false);
  if (table.empty()) throw InvalidArgument("trace: table_row needs a table name");
  if (!columns.is_array() || columns.empty())
    throw InvalidArgument(fmt::format(
        "trace: table '{}': columns must be a non-empty JSON array, got {}", table, columns_json));
  for (const auto& c : columns)
    if (!c.is_string())
      throw InvalidArgument(fmt::format("trace: table '{}': column names must be strings, got {}",
                                        table, columns_json));
  if (!row.is_array() || row.size() != columns.size())
    throw InvalidArgument(fmt::format("trace: table '{}' has {} column(s); row {} does not match",
                                      table, columns.size(), row_json));
  std::string canonical = columns.dump();
  std::unique_lock<std::mutex> lock(state_->mu);
  check_open(*state_, *run_);
  auto [it, first] = run_->tables.try_emplace(table, canonical, 0);
  if (!first && it->second.first != canonical)
    throw InvalidArgument(fmt::format("trace: table '{}' has columns {}, a row came with {}", table,
                                      it->second.first, canonical));
  run_->current.table_rows.push_back(
      TableRowEntry{table, first ? canonical : std::string(), it->second.second++, row.dump()});
  if (run_->current.rows() >= state_->options.batch_rows) state_->hand_over(*run_, lock);
}

}  // namespace mimic::traces
