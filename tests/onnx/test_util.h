// Helpers shared by the ONNX tests: import from a builder, run on cpu, tensors from vectors.
#pragma once

#include <vector>

#include "frontend/api/compile.h"
#include "frontend/onnx/onnx_import.h"
#include "tests/onnx/model_builder.h"

namespace mimic::testing {

inline ir::Graph import(const ModelBuilder& b, const onnx_import::ImportOptions& options = {}) {
  std::string bytes = b.bytes();
  return onnx_import::import_model_bytes(bytes.data(), bytes.size(), "test.onnx", options).graph;
}

inline ir::HostTensor f32(ir::Shape shape, const std::vector<float>& values) {
  return ir::HostTensor::from(std::move(shape), values.data());
}

inline std::vector<float> values(const ir::HostTensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

inline std::vector<ir::HostTensor> run_cpu(const ir::Graph& g,
                                           const std::vector<ir::HostTensor>& inputs,
                                           int64_t batch = 0) {
  CompileOptions o;
  o.batch = batch;
  return compile(g, Device("cpu"), o).run(inputs).outputs;
}

}  // namespace mimic::testing
