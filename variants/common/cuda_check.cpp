#include "variants/common/cuda_check.hpp"

namespace kbit {

void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line) {
  throw CudaError(std::string(call) + " failed: " + cudaGetErrorName(err) + " (" +
                      cudaGetErrorString(err) + ") at " + file + ":" + std::to_string(line),
                  err);
}

bool cuda_device_available() {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    cudaGetLastError();  // clear it: "no device" is an answer, not a failure
    return false;
  }
  return n > 0;
}

void require_compute_capability(int major, const char* who, const char* why) {
  int dev = 0, have_major = 0, have_minor = 0;
  KBIT_CUDA_CHECK(cudaGetDevice(&dev));
  KBIT_CUDA_CHECK(cudaDeviceGetAttribute(&have_major, cudaDevAttrComputeCapabilityMajor, dev));
  KBIT_CUDA_CHECK(cudaDeviceGetAttribute(&have_minor, cudaDevAttrComputeCapabilityMinor, dev));
  if (have_major < major)
    throw Error(std::string(who) + ": needs compute capability " + std::to_string(major) +
                ".0 or newer (" + why + "); this device is " + std::to_string(have_major) + "." +
                std::to_string(have_minor));
}

}  // namespace kbit
