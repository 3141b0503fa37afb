// The CUDA runtime as the backend sees it: which GPUs exist (or why none can be used), their peak
// figures, and one context per GPU (one stream, one cuBLAS handle, the caching memory pool, and a
// mutex that serializes runs on that stream).
//
// Peak figures are computed from the device's SM count and maximum SM clock with per-SM dense
// throughputs of the architecture (NVIDIA A100 and H100 whitepapers): sm_80: 64 FP32 FMA, 512 TF32
// and 1024 FP16/BF16 tensor FMA per SM per clock; sm_90: 128, 1024 and 2048. Other architectures
// report 0 (unknown). NVIDIA's datasheet peaks use a lower boost clock for tensor cores (H100 SXM:
// 989 TFLOPS dense BF16 at 1.83 GHz), so these figures are upper bounds at the maximum clock.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/cuda/memory_pool.h"

namespace mimic::backends::cuda {

struct PeakFlops {
  double fp32 = 0, tf32 = 0, half = 0;  // flop/s (2 per FMA), dense; 0 = unknown architecture
};
PeakFlops peak_flops(int cc_major, int cc_minor, int sm_count, double sm_clock_hz);

struct GpuInfo {
  int ordinal = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0, sm_count = 0, bus_width_bits = 0;
  int64_t memory_bytes = 0;
  double sm_clock_hz = 0, memory_clock_hz = 0;
  PeakFlops peak;
  double memory_bytes_per_s = 0;  // 2 transfers per memory clock over the bus width
  std::string description() const;
  std::string properties_json(int driver_version, int runtime_version) const;
};

struct CudaStatus {
  int runtime_version = 0, driver_version = 0;
  std::string unavailable_reason;  // why no GPU can be used ("" when there is at least one)
  std::vector<GpuInfo> gpus;
};

// Queried once per process.
const CudaStatus& cuda_status();

// "13.0" from 13000.
std::string cuda_version_string(int version);
// The one-line reason for a failed device query (cudaGetDeviceCount's error).
std::string unavailable_reason(const std::string& error_name, const std::string& error_text,
                               int driver_version, int runtime_version);

// Throws RuntimeError "cuda: <what>: <error text> [<error name>]" unless `e` is cudaSuccess.
void check_cuda(cudaError_t e, const std::string& what);
void check_cublas(cublasStatus_t s, const std::string& what);

class DeviceContext {
 public:
  // The context of GPU `ordinal`, created on first use and kept for the process.
  static DeviceContext& get(int ordinal);
  ~DeviceContext();

  void activate() const;  // makes this GPU current for the calling thread
  const GpuInfo& info() const { return info_; }
  cudaStream_t stream() const { return stream_; }
  cublasHandle_t blas() const { return blas_; }
  MemoryPool& pool() { return *pool_; }
  std::mutex& run_mutex() { return run_mutex_; }

 private:
  explicit DeviceContext(const GpuInfo& info);

  GpuInfo info_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  std::unique_ptr<RawAllocator> raw_;
  std::unique_ptr<MemoryPool> pool_;
  std::mutex run_mutex_;
};

}  // namespace mimic::backends::cuda
