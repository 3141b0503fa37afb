// `mimic scalesim -c scale.cfg -t topology.csv [-i conv|gemm] [-p out_dir] [--native]`: a drop-in
// for SCALE-Sim v2's scale.py. Writes COMPUTE_REPORT.csv, BANDWIDTH_REPORT.csv and
// DETAILED_ACCESS_REPORT.csv into out_dir/<run_name>/ with SCALE-Sim's numbers (CALC or USER mode;
// see models/tpu/scalesim_compat.h and backends/tpu_emu/README.md "SCALE-Sim"). --native adds
// NATIVE_REPORT.csv: the same layers through mimic's own fold model (models/tpu/dataflow.h).
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "frontend/cli/cli_common.h"
#include "frontend/cli/scalesim_files.h"
#include "models/tpu/dataflow.h"

namespace mimic::cli {
namespace {

namespace ss = models::tpu::scalesim;

void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
  if (!out) throw IoError("cannot write '" + p.string() + "'");
}

std::string native_report(const scalesim::Config& cfg, const std::vector<ss::Layer>& layers,
                          const std::vector<ss::LayerReport>& reps) {
  std::string out =
      "LayerID, Layer, SCALE-Sim Total Cycles, Native Cycles, Native Cycles Double-Buffered,\n";
  for (size_t i = 0; i < layers.size(); ++i) {
    const ss::LayerGemm g = ss::layer_gemm(layers[i]);
    const models::tpu::GemmDims d{g.m, g.k, g.n};
    const auto& a = cfg.arch;
    out += fmt::format("{}, {}, {}, {}, {},\n", i, layers[i].name, reps[i].total_cycles,
                       models::tpu::gemm_cycles(a.dataflow, d, a.rows, a.cols, false, 1),
                       models::tpu::gemm_cycles(a.dataflow, d, a.rows, a.cols, true, 1));
  }
  return out;
}

int run_scalesim(const std::string& config, const std::string& topology, const std::string& input,
                 const std::string& out_dir, bool native) {
  if (input != "conv" && input != "gemm")
    throw InvalidArgument("scalesim: -i '" + input + "' is not conv or gemm");
  const scalesim::Config cfg = scalesim::read_config(config);
  const std::vector<ss::Layer> layers = scalesim::read_topology(topology, input == "gemm");
  std::vector<ss::LayerReport> reps;
  for (const ss::Layer& l : layers) reps.push_back(ss::simulate_layer(cfg.arch, l));
  const std::filesystem::path dir = std::filesystem::path(out_dir) / cfg.run_name;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw IoError("cannot create '" + dir.string() + "': " + ec.message());
  write_text(dir / "COMPUTE_REPORT.csv", scalesim::compute_report(reps));
  write_text(dir / "BANDWIDTH_REPORT.csv", scalesim::bandwidth_report(reps));
  write_text(dir / "DETAILED_ACCESS_REPORT.csv", scalesim::detailed_access_report(reps));
  if (native) write_text(dir / "NATIVE_REPORT.csv", native_report(cfg, layers, reps));
  const auto& a = cfg.arch;
  std::cout << fmt::format("{}x{} array, {}, {} layers ({})\n", a.rows, a.cols,
                           models::tpu::dataflow_name(a.dataflow), layers.size(), topology);
  for (size_t i = 0; i < layers.size(); ++i)
    std::cout << fmt::format(
        "  layer {} {}: {} cycles, {} stall, util {:.2f}%, mapping eff {:.2f}%\n", i,
        layers[i].name, reps[i].total_cycles, reps[i].stall_cycles, reps[i].overall_util_pct,
        reps[i].mapping_eff_pct);
  std::cout << "wrote " << dir.string() << "/{COMPUTE,BANDWIDTH,DETAILED_ACCESS"
            << (native ? ",NATIVE" : "") << "}_REPORT.csv\n";
  return 0;
}

}  // namespace

Command add_scalesim_command(CLI::App& app) {
  struct Args {
    std::string config, topology, input = "conv", out_dir = "test_runs";
    bool native = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "scalesim",
      "SCALE-Sim v2 drop-in: its reports (CALC or USER mode) for a config and a topology");
  cmd->add_option("-c", a->config, "SCALE-Sim config file (.cfg)")->required();
  cmd->add_option("-t", a->topology, "Topology CSV (conv rows, or M,N,K rows with -i gemm)")
      ->required();
  cmd->add_option("-i", a->input, "Topology type: conv or gemm (default conv)");
  cmd->add_option("-p", a->out_dir,
                  "Log directory; reports go to <dir>/<run_name>/ (default test_runs)");
  cmd->add_flag(
      "--native", a->native,
      "Also write NATIVE_REPORT.csv: mimic's own fold model's cycles for the same layers");
  return {cmd,
          [a]() { return run_scalesim(a->config, a->topology, a->input, a->out_dir, a->native); }};
}

}  // namespace mimic::cli
