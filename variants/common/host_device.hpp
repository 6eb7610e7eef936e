// Functions that both the device code and plain C++ (the plans, the CPU tests) compile: under
// nvcc they are __host__ __device__ (and forced inline where the kernels asked for it), under a
// host compiler plain (inline) functions.
#pragma once

#ifdef __CUDACC__
#define KBIT_HOST_DEVICE __host__ __device__
#define KBIT_HOST_DEVICE_INLINE __host__ __device__ __forceinline__
#else
#define KBIT_HOST_DEVICE
#define KBIT_HOST_DEVICE_INLINE inline
#endif
