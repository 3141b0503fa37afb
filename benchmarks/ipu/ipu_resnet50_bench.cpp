// ResNet-50, batch 8, on ipu-emu:gc200 with numerics, against the cpu backend in the same process:
// run wall time (targets: <= 1.5x cpu), planning time of all layers (target: < 2 s), and what
// the emulated device reports. Runs alternate between the two devices so that both see the same
// machine load; min and median are reported. Writes benchmarks/results/ipu.{json,md}.
//   ipu_resnet50_bench [runs] [results_dir]
#include <fmt/format.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <omp.h>
#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "frontend/api/compile.h"
#include "frontend/api/zoo.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct Stats {
  double min = 0, median = 0;
};

Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v.front(), v[v.size() / 2]};
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

double load_average() {
  double l = 0;
  std::ifstream("/proc/loadavg") >> l;
  return l;
}

double max_rel(const mimic::ir::HostTensor& a, const mimic::ir::HostTensor& b) {
  double worst = 0, scale = 1e-30;
  for (int64_t i = 0; i < a.numel(); ++i) {
    worst = std::max(worst, double(std::fabs(a.data<float>()[i] - b.data<float>()[i])));
    scale = std::max(scale, double(std::fabs(b.data<float>()[i])));
  }
  return worst / scale;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace mimic;
  int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  std::string dir = argc > 2 ? argv[2] : MIMIC_RESULTS_DIR;
  double load_start = load_average();
  ir::Graph g = zoo::build("resnet50");
  CompileOptions o;
  o.batch = 8;
  // Planning alone (compile_only: no worker, no weights shipped), best of three.
  std::vector<double> plan;
  for (int i = 0; i < 3; ++i) {
    CompileOptions co = o;
    co.compile_only = true;
    auto t = Clock::now();
    Executable e = compile(g, Device("ipu-emu:gc200"), co);
    plan.push_back(seconds_since(t));
  }
  auto t = Clock::now();
  Executable ipu = compile(g, Device("ipu-emu:gc200"), o);
  double compile_total = seconds_since(t);
  Executable cpu = compile(g, Device("cpu"), o);
  auto inputs = random_inputs(ipu.graph(), 1);
  RunOutput ipu_out = ipu.run(inputs), cpu_out = cpu.run(inputs);  // warm-up
  std::vector<double> ipu_wall, cpu_wall, ratio, sim, numerics;
  for (int i = 0; i < runs; ++i) {
    cpu_out = cpu.run(inputs);
    ipu_out = ipu.run(inputs);
    cpu_wall.push_back(cpu_out.report.wall_seconds);
    ipu_wall.push_back(ipu_out.report.wall_seconds);
    ratio.push_back(ipu_wall.back() / cpu_wall.back());
    sim.push_back(ipu_out.report.metrics.at("host_simulation_seconds"));
    numerics.push_back(ipu_out.report.metrics.at("host_numerics_seconds"));
  }
  Stats c = stats(cpu_wall), i = stats(ipu_wall), r = stats(ratio), p = stats(plan), s = stats(sim),
        n = stats(numerics);
  const auto& rep = ipu_out.report;
  double diff = max_rel(ipu_out.outputs[0], cpu_out.outputs[0]);
  struct utsname u;
  uname(&u);
  int threads = omp_get_max_threads();
  nlohmann::json run{
      {"threads", threads},
      {"runs", runs},
      {"load_average", {{"start", load_start}, {"end", load_average()}}},
      {"cpu_wall_seconds", {{"min", c.min}, {"median", c.median}}},
      {"ipu_wall_seconds", {{"min", i.min}, {"median", i.median}}},
      {"ipu_over_cpu", {{"min_over_min", i.min / c.min}, {"median_of_pairs", r.median}}},
      {"ipu_worker_seconds", {{"simulation_median", s.median}, {"numerics_median", n.median}}},
      {"plan_seconds", {{"min", p.min}, {"median", p.median}}},
      {"compile_seconds_with_load", compile_total},
      {"max_rel_difference_vs_cpu", diff},
      {"device",
       {{"cycles", rep.cycles},
        {"device_seconds", rep.device_seconds},
        {"achieved_tflops", rep.metrics.at("achieved_tflops")},
        {"peak_tflops", rep.metrics.at("peak_tflops")},
        {"samples_per_second", rep.metrics.at("samples_per_second")},
        {"supersteps", rep.metrics.at("supersteps")},
        {"tile_balance_max_over_mean", rep.metrics.at("tile_balance_max_over_mean")},
        {"max_tile_bytes", rep.metrics.at("max_tile_bytes")}}}};
  // One entry per thread count (OMP_NUM_THREADS), merged into the existing results file.
  nlohmann::json j;
  if (std::ifstream old{dir + "/ipu.json"}) {
    try {
      old >> j;
    } catch (const std::exception&) {
      j = nlohmann::json::object();
    }
  }
  j["benchmark"] =
      "resnet50 batch 8, ipu-emu:gc200 (float32) vs cpu; runs alternate between the devices";
  j["machine"] = {{"cpu", cpu_model()},
                  {"cores", std::thread::hardware_concurrency()},
                  {"kernel", u.release},
                  {"note", "shared by several engineers: see each run's load average"}};
  j["targets"] = {{"ipu_over_cpu_max", 1.5}, {"plan_seconds_max", 2.0}};
  j["runs"][fmt::format("{} thread{}", threads, threads == 1 ? "" : "s")] = run;
  std::ofstream(dir + "/ipu.json") << j.dump(2) << "\n";
  std::ofstream md(dir + "/ipu.md");
  md << "# ipu-emu benchmark: ResNet-50, batch 8, ipu-emu:gc200 (float32) vs cpu\n\n";
  md << fmt::format(
      "Machine: {}, {} cores, Linux {}, shared with other engineers' builds and tests (load "
      "averages below). Runs alternate cpu / ipu-emu after one warm-up each; `ipu-emu` wall time "
      "is "
      "the whole run: request to the device worker, SystemC simulation, numerics, reply.\n",
      cpu_model(), std::thread::hardware_concurrency(), u.release);
  for (const auto& [name, e] : j["runs"].items()) {
    md << fmt::format("\n## {} (OMP_NUM_THREADS), {} runs, load average {:.1f} -> {:.1f}\n\n", name,
                      e["runs"].get<int>(), e["load_average"]["start"].get<double>(),
                      e["load_average"]["end"].get<double>());
    md << "| measure | min | median | target |\n|---|---|---|---|\n";
    auto row = [&](const char* what, const nlohmann::json& v, const char* target) {
      md << fmt::format("| {} | {:.3f} | {:.3f} | {} |\n", what, v["min"].get<double>(),
                        v["median"].get<double>(), target);
    };
    row("cpu run wall (s)", e["cpu_wall_seconds"], "");
    row("ipu-emu run wall (s)", e["ipu_wall_seconds"], "");
    md << fmt::format(
        "| ipu-emu / cpu | {:.2f} (min / min) | {:.2f} (median of pairs) | <= 1.5 |\n",
        e["ipu_over_cpu"]["min_over_min"].get<double>(),
        e["ipu_over_cpu"]["median_of_pairs"].get<double>());
    md << fmt::format("| worker: SystemC simulation / numerics (s, median) | {:.4f} | {:.3f} | |\n",
                      e["ipu_worker_seconds"]["simulation_median"].get<double>(),
                      e["ipu_worker_seconds"]["numerics_median"].get<double>());
    row("planning all layers, compile_only (s)", e["plan_seconds"], "< 2");
    md << fmt::format("| compile incl. worker start and weight load (s) | {:.3f} | | |\n",
                      e["compile_seconds_with_load"].get<double>());
    const auto& d = e["device"];
    md << fmt::format(
        "\nEmulated device: {} cycles = {:.3f} ms at 1.33 GHz, {:.1f} of {:.1f} TFLOP/s, {:.0f} "
        "samples/s, "
        "{:.0f} supersteps, tile balance (max/mean busy) {:.3f}, fullest tile {:.0f} bytes; max "
        "difference "
        "vs cpu {:.2g} (relative to the output scale).\n",
        d["cycles"].get<uint64_t>(), d["device_seconds"].get<double>() * 1e3,
        d["achieved_tflops"].get<double>(), d["peak_tflops"].get<double>(),
        d["samples_per_second"].get<double>(), d["supersteps"].get<double>(),
        d["tile_balance_max_over_mean"].get<double>(), d["max_tile_bytes"].get<double>(),
        e["max_rel_difference_vs_cpu"].get<double>());
  }
  std::cout << run.dump(2) << "\n";
  return 0;
}
