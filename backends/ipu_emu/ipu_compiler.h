// The ipu-emu compiler (runs in the parent process, no SystemC): binds the graph to micro-batch
// shapes, shards it into pipeline stages when several IPUs are used, lowers every node of a stage
// onto its IPU's tiles (lowering.h), plans each IPU's memory (memory_plan.h) and raises
// OutOfMemoryError in Poplar's words when a tile overflows, then assembles the BSP program of
// every IPU: host streams, the stages' supersteps per micro-batch, pipeline boundaries over
// IPU-Links and the replicas' all-reduce when weights update.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/ipu_emu/ipu_options.h"
#include "backends/ipu_emu/ipu_program.h"
#include "backends/ipu_emu/lowering.h"
#include "backends/ipu_emu/memory_plan.h"
#include "base/error.h"

namespace mimic::backends::ipu_emu {

// One pipeline stage: the nodes it runs (lowered on its IPU) and what crosses its boundaries.
struct StagePlan {
  std::vector<LoweredOp> ops;
  std::vector<ir::ValueId> host_inputs;   // graph inputs read here, streamed per micro-batch
  std::vector<ir::ValueId> received;      // values produced by earlier stages
  std::vector<ir::ValueId> host_outputs;  // graph outputs produced here
  std::vector<std::pair<ir::ValueId, uint32_t>> sends;  // value -> later stage reading it
  std::vector<Placement> placement;                     // per value, on this stage's IPU
  std::vector<uint64_t> bytes;  // per value, device bytes of one micro-batch
  uint64_t weight_bytes = 0;
  // Training steps: the parameter gradients made here (accumulated, all-reduced), their bytes,
  // and the bytes of the optimizer state this stage's update reads.
  std::vector<ir::ValueId> gradients;
  uint64_t gradient_bytes = 0, optimizer_state_bytes = 0;
  std::vector<bool> resident;  // per value (train_plan.h: resident_values)
  IpuMemoryPlan memory;
};

struct OutOfMemory {
  int64_t tile = 0;  // global tile number (ipu * tiles + tile)
  uint32_t ipu = 0;
  int64_t bytes_used = 0, bytes_available = 0;
  std::string op, message;
};

struct IpuCompilation {
  DeviceProgram program;
  std::vector<StagePlan> stages;
  CompileReport report;
  Table memory_table;
  std::optional<OutOfMemory> out_of_memory;
  int64_t batch = 0;
  bool training = false;
};

// Plans everything; with allow_out_of_memory an overflow is recorded instead of raised.
IpuCompilation compile_ipu(const ir::Graph& g, const models::ipu::IpuSpec& specs,
                           const IpuOptions& options, const std::string& device);

// Builds every IPU's superstep list from the stages (program_builder.cpp); `g` gives the phase
// of every op (a training step's update runs once per step, after its micro-batches).
models::ipu::BspProgram build_program(const models::ipu::IpuSpec& specs, const IpuOptions& options,
                                      const ir::Graph& g, bool training,
                                      const std::vector<StagePlan>& stages, Labels& labels);

}  // namespace mimic::backends::ipu_emu
