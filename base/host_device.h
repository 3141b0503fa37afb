// MIMIC_HD marks a function that nvcc compiles for the GPU as well as for the host, so that the
// cuda backend's kernels and the host code share one definition (g++ sees a plain inline).
#pragma once

#ifdef __CUDACC__
#define MIMIC_HD __host__ __device__ __forceinline__
#else
#define MIMIC_HD inline
#endif
