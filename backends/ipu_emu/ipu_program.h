// What the compiler hands to the device worker, once per executable: the BSP program (timing),
// the graph with one numerics recipe per node (values), and the op table (traces, per-op cycles).
// Both results come from this one object: the worker times `bsp` on the SystemC model and computes
// the outputs by executing `graph` with the recipes, which carry the plan's choices that change
// numbers (the K split of every matrix product, fp16 storage, fp16 or fp32 partials).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backends/device_worker/wire.h"
#include "frontend/ir/graph.h"
#include "models/ipu/bsp_program.h"
#include "sim/event_sink.h"

namespace mimic::backends::ipu_emu {

enum class RecipeKind : uint8_t {
  generic = 0,    // cpu reference kernel, outputs rounded to the storage format
  matmul = 1,     // MatMul / Gemm with the plan's K split
  conv = 2,       // 2-D convolution with the plan's input-channel split
  depthwise = 3,  // 2-D depthwise convolution on the vector unit (K split over kernel taps)
};

struct OpRecipe {
  RecipeKind kind = RecipeKind::generic;
  std::vector<int64_t> k_bounds;  // split boundaries along K (matmul), input channels (conv) or
                                  // row-major kernel taps (depthwise)
  bool half_partials = false;
};

struct DeviceProgram {
  models::ipu::BspProgram bsp;
  ir::Graph graph;
  std::vector<OpRecipe> recipes;  // per graph node
  std::vector<sim::OpDesc> ops;   // the op table superstep.op indexes
  std::vector<int32_t> op_nodes;  // op index -> graph node
  std::vector<int32_t> op_ipus;   // op index -> first IPU it runs on (replica 0)
  bool half_storage = false;      // f32 values are stored (rounded) as fp16
  bool fp32_master = false, stochastic_rounding = false;  // half_storage.h
  bool timing_only = false;
  uint32_t replicas = 1, stages = 1, micro_batches = 1;
  std::string precision;  // "float32", "float16", "float16 (half partials)"
  std::string preset;
  uint64_t macs_per_cycle = 0;  // AMP rate of this precision (peak and utilization)
  std::vector<std::string> notes;
};

void write_program(wire::Writer& w, const DeviceProgram& p);
DeviceProgram read_program(wire::Reader& r);

}  // namespace mimic::backends::ipu_emu
