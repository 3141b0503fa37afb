// libFuzzer target: chip specifications as users give them: a JSON spec file (`tpu-emu:my.json`,
// `ipu-emu:my.json`) and `--set key=value` overrides. The input's first byte picks the chip (even:
// TPU, odd: IPU); the text after it is a JSON document, then optionally a line "--" followed by
// key=value lines. Each spec is parsed, validated and round-tripped through its JSON writer, and
// the overrides are applied to a preset and, for valid results, used to lower a small model
// (timing only, in-process). Every input must end in a spec or an error naming the field.
#include <cstddef>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>

#include "backends/registry.h"
#include "base/error.h"
#include "frontend/ir/graph.h"
#include "frontend/ir/shape_inference.h"
#include "models/ipu/ipu_spec.h"
#include "models/tpu/tpu_spec.h"

namespace {

using namespace mimic;

struct Parsed {
  std::string json;
  std::map<std::string, std::string> overrides;
};

Parsed split(const std::string& text) {
  Parsed p;
  size_t sep = text.find("\n--\n");
  p.json = text.substr(0, sep);
  if (sep == std::string::npos) return p;
  std::istringstream lines(text.substr(sep + 4));
  std::string line;
  while (std::getline(lines, line)) {
    size_t eq = line.find('=');
    if (eq != std::string::npos) p.overrides[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return p;
}

// x[4, 64] @ w[64, 32] + relu: enough to tile on any valid chip.
ir::Graph small_model() {
  ir::Graph g;
  auto x = g.add_input("x", ir::DType::f32, ir::Shape({4, 64}));
  auto w = g.add_constant("w", ir::HostTensor(ir::DType::f32, ir::Shape({64, 32})));
  auto y = g.add_node(ir::OpType::MatMul, "fc", {x, w})[0];
  g.add_output(g.add_node(ir::OpType::Relu, "relu", {y})[0]);
  ir::infer_shapes(g);
  return g;
}

void lower(const char* backend, const char* preset,
           const std::map<std::string, std::string>& overrides) {
  static const ir::Graph g = small_model();
  backends::CompileOptions options;
  options.timing_only = options.compile_only = true;
  options.overrides = overrides;
  try {
    backends::compile_with_fallback(*backends::Registry::global().find(backend), g, preset,
                                    options);
  } catch (const Error&) {
  }
}

void tpu(const Parsed& p) {
  namespace tpu = models::tpu;
  std::string canonical;
  try {
    canonical = tpu::spec_to_json(tpu::spec_from_json_text(p.json, "fuzz.json"));
  } catch (const Error&) {
  }
  // A valid spec's canonical JSON must parse again (an exception here is a finding).
  if (!canonical.empty()) tpu::spec_from_json_text(canonical, "round trip");
  try {
    tpu::TpuSpec spec = tpu::preset("v4");
    tpu::apply_overrides(spec, p.overrides);
  } catch (const Error&) {
    return;
  }
  lower("tpu-emu", "v4", p.overrides);
}

void ipu(const Parsed& p) {
  namespace ipu = models::ipu;
  std::string canonical;
  try {
    canonical = ipu::to_json(ipu::specs_from_json(p.json, "fuzz.json"));
  } catch (const ipu::SpecError&) {
  }
  if (!canonical.empty()) ipu::specs_from_json(canonical, "round trip");
  try {
    ipu::IpuSpec specs = ipu::preset("gc200");
    ipu::apply_overrides(specs, p.overrides);
  } catch (const ipu::SpecError&) {
    return;
  }
  lower("ipu-emu", "gc200", p.overrides);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  Parsed p = split(std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
  if (data[0] % 2 == 0)
    tpu(p);
  else
    ipu(p);
  return 0;
}
