// SCALE-Sim v2's input and output files, for `mimic scalesim`: the config file (Python
// configparser syntax), the conv and GEMM (M, N, K) topology CSVs, and the three CSV reports with
// SCALE-Sim's headers and Python's number formatting. Parsing is separate from the command so
// that it can be unit tested and fuzzed.
//
// Errors are mimic::Error with a one-line message naming the file, line and field:
// ErrorKind::io for unreadable or malformed files, invalid_argument for well-formed values that
// SCALE-Sim cannot run (a dataflow other than os/ws/is, a zero array).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "models/tpu/scalesim_compat.h"

namespace mimic::cli::scalesim {

namespace ss = mimic::models::tpu::scalesim;

struct Config {
  std::string run_name;
  ss::ArchConfig arch;
  bool user_bandwidth = false;      // [run_presets] InterfaceBandwidth = USER
  std::vector<int64_t> bandwidths;  // [architecture_presets] Bandwidth (read in USER mode only;
                                    // arch.user_bandwidth is the first)
};

// `path` names the file in messages. Throws mimic::Error.
Config parse_config(const std::string& text, const std::string& path);
Config read_config(const std::string& path);

// Conv rows: name, IFMAP H, IFMAP W, Filter H, Filter W, Channels, Num Filter, Stride[, Stride W].
// GEMM rows (gemm = true): name, M, N, K. The first line is a header; blank lines are skipped; a
// trailing comma is optional. A conv layer whose name contains "DP" is depthwise: one layer per
// channel, named <name>Channel_<i>, as SCALE-Sim splits it.
std::vector<ss::Layer> parse_topology(const std::string& text, const std::string& path, bool gemm);
std::vector<ss::Layer> read_topology(const std::string& path, bool gemm);

// Python's repr() of a float: shortest round-trip digits, exponent form outside [1e-4, 1e16).
std::string python_float(double x);

// The report files' contents, one row per layer, exactly as SCALE-Sim writes them.
std::string compute_report(const std::vector<ss::LayerReport>& layers);
std::string bandwidth_report(const std::vector<ss::LayerReport>& layers);
std::string detailed_access_report(const std::vector<ss::LayerReport>& layers);

}  // namespace mimic::cli::scalesim
