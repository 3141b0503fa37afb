#include "backends/cuda/device_runtime.h"

#include "backends/cuda/cublas_loader.h"

#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>

#include "base/error.h"

namespace mimic::backends::cuda {
namespace {

class CudaAllocator final : public RawAllocator {
 public:
  explicit CudaAllocator(int ordinal) : ordinal_(ordinal) {}
  void* allocate(int64_t bytes) override {
    cudaSetDevice(ordinal_);
    void* ptr = nullptr;
    if (cudaMalloc(&ptr, static_cast<size_t>(bytes)) != cudaSuccess) {
      cudaGetLastError();  // clear the sticky-free error state of the failed allocation
      return nullptr;
    }
    return ptr;
  }
  void release(void* ptr) override {
    cudaSetDevice(ordinal_);
    cudaFree(ptr);
  }
  int64_t available_bytes() const override {
    size_t free_bytes = 0, total = 0;
    cudaSetDevice(ordinal_);
    if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) {
      cudaGetLastError();
      return -1;
    }
    return static_cast<int64_t>(free_bytes);
  }

 private:
  int ordinal_;
};

int attribute(cudaDeviceAttr attr, int ordinal) {
  int value = 0;
  if (cudaDeviceGetAttribute(&value, attr, ordinal) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return value;
}

GpuInfo query_gpu(int ordinal) {
  cudaDeviceProp prop{};
  check_cuda(cudaGetDeviceProperties(&prop, ordinal),
             fmt::format("cudaGetDeviceProperties({})", ordinal));
  GpuInfo g;
  g.ordinal = ordinal;
  g.name = prop.name;
  g.cc_major = prop.major;
  g.cc_minor = prop.minor;
  g.sm_count = prop.multiProcessorCount;
  g.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  g.bus_width_bits = prop.memoryBusWidth;
  g.sm_clock_hz = attribute(cudaDevAttrClockRate, ordinal) * 1e3;
  g.memory_clock_hz = attribute(cudaDevAttrMemoryClockRate, ordinal) * 1e3;
  g.peak = peak_flops(g.cc_major, g.cc_minor, g.sm_count, g.sm_clock_hz);
  g.memory_bytes_per_s = 2.0 * g.memory_clock_hz * g.bus_width_bits / 8.0;
  return g;
}

CudaStatus query_status() {
  CudaStatus s;
  cudaRuntimeGetVersion(&s.runtime_version);
  cudaDriverGetVersion(&s.driver_version);
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    s.unavailable_reason = unavailable_reason(cudaGetErrorName(e), cudaGetErrorString(e),
                                              s.driver_version, s.runtime_version);
    cudaGetLastError();
    return s;
  }
  if (count == 0) {
    s.unavailable_reason = "no CUDA device found (cudaGetDeviceCount returned 0)";
    return s;
  }
  for (int i = 0; i < count; ++i) s.gpus.push_back(query_gpu(i));
  return s;
}

}  // namespace

PeakFlops peak_flops(int cc_major, int cc_minor, int sm_count, double sm_clock_hz) {
  // Dense FMA per SM per clock: FP32 (CUDA cores), TF32 and FP16/BF16 (tensor cores).
  struct PerSm {
    double fp32, tf32, half;
  };
  static const std::map<int, PerSm> kPerSm = {{80, {64, 512, 1024}}, {90, {128, 1024, 2048}}};
  auto it = kPerSm.find(cc_major * 10 + cc_minor);
  if (it == kPerSm.end()) return {};
  double scale = 2.0 * sm_count * sm_clock_hz;
  return {it->second.fp32 * scale, it->second.tf32 * scale, it->second.half * scale};
}

std::string GpuInfo::description() const {
  return fmt::format("{}, sm_{}{}, {} SMs at {:.2f} GHz, {:.1f} GiB", name, cc_major, cc_minor,
                     sm_count, sm_clock_hz / 1e9, memory_bytes / 1073741824.0);
}

std::string GpuInfo::properties_json(int driver_version, int runtime_version) const {
  nlohmann::json j{{"name", name},
                   {"compute_capability", fmt::format("{}.{}", cc_major, cc_minor)},
                   {"sm_count", sm_count},
                   {"memory_bytes", memory_bytes},
                   {"sm_clock_hz", sm_clock_hz},
                   {"memory_bytes_per_s", memory_bytes_per_s},
                   {"peak_fp32_flops", peak.fp32},
                   {"peak_tf32_flops", peak.tf32},
                   {"peak_16bit_flops", peak.half},
                   {"driver", cuda_version_string(driver_version)},
                   {"runtime", cuda_version_string(runtime_version)}};
  return j.dump();
}

const CudaStatus& cuda_status() {
  static const CudaStatus status = query_status();
  return status;
}

std::string cuda_version_string(int version) {
  return fmt::format("{}.{}", version / 1000, (version % 1000) / 10);
}

std::string unavailable_reason(const std::string& error_name, const std::string& error_text,
                               int driver_version, int runtime_version) {
  std::string detail = fmt::format("{} [{}]", error_text, error_name);
  if (error_name == "cudaErrorInsufficientDriver" && driver_version == 0)
    return fmt::format("no NVIDIA driver is installed (CUDA runtime {}: {})",
                       cuda_version_string(runtime_version), detail);
  if (error_name == "cudaErrorInsufficientDriver")
    return fmt::format("the NVIDIA driver supports CUDA {}, this build needs CUDA {} ({})",
                       cuda_version_string(driver_version), cuda_version_string(runtime_version),
                       detail);
  if (error_name == "cudaErrorNoDevice") return fmt::format("no CUDA device found ({})", detail);
  return fmt::format("CUDA cannot be initialized: {}", detail);
}

void check_cuda(cudaError_t e, const std::string& what) {
  if (e == cudaSuccess) return;
  cudaGetLastError();
  throw RuntimeError(
      fmt::format("cuda: {}: {} [{}]", what, cudaGetErrorString(e), cudaGetErrorName(e)));
}

void check_cublas(cublasStatus_t s, const std::string& what) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  throw RuntimeError(fmt::format("cuda: {}: cuBLAS {}", what, cublas().status_string(s)));
}

DeviceContext& DeviceContext::get(int ordinal) {
  static std::mutex mutex;
  // Contexts live until the process exits (never destroyed: the CUDA runtime may be torn down
  // first).
  static auto* contexts = new std::map<int, DeviceContext*>();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = contexts->find(ordinal);
  if (it != contexts->end()) return *it->second;
  const CudaStatus& s = cuda_status();
  if (ordinal < 0 || ordinal >= static_cast<int>(s.gpus.size()))
    throw DeviceUnavailableError(fmt::format(
        "cuda:{} is unavailable: {}", ordinal,
        s.gpus.empty() ? s.unavailable_reason
                       : fmt::format("this machine has {} CUDA device(s)", s.gpus.size())));
  auto* ctx = new DeviceContext(s.gpus[ordinal]);
  contexts->emplace(ordinal, ctx);
  return *ctx;
}

DeviceContext::DeviceContext(const GpuInfo& info) : info_(info) {
  activate();
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  check_cublas(cublas().create(&blas_), "cublasCreate");
  check_cublas(cublas().set_stream(blas_, stream_), "cublasSetStream");
  raw_ = std::make_unique<CudaAllocator>(info.ordinal);
  pool_ = std::make_unique<MemoryPool>(*raw_);
}

DeviceContext::~DeviceContext() {
  pool_.reset();
  if (blas_) cublas().destroy(blas_);
  if (stream_) cudaStreamDestroy(stream_);
}

void DeviceContext::activate() const {
  check_cuda(cudaSetDevice(info_.ordinal), fmt::format("cudaSetDevice({})", info_.ordinal));
}

}  // namespace mimic::backends::cuda
