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

int current_device_sm() {
  static const int sm = [] {
    int dev = 0, major = 0, minor = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
      cudaGetLastError();  // clear the sticky "no device" error for later callers
      return 0;
    }
    return major * 10 + minor;
  }();
  return sm;
}

void require_compute_capability(int major, const char* who, const char* why) {
  const int sm = current_device_sm();
  if (sm < major * 10)
    throw Error(
        std::string(who) + ": needs compute capability " + std::to_string(major) + ".0 or newer (" +
        why + "); " +
        (sm == 0 ? std::string("no CUDA device")
                 : "this device is " + std::to_string(sm / 10) + "." + std::to_string(sm % 10)));
}

}  // namespace kbit
