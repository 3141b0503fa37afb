#include "backends/ipu_emu/ipu_options.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/error.h"

namespace mimic::backends::ipu_emu {
namespace {

uint32_t parse_count(const std::string& key, const std::string& v, uint32_t max) {
  size_t pos = 0;
  long long n = -1;
  try {
    n = std::stoll(v, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (pos != v.size() || v.empty() || n < 1 || n > static_cast<long long>(max))
    throw InvalidArgument(
        fmt::format("ipu-emu: option {}={} must be an integer from 1 to {}", key, v, max));
  return static_cast<uint32_t>(n);
}

bool parse_bool(const std::string& key, const std::string& v) {
  if (v == "true" || v == "1" || v == "on" || v == "yes") return true;
  if (v == "false" || v == "0" || v == "off" || v == "no") return false;
  throw InvalidArgument(fmt::format("ipu-emu: option {}={} must be true or false", key, v));
}

double parse_proportion(const std::string& key, const std::string& v) {
  size_t pos = 0;
  double d = -1;
  try {
    d = std::stod(v, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (pos != v.size() || v.empty() || !(d > 0.0 && d <= 1.0))
    throw InvalidArgument(fmt::format("ipu-emu: option {}={} must be a number in (0, 1]", key, v));
  return d;
}

// master_weights and stochastic_rounding shape fp16 storage: meaningless at float32.
bool require_half(const std::string& key, bool half) {
  if (!half)
    throw InvalidArgument(
        fmt::format("ipu-emu: option {} applies to precision float16 (this is float32)", key));
  return true;
}

bool parse_master_weights(const std::string& value, bool half) {
  if (value != "float16" && value != "float32")
    throw InvalidArgument(
        fmt::format("ipu-emu: master_weights={} must be float16 or float32", value));
  return value == "float32" && require_half("master_weights", half);
}

PipelineSchedule parse_schedule(const std::string& v) {
  for (PipelineSchedule s :
       {PipelineSchedule::grouped, PipelineSchedule::interleaved, PipelineSchedule::sequential})
    if (v == schedule_name(s)) return s;
  throw InvalidArgument(fmt::format(
      "ipu-emu: option pipeline_schedule={} must be grouped, interleaved or sequential", v));
}

}  // namespace

const char* schedule_name(PipelineSchedule s) {
  switch (s) {
    case PipelineSchedule::grouped:
      return "grouped";
    case PipelineSchedule::interleaved:
      return "interleaved";
    case PipelineSchedule::sequential:
      return "sequential";
  }
  return "grouped";
}

uint32_t micro_batch_spacing(const IpuOptions& o, bool training) {
  uint32_t stages = training ? 2 * o.stages : o.stages;
  switch (o.schedule) {
    case PipelineSchedule::grouped:
      return 1;
    case PipelineSchedule::interleaved:
      return training ? 2 : 1;
    case PipelineSchedule::sequential:
      return stages;
  }
  return 1;
}

uint32_t pipeline_cycles(const IpuOptions& o, bool training) {
  uint32_t stages = training ? 2 * o.stages : o.stages;
  return (o.micro_batches - 1) * micro_batch_spacing(o, training) + stages;
}

uint32_t stashed_micro_batches(const IpuOptions& o, uint32_t stage) {
  // Stage 2S - 1 - s follows stage s by 2 (S - 1 - s) + 1 cycles, and a cycle runs its backward
  // passes before its forward ones, so the stash holds the micro-batches that entered in the
  // 2 (S - 1 - s) cycles before, plus the one the backward pass reads: IPU TensorFlow's FIFO depth
  // (pipeline_fifo_inserter.cc) plus one.
  return std::min(o.micro_batches, 2 * (o.stages - 1 - stage) / micro_batch_spacing(o, true) + 1);
}

std::string pipeline_depth_error(const IpuOptions& o, uint32_t micro_batches, bool training) {
  if (o.stages <= 1) return "";
  uint32_t s = o.stages;
  if (o.schedule == PipelineSchedule::grouped) {
    uint32_t need = training ? 2 * s - 1 : s;
    if (micro_batches >= need) return "";
    return fmt::format(
        "pipeline_schedule=grouped over {} stages needs at least {} micro-batches per step to "
        "fill the {} pipeline ({}), got {}",
        s, need, training ? "training" : "inference",
        training ? "2 x stages - 1, PopART's pipeline depth" : "one per stage", micro_batches);
  }
  if (o.schedule == PipelineSchedule::interleaved && micro_batches % s != 0)
    return fmt::format(
        "pipeline_schedule=interleaved over {} stages runs micro-batches in groups of {} (IPU "
        "TensorFlow: a multiple of the stages), got {}",
        s, s, micro_batches);
  return "";
}

std::map<std::string, std::string> option_help() {
  return {
      {"num_ipus",
       "IPUs to use (default 1): stages x replicas; several stages shard the model by layers and "
       "pipeline it"},
      {"replication_factor", "data-parallel replicas (default 1); must divide num_ipus"},
      {"micro_batches",
       "micro-batches per step (pipelining / batch serialization); default 2 x stages when the "
       "batch allows"},
      {"pipeline_schedule",
       "grouped (default: each pipeline cycle runs every IPU's forward and backward pass), "
       "interleaved (one pass per IPU per cycle, fewer stashed activations) or sequential (one "
       "stage at a time); IPU TensorFlow's PipelineSchedule"},
      {"gradient_accumulation",
       "training steps: micro-batches whose gradients are summed on tile before one all-reduce "
       "and one optimizer update (PopTorch's gradientAccumulation; default 1)"},
      {"offload_optimizer_state",
       "training steps: optimizer state in streaming memory (remote buffers), loaded for the "
       "update and stored back (default false)"},
      {"memory_proportion",
       "share of tile memory an op may use for temporaries (default 0.6, Poplar's "
       "availableMemoryProportion)"},
      {"enable_half_partials", "fp16 partial sums for fp16 matmuls/convolutions (default false)"},
      {"expression_fusion",
       "run chains of elementwise ops as one popops expression: one compute set, no "
       "intermediate tensors (default true)"},
      {"master_weights",
       "precision float16: float16 (default: every tensor in fp16) or float32 (parameters, "
       "optimizer state and the update in f32, read through fp16 copies)"},
      {"stochastic_rounding",
       "precision float16: round stored values to fp16 stochastically (default false; PopTorch's "
       "enableStochasticRounding)"},
      {"weight_update",
       "add the replicas' weight all-reduce to every step of an inference graph, to time it as "
       "training would (default false; a training step all-reduces its gradients anyway)"},
      {"allow_out_of_memory",
       "report an out-of-memory program (memory table, notes) instead of failing, like Poplar's "
       "debug.allowOutOfMemory (default false)"},
  };
}

IpuOptions parse_options(const CompileOptions& options, const models::ipu::IpuSpec& specs) {
  IpuOptions o;
  o.compile_only = options.compile_only;
  o.timing_only = options.timing_only;
  if (options.precision == "default" || options.precision == "float32") {
    o.precision_name = "float32";
  } else if (options.precision == "float16") {
    o.half_precision = true;
    o.precision_name = "float16";
  } else {
    throw InvalidArgument(
        fmt::format("ipu-emu: precision '{}' is not supported (float32 | float16 | default)",
                    options.precision));
  }
  auto help = option_help();
  bool ipus_given = false;
  for (const auto& [key, value] : options.options) {
    if (key == "num_ipus")
      o.num_ipus = parse_count(key, value, 1u << 20), ipus_given = true;
    else if (key == "replication_factor")
      o.replicas = parse_count(key, value, 1u << 20);
    else if (key == "micro_batches")
      o.micro_batches = parse_count(key, value, 1u << 20);
    else if (key == "pipeline_schedule")
      o.schedule = parse_schedule(value);
    else if (key == "gradient_accumulation")
      o.accumulation = parse_count(key, value, 1u << 20);
    else if (key == "offload_optimizer_state")
      o.offload_optimizer_state = parse_bool(key, value);
    else if (key == "memory_proportion")
      o.memory_proportion = parse_proportion(key, value);
    else if (key == "enable_half_partials")
      o.half_partials = parse_bool(key, value);
    else if (key == "expression_fusion")
      o.expression_fusion = parse_bool(key, value);
    else if (key == "master_weights")
      o.fp32_master_weights = parse_master_weights(value, o.half_precision);
    else if (key == "stochastic_rounding")
      o.stochastic_rounding = parse_bool(key, value) && require_half(key, o.half_precision);
    else if (key == "weight_update")
      o.weight_update = parse_bool(key, value);
    else if (key == "allow_out_of_memory")
      o.allow_out_of_memory = parse_bool(key, value);
    else {
      std::string known;
      for (const auto& [k, h] : help) known += (known.empty() ? "" : ", ") + k;
      throw InvalidArgument(fmt::format("ipu-emu: unknown option '{}' (options: {})", key, known));
    }
  }
  // PopTorch counts IPUs per replica: replication_factor alone asks for one IPU per replica.
  if (!ipus_given) o.num_ipus = o.replicas;
  if (o.num_ipus % o.replicas != 0)
    throw InvalidArgument(fmt::format("ipu-emu: replication_factor={} must divide num_ipus={}",
                                      o.replicas, o.num_ipus));
  o.stages = o.num_ipus / o.replicas;
  if (o.num_ipus > specs.max_ipus)
    throw InvalidArgument(fmt::format(
        "ipu-emu: num_ipus={} ({} replica(s) x {} stage(s)) exceeds the {} IPUs of preset {} "
        "(max_ipus)",
        o.num_ipus, o.replicas, o.stages, specs.max_ipus, specs.name));
  if (o.accumulation && o.micro_batches && o.accumulation != o.micro_batches)
    throw InvalidArgument(fmt::format(
        "ipu-emu: gradient_accumulation={} and micro_batches={} disagree (a training step's "
        "micro-batches are its accumulation steps)",
        o.accumulation, o.micro_batches));
  if (o.accumulation) o.micro_batches = o.accumulation;
  return o;
}

}  // namespace mimic::backends::ipu_emu
