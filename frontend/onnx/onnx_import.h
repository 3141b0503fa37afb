// ONNX import: a model file (ONNX protobuf, read with Debian's libonnx 1.12) -> ir::Graph.
//
// Opsets 6 to 17 of the default domain are imported; a model of an older opset is accepted when
// every op it uses kept its definition through opset 17 (e.g. GlobalAveragePool-1). Every ONNX op
// with an IR equivalent is mapped, older attribute forms becoming the IR's constant inputs.
// Initializers and Constant nodes become constant values (external data files are read from the
// model's folder). A dim_param, 0 (see ImportOptions), -1 or unset size on an input's first
// dimension becomes the symbolic batch (ir::kBatch), bound at compile time; other symbolic
// dimensions are unsupported. Initializers also listed as graph inputs (IR version < 4 models) are
// constants, not inputs.
//
// Errors: anything mimic cannot import (op types, op variants, element types such as UINT8) is
// ONE UnsupportedOpError listing all of them with node names and the opset; a malformed,
// truncated or garbage file is an IoError; neither ever crashes the process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "frontend/ir/graph.h"

namespace mimic::onnx_import {

inline constexpr int kMinOpset = 6;
inline constexpr int kMaxOpset = 17;

struct ImportOptions {
  // Folder of external data files; defaults to the model file's folder (the current folder for
  // models given as bytes).
  std::string base_dir;
  // Take a first dimension of size 0 for the symbolic batch (some exporters write 0 for
  // "unknown"). Off for models whose inputs may really be empty, such as the ONNX test models.
  bool zero_dim_is_batch = true;
  // Largest initializer or attribute tensor (bytes), checked before allocating it; 0:
  // ir::max_tensor_bytes() (half the physical memory unless set).
  int64_t max_tensor_bytes = 0;
};

struct ImportedModel {
  ir::Graph graph;
  int64_t opset = 0;  // of the default domain
  int64_t ir_version = 0;
  std::string producer;  // "pytorch 1.13", "" when not recorded
};

ImportedModel import_model(const std::string& path, const ImportOptions& options = {});
// `name` labels the model in errors and becomes the graph's name when the model has none.
ImportedModel import_model_bytes(const void* data, size_t size, const std::string& name,
                                 const ImportOptions& options = {});

// ONNX op types (default domain) mimic imports, sorted.
std::vector<std::string> supported_ops();

}  // namespace mimic::onnx_import
