// `mimic scalesim`'s SCALE-Sim v2 compatibility model and file formats. Reference numbers come
// from running SCALE-Sim v2 itself (scale-sim-v2 commit 22f88b17f1dd3160e18bff5df165035bf8146e83)
// on its bundled config and topologies: its own golden trace (alexnet_part, ws, 112283 cycles) and
// fifteen further runs (os/ws/is x alexnet_part, test.csv, test_mnk_input.csv, mixed.csv) kept in
// tests/data/scalesim/expected/ (see the README there). The closed forms are checked separately.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "base/error.h"
#include "frontend/cli/scalesim_files.h"
#include "models/tpu/scalesim_compat.h"

namespace {

using namespace mimic::models::tpu;
namespace ss = mimic::models::tpu::scalesim;
namespace files = mimic::cli::scalesim;

const std::string kData = std::string(MIMIC_SOURCE_DIR) + "/tests/data/scalesim/";

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ss::ArchConfig arch32(Dataflow d) {
  files::Config c = files::read_config(kData + "scale.cfg");
  c.arch.dataflow = d;
  return c.arch;
}

const ss::Layer kAlexnetConv1{"Conv1", 224, 224, 11, 11, 3, 96, 4, 4};

// SCALE-Sim's own CI golden trace: alexnet_part.csv on configs/scale.cfg with Dataflow ws.
TEST(ScaleSim, GoldenTraceAlexnetWs) {
  const ss::LayerReport r = ss::simulate_layer(arch32(Dataflow::weight_stationary), kAlexnetConv1);
  EXPECT_EQ(r.total_cycles, 112283);
  EXPECT_EQ(r.stall_cycles, 0);
  EXPECT_EQ(r.dram_ifmap_reads, 1805023);
  EXPECT_EQ(r.dram_ofmap_writes, 3484831);
  EXPECT_EQ(files::compute_report({r}), slurp(kData + "golden_trace/COMPUTE_REPORT.csv"));
  EXPECT_EQ(files::bandwidth_report({r}), slurp(kData + "golden_trace/BANDWIDTH_REPORT.csv"));
  EXPECT_EQ(files::detailed_access_report({r}),
            slurp(kData + "golden_trace/DETAILED_ACCESS_REPORT.csv"));
}

// Closed forms (header of scalesim_compat.h) against the numbers SCALE-Sim printed for
// alexnet_part Conv1 (M = 55*55 = 3025 pixels, K = 11*11*3 = 363, N = 96) on 32x32.
TEST(ScaleSim, ClosedFormsMatchSCALESimAlexnet) {
  const int64_t r = 32, c = 32, m = 3025, k = 363, n = 96;
  struct Case {
    Dataflow d;
    int64_t sr, sc, t, fold_rows, scalesim_total, scalesim_ifmap_reads, scalesim_ofmap_writes;
  };
  const Case cases[] = {
      {Dataflow::output_stationary, m, n, k, k + r + c - 2, 121124, 3294225, 308640},
      {Dataflow::weight_stationary, k, n, m, 2 * r + c + m - 2, 112283, 3294225, 3484800},
      {Dataflow::input_stationary, k, m, n, 2 * r + c + n - 2, 216599, 1098075, 3484800},
  };
  for (const Case& x : cases) {
    const int64_t row_folds = (x.sr + r - 1) / r, col_folds = (x.sc + c - 1) / c;
    const int64_t total = row_folds * col_folds * x.fold_rows - 1;  // SCALE-Sim's off-by-one
    EXPECT_EQ(total, x.scalesim_total) << dataflow_name(x.d);
    const ss::LayerReport rep = ss::simulate_layer(arch32(x.d), kAlexnetConv1);
    EXPECT_EQ(rep.total_cycles, total) << dataflow_name(x.d);
    EXPECT_EQ(rep.sram_ifmap_reads, x.scalesim_ifmap_reads) << dataflow_name(x.d);
    EXPECT_EQ(rep.sram_ofmap_writes, x.scalesim_ofmap_writes) << dataflow_name(x.d);
    // Overall util: MACs over cycles x PEs.
    EXPECT_DOUBLE_EQ(rep.overall_util_pct, 100.0 * m * k * n / (double(total) * r * c))
        << dataflow_name(x.d);
  }
  // os: every fold also "writes" R + C phantom ofmap words (95 x 3 folds); SCALE-Sim's DRAM
  // writes (290431) show that they are not real.
  EXPECT_EQ(308640, m * n + 95 * 3 * (r + c));
  // os and ws stream the ifmap once per column fold (3); is reads its stationary ifmap once.
  EXPECT_EQ(3294225, 3 * m * k);
  EXPECT_EQ(1098075, k * m);
}

struct RefCase {
  std::string topology, run, config;
  Dataflow dataflow;
  bool gemm;
};

// Every report byte for byte against SCALE-Sim's own files for the same inputs.
TEST(ScaleSim, ReportsMatchSCALESimRunsByteForByte) {
  std::vector<RefCase> cases;
  const std::pair<const char*, Dataflow> dfs[] = {{"os", Dataflow::output_stationary},
                                                  {"ws", Dataflow::weight_stationary},
                                                  {"is", Dataflow::input_stationary}};
  for (const auto& [name, d] : dfs) {
    const std::string df = name;
    cases.push_back({"alexnet_part", "r32_" + df, "scale.cfg", d, false});
    cases.push_back({"test_mnk_input", "r32_" + df, "scale.cfg", d, true});
    cases.push_back({"test", "t816_" + df, "t816_" + df + ".cfg", d, false});
    cases.push_back({"test_mnk_input", "t816_" + df, "t816_" + df + ".cfg", d, true});
    cases.push_back({"mixed", "t168_" + df, "t168_" + df + ".cfg", d, false});
    // USER interface-bandwidth mode: the stalling read buffers, 4 words per cycle.
    cases.push_back({"mixed", "u816_" + df, "u816_" + df + ".cfg", d, false});
    cases.push_back({"test_mnk_input", "u816_" + df, "u816_" + df + ".cfg", d, true});
  }
  for (const RefCase& c : cases) {
    files::Config cfg = files::read_config(kData + c.config);
    cfg.arch.dataflow = c.dataflow;
    std::vector<ss::LayerReport> reps;
    for (const ss::Layer& l : files::read_topology(kData + c.topology + ".csv", c.gemm))
      reps.push_back(ss::simulate_layer(cfg.arch, l));
    const std::string dir = kData + "expected/" + c.topology + "__" + c.run + "/";
    const std::string what = c.topology + " " + c.run;
    EXPECT_EQ(files::compute_report(reps), slurp(dir + "COMPUTE_REPORT.csv")) << what;
    EXPECT_EQ(files::bandwidth_report(reps), slurp(dir + "BANDWIDTH_REPORT.csv")) << what;
    EXPECT_EQ(files::detailed_access_report(reps), slurp(dir + "DETAILED_ACCESS_REPORT.csv"))
        << what;
  }
}

// Spot values of the runs above, so that a reader sees the numbers: GEMM M=128 N=64 K=256.
TEST(ScaleSim, GemmTotalsFromSCALESim) {
  const ss::Layer gemm{"Test 1", 128, 256, 1, 256, 1, 64, 1, 1};
  EXPECT_EQ(ss::simulate_layer(arch32(Dataflow::output_stationary), gemm).total_cycles, 2543);
  EXPECT_EQ(ss::simulate_layer(arch32(Dataflow::weight_stationary), gemm).total_cycles, 3551);
  EXPECT_EQ(ss::simulate_layer(arch32(Dataflow::input_stationary), gemm).total_cycles, 5055);
  // os: 4 x 2 folds of (K + R + C - 2) rows, minus one.
  EXPECT_EQ(2543, 8 * (256 + 62) - 1);
}

// The same GEMM in USER mode on an 8x16 array with 1-2 kB SRAMs and 4 words per cycle: SCALE-Sim's
// stalling read buffers refetch what the small active halves dropped (expected/*__u816_*).
TEST(ScaleSim, UserModeStallsFromSCALESim) {
  const ss::Layer gemm{"Test 1", 128, 256, 1, 256, 1, 64, 1, 1};
  const std::pair<const char*, std::pair<int64_t, int64_t>> runs[] = {
      {"os", {262156, 244365}}, {"ws", {115929, 95706}}, {"is", {826265, 802202}}};
  for (const auto& [df, expected] : runs) {
    const files::Config cfg = files::read_config(kData + "u816_" + df + ".cfg");
    ASSERT_EQ(cfg.arch.user_bandwidth, 4);
    const ss::LayerReport r = ss::simulate_layer(cfg.arch, gemm);
    EXPECT_EQ(r.total_cycles, expected.first) << df;
    EXPECT_EQ(r.stall_cycles, expected.second) << df;
    // Without the stalls the run is as long as in CALC mode with the same array.
    ss::ArchConfig calc = cfg.arch;
    calc.user_bandwidth = 0;
    EXPECT_EQ(r.total_cycles - r.stall_cycles, ss::simulate_layer(calc, gemm).total_cycles) << df;
  }
}

TEST(ScaleSim, PythonSumIsNeumaierCompensated) {
  // Plain left-to-right addition gives 0.0 here; CPython >= 3.12 gives 2.0.
  EXPECT_EQ(ss::python_sum({1e100, 1.0, -1e100, 1.0}), 2.0);
  EXPECT_EQ(ss::python_sum({0.1, 0.2, 0.3}), 0.6);
}

TEST(ScaleSimFiles, PythonFloatRepr) {
  EXPECT_EQ(files::python_float(94.53125), "94.53125");
  EXPECT_EQ(files::python_float(33.0), "33.0");
  EXPECT_EQ(files::python_float(-3243.0), "-3243.0");
  EXPECT_EQ(files::python_float(0.1), "0.1");
  EXPECT_EQ(files::python_float(1e-05), "1e-05");
  EXPECT_EQ(files::python_float(0.0001), "0.0001");
  EXPECT_EQ(files::python_float(1e16), "1e+16");
  EXPECT_EQ(files::python_float(1234567890123456.0), "1234567890123456.0");
  EXPECT_EQ(files::python_float(100.0), "100.0");
  EXPECT_EQ(files::python_float(0.0), "0.0");
  EXPECT_EQ(files::python_float(1.5e-7), "1.5e-07");
}

TEST(ScaleSimFiles, TopologyForms) {
  // Trailing comma optional; a 9th field is the column stride; "DP" layers split per channel.
  const auto l = files::parse_topology(
      "h\nA, 9, 9, 3, 3, 2, 4, 2, 1\n\nB,8,8,2,2,1,1,1,\nxDPy,5,5,3,3,3,1,1,\n", "t.csv", false);
  ASSERT_EQ(l.size(), 5u);
  EXPECT_EQ(l[0].stride_h, 2);
  EXPECT_EQ(l[0].stride_w, 1);
  EXPECT_EQ(l[1].stride_w, 1);
  EXPECT_EQ(l[2].name, "xDPyChannel_0");
  EXPECT_EQ(l[4].name, "xDPyChannel_2");
  EXPECT_EQ(l[4].channels, 1);
  const auto g = files::parse_topology("Layer, M, N, K,\nfc, 10, 20, 30,", "g.csv", true);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(ss::layer_gemm(g[0]).m, 10);
  EXPECT_EQ(ss::layer_gemm(g[0]).n, 20);
  EXPECT_EQ(ss::layer_gemm(g[0]).k, 30);
}

void expect_error(const std::function<void()>& f, mimic::ErrorKind kind, const std::string& text) {
  try {
    f();
    ADD_FAILURE() << "no error; expected: " << text;
  } catch (const mimic::Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
}

TEST(ScaleSimFiles, BadTopologiesNameFileLineAndField) {
  using mimic::ErrorKind;
  const auto conv = [](const std::string& text) {
    return [text] { files::parse_topology(text, "t.csv", false); };
  };
  expect_error(conv("h\nA, 9, 9, x3, 3, 2, 4, 2,\n"), ErrorKind::io,
               "t.csv:2: Filter Height: 'x3' is not an integer");
  expect_error(conv("h\n\nA, 9, 9, 3,\n"), ErrorKind::io, "t.csv:3: expected 8 or 9 fields");
  expect_error(conv("h\nA, 9, 9, 3, 3, 2, 0, 2,\n"), ErrorKind::invalid_argument,
               "t.csv:2: Num Filter must be >= 1, got 0");
  expect_error(conv("h\nA, 2, 9, 3, 3, 2, 4, 2,\n"), ErrorKind::invalid_argument,
               "t.csv:2: layer 'A': filter 3x3 is larger than the ifmap 2x9");
  expect_error(conv("Layer name, IFMAP Height,\n"), ErrorKind::io, "t.csv: no layers");
  expect_error([] { files::parse_topology("h\nfc, 1, 2\n", "g.csv", true); }, ErrorKind::io,
               "g.csv:2: expected 4 fields (Layer, M, N, K), got 3");
  expect_error([] { files::read_topology(kData + "missing.csv", false); }, ErrorKind::io,
               "missing.csv");
}

TEST(ScaleSimFiles, BadConfigsNameFileLineAndField) {
  using mimic::ErrorKind;
  std::string good = slurp(kData + "scale.cfg");
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    s.replace(s.find(from), from.size(), to);
    return [s] { files::parse_config(s, "s.cfg"); };
  };
  expect_error(with("ArrayHeight:    32", "ArrayHeight: 3x2"), ErrorKind::io,
               "s.cfg:5: [architecture_presets] ArrayHeight: '3x2' is not an integer");
  expect_error(with("ArrayWidth:     32", "ArrayWidth: 0"), ErrorKind::invalid_argument,
               "s.cfg:6: [architecture_presets] ArrayWidth must be >= 1, got 0");
  expect_error(with("Dataflow : os", "Dataflow : rs"), ErrorKind::invalid_argument,
               "s.cfg:14: [architecture_presets] Dataflow: 'rs' is not os, ws or is");
  expect_error(with("IfmapOffset:    0", "Ifmap_Offset: 0"), ErrorKind::io,
               "s.cfg: [architecture_presets] has no IfmapOffset");
  expect_error(with("InterfaceBandwidth: CALC", "InterfaceBandwidth: FAST"),
               ErrorKind::invalid_argument,
               "s.cfg:18: [run_presets] InterfaceBandwidth: 'FAST' is not USER or CALC");
  expect_error(with("[general]", "general"), ErrorKind::io,
               "s.cfg:1: expected 'key = value' or '[section]'");
  std::string user_cfg = good;
  user_cfg.replace(user_cfg.find("CALC"), 4, "USER");
  const auto user_with = [&](const std::string& bandwidth) {
    std::string s = user_cfg;
    s.replace(s.find("Bandwidth : 10"), 14, "Bandwidth : " + bandwidth);
    return s;
  };
  const files::Config user = files::parse_config(user_with("10, 20"), "s.cfg");
  EXPECT_TRUE(user.user_bandwidth);
  EXPECT_EQ(user.bandwidths, (std::vector<int64_t>{10, 20}));
  EXPECT_EQ(user.arch.user_bandwidth, 10);  // SCALE-Sim gives every buffer the first value
  expect_error([&] { files::parse_config(user_with("0"), "s.cfg"); }, ErrorKind::io,
               "s.cfg:13: [architecture_presets] Bandwidth: '0' is not a positive integer");
  expect_error([&] { files::parse_config(user_with(""), "s.cfg"); }, ErrorKind::io,
               "s.cfg:13: [architecture_presets] Bandwidth: '' is not a positive integer");
}

TEST(ScaleSim, ZeroSizedAndHugeInputsAreRefused) {
  ss::ArchConfig a = arch32(Dataflow::output_stationary);
  a.ofmap_sram_kb = 0;
  expect_error([&] { ss::simulate_layer(a, kAlexnetConv1); }, mimic::ErrorKind::invalid_argument,
               "OfmapSramSzkB must be >= 1, got 0");
  const ss::Layer huge{"big", 100000000000, 100000000000, 1, 1, 1000000, 1, 1, 1};
  expect_error([&] { ss::simulate_layer(arch32(Dataflow::weight_stationary), huge); },
               mimic::ErrorKind::invalid_argument,
               "layer 'big': ifmap or filter has more than 2^26 words");
  // USER mode stores its prefetch order: 63,984,004 pixels x 9 window words is over 2^28.
  ss::ArchConfig user = arch32(Dataflow::output_stationary);
  user.user_bandwidth = 10;
  const ss::Layer wide{"wide", 8000, 8000, 3, 3, 1, 1, 1, 1};
  expect_error([&] { ss::simulate_layer(user, wide); }, mimic::ErrorKind::invalid_argument,
               "layer 'wide': the USER-mode ifmap read buffer would hold more than 2^28 words");
  // A tiny layer on a 2^20-wide array: its filter prefetch order is mostly padding.
  user.cols = int64_t{1} << 20;
  const ss::Layer tiny{"tiny", 64, 64, 64, 64, 2, 1, 1, 1};  // K = 8192: 2^33 entries
  expect_error([&] { ss::simulate_layer(user, tiny); }, mimic::ErrorKind::invalid_argument,
               "layer 'tiny': the USER-mode filter prefetch order, padded to the array's width, "
               "has more than 2^32 entries");
}

}  // namespace
