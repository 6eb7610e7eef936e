#include "harness/device_info.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "harness/device_utils.hpp"
#include "variants/common/cuda_check.hpp"
#include "variants/common/device_buffer.hpp"

#ifndef KBIT_SOURCE_DIR
#define KBIT_SOURCE_DIR "."
#endif

namespace kbit {

std::string source_dir() {
  return KBIT_SOURCE_DIR;
}

std::string uuid_string(const cudaUUID_t& uuid) {
  std::string s = "GPU-";
  char hex[3];
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(uuid.bytes[i]));
    s += hex;
  }
  return s;
}

DeviceInfo query_device() {
  DeviceInfo d;
  KBIT_CUDA_CHECK(cudaGetDevice(&d.device));
  cudaDeviceProp p{};
  KBIT_CUDA_CHECK(cudaGetDeviceProperties(&p, d.device));
  d.name = p.name;
  d.uuid = uuid_string(p.uuid);
  d.sm_count = p.multiProcessorCount;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.l2_bytes = p.l2CacheSize;
  d.global_mem_bytes = std::int64_t(p.totalGlobalMem);
  d.smem_per_block_optin = int(p.sharedMemPerBlockOptin);
  d.smem_per_sm = int(p.sharedMemPerMultiprocessor);
  int khz = 0;
  KBIT_CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, d.device));
  d.max_sm_clock_mhz = khz / 1000.0;
  KBIT_CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, d.device));
  d.mem_clock_mhz = khz / 1000.0;
  KBIT_CUDA_CHECK(
      cudaDeviceGetAttribute(&d.mem_bus_bits, cudaDevAttrGlobalMemoryBusWidth, d.device));
  KBIT_CUDA_CHECK(cudaDriverGetVersion(&d.driver_version));
  KBIT_CUDA_CHECK(cudaRuntimeGetVersion(&d.runtime_version));
  return d;
}

Ceilings measure_ceilings(cudaStream_t stream) {
  Ceilings c;
  const std::size_t bytes = std::size_t(1) << 30;
  DeviceBuffer<unsigned char> src(bytes), dst(bytes);
  src.fill_bytes(0x5A, stream);
  const double ms = gpu::median_event_ms(stream, 3, 10, [&] {
    KBIT_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, stream));
  });
  c.copy_gb_per_s = 2.0 * double(bytes) / (ms * 1e-3) / 1e9;
  c.fp16_tflops = gpu::measure_tensor_tflops(8192, stream);
  return c;
}

nlohmann::json to_json(const DeviceInfo& d) {
  return {{"name", d.name},
          {"device", d.device},
          {"uuid", d.uuid},
          {"sm_count", d.sm_count},
          {"compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
          {"l2_bytes", d.l2_bytes},
          {"global_mem_bytes", d.global_mem_bytes},
          {"smem_per_block_optin", d.smem_per_block_optin},
          {"smem_per_sm", d.smem_per_sm},
          {"max_sm_clock_mhz", d.max_sm_clock_mhz},
          {"mem_clock_mhz", d.mem_clock_mhz},
          {"mem_bus_bits", d.mem_bus_bits},
          {"driver_version", d.driver_version},
          {"runtime_version", d.runtime_version}};
}

nlohmann::json to_json(const Ceilings& c) {
  return {{"copy_gb_per_s", c.copy_gb_per_s}, {"fp16_tflops", c.fp16_tflops}};
}

nlohmann::json to_json(const BuildInfo& b) {
  return {{"git_sha", b.git_sha},           {"dirty", b.dirty},
          {"nvcc_version", b.nvcc_version}, {"cuda_architectures", b.cuda_architectures},
          {"build_type", b.build_type},     {"cxx_compiler", b.cxx_compiler},
          {"cuda_flags", b.cuda_flags},     {"cxx_flags", b.cxx_flags}};
}

std::string sanitize_name(const std::string& s) {
  std::string r;
  for (char ch : s)
    r += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '.') ? ch : '_';
  return r;
}

}  // namespace kbit
