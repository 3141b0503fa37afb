// Speed of the TPU emulator (a benchmark, not a test): ResNet-50 at batch 8 on tpu-emu:v4 with
// numerics against the cpu backend's wall time in the same run, and timing-only against numerics.
// Targets (issue 10): numerics <= 1.3x cpu, timing-only >= 20x faster than numerics.
//
//   bench_tpu_speed [--model resnet50] [--batch 8] [--device tpu-emu:v4] [--layout nchw]
//                   [--repeat 5] [--out DIR] [--append]
// Runs are interleaved (cpu, tpu, tpu timing-only, ...) so that load from other processes hits all
// three alike; medians are reported. Writes DIR/tpu.json and DIR/tpu.md (DIR defaults to
// benchmarks/results in the source tree) with a description of the machine; --append adds this
// configuration (e.g. another OMP_NUM_THREADS) to the runs already in DIR/tpu.json.
#include <fmt/format.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "frontend/api/compile.h"
#include "frontend/api/zoo.h"

namespace {

using mimic::CompileOptions;
using mimic::Device;
using mimic::Executable;

struct Args {
  std::string model = "resnet50", device = "tpu-emu:v4", layout = "nchw", out = MIMIC_BENCH_RESULTS;
  int64_t batch = 8, repeat = 5;
  bool append = false;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--append") {
      a.append = true;
      --i;
      continue;
    }
    if (i + 1 >= argc) throw std::runtime_error("missing value for " + k);
    std::string v = argv[i + 1];
    if (k == "--model")
      a.model = v;
    else if (k == "--device")
      a.device = v;
    else if (k == "--layout")
      a.layout = v;
    else if (k == "--out")
      a.out = v;
    else if (k == "--batch")
      a.batch = std::stoll(v);
    else if (k == "--repeat")
      a.repeat = std::stoll(v);
    else
      throw std::runtime_error("unknown argument " + k);
  }
  return a;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::string read_first(const char* path, const std::string& key) {
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key, 0) == 0) {
      std::string v = line.substr(line.find(':') + 1);
      return v.substr(std::min(v.size(), v.find_first_not_of(" \t")));
    }
  return "?";
}

nlohmann::json machine() {
  utsname u{};
  uname(&u);
  double load[3] = {0, 0, 0};
  getloadavg(load, 3);
  double mem_kb = std::atof(read_first("/proc/meminfo", "MemTotal").c_str());
  // The same fields as benchmarks/machine.py, plus the load when the run started.
  return {{"cpu", read_first("/proc/cpuinfo", "model name")},
          {"cores", std::thread::hardware_concurrency()},
          {"memory_gib", std::round(mem_kb / (1 << 20) * 10) / 10},
          {"os", std::string(u.sysname) + " " + u.release},
          {"compiler", std::string("g++ ") + __VERSION__},
#ifdef NDEBUG
          {"build", "release (NDEBUG)"},
#else
          {"build", "debug"},
#endif
          {"omp_num_threads",
           std::getenv("OMP_NUM_THREADS") ? std::getenv("OMP_NUM_THREADS") : "unset (all cores)"},
          {"load_average_at_start", {load[0], load[1], load[2]}}};
}

std::string markdown(const nlohmann::json& all) {
  std::ostringstream md;
  md << "# tpu-emu speed\n\nTargets (issue 10): numerics <= 1.3x the cpu backend's wall time in "
        "the same "
        "run; timing-only >= 20x faster than with numerics. Runs are interleaved (cpu, emulator, "
        "emulator timing-only, ...) after one warm-up; medians. The machine is shared with other "
        "work: compare the ratios, which interleaving keeps fair, not absolute times.\n";
  for (const auto& r : all["runs"]) {
    const auto& m = r["machine"];
    std::string dev = r["device"];
    double cpu_s = r["cpu_wall_seconds"]["median"],
           tpu_s = r["tpu_numerics_wall_seconds"]["median"];
    double timing_s = r["tpu_timing_only_wall_seconds"]["median"];
    md << fmt::format("\n## {} batch {} ({}) on `{}`, OMP_NUM_THREADS {}\n\n",
                      r["model"].get<std::string>(), r["batch"].get<int64_t>(),
                      r["layout"].get<std::string>(), dev, m["omp_num_threads"].get<std::string>())
       << "| run | wall time | ratio | target |\n|---|---|---|---|\n"
       << fmt::format("| cpu backend | {:.3f} s | | |\n", cpu_s)
       << fmt::format("| {} with numerics | {:.3f} s | {:.2f}x cpu | <= 1.3x |\n", dev, tpu_s,
                      tpu_s / cpu_s)
       << fmt::format("| {} timing only | {:.4f} s | {:.0f}x faster than numerics | >= 20x |\n\n",
                      dev, timing_s, tpu_s / timing_s)
       << fmt::format(
              "Simulated: {} cycles = {:.3f} ms, {:.2f} TFLOP/s achieved, {} device "
              "instructions; the timing-only simulation took {:.4f} s of its run.\n\n",
              r["simulated"]["cycles"].get<uint64_t>(),
              r["simulated"]["device_seconds"].get<double>() * 1e3,
              r["simulated"]["achieved_tflops"].get<double>(),
              r["simulated"]["instructions"].get<double>(),
              r["tpu_timing_only_simulation_seconds"].get<double>())
       << fmt::format(
              "Machine: {}, {} cores, {} GiB memory, {}, {}, {} build; load average at "
              "start {:.2f} {:.2f} {:.2f}. All runs (s): cpu {}, numerics {}, timing-only "
              "{}.\n",
              m["cpu"].get<std::string>(), m["cores"].get<unsigned>(),
              m["memory_gib"].get<double>(), m["os"].get<std::string>(),
              m["compiler"].get<std::string>(), m["build"].get<std::string>(),
              m["load_average_at_start"][0].get<double>(),
              m["load_average_at_start"][1].get<double>(),
              m["load_average_at_start"][2].get<double>(), r["cpu_wall_seconds"]["all"].dump(),
              r["tpu_numerics_wall_seconds"]["all"].dump(),
              r["tpu_timing_only_wall_seconds"]["all"].dump());
  }
  return md.str();
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Args a = parse(argc, argv);
    nlohmann::json m = machine();
    mimic::zoo::ModelOptions mo;
    mo.layout = a.layout;
    mimic::ir::Graph g = mimic::zoo::build(a.model, mo);
    CompileOptions base;
    base.batch = a.batch;
    CompileOptions timing = base;
    timing.timing_only = true;
    Executable cpu = mimic::compile(g, Device("cpu"), base);
    Executable tpu = mimic::compile(g, Device(a.device), base);
    Executable tpu_timing = mimic::compile(g, Device(a.device), timing);
    auto inputs = mimic::random_inputs(cpu.graph(), 1);
    // Warm-up: loads the programs into the worker, faults in memory, prepares weights.
    cpu.run(inputs);
    mimic::RunOutput reference = tpu.run(inputs);
    tpu_timing.run(inputs);
    std::vector<double> t_cpu, t_tpu, t_timing, t_sim;
    for (int64_t r = 0; r < a.repeat; ++r) {
      t_cpu.push_back(cpu.run(inputs).report.wall_seconds);
      t_tpu.push_back(tpu.run(inputs).report.wall_seconds);
      auto out = tpu_timing.run(inputs);
      t_timing.push_back(out.report.wall_seconds);
      t_sim.push_back(out.report.metrics.at("simulation_seconds"));
      std::fprintf(stderr, "run %lld: cpu %.3f s, %s %.3f s, timing-only %.4f s\n",
                   static_cast<long long>(r), t_cpu.back(), a.device.c_str(), t_tpu.back(),
                   t_timing.back());
    }
    double cpu_s = median(t_cpu), tpu_s = median(t_tpu), timing_s = median(t_timing);
    const auto& rep = reference.report;
    nlohmann::json run{{"model", a.model},
                       {"batch", a.batch},
                       {"layout", a.layout},
                       {"device", a.device},
                       {"repeat", a.repeat},
                       {"machine", m},
                       {"cpu_wall_seconds", {{"median", cpu_s}, {"all", t_cpu}}},
                       {"tpu_numerics_wall_seconds", {{"median", tpu_s}, {"all", t_tpu}}},
                       {"tpu_timing_only_wall_seconds", {{"median", timing_s}, {"all", t_timing}}},
                       {"tpu_timing_only_simulation_seconds", median(t_sim)},
                       {"numerics_over_cpu", tpu_s / cpu_s},
                       {"numerics_over_timing_only", tpu_s / timing_s},
                       {"simulated",
                        {{"cycles", rep.cycles},
                         {"device_seconds", rep.device_seconds},
                         {"achieved_tflops", rep.achieved_flops_per_s * 1e-12},
                         {"instructions", rep.metrics.at("instructions")}}}};
    // One file for all configurations measured (--append adds this one to the existing file).
    std::string path = a.out + "/tpu.json";
    nlohmann::json all{
        {"benchmark", "tpu-emu speed"},
        {"targets",
         {{"numerics_over_cpu_at_most", 1.3}, {"numerics_over_timing_only_at_least", 20}}},
        {"runs", nlohmann::json::array()}};
    if (a.append) {
      std::ifstream in(path);
      if (in) all = nlohmann::json::parse(in);
    }
    all["runs"].push_back(run);
    std::ofstream(path) << all.dump(2) << "\n";
    std::string md = markdown(all);
    std::ofstream(a.out + "/tpu.md") << md;
    std::printf("%s", md.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_tpu_speed: %s\n", e.what());
    return 1;
  }
}
