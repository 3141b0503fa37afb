// tpu-emu's backend options (layout, replicas, allow_out_of_memory, loop_fusion,
// activation_dtype) and the chip of
// one replica.
#include <fmt/format.h>

#include "backends/tpu_emu/tpu_compiler.h"
#include "base/error.h"

namespace mimic::backends::tpu_emu {

using models::tpu::TpuSpec;

namespace {

bool parse_bool(const std::string& key, const std::string& value) {
  if (value == "true" || value == "1") return true;
  if (value == "false" || value == "0") return false;
  throw InvalidArgument(fmt::format("tpu-emu: option {}={} (expected true or false)", key, value));
}

// replicas=N (1 <= N <= the slice's devices) or replicas=all.
int64_t parse_replicas(const std::string& value, const TpuSpec& spec, const std::string& device) {
  const int64_t devices = spec.replica_devices();
  const std::string slice = fmt::format(
      "{} chip{} x {} {} per chip", spec.chips, spec.chips > 1 ? "s" : "",
      spec.offchip_per_core ? spec.cores : 1,
      spec.offchip_per_core ? "cores with their own HBM" : "device (cores as one megacore)");
  if (value == "all") return devices;
  int64_t n = 0;
  size_t used = 0;
  try {
    n = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size())
    throw InvalidArgument(fmt::format(
        "tpu-emu: option replicas={} is not an integer (1..{} or all)", value, devices));
  if (n < 1)
    throw InvalidArgument(fmt::format(
        "tpu-emu: option replicas={}: needs at least 1 replica ({} has {} replica device{}: {})", n,
        device, devices, devices > 1 ? "s" : "", slice));
  if (n > devices)
    throw InvalidArgument(fmt::format(
        "tpu-emu: option replicas={} exceeds the {} replica device{} of {} ({}); a larger slice is "
        "--set chips=N",
        n, devices, devices > 1 ? "s" : "", device, slice));
  return n;
}

}  // namespace

ProgramOptions parse_program_options(const CompileOptions& options, const TpuSpec& spec,
                                     const std::string& device) {
  ProgramOptions o;
  for (const auto& [key, value] : options.options) {
    if (key == "layout") {
      if (value != "auto" && value != "as_given")
        throw InvalidArgument(
            fmt::format("tpu-emu: option layout={} (expected auto or as_given)", value));
      o.auto_layout = value == "auto";
    } else if (key == "replicas") {
      o.replicas = parse_replicas(value, spec, device);
    } else if (key == "allow_out_of_memory") {
      o.allow_out_of_memory = parse_bool(key, value);
    } else if (key == "loop_fusion") {
      o.loop_fusion = parse_bool(key, value);
    } else if (key == "activation_dtype") {
      if (value != "f32" && value != "bf16")
        throw InvalidArgument(
            fmt::format("tpu-emu: option activation_dtype={} (expected f32 or bf16)", value));
      o.bf16_activations = value == "bf16";
    } else {
      throw InvalidArgument(fmt::format(
          "tpu-emu: unknown option '{}' (tpu-emu takes layout=auto|as_given, replicas=N|all, "
          "allow_out_of_memory=true|false, loop_fusion=true|false, activation_dtype=f32|bf16; chip "
          "fields are set with "
          "overrides, e.g. --set "
          "mxu.rows=64)",
          key));
    }
  }
  return o;
}

TpuSpec replica_spec(const TpuSpec& spec, int64_t replicas) {
  if (!spec.offchip_per_core || replicas <= spec.chips || spec.cores == 1) return spec;
  TpuSpec core = spec;
  core.cores = 1;
  core.offchip.bytes = spec.offchip.bytes / static_cast<uint64_t>(spec.cores);
  core.offchip.bytes_per_s = spec.offchip.bytes_per_s / static_cast<uint64_t>(spec.cores);
  core.offchip_per_core = false;
  core.sources["cores"] = "one core per replica (option replicas over the cores of the chips)";
  return core;
}

}  // namespace mimic::backends::tpu_emu
