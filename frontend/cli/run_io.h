// Model inputs and outputs of `mimic run` beyond random ones: .npy files named per input, ONNX
// inputs that set shapes, the batch an ONNX model runs with, outputs written as .npy files.
#pragma once

#include <string>
#include <vector>

#include "frontend/ir/graph.h"

namespace mimic::cli {

// --input name=file.npy items -> tensors in graph-input order; empty when there are none.
// InvalidArgument for an unknown name or a missing input (all inputs, or none, must be given).
std::vector<ir::HostTensor> read_input_files(const std::vector<std::string>& items,
                                             const ir::Graph& g);

// Inputs that set shapes (Reshape's shape, Slice's starts, ...; ir::shape_defining_inputs) become
// constants holding their given values, since mimic compiles static shapes. Returns the other
// inputs. InvalidArgument naming them when such inputs exist but no values were given.
std::vector<ir::HostTensor> freeze_shape_inputs(ir::Graph& g,
                                                const std::vector<ir::HostTensor>& given);

// The batch of an imported graph: for a symbolic batch the first dim of the matching given
// input, else 1; 0 (the graph's own shapes) when the graph has no symbolic batch.
int64_t onnx_batch(const ir::Graph& g, const std::vector<ir::HostTensor>& inputs);

// Writes output i to DIR/<name>.npy, characters other than [A-Za-z0-9._-] in names becoming '_'.
void write_output_files(const std::string& dir, const ir::Graph& g,
                        const std::vector<ir::HostTensor>& outputs);

}  // namespace mimic::cli
