// Micro-benchmarks of the trace sink: the cost of one EventSink::event call (the hot path that
// emulators and backends pay; the writer thread commits in the background), and whole batches
// committed to a file.
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>

#include "traces/trace_writer.h"

namespace {

using namespace mimic;

std::string temp_path(const char* name) {
  return fmt::format("{}/{}-{}.db", std::filesystem::temp_directory_path().string(), name,
                     getpid());
}

void remove_trace(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
}

// Caller-side cost per event while the writer thread drains to disk.
void BM_EventCall(benchmark::State& state) {
  std::string path = temp_path("bm-event");
  {
    traces::TraceWriter w(path);
    auto run = w.begin_run(traces::RunMeta{"bench", 1, "", "", "cpu", "", ""});
    auto dev = run->add_device(sim::DeviceDesc{"cpu", "", 1'000'000'000, sim::TimeUnit::ns, "{}"});
    auto track = run->add_track(dev, "host", "compute");
    auto op = run->add_op(sim::OpDesc{"n", "Conv", "", "f32", 1, 1, 1, "cpu", false});
    uint64_t ts = 0;
    for (auto _ : state) run->event(track, op, "matmul.17", ts++, 1);
    state.SetItemsProcessed(state.iterations());
    run->finish(true);
  }
  remove_trace(path);
}
BENCHMARK(BM_EventCall);

// Events committed per second: emit `range(0)` events and close (everything on disk).
void BM_IngestCommitted(benchmark::State& state) {
  std::string path = temp_path("bm-ingest");
  for (auto _ : state) {
    remove_trace(path);
    traces::TraceWriter w(path);
    auto run = w.begin_run(traces::RunMeta{"bench", 1, "", "", "cpu", "", ""});
    auto dev =
        run->add_device(sim::DeviceDesc{"tpu-emu", "x", 940'000'000, sim::TimeUnit::cycles, "{}"});
    auto a = run->add_track(dev, "mxu", "matrix"), b = run->add_track(dev, "dma", "dma");
    auto op = run->add_op(sim::OpDesc{"n", "Conv", "", "f32", 1, 1, 1, "tpu-emu", false});
    for (int64_t i = 0; i < state.range(0); ++i)
      run->event(i & 1 ? a : b, op, i & 1 ? "mm" : "dma", uint64_t(i), 1);
    run->finish(true);
    w.close();
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  remove_trace(path);
}
BENCHMARK(BM_IngestCommitted)
    ->Arg(100'000)
    ->Arg(1'000'000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
