// A process that writes to a trace, for the tests that need a second process:
//   trace_writer_helper append FILE RUNS EVENTS BATCH_ROWS TAG [BUSY_TIMEOUT_MS]
//       writes RUNS runs of EVENTS events each (ts = 0..EVENTS-1), then exits 0; a short busy
//       timeout makes the writer rely on its own retry loop when the other process holds the lock
//   trace_writer_helper crash FILE EVENTS
//       writes EVENTS events, waits until they are committed, prints "committed", then keeps
//       emitting events until it is killed (or a minute has passed: exit 3)
// Errors: one line on stderr, exit 1.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include "traces/trace_writer.h"

using namespace mimic;

namespace {

struct Run {
  std::unique_ptr<traces::RunWriter> writer;
  sim::TrackId track;
  sim::OpId op;
};

Run start(traces::TraceWriter& w, const std::string& tag, int index) {
  Run r;
  r.writer = w.begin_run(traces::RunMeta{"helper", index, "", "", "cpu", tag, ""});
  auto dev =
      r.writer->add_device(sim::DeviceDesc{"cpu", "", 1'000'000'000, sim::TimeUnit::ns, "{}"});
  r.track = r.writer->add_track(dev, "host", "compute");
  r.op = r.writer->add_op(sim::OpDesc{"node", "Add", "", "f32", 1, 1, 1, "cpu", false});
  return r;
}

int append(const std::string& path, int runs, int events, int batch_rows, const std::string& tag,
           int busy_timeout_ms) {
  traces::WriterOptions o;
  o.batch_rows = static_cast<size_t>(batch_rows);
  o.busy_timeout = std::chrono::milliseconds(busy_timeout_ms);
  traces::TraceWriter w(path, o);
  for (int i = 0; i < runs; ++i) {
    Run r = start(w, tag, i + 1);
    for (int e = 0; e < events; ++e) r.writer->event(r.track, r.op, tag, uint64_t(e), 1);
    r.writer->finish(true);
  }
  w.close();
  return 0;
}

int crash(const std::string& path, int events) {
  traces::WriterOptions o;
  o.batch_rows = 1000;
  traces::TraceWriter w(path, o);
  Run r = start(w, "crash", 1);
  uint64_t ts = 0;
  for (; ts < uint64_t(events); ++ts) r.writer->event(r.track, r.op, "before", ts, 1);
  w.flush();
  std::cout << "committed" << std::endl;
  // Mid-run until killed: batches keep being handed to the writer thread. A helper whose test
  // died without killing it stops after a minute instead of filling the disk.
  auto start = std::chrono::steady_clock::now();
  for (;; ++ts) {
    r.writer->event(r.track, r.op, "after", ts, 1);
    if (ts % 1000 == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (std::chrono::steady_clock::now() - start > std::chrono::seconds(60)) std::_Exit(3);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "append" && (argc == 7 || argc == 8))
      return append(argv[2], std::stoi(argv[3]), std::stoi(argv[4]), std::stoi(argv[5]), argv[6],
                    argc == 8 ? std::stoi(argv[7]) : 5000);
    if (mode == "crash" && argc == 4) return crash(argv[2], std::stoi(argv[3]));
    std::cerr << "usage: trace_writer_helper append FILE RUNS EVENTS BATCH_ROWS TAG [BUSY_MS] | "
                 "crash FILE EVENTS\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "trace_writer_helper: " << e.what() << "\n";
    return 1;
  }
}
