// libFuzzer target: arbitrary bytes through the path of `mimic run --onnx`: the ONNX importer,
// graph preparation (validation, shape inference, batch binding, constant folding on the cpu
// backend), compilation for cpu and one run there on zero inputs, and a timing-only compilation
// (lowering, tiling, memory planning: everything but the device worker) for tpu-emu:v4 and
// ipu-emu:gc200. Every input must end in a result or a mimic::Error; anything else (a crash, a
// sanitizer report, another exception, a hang, a runaway allocation) is a bug.
#include <cstddef>
#include <cstdint>

#include "backends/registry.h"
#include "base/error.h"
#include "frontend/api/compile.h"
#include "frontend/ir/graph.h"
#include "frontend/ir/memory_limit.h"
#include "frontend/onnx/onnx_import.h"

namespace {

// Per tensor; libFuzzer's -rss_limit_mb=2048 bounds the whole process.
constexpr int64_t kMaxTensorBytes = int64_t{64} << 20;
// Runs only models this cheap: a legitimately expensive model is not a hang (a 4.4M-visit
// MaxPool takes 0.25 s in Release but over 10 s in this instrumented build on a loaded machine).
constexpr int64_t kMaxRunFlops = int64_t{1} << 21;
constexpr int64_t kMaxRunBytes = int64_t{1} << 28;

bool cheap_to_run(const mimic::ir::Graph& g) {
  int64_t flops = 0, bytes = 0;
  for (int i = 0; i < g.num_nodes(); ++i) {
    flops += mimic::ir::node_flops(g, g.node(i));
    bytes += mimic::ir::node_bytes_out(g, g.node(i));
    if (flops > kMaxRunFlops || bytes > kMaxRunBytes) return false;
  }
  return true;
}

// Lowers for an emulated chip in-process (no device worker), as compile() would before running.
void compile_for_emulator(const mimic::ir::Graph& bound, const char* backend, const char* arg) {
  mimic::backends::CompileOptions options;
  options.timing_only = true;
  options.compile_only = true;
  try {
    mimic::backends::compile_with_fallback(*mimic::backends::Registry::global().find(backend),
                                           bound, arg, options);
  } catch (const mimic::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mimic::ir::set_max_tensor_bytes(kMaxTensorBytes);
  try {
    mimic::onnx_import::ImportedModel m =
        mimic::onnx_import::import_model_bytes(data, size, "fuzz.onnx");
    mimic::CompileOptions options;
    options.batch = m.graph.has_symbolic_batch() ? 2 : 0;
    mimic::Executable exe = mimic::compile(m.graph, mimic::Device("cpu"), options);
    compile_for_emulator(exe.graph(), "tpu-emu", "v4");
    compile_for_emulator(exe.graph(), "ipu-emu", "gc200");
    if (!cheap_to_run(exe.graph())) return 0;
    std::vector<mimic::ir::HostTensor> inputs;
    for (mimic::ir::ValueId v : exe.graph().inputs())
      inputs.emplace_back(exe.graph().value(v).type.dtype, exe.graph().value(v).type.shape);
    exe.run(inputs);
  } catch (const mimic::Error&) {
  }
  return 0;
}
