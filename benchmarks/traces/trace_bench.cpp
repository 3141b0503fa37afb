// Trace benchmarks, results to benchmarks/results/traces.{json,md}:
//
// 1. Sustained ingest: N events (emulator-like: 8 tracks, 64 instruction names, 1000 ops) through
//    RunWriter into a fresh file, timed from the first event until close() returns, i.e. until
//    every row is committed. Also a second run appended to the same file.
//    Target: >= 1,000,000 events/s.
// 2. Tracing overhead on the work of `mimic run --model resnet50 --batch 8 --device cpu`: the
//    model is compiled once, then untraced and traced runs alternate (ABBA order, so drift of a
//    shared machine hits both sides alike). A traced run opens the trace file, records the run and
//    closes the file, as `mimic run --trace` does, with each step that tracing adds timed.
//    Overhead = median time spent tracing / median untraced run (target <= 5%); the whole-run
//    wall and CPU ratios are reported beside it. With --cli PATH, whole `mimic run` processes are
//    compared too.
//
// usage: trace_bench [--events N] [--ingest-repeats R] [--pairs K] [--cli-pairs K] [--cli PATH]
//                    [--model NAME] [--batch B] [--out DIR] [--tmp DIR] [--skip-overhead]
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "frontend/api/compile.h"
#include "frontend/api/trace.h"
#include "frontend/api/zoo.h"
#include "traces/trace_writer.h"

namespace {

using Clock = std::chrono::steady_clock;
using mimic::traces::RunMeta;
using mimic::traces::TraceWriter;
namespace sim = mimic::sim;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// CPU seconds of this process so far (all threads, user + system).
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Args {
  int64_t events = 2'000'000;
  int ingest_repeats = 3, pairs = 5, cli_pairs = 0, batch = 8;
  std::string model = "resnet50", out = "benchmarks/results", tmp, cli;
  bool skip_overhead = false;
};

struct IngestResult {
  double emit_s = 0, total_s = 0, cpu_s = 0;
  int64_t file_bytes = 0;
};

// One run of `n` events into `path`; the writer thread may still be busy when emission ends, so
// the total includes close().
IngestResult ingest_once(const std::string& path, int64_t n) {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (int i = 0; i < 64; ++i) v.push_back(fmt::format("{}.{}", i % 2 ? "matmul" : "dma_in", i));
    return v;
  }();
  IngestResult r;
  auto t0 = Clock::now();
  double c0 = cpu_seconds();
  TraceWriter w(path);
  auto run = w.begin_run(RunMeta{"ingest-bench", 1, "", "", "tpu-emu:bench", "", ""});
  auto dev = run->add_device(
      sim::DeviceDesc{"tpu-emu", "bench", 940'000'000, sim::TimeUnit::cycles, "{}"});
  std::vector<sim::TrackId> tracks;
  for (int t = 0; t < 8; ++t)
    tracks.push_back(run->add_track(dev, fmt::format("unit{}", t), "compute"));
  const int ops = 1000;
  for (int o = 0; o < ops; ++o)
    run->add_op(sim::OpDesc{fmt::format("node{}", o), "MatMul", "f32[8,8] -> f32[8,8]", "f32", 1024,
                            256, 256, "tpu-emu", false});
  uint64_t ts = 0;
  for (int64_t i = 0; i < n; ++i) {
    run->event(tracks[i & 7], (i / 2000) % ops, names[i & 63], ts, 7);
    ts += (i & 7) == 7 ? 8 : 0;
  }
  r.emit_s = seconds_since(t0);
  run->finish(true);
  w.close();
  r.total_s = seconds_since(t0);
  r.cpu_s = cpu_seconds() - c0;
  r.file_bytes = static_cast<int64_t>(std::filesystem::file_size(path));
  return r;
}

nlohmann::json bench_ingest(const Args& a) {
  std::vector<double> fresh, append, emit, per_cpu;
  int64_t bytes = 0;
  for (int rep = 0; rep < a.ingest_repeats; ++rep) {
    std::string path = fmt::format("{}/ingest-{}-{}.db", a.tmp, getpid(), rep);
    IngestResult first = ingest_once(path, a.events);
    IngestResult second = ingest_once(path, a.events);  // appended to a file holding a run
    fresh.push_back(a.events / first.total_s);
    append.push_back(a.events / second.total_s);
    emit.push_back(first.emit_s / a.events * 1e9);
    per_cpu.push_back(2.0 * a.events / (first.cpu_s + second.cpu_s));
    bytes = first.file_bytes;
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
    std::cerr << fmt::format(
        "ingest {}: fresh {:.0f} ev/s, append {:.0f} ev/s, emit {:.1f} ns/event, "
        "{:.0f} ev per CPU-second\n",
        rep, fresh.back(), append.back(), emit.back(), per_cpu.back());
  }
  return nlohmann::json{{"events_per_run", a.events},
                        {"repeats", a.ingest_repeats},
                        {"fresh_file_events_per_s", fresh},
                        {"fresh_file_events_per_s_median", median(fresh)},
                        {"append_second_run_events_per_s", append},
                        {"append_second_run_events_per_s_median", median(append)},
                        {"emit_ns_per_event_median", median(emit)},
                        {"events_per_cpu_s", per_cpu},
                        {"events_per_cpu_s_median", median(per_cpu)},
                        {"file_bytes_per_event", double(bytes) / double(a.events)},
                        {"target_events_per_s", 1'000'000},
                        {"meets_target", median(fresh) >= 1e6 && median(append) >= 1e6}};
}

// Forwards to the trace's sink and adds up the time spent in it: what tracing costs the run itself.
class TimingSink final : public sim::EventSink {
  template <class F>
  auto timed(F&& f) {
    auto t0 = Clock::now();
    auto r = f();
    seconds_ += seconds_since(t0);
    return r;
  }

 public:
  TimingSink(sim::EventSink& inner, double& seconds) : inner_(inner), seconds_(seconds) {}
  sim::DeviceId add_device(const sim::DeviceDesc& d) override {
    return timed([&] { return inner_.add_device(d); });
  }
  sim::TrackId add_track(sim::DeviceId d, const std::string& n, const std::string& k) override {
    return timed([&] { return inner_.add_track(d, n, k); });
  }
  sim::OpId add_op(const sim::OpDesc& o) override {
    return timed([&] { return inner_.add_op(o); });
  }
  void event(sim::TrackId t, sim::OpId o, std::string_view n, uint64_t ts, uint64_t dur) override {
    timed([&] { return (inner_.event(t, o, n, ts, dur), 0); });
  }
  void counter(sim::TrackId t, uint64_t ts, double v) override {
    timed([&] { return (inner_.counter(t, ts, v), 0); });
  }

 private:
  sim::EventSink& inner_;
  double& seconds_;
};

// What TraceScope does (a TraceWriter and a RunObserver giving each run a RunWriter), with every
// step that tracing adds to a run timed: open, begin_run, the sink calls, end_run, close.
struct TimedTrace final : mimic::RunObserver {
  explicit TimedTrace(const std::string& path) {
    auto t0 = Clock::now();
    writer = std::make_unique<TraceWriter>(path);
    seconds += seconds_since(t0);
  }
  sim::EventSink& begin_run(const mimic::RunInfo& info) override {
    auto t0 = Clock::now();
    run = writer->begin_run(RunMeta{info.model, info.batch, info.layout, info.precision,
                                    info.device, info.tag, info.config_json});
    sink = std::make_unique<TimingSink>(*run, seconds);
    seconds += seconds_since(t0);
    return *sink;
  }
  void end_run(bool ok, const std::string& error) override {
    auto t0 = Clock::now();
    run->finish(ok, error);
    seconds += seconds_since(t0);
  }
  void close() {
    auto t0 = Clock::now();
    writer->close();
    seconds += seconds_since(t0);
  }
  std::unique_ptr<TraceWriter> writer;
  std::unique_ptr<mimic::traces::RunWriter> run;
  std::unique_ptr<TimingSink> sink;
  double seconds = 0;
};

double spread(const std::vector<double>& v) {
  return *std::max_element(v.begin(), v.end()) / *std::min_element(v.begin(), v.end());
}

nlohmann::json bench_overhead(const Args& a) {
  mimic::CompileOptions o;
  o.batch = a.batch;
  mimic::Executable exe = mimic::compile(mimic::zoo::build(a.model), mimic::Device("cpu"), o);
  exe.run_info().model = a.model;
  auto inputs = mimic::random_inputs(exe.graph(), 1);
  std::string path = fmt::format("{}/overhead-{}.db", a.tmp, getpid());
  struct Sample {
    double wall = 0, cpu = 0, tracing = 0;
  };
  auto untraced = [&] {
    auto t0 = Clock::now();
    double c0 = cpu_seconds();
    exe.run(inputs);
    return Sample{seconds_since(t0), cpu_seconds() - c0, 0};
  };
  auto traced = [&] {
    auto t0 = Clock::now();
    double c0 = cpu_seconds();
    TimedTrace trace(path);
    mimic::push_run_observer(&trace);
    exe.run(inputs);
    mimic::pop_run_observer(&trace);
    trace.close();
    return Sample{seconds_since(t0), cpu_seconds() - c0, trace.seconds};
  };
  untraced();  // warm caches and thread pools
  std::vector<double> plain, with, plain_cpu, with_cpu, cost;
  for (int i = 0; i < a.pairs; ++i) {
    Sample p, t;
    if (i % 2 == 0) {
      p = untraced();
      t = traced();
    } else {
      t = traced();
      p = untraced();
    }
    plain.push_back(p.wall);
    with.push_back(t.wall);
    plain_cpu.push_back(p.cpu);
    with_cpu.push_back(t.cpu);
    cost.push_back(t.tracing);
    std::cerr << fmt::format(
        "overhead pair {}: untraced {:.3f} s, traced {:.3f} s (tracing {:.2f} ms)\n", i, p.wall,
        t.wall, t.tracing * 1e3);
  }
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  double fraction = median(cost) / median(plain);
  return nlohmann::json{
      {"workload", fmt::format("{} batch {} on cpu (in process)", a.model, a.batch)},
      {"events_per_run", exe.graph().num_nodes()},
      {"pairs", a.pairs},
      {"untraced_wall_s", plain},
      {"traced_wall_s", with},
      {"untraced_cpu_s", plain_cpu},
      {"traced_cpu_s", with_cpu},
      {"tracing_s", cost},
      {"untraced_wall_median_s", median(plain)},
      {"traced_wall_median_s", median(with)},
      {"untraced_wall_spread", spread(plain)},
      {"wall_ratio_of_medians", median(with) / median(plain)},
      {"cpu_ratio_of_medians", median(with_cpu) / median(plain_cpu)},
      {"tracing_median_s", median(cost)},
      {"tracing_fraction", fraction},
      {"target_fraction", 0.05},
      {"meets_target", fraction <= 0.05}};
}

double run_cli(const std::string& command) {
  auto t0 = Clock::now();
  int status = std::system((command + " >/dev/null 2>&1").c_str());
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("failed: " + command);
  return seconds_since(t0);
}

nlohmann::json bench_cli(const Args& a) {
  std::string base =
      fmt::format("{} run --model {} --batch {} --device cpu", a.cli, a.model, a.batch);
  std::string path = fmt::format("{}/cli-{}.db", a.tmp, getpid());
  std::vector<double> plain, with;
  for (int i = 0; i < a.cli_pairs; ++i) {
    if (i % 2 == 0) {
      plain.push_back(run_cli(base));
      with.push_back(run_cli(base + " --trace " + path));
    } else {
      with.push_back(run_cli(base + " --trace " + path));
      plain.push_back(run_cli(base));
    }
    std::cerr << fmt::format("cli pair {}: untraced {:.2f} s, traced {:.2f} s\n", i, plain.back(),
                             with.back());
  }
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  double ratio = median(with) / median(plain);
  return nlohmann::json{{"command", base + " [--trace FILE]"},
                        {"pairs", a.cli_pairs},
                        {"untraced_s", plain},
                        {"traced_s", with},
                        {"ratio_of_medians", ratio},
                        {"meets_target", ratio <= 1.05}};
}

std::string first_match(const std::string& file, const std::string& key) {
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key, 0) == 0) {
      auto colon = line.find(':');
      std::string v = colon == std::string::npos ? line : line.substr(colon + 1);
      return v.substr(v.find_first_not_of(" \t"));
    }
  return "unknown";
}

nlohmann::json machine(const Args& a) {
  utsname u{};
  uname(&u);
  std::ifstream load("/proc/loadavg");
  std::string loadavg;
  std::getline(load, loadavg);
  return nlohmann::json{{"cpu", first_match("/proc/cpuinfo", "model name")},
                        {"cores", std::thread::hardware_concurrency()},
                        {"memory", first_match("/proc/meminfo", "MemTotal")},
                        {"kernel", fmt::format("{} {}", u.sysname, u.release)},
                        {"compiler", fmt::format("{} {}", MIMIC_BENCH_COMPILER_ID, __VERSION__)},
                        {"flags", MIMIC_BENCH_FLAGS},
                        {"sqlite", mimic::traces::sqlite_version()},
                        {"trace_dir", a.tmp},
                        {"loadavg_at_start", loadavg}};
}

std::string markdown(const nlohmann::json& j) {
  const auto& m = j["machine"];
  std::string md =
      "# Trace benchmarks\n\nWritten by `trace_bench` (benchmarks/traces/trace_bench.cpp).\n\n## "
      "Machine\n\n";
  for (const auto& [k, v] : m.items())
    md += fmt::format("- {}: {}\n", k, v.is_string() ? v.get<std::string>() : v.dump());
  const auto& in = j["ingest"];
  md += fmt::format(
      "\n## Sustained ingest (target >= 1,000,000 events/s)\n\n"
      "{} events per run (8 tracks, 64 names, 1000 ops), emitted through RunWriter and timed until "
      "close() "
      "returned (all rows committed), {} repeats.\n\n"
      "| case | median events/s | all repeats |\n|---|---:|---|\n"
      "| fresh file | {:.0f} | {} |\n| second run appended to the same file | {:.0f} | {} |\n\n"
      "Caller side (EventSink::event + batching, wall time while the writer runs): {:.1f} "
      "ns/event. "
      "CPU cost, both threads together: {:.0f} events per CPU-second (median). File size: {:.1f} "
      "bytes/event. "
      "Target met: **{}**.\n",
      in["events_per_run"].get<int64_t>(), in["repeats"].get<int>(),
      in["fresh_file_events_per_s_median"].get<double>(), in["fresh_file_events_per_s"].dump(),
      in["append_second_run_events_per_s_median"].get<double>(),
      in["append_second_run_events_per_s"].dump(), in["emit_ns_per_event_median"].get<double>(),
      in["events_per_cpu_s_median"].get<double>(), in["file_bytes_per_event"].get<double>(),
      in["meets_target"].get<bool>() ? "yes" : "no");
  if (j.contains("overhead")) {
    const auto& o = j["overhead"];
    md += fmt::format(
        "\n## Tracing overhead (target <= 5%)\n\n{}, {} events per run: {} untraced/traced pairs "
        "in ABBA order. "
        "A traced run does what `mimic run --trace` does: opens the trace file, records the run, "
        "closes the file; "
        "every step tracing adds (open, begin/end run, each sink call, close) is timed inside the "
        "run.\n\n"
        "| | median |\n|---|---:|\n| untraced run (wall) | {:.3f} s |\n| traced run (wall) | "
        "{:.3f} s |\n"
        "| time spent tracing, per run | {:.2f} ms |\n| **tracing / untraced run** | **{:.3f}%** "
        "|\n"
        "| wall ratio of medians, traced / untraced | {:.4f} |\n| CPU-time ratio of medians | "
        "{:.4f} |\n\n"
        "Spread (max/min) of the untraced wall times: {:.2f}. The whole-run ratios carry the "
        "shared machine's "
        "run-to-run noise (see loadavg above), which is far larger than the cost of tracing; the "
        "timed tracing "
        "work is the measurement of the overhead. Target met: **{}**.\n",
        o["workload"].get<std::string>(), o["events_per_run"].get<int64_t>(), o["pairs"].get<int>(),
        o["untraced_wall_median_s"].get<double>(), o["traced_wall_median_s"].get<double>(),
        o["tracing_median_s"].get<double>() * 1e3, 100 * o["tracing_fraction"].get<double>(),
        o["wall_ratio_of_medians"].get<double>(), o["cpu_ratio_of_medians"].get<double>(),
        o["untraced_wall_spread"].get<double>(), o["meets_target"].get<bool>() ? "yes" : "no");
  }
  if (j.contains("cli")) {
    const auto& c = j["cli"];
    md += fmt::format(
        "\n### Whole `mimic run` processes\n\n`{}`, {} pairs: untraced {} s, traced {} s, ratio of "
        "medians **{:.4f}**.\n",
        c["command"].get<std::string>(), c["pairs"].get<int>(), c["untraced_s"].dump(),
        c["traced_s"].dump(), c["ratio_of_medians"].get<double>());
  }
  return md;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(k + " needs a value");
      return argv[++i];
    };
    if (k == "--events")
      a.events = std::stoll(next());
    else if (k == "--ingest-repeats")
      a.ingest_repeats = std::stoi(next());
    else if (k == "--pairs")
      a.pairs = std::stoi(next());
    else if (k == "--cli-pairs")
      a.cli_pairs = std::stoi(next());
    else if (k == "--cli")
      a.cli = next();
    else if (k == "--model")
      a.model = next();
    else if (k == "--batch")
      a.batch = std::stoi(next());
    else if (k == "--out")
      a.out = next();
    else if (k == "--tmp")
      a.tmp = next();
    else if (k == "--skip-overhead")
      a.skip_overhead = true;
    else
      throw std::invalid_argument("unknown argument " + k);
  }
  if (a.events <= 0 || a.ingest_repeats <= 0 || a.pairs <= 0)
    throw std::invalid_argument("counts must be positive");
  if (a.tmp.empty()) a.tmp = std::filesystem::temp_directory_path().string();
  if (a.cli_pairs > 0 && a.cli.empty())
    throw std::invalid_argument("--cli-pairs needs --cli PATH_TO_MIMIC");
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Args a = parse(argc, argv);
    nlohmann::json j{{"benchmark", "traces"}, {"machine", machine(a)}};
    j["ingest"] = bench_ingest(a);
    if (!a.skip_overhead) j["overhead"] = bench_overhead(a);
    if (a.cli_pairs > 0) j["cli"] = bench_cli(a);
    std::filesystem::create_directories(a.out);
    std::ofstream(a.out + "/traces.json") << j.dump(2) << "\n";
    std::ofstream(a.out + "/traces.md") << markdown(j);
    std::cout << markdown(j);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "trace_bench: error: " << e.what() << "\n";
    return 1;
  }
}
