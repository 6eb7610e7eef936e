// compute-sanitizer racecheck against named barriers: a probe of the tool, not of a kernel.
// Two groups of 256 threads (the block's seventeenth warp leaves at once, as an idle producer
// warp does) each write a shared array, sync on their own named barrier and read another thread's
// part of it: correct in every mode. Before that, per mode:
//   0  nothing                                                       racecheck: 0 hazards
//   1  thread 0 spins on a flag, __syncwarp, bar.sync (the store id)  0 hazards
//   2  warp 0 bar.sync, warps 1..7 bar.arrive, on another id         RAW hazards (480-1568)
//   4  warp 0 spins together (a shuffle), bar.sync (the store id)    0 hazards
// (racecheck of CUDA 13.0 on an H200). Mode 2 is how variant 07's split-K contributors release
// their count (ws::FixedOwner): racecheck then reports RAW hazards on the staged store's tile
// later in the walk although every access there is ordered by a bar.sync of the whole group
// (F-064). A bar.arrive on the store barrier's own id instead would mix that barrier's phases.
// Built as build/harness/kbit-racecheck-probe (or by nvcc -arch=sm_90a); on a GPU machine:
//   for m in 0 1 2 4; do compute-sanitizer --tool racecheck --racecheck-report hazard \
//     --print-limit 1 build/harness/kbit-racecheck-probe $m; done
#include <cstdio>
#include <cstdlib>

__device__ __forceinline__ void sync_256(int id) {
  asm volatile("bar.sync %0, 256;" ::"r"(id) : "memory");
}
__device__ __forceinline__ void arrive_256(int id) {
  asm volatile("bar.arrive %0, 256;" ::"r"(id) : "memory");
}
__device__ __forceinline__ int load_acquire(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__global__ void probe(int mode, int* out, const int* flag) {
  __shared__ alignas(16) unsigned short s[2][256 * 8];  // read back 16 bytes a thread
  const int tid = int(threadIdx.x);
  if (tid >= 512) return;
  const int g = tid / 256, t = tid % 256, lane = t % 32;
  const int store_bar = 2 + g, release_bar = 4 + g;
  if (mode == 1) {
    if (t == 0)
      while (load_acquire(flag) != 1) __nanosleep(64);
    __syncwarp();
    sync_256(store_bar);
  } else if (mode == 2) {
    if (t < 32)
      sync_256(release_bar);
    else
      arrive_256(release_bar);
  } else if (mode == 4) {
    if (t < 32)
      while (__shfl_sync(0xffffffffu, lane == 0 ? load_acquire(flag) : 0, 0) != 1) __nanosleep(64);
    sync_256(store_bar);
  }
  for (int j = 0; j < 8; ++j) s[g][t * 8 + j] = static_cast<unsigned short>(t + j);
  sync_256(store_bar);
  const uint4 v = reinterpret_cast<const uint4*>(s[g])[(t + 190) % 256];
  out[blockIdx.x * 512 + tid] = int(v.x + v.y + v.z + v.w);
}

int main(int argc, char** argv) {
  char* end = nullptr;
  const long mode = argc == 2 ? std::strtol(argv[1], &end, 10) : -1;
  if (end == nullptr || *end != '\0' || (mode != 0 && mode != 1 && mode != 2 && mode != 4)) {
    std::fprintf(stderr, "usage: %s MODE (0, 1, 2 or 4; see the file's head)\n", argv[0]);
    return 2;
  }
  int *out = nullptr, *flag = nullptr;
  const int one = 1;
  if (cudaMalloc(&out, 4 * 512 * sizeof(int)) != cudaSuccess ||
      cudaMalloc(&flag, sizeof(int)) != cudaSuccess ||
      cudaMemcpy(flag, &one, sizeof(int), cudaMemcpyHostToDevice) != cudaSuccess) {
    std::fprintf(stderr, "racecheck_probe: no usable CUDA device\n");
    return 1;
  }
  probe<<<4, 544>>>(int(mode), out, flag);
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  std::printf("mode %ld: %s\n", mode, cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
