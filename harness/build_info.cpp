// query_build: the build's configure-time values (KBIT_* definitions, given by
// kbit_build_definitions in harness/CMakeLists.txt) and the source tree's git state.
#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "harness/device_info.hpp"

#ifndef KBIT_NVCC_VERSION
#define KBIT_NVCC_VERSION "unknown"
#endif
#ifndef KBIT_CUDA_ARCHS
#define KBIT_CUDA_ARCHS "unknown"
#endif
#ifndef KBIT_BUILD_TYPE
#define KBIT_BUILD_TYPE "unknown"
#endif
#ifndef KBIT_CXX_COMPILER
#define KBIT_CXX_COMPILER "unknown"
#endif

namespace kbit {

namespace {

std::string run_command(const std::string& cmd) {
  std::string out;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return out;
  std::array<char, 256> buf{};
  while (fgets(buf.data(), int(buf.size()), f)) out += buf.data();
  if (pclose(f) != 0) return "";
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

}  // namespace

BuildInfo query_build() {
  BuildInfo b;
  // safe.directory: the tree may belong to another user (a copied checkout on a GPU machine).
  const std::string git = "git -c safe.directory='*' -C '" + source_dir() + "' ";
  if (const char* env = std::getenv("KBIT_GIT_SHA"); env && *env) {
    // Set by whoever copied the tree (the GPU machine's copy may carry a stale .git): an
    // explicit sha wins over what git finds there.
    b.git_sha = env;
    const char* d = std::getenv("KBIT_GIT_DIRTY");
    b.dirty = d && std::string(d) == "1";
  } else if (b.git_sha = run_command(git + "rev-parse --short=12 HEAD 2>/dev/null");
             !b.git_sha.empty()) {
    b.dirty = !run_command(git + "status --porcelain --untracked-files=no 2>/dev/null").empty();
  } else {
    b.git_sha = "unknown";
  }
  b.nvcc_version = KBIT_NVCC_VERSION;
  b.cuda_architectures = KBIT_CUDA_ARCHS;
  b.build_type = KBIT_BUILD_TYPE;
  b.cxx_compiler = KBIT_CXX_COMPILER;
  b.cuda_flags = KBIT_CUDA_FLAGS;
  b.cxx_flags = KBIT_CXX_FLAGS;
  return b;
}

}  // namespace kbit
