// The options ipu-emu accepts (CompileOptions::options, precision, compile_only, timing_only),
// named after what IPU front ends expose (PopTorch/PopART: num_ipus, replication factor,
// availableMemoryProportion, enableHalfPartials, debug.allowOutOfMemory). Parsed and validated
// once; unknown keys and bad values are InvalidArgument naming the key and the value.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "backends/backend.h"
#include "models/ipu/ipu_spec.h"

namespace mimic::backends::ipu_emu {

// How a pipelined step orders its stages' passes: IPU TensorFlow's
// pipelining_ops.PipelineSchedule, built by pipeline_visitor_utils.h in Graphcore's TensorFlow
// (ScheduleOffsets: AllUnion for Grouped, CircularUnion for Interleaved, NoUnion for Sequential).
// In a training step IPU s owns two of the 2S stages, its forward pass (stage s) and its
// backward pass (stage 2S - 1 - s); micro-batch m runs stage j in pipeline cycle
// m x spacing + j, with spacing:
//   grouped      1: every IPU runs a backward and a forward pass (of different micro-batches)
//                in each cycle, backward first (ForceInterleavedStageOrders), so a cycle lasts the
//                slowest IPU's forward + backward; stash depth 2 (S - s) - 1 (FIFO depth
//                2 (S - 1 - s), GetFifoDepthMultiplier = 2);
//   interleaved  2: each IPU alternates a forward and a backward pass, one per cycle, so a cycle
//                lasts the slowest pass of any kind and forward-only cycles wait on backward
//                ones; stash depth S - s (FIFO depth S - 1 - s, multiplier 1);
//   sequential   2S: one stage at a time, as a sharded model runs (no overlap, no stash).
// An inference pipeline has S stages: grouped and interleaved coincide (spacing 1), sequential
// is spacing S.
enum class PipelineSchedule { grouped, interleaved, sequential };

struct IpuOptions {
  uint32_t num_ipus = 1;
  uint32_t replicas = 1;       // data-parallel copies of the model
  uint32_t stages = 1;         // pipeline stages = num_ipus / replicas (sharding by layers)
  uint32_t micro_batches = 0;  // 0: chosen at compile time (2 x stages when the batch allows)
  PipelineSchedule schedule = PipelineSchedule::grouped;
  // PopTorch's gradientAccumulation: a training step runs forward and backward on this many
  // micro-batches, summing gradients in an on-tile accumulator, then all-reduces and updates once
  // (0: not given; a training graph then accumulates over micro_batches).
  uint32_t accumulation = 0;
  // Optimizer state lives in streaming memory (PopTorch's remote buffers) instead of on tiles:
  // loaded for the update and written back, over the host link's bandwidth.
  bool offload_optimizer_state = false;
  bool half_precision = false;    // precision float16: fp16 storage of activations and weights
  bool half_partials = false;     // enable_half_partials: AMP partial sums in fp16 (fp16 ops only)
  bool expression_fusion = true;  // expression_fusion: expression_fusion.h
  bool fp32_master_weights = false;  // master_weights=float32 (half_storage.h)
  bool stochastic_rounding = false;  // stochastic_rounding=true (half_storage.h)
  double memory_proportion = 0.6;
  bool weight_update = false;  // add the replicas' gradient all-reduce to every step
  bool allow_out_of_memory =
      false;  // like Poplar's debug.allowOutOfMemory: report instead of failing
  bool compile_only = false;
  bool timing_only = false;
  std::string precision_name = "float32";
};

IpuOptions parse_options(const CompileOptions& options, const models::ipu::IpuSpec& specs);

const char* schedule_name(PipelineSchedule s);

// Pipeline cycles between two micro-batches entering the pipeline (see PipelineSchedule).
uint32_t micro_batch_spacing(const IpuOptions& o, bool training);

// Pipeline cycles of a step: the last micro-batch enters after (M - 1) spacings and passes its
// 2S (training) or S stages.
uint32_t pipeline_cycles(const IpuOptions& o, bool training);

// Micro-batches whose forward activations IPU `stage` holds at once in a pipelined training
// step: the one in its backward pass and those that entered since its forward pass.
uint32_t stashed_micro_batches(const IpuOptions& o, uint32_t stage);

// Whether `micro_batches` can fill the schedule, as the IPU compilers check it: grouped needs at
// least as many as pipeline stages (PopART: 2S - 1 in training, where the last IPU's forward and
// backward share one, S in inference); interleaved runs them in groups of S (IPU TensorFlow: a
// multiple of S, at least S); sequential takes any number. Empty when they can, else why not.
std::string pipeline_depth_error(const IpuOptions& o, uint32_t micro_batches, bool training);

std::map<std::string, std::string> option_help();

}  // namespace mimic::backends::ipu_emu
