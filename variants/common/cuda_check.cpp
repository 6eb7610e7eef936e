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

}  // namespace kbit
