#include "backends/cuda/cuda_backend.h"

#include <fmt/format.h>
#include <chrono>

#include "backends/common.h"
#include "backends/cuda/cublas_loader.h"
#include "backends/cuda/cuda_executable.h"
#include "backends/cuda/cuda_options.h"
#include "backends/cuda/device_runtime.h"
#include "backends/cuda/lower.h"
#include "base/error.h"

namespace mimic::backends {
namespace {

class CudaBackend final : public Backend {
 public:
  std::string name() const override { return "cuda"; }

  std::vector<DeviceInfo> enumerate() const override {
    const cuda::CudaStatus& s = cuda::cuda_status();
    if (s.gpus.empty()) return {probe("0")};
    std::vector<DeviceInfo> out;
    for (const auto& g : s.gpus) out.push_back(probe(std::to_string(g.ordinal)));
    return out;
  }

  DeviceInfo probe(const std::string& arg) const override {
    int index = cuda::parse_device_index(arg);
    DeviceInfo d{fmt::format("cuda:{}", arg.empty() ? "0" : arg), "cuda", false, "", ""};
    if (index < 0) {
      d.reason =
          fmt::format("cuda: device argument '{}' must be a GPU index (cuda:0, cuda:1, ...)", arg);
      return d;
    }
    const cuda::CudaStatus& s = cuda::cuda_status();
    if (s.gpus.empty()) {
      d.reason = s.unavailable_reason;
      return d;
    }
    if (index >= static_cast<int>(s.gpus.size())) {
      d.reason = fmt::format("there is no cuda:{}: this machine has {} CUDA device(s)", index,
                             s.gpus.size());
      return d;
    }
    try {
      cuda::cublas();  // a GPU without a loadable cuBLAS cannot run GEMMs
    } catch (const Error& e) {
      d.reason = e.what();
      return d;
    }
    d.available = true;
    d.description = fmt::format("{}, driver {}, runtime {}", s.gpus[index].description(),
                                cuda::cuda_version_string(s.driver_version),
                                cuda::cuda_version_string(s.runtime_version));
    return d;
  }

  bool supports_op(const ir::Graph& g, const ir::Node& n, const std::string&,
                   const CompileOptions&) const override {
    return cuda::unsupported_reason(g, n).empty();
  }

  std::string unsupported_reason(const ir::Graph& g, const ir::Node& n, const std::string&,
                                 const CompileOptions&) const override {
    return cuda::unsupported_reason(g, n);
  }

  std::unique_ptr<Executable> compile(const ir::Graph& g, const std::string& arg,
                                      const CompileOptions& options) const override {
    auto start = std::chrono::steady_clock::now();
    cuda::CudaOptions opts = cuda::parse_options(options);
    DeviceInfo info = probe(arg);
    if (cuda::parse_device_index(arg) < 0) throw InvalidArgument(info.reason);
    if (!info.available)
      throw DeviceUnavailableError(fmt::format("{} is unavailable: {}", info.name, info.reason));
    cuda::Program program = cuda::lower(g, opts);
    CompileReport report;
    report.device = info.name;
    report.metrics["instructions"] = static_cast<double>(program.instrs.size());
    report.metrics["steps"] = static_cast<double>(program.steps.size());
    report.metrics["arena_bytes"] = static_cast<double>(program.arena_bytes);
    report.metrics["peak_live_bytes"] = static_cast<double>(program.peak_live_bytes);
    report.metrics["constant_bytes"] = static_cast<double>(program.constant_bytes);
    int64_t gemms = 0;
    for (const auto& instr : program.instrs)
      gemms += std::holds_alternative<cuda::GemmInstr>(instr);
    report.metrics["gemm_calls"] = static_cast<double>(gemms);
    report.notes = program.notes;
    if (options.timing_only)
      report.notes.push_back("cuda: timing_only has no effect on a physical device");
    cuda::DeviceContext& ctx = cuda::DeviceContext::get(cuda::parse_device_index(arg));
    report.compile_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return cuda::make_executable(ctx, std::move(program), opts, options.compile_only,
                                 std::move(report));
  }

  std::map<std::string, std::string> option_help() const override { return cuda::option_help(); }
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend() {
  return std::make_unique<CudaBackend>();
}

}  // namespace mimic::backends
