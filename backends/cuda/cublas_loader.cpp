#include "backends/cuda/cublas_loader.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <mutex>
#include <string>

#include "base/error.h"

namespace mimic::backends::cuda {
namespace {

void* open_library(std::string& tried) {
  std::string name = fmt::format("libcublas.so.{}", CUBLAS_VER_MAJOR);
  std::string candidates[] = {
#ifdef MIMIC_CUDA_LIBRARY_DIR
      std::string(MIMIC_CUDA_LIBRARY_DIR) + "/" + name,
#endif
      name};
  for (const std::string& path : candidates) {
    if (void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
    const char* err = dlerror();
    tried += (tried.empty() ? "" : "; ") + (err ? std::string(err) : path);
  }
  return nullptr;
}

template <typename F>
void bind(void* lib, const char* symbol, F& out) {
  out = reinterpret_cast<F>(dlsym(lib, symbol));
  if (!out) throw RuntimeError(fmt::format("cuda: libcublas has no symbol {}", symbol));
}

CublasApi load() {
  std::string tried;
  void* lib = open_library(tried);
  if (!lib) throw RuntimeError(fmt::format("cuda: cannot load cuBLAS ({})", tried));
  CublasApi api{};
  bind(lib, "cublasCreate_v2", api.create);
  bind(lib, "cublasDestroy_v2", api.destroy);
  bind(lib, "cublasSetStream_v2", api.set_stream);
  bind(lib, "cublasGemmEx", api.gemm);
  bind(lib, "cublasGemmStridedBatchedEx", api.gemm_strided_batched);
  bind(lib, "cublasGetStatusString", api.status_string);
  return api;  // the library stays loaded for the process
}

}  // namespace

const CublasApi& cublas() {
  static std::once_flag once;
  static CublasApi api;
  static std::string error;
  std::call_once(once, [] {
    try {
      api = load();
    } catch (const Error& e) {
      error = e.what();
    }
  });
  if (!error.empty()) throw RuntimeError(error);
  return api;
}

}  // namespace mimic::backends::cuda
