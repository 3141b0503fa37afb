// The TPU compiler: lowers a graph (bound batch, shapes inferred, every node supported) into a
// device program for one chip spec. Runs in the parent process (no SystemC). Compile errors, such
// as a layer that cannot be tiled into on-chip memory or weights that do not fit off-chip memory,
// are raised here with the layer and the sizes.
#pragma once

#include <string>
#include <vector>

#include "backends/backend.h"
#include "frontend/ir/graph.h"
#include "models/tpu/program.h"
#include "models/tpu/tpu_spec.h"

namespace mimic::backends::tpu_emu {

// Integers the chip holds exactly in its fp32 lanes (indices, booleans, casts): |v| <= 2^24.
constexpr int64_t kExactIntegerLimit = int64_t{1} << 24;

struct CompiledProgram {
  models::tpu::Program program;
  std::vector<std::vector<float>> constants;  // data of program.constants, in that order
  CompileReport report;
};

// Matrix passes for a precision name: default 1, high 3, highest 6 (bf16 chips); int8 chips run
// one pass whatever the precision. Throws InvalidArgument for an unknown name.
int64_t precision_passes(const std::string& precision, const models::tpu::TpuSpec& spec);

CompiledProgram compile_program(const ir::Graph& g, const models::tpu::TpuSpec& spec,
                                const CompileOptions& options, const std::string& device);

// Whether the chip can run node `n` (else it falls back to cpu). `why` gets a short reason.
bool supports_node(const ir::Graph& g, const ir::Node& n, std::string* why = nullptr);

}  // namespace mimic::backends::tpu_emu
