// fragment_mma's K = 5 kernels (fragment_kernels.cuh).
#include "variants/07_fragment_mma/fragment_kernels_impl.cuh"

namespace kbit::variants::fragment {

template ws::Kernel fragment_mma_kernel_k<5>(const FragmentMmaChoice&, DType);

}  // namespace kbit::variants::fragment
