// libFuzzer target: arbitrary bytes through the loading path of `mimic run --onnx`: the ONNX
// importer, then graph preparation (validation, shape inference, batch binding, constant folding
// on the cpu backend) and compilation for cpu. Every input must end in a graph or a
// mimic::Error; anything else (a crash, a sanitizer report, another exception) is a bug.
#include <cstddef>
#include <cstdint>

#include "frontend/api/compile.h"
#include "frontend/ir/error.h"
#include "frontend/onnx/onnx_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    mimic::onnx_import::ImportedModel m =
        mimic::onnx_import::import_model_bytes(data, size, "fuzz.onnx");
    mimic::CompileOptions options;
    options.batch = m.graph.has_symbolic_batch() ? 2 : 0;
    mimic::compile(m.graph, mimic::Device("cpu"), options);
  } catch (const mimic::Error&) {
  }
  return 0;
}
