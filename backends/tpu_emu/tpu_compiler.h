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

// tpu-emu's own options (CompileOptions::options), parsed by the backend.
struct ProgramOptions {
  bool auto_layout = true;           // layout=auto|as_given
  int64_t replicas = 1;              // replicas=N: data-parallel copies of the program
  bool allow_out_of_memory = false;  // a program over HBM capacity compiles (and cannot run)
  bool loop_fusion = true;           // loop_fusion=true|false: loop_fusion.h
  bool bf16_activations = false;     // activation_dtype=f32|bf16: Context::stored_bf16
};

// Parses and checks CompileOptions::options against `spec` (replicas within the slice's devices):
// InvalidArgument naming the option and the numbers.
ProgramOptions parse_program_options(const CompileOptions& options,
                                     const models::tpu::TpuSpec& spec, const std::string& device);

// The chip one replica runs on: with replicas spread over the cores of v2/v3 chips (each core
// owns its off-chip memory), one core with its share of off-chip capacity and bandwidth.
models::tpu::TpuSpec replica_spec(const models::tpu::TpuSpec& spec, int64_t replicas);

// The compile report carries the HBM plan (memory.peak_bytes, memory.capacity_bytes,
// memory.<category>_bytes at the peak); a peak over capacity is an OutOfMemoryError in XLA's words
// unless `program.allow_out_of_memory`.
CompiledProgram compile_program(const ir::Graph& g, const models::tpu::TpuSpec& spec,
                                const CompileOptions& options, const std::string& device,
                                const ProgramOptions& program = {});

// Whether the chip can run node `n` (else it falls back to cpu). `why` gets a short reason.
bool supports_node(const ir::Graph& g, const ir::Node& n, std::string* why = nullptr);
// Whether node n runs unrolled into other ops (frontend/ir/recurrent_expand.h): recurrent layers,
// Resize, InstanceNormalization, DepthToSpace, SpaceToDepth and 3-D MaxPoolGrad; 1-D and 2-D
// MaxPoolGrad has a lowering of its own.
bool runs_unrolled(const ir::Graph& g, const ir::Node& n);

}  // namespace mimic::backends::tpu_emu
