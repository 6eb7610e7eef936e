// Checked host entry points of the AWQ quantizers (awq_kernels.cu): the shape rules of
// reference/awq.hpp before any GPU work, then the launch, then one synchronization that reads
// back the kernels' error words and names the first bad element or overflowing group.
#include "variants/format/awq_kernels.hpp"

#include <string>

#include "reference/awq.hpp"
#include "reference/error.hpp"
#include "variants/common/cuda_check.hpp"
#include "variants/common/device_buffer.hpp"
#include "variants/format/awq_launch.hpp"

namespace kbit::gpu {
namespace {

void check_inputs(const char* who, DType in, const void* w, std::int64_t n, std::int64_t k_dim,
                  int group, const AwqOutputs& out) {
  if (in != DType::f16 && in != DType::f32)
    throw Error(std::string(who) + ": input dtype " + dtype_name(in) +
                " is not supported (fp16, fp32)");
  awq_check_shape(k_dim, n, group);
  if (!w || !out.qweight || !out.qzeros || !out.scales)
    throw Error(std::string(who) + ": a null input or output pointer");
}

// Runs `launch(errors)` with both error words set to all ones, then throws on what it found.
template <typename Launch>
void run_checked(const char* who, std::int64_t n, std::int64_t k_dim, int group,
                 cudaStream_t stream, Launch&& launch) {
  DeviceBuffer<unsigned long long> errors(2);
  KBIT_CUDA_CHECK(cudaMemsetAsync(errors.get(), 0xFF, 2 * sizeof(unsigned long long), stream));
  launch(errors.get());
  unsigned long long host[2];
  KBIT_CUDA_CHECK(
      cudaMemcpyAsync(host, errors.get(), sizeof(host), cudaMemcpyDeviceToHost, stream));
  KBIT_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (host[0] != ~0ull)
    throw Error(std::string(who) + ": w[n = " + std::to_string(host[0] / std::uint64_t(k_dim)) +
                "][k = " + std::to_string(host[0] % std::uint64_t(k_dim)) +
                "] is not finite; input must be finite");
  if (host[1] != ~0ull) {
    const std::uint64_t g = host[1] / std::uint64_t(n), col = host[1] % std::uint64_t(n);
    throw Error(std::string(who) + ": group " + std::to_string(g) + " (k " +
                std::to_string(g * group) + ".." + std::to_string(g * group + group - 1) +
                ") of column n = " + std::to_string(col) +
                " has a scale that overflows fp16 (max 65504)");
  }
}

}  // namespace

void awq_quantize(DType in, const void* w, std::int64_t n, std::int64_t k_dim, int group,
                  const AwqOutputs& out, cudaStream_t stream) {
  check_inputs("gpu::awq_quantize", in, w, n, k_dim, group, out);
  run_checked("gpu::awq_quantize", n, k_dim, group, stream, [&](unsigned long long* errors) {
    detail::launch_awq_fused(in, w, n, k_dim, group, out, errors, stream);
  });
}

std::int64_t awq_multipass_scratch_bytes(std::int64_t n, std::int64_t k_dim, int group) {
  return n * k_dim + (group > 0 ? k_dim / group : 0) * n;
}

void awq_quantize_multipass(DType in, const void* w, std::int64_t n, std::int64_t k_dim, int group,
                            const AwqOutputs& out, std::uint8_t* scratch, cudaStream_t stream) {
  check_inputs("gpu::awq_quantize_multipass", in, w, n, k_dim, group, out);
  if (!scratch) throw Error("gpu::awq_quantize_multipass: a null scratch buffer");
  run_checked("gpu::awq_quantize_multipass", n, k_dim, group, stream,
              [&](unsigned long long* errors) {
                detail::launch_awq_multipass(in, w, n, k_dim, group, out, scratch, errors, stream);
              });
}

}  // namespace kbit::gpu
