// cuBLAS entry points, loaded with dlopen() the first time a GPU is used. Linking libcublas
// directly maps libcublasLt (~540 MB) into every process that links the backend, which costs
// ~0.2 s at startup for the CLI, the Python module and every test binary, GPU or not.
#pragma once

#include <cublas_v2.h>

namespace mimic::backends::cuda {

// The C entry points (cublas_api.h declares C++ overloads of the Ex functions too, hence the
// explicit types).
using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                    int, const void*, const void*, cudaDataType, int, const void*,
                                    cudaDataType, int, const void*, void*, cudaDataType, int,
                                    cublasComputeType_t, cublasGemmAlgo_t);
using GemmStridedBatchedExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t,
                                                  cublasOperation_t, int, int, int, const void*,
                                                  const void*, cudaDataType, int, long long,
                                                  const void*, cudaDataType, int, long long,
                                                  const void*, void*, cudaDataType, int, long long,
                                                  int, cublasComputeType_t, cublasGemmAlgo_t);

struct CublasApi {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasDestroy_v2) destroy;
  decltype(&cublasSetStream_v2) set_stream;
  GemmExFn gemm;
  GemmStridedBatchedExFn gemm_strided_batched;
  decltype(&cublasGetStatusString) status_string;
};

// Loads libcublas.so.<major> (the toolkit's library directory first, then the loader's search
// path) once; throws RuntimeError naming the library and dlerror() when it cannot.
const CublasApi& cublas();

}  // namespace mimic::backends::cuda
