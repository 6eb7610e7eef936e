// Programmatic dependent launch (sm_90+): a kernel launched with
// cudaLaunchAttributeProgrammaticStreamSerialization may start while the kernel before it in
// the stream is still running. What does not depend on that kernel (the weights, which no
// kernel writes) can be fetched at once; what does (the activations, C, a split-K workspace the
// previous launch cleans) must wait behind `wait()`. Without the launch attribute both
// instructions return at once, so a kernel can always contain them.
#pragma once

namespace kbit::dev::pdl {

// Blocks the calling thread until every prerequisite grid has completed and its memory
// operations are visible (griddepcontrol.wait). Each thread that reads or writes memory the
// previous kernel touches must execute it.
__device__ __forceinline__ void wait() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
}

// Lets the dependent grid be scheduled once every block of this grid has executed it or
// exited (griddepcontrol.launch_dependents); a hint, not a memory fence.
__device__ __forceinline__ void launch_dependents() {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

}  // namespace kbit::dev::pdl
