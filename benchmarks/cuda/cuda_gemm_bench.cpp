// cuBLAS GEMM throughput on one GPU: square C = A B for fp32 (CUDA cores), TF32, bf16 and fp16
// (tensor cores, f32 accumulation), timed with CUDA events over repeated calls after a warm-up.
// Prints one JSON object: the GPU (name, compute capability, SMs, clocks, computed peaks) and
// per (type, size) the median time and TFLOP/s. Without a usable GPU it prints {"error": reason}
// and exits with status 2.
//   cuda_gemm_bench [--device N] [--sizes 1024,4096,8192] [--iterations 20]
#include <fmt/format.h>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backends/cuda/cublas_loader.h"
#include "backends/cuda/device_runtime.h"

namespace {

using namespace mimic::backends::cuda;

struct Mode {
  const char* name;
  cudaDataType_t type;
  cublasComputeType_t compute;
  size_t element_bytes;
};

const Mode kModes[] = {{"fp32", CUDA_R_32F, CUBLAS_COMPUTE_32F, 4},
                       {"tf32", CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4},
                       {"bf16", CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2},
                       {"fp16", CUDA_R_16F, CUBLAS_COMPUTE_32F, 2}};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Fills a buffer with small non-zero values (bit patterns valid in every type used here).
void fill(void* ptr, size_t bytes, cudaStream_t s) {
  check_cuda(cudaMemsetAsync(ptr, 0x3c, bytes, s), "cudaMemsetAsync");
}

nlohmann::json bench(DeviceContext& ctx, const Mode& mode, int64_t n, int iterations) {
  size_t bytes = static_cast<size_t>(n * n) * mode.element_bytes;
  void *a = nullptr, *b = nullptr, *c = nullptr;
  check_cuda(cudaMalloc(&a, bytes), "cudaMalloc");
  check_cuda(cudaMalloc(&b, bytes), "cudaMalloc");
  check_cuda(cudaMalloc(&c, bytes), "cudaMalloc");
  fill(a, bytes, ctx.stream());
  fill(b, bytes, ctx.stream());
  float alpha = 1, beta = 0;
  int dim = static_cast<int>(n);
  auto call = [&] {
    check_cublas(cublas().gemm(ctx.blas(), CUBLAS_OP_N, CUBLAS_OP_N, dim, dim, dim, &alpha, a,
                               mode.type, dim, b, mode.type, dim, &beta, c, mode.type, dim,
                               mode.compute, CUBLAS_GEMM_DEFAULT),
                 fmt::format("{} GEMM {}", mode.name, n));
  };
  for (int i = 0; i < 3; ++i) call();
  cudaEvent_t start, stop;
  check_cuda(cudaEventCreate(&start), "cudaEventCreate");
  check_cuda(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> seconds;
  for (int i = 0; i < iterations; ++i) {
    check_cuda(cudaEventRecord(start, ctx.stream()), "cudaEventRecord");
    call();
    check_cuda(cudaEventRecord(stop, ctx.stream()), "cudaEventRecord");
    check_cuda(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    seconds.push_back(ms * 1e-3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  double t = median(seconds), flops = 2.0 * n * n * n;
  const PeakFlops& peak = ctx.info().peak;
  double p = std::string(mode.name) == "fp32"   ? peak.fp32
             : std::string(mode.name) == "tf32" ? peak.tf32
                                                : peak.half;
  return {{"type", mode.name},
          {"n", n},
          {"median_seconds", t},
          {"tflops", flops / t / 1e12},
          {"peak_tflops_at_max_clock", p / 1e12},
          {"fraction_of_peak", p > 0 ? flops / t / p : 0.0},
          {"iterations", iterations}};
}

}  // namespace

int main(int argc, char** argv) {
  int device = 0, iterations = 20;
  std::vector<int64_t> sizes = {1024, 2048, 4096, 8192};
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string key = argv[i], value = argv[i + 1];
    if (key == "--device")
      device = std::stoi(value);
    else if (key == "--iterations")
      iterations = std::max(1, std::stoi(value));
    else if (key == "--sizes") {
      sizes.clear();
      for (size_t pos = 0; pos < value.size();) {
        size_t end = value.find(',', pos);
        sizes.push_back(std::stoll(value.substr(pos, end - pos)));
        pos = end == std::string::npos ? value.size() : end + 1;
      }
    } else {
      std::fprintf(stderr, "cuda_gemm_bench: unknown argument %s\n", key.c_str());
      return 1;
    }
  }
  const CudaStatus& st = cuda_status();
  if (device < 0 || device >= static_cast<int>(st.gpus.size())) {
    std::string why =
        st.gpus.empty() ? st.unavailable_reason : fmt::format("there is no cuda:{}", device);
    std::printf("%s\n", nlohmann::json{{"error", why}}.dump().c_str());
    return 2;
  }
  try {
    DeviceContext& ctx = DeviceContext::get(device);
    ctx.activate();
    const GpuInfo& g = ctx.info();
    nlohmann::json out{
        {"gpu", nlohmann::json::parse(g.properties_json(st.driver_version, st.runtime_version))},
        {"results", nlohmann::json::array()}};
    for (const Mode& m : kModes)
      for (int64_t n : sizes) out["results"].push_back(bench(ctx, m, n, iterations));
    std::printf("%s\n", out.dump(2).c_str());
  } catch (const std::exception& e) {
    std::printf("%s\n", nlohmann::json{{"error", e.what()}}.dump().c_str());
    return 1;
  }
  return 0;
}
