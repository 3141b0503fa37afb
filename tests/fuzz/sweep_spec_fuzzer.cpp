// libFuzzer target: the sweep specification of `mimic sweep` as a user types it. Input lines are
// --batch, --device, --layout, --precision and --latency-budget, then any number of
// `--set field=v1,v2,...` lines. They go through the same parsers as the command, then the grid is
// enumerated, its id computed and the `mimic run` arguments of its points built. Every input must
// end in a grid or an InvalidArgument; anything else (crash, hang, runaway grid) is a bug.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "frontend/cli/sweep_spec.h"

namespace {

using namespace mimic::cli;

sweep::Spec make_spec(const std::vector<std::string>& lines) {
  auto line = [&](size_t i) { return i < lines.size() ? lines[i] : std::string(); };
  sweep::Spec s;
  s.model = "mlp";
  s.batches = sweep::parse_batches(line(0));
  s.devices = sweep::parse_list(line(1), "--device");
  s.layouts = sweep::parse_list(line(2), "--layout");
  s.precisions = sweep::parse_list(line(3), "--precision");
  if (!line(4).empty()) s.latency_budget_s = sweep::parse_duration(line(4));
  for (size_t i = 5; i < lines.size(); ++i) {
    size_t eq = lines[i].find('=');
    if (eq == std::string::npos || eq == 0) continue;
    s.overrides.emplace_back(
        lines[i].substr(0, eq),
        sweep::parse_list(lines[i].substr(eq + 1), "--set " + lines[i].substr(0, eq)));
  }
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  try {
    sweep::Spec spec = make_spec(lines);
    std::vector<sweep::Point> points = sweep::enumerate(spec);
    sweep::sweep_id(spec);
    for (size_t i = 0; i < points.size() && i < 16; ++i) {
      points[i].key();
      points[i].config();
      sweep::run_arguments(spec, points[i]);
    }
  } catch (const mimic::Error&) {
  }
  return 0;
}
