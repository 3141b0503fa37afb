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

struct IpuOptions {
  uint32_t num_ipus = 1;
  uint32_t replicas = 1;       // data-parallel copies of the model
  uint32_t stages = 1;         // pipeline stages = num_ipus / replicas (sharding by layers)
  uint32_t micro_batches = 0;  // 0: chosen at compile time (2 x stages when the batch allows)
  // PopTorch's gradientAccumulation: a training step runs forward and backward on this many
  // micro-batches, summing gradients in an on-tile accumulator, then all-reduces and updates once
  // (0: not given; a training graph then accumulates over micro_batches).
  uint32_t accumulation = 0;
  // Optimizer state lives in streaming memory (PopTorch's remote buffers) instead of on tiles:
  // loaded for the update and written back, over the host link's bandwidth.
  bool offload_optimizer_state = false;
  bool half_precision = false;  // precision float16: fp16 storage of activations and weights
  bool half_partials = false;   // enable_half_partials: AMP partial sums in fp16 (fp16 ops only)
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

std::map<std::string, std::string> option_help();

}  // namespace mimic::backends::ipu_emu
