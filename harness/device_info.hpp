// What run.json records about the machine and the build, and the two ceilings every row's
// floor is measured against.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace kbit {

struct DeviceInfo {
  std::string name;
  int device = 0, sm_count = 0, cc_major = 0, cc_minor = 0;
  std::int64_t l2_bytes = 0, global_mem_bytes = 0;
  int smem_per_block_optin = 0, smem_per_sm = 0;
  double max_sm_clock_mhz = 0, mem_clock_mhz = 0;
  int mem_bus_bits = 0, driver_version = 0, runtime_version = 0;
  std::string uuid;  // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi -L prints it
};
DeviceInfo query_device();
// The UUID of cudaDeviceProp::uuid as nvidia-smi writes it (and CUDA_VISIBLE_DEVICES takes it).
std::string uuid_string(const cudaUUID_t& uuid);

struct Ceilings {
  double copy_gb_per_s = 0;  // device-to-device copy, bytes read + written per second
  double fp16_tflops = 0;    // dense fp16 tensor rate through cuBLAS (8192^3)
};
Ceilings measure_ceilings(cudaStream_t stream);

struct BuildInfo {
  std::string git_sha;  // 12 hex digits, or "unknown"
  bool dirty = false;
  std::string nvcc_version, cuda_architectures, build_type, cxx_compiler;
  std::string cuda_flags, cxx_flags;  // CMAKE_CUDA_FLAGS / CMAKE_CXX_FLAGS (knobs: -D...)
};
BuildInfo query_build();

nlohmann::json to_json(const DeviceInfo& d);
nlohmann::json to_json(const Ceilings& c);
nlohmann::json to_json(const BuildInfo& b);

// "NVIDIA H100 80GB HBM3" -> "NVIDIA_H100_80GB_HBM3": safe in a folder name.
std::string sanitize_name(const std::string& s);
// The source tree (for results/ and harness/plot.py), fixed at configure time.
std::string source_dir();

}  // namespace kbit
