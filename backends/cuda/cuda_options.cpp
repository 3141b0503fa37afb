#include "backends/cuda/cuda_options.h"

#include <fmt/format.h>
#include <cctype>

#include "base/error.h"

namespace mimic::backends::cuda {

std::map<std::string, std::string> option_help() {
  return {{"graph",
           "off (default): launch every kernel on each run; on: capture the run's launches once "
           "as a CUDA graph and replay it (one launch per run; the activations stay allocated "
           "for the executable's lifetime)"},
          {"timing",
           "ops (default): CUDA events around every op, per-op GPU time in reports and traces; "
           "run: events around the whole run only"},
          {"workspace_mb",
           "upper bound in MiB on a convolution's im2col/col2im scratch buffer (default 256); "
           "larger batches are processed in chunks of images"}};
}

CudaOptions parse_options(const CompileOptions& options) {
  CudaOptions o;
  if (options.precision == "default")
    o.tf32 = true;
  else if (options.precision == "highest")
    o.tf32 = false;
  else
    throw InvalidArgument(
        fmt::format("cuda: precision '{}' is not supported: use 'default' (TF32 tensor cores for "
                    "f32 matmul/conv) or "
                    "'highest' (full fp32)",
                    options.precision));
  for (const auto& [key, value] : options.options) {
    if (key == "timing") {
      if (value != "ops" && value != "run")
        throw InvalidArgument(fmt::format("cuda: option timing={} must be 'ops' or 'run'", value));
      o.per_op_timing = value == "ops";
    } else if (key == "graph") {
      if (value != "on" && value != "off")
        throw InvalidArgument(fmt::format("cuda: option graph={} must be 'on' or 'off'", value));
      o.use_graph = value == "on";
    } else if (key == "workspace_mb") {
      bool digits = !value.empty() && value.size() <= 6;
      for (char c : value) digits = digits && std::isdigit(static_cast<unsigned char>(c));
      int64_t mb = digits ? std::stoll(value) : 0;
      if (!digits || mb < 1 || mb > 65536)
        throw InvalidArgument(
            fmt::format("cuda: option workspace_mb={} must be an integer from 1 to 65536", value));
      o.workspace_bytes = mb << 20;
    } else {
      std::string known;
      for (const auto& [k, help] : option_help()) known += (known.empty() ? "" : ", ") + k;
      throw InvalidArgument(fmt::format("cuda: unknown option '{}' (known: {})", key, known));
    }
  }
  return o;
}

int parse_device_index(const std::string& arg) {
  if (arg.empty()) return 0;
  if (arg.size() > 4) return -1;
  for (char c : arg)
    if (!std::isdigit(static_cast<unsigned char>(c))) return -1;
  return std::stoi(arg);
}

}  // namespace mimic::backends::cuda
