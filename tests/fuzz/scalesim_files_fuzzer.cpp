// libFuzzer target: arbitrary bytes through `mimic scalesim`'s file parsers (config, conv and GEMM
// topologies) and, for parsed layers small enough to run in a few milliseconds, the SCALE-Sim
// compatibility model on a small array (CALC and USER modes), up to a budget per file (a depthwise
// 'DP' layer of C channels parses into C layers: 62,487 small ones take 3 s under ASan,
// legitimately). Every input must end in results or a mimic::Error.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/error.h"
#include "frontend/cli/scalesim_files.h"

namespace ss = mimic::models::tpu::scalesim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    mimic::cli::scalesim::parse_config(text, "fuzz.cfg");
  } catch (const mimic::Error&) {
  }
  for (bool gemm : {false, true}) {
    try {
      ss::ArchConfig arch{
          4, 8, 1, 1, 1, 0, 10000000, 20000000, mimic::models::tpu::Dataflow::output_stationary, 0};
      double budget = 400000;  // MACs simulated per file
      for (const ss::Layer& l : mimic::cli::scalesim::parse_topology(text, "fuzz.csv", gemm)) {
        const ss::LayerGemm g = ss::layer_gemm(l);
        // In double: the fuzzer's sizes overflow int64 products (UB in the harness, not in mimic).
        double image = static_cast<double>(l.ifmap_h) * l.ifmap_w * l.channels;
        double macs = static_cast<double>(g.m) * g.n * g.k;
        if (image > 4096 || macs > 100000) continue;
        budget -= std::max(macs, 1000.0);  // each layer's fixed cost counts as 1,000 MACs
        if (budget < 0) break;
        // Every other layer in USER mode (the stalling read buffers), 3 words per cycle.
        arch.user_bandwidth = arch.user_bandwidth == 0 ? 3 : 0;
        ss::simulate_layer(arch, l);
      }
    } catch (const mimic::Error&) {
    }
  }
  return 0;
}
