// Host-side CUDA error handling: every CUDA call and every launch is checked, and a failure
// becomes a kbit::CudaError naming the call, the error and the source line.
#pragma once
#include <cuda_runtime_api.h>

#include <string>

#include "reference/error.hpp"

namespace kbit {

class CudaError : public Error {
 public:
  CudaError(const std::string& what, cudaError_t code) : Error(what), code_(code) {}
  cudaError_t code() const { return code_; }

 private:
  cudaError_t code_;
};

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line);

// True when a CUDA device can be used. Any error from cudaGetDeviceCount (no driver, no
// device, insufficient driver) counts as "no device".
bool cuda_device_available();

// Compute capability x 10 of the current device, 0 when there is none (CPU-only machines: no
// variant runs there, so the registry refuses nothing for it). Read once.
int current_device_sm();

// Throws "<who>: needs compute capability <major>.0 or newer (<why>); this device is X.Y" when
// the current device is older or absent (a variant's setup, before it allocates anything).
void require_compute_capability(int major, const char* who, const char* why);

}  // namespace kbit

#define KBIT_CUDA_CHECK(call)                                         \
  do {                                                                \
    const cudaError_t kbit_err_ = (call);                             \
    if (kbit_err_ != cudaSuccess) {                                   \
      ::kbit::throw_cuda_error(kbit_err_, #call, __FILE__, __LINE__); \
    }                                                                 \
  } while (0)

// After every <<<...>>>: launch-configuration errors surface here, not at the next sync.
#define KBIT_CHECK_LAUNCH() KBIT_CUDA_CHECK(cudaGetLastError())
