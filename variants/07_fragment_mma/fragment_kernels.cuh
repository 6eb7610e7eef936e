// fragment_mma's compiled kernels of one K (2..5): the own kernel (own_kernel.cuh) or the
// shared mainloop (variants/hopper/mainloop.cuh) over FragmentWeightsT<K, .>. Each K's kernels
// are instantiated in a translation unit of their own (fragment_kernels_k{2,3,4,5}.cu), so that a
// build compiles them in parallel.
#pragma once
#include "variants/07_fragment_mma/fragment_mma.hpp"
#include "variants/hopper/launcher.cuh"

namespace kbit::variants::fragment {

// The kernel of a choice at K (no GPU call: its address and shape); throws where none exists.
template <int K>
ws::Kernel fragment_mma_kernel_k(const FragmentMmaChoice& c, DType t);

extern template ws::Kernel fragment_mma_kernel_k<2>(const FragmentMmaChoice&, DType);
extern template ws::Kernel fragment_mma_kernel_k<3>(const FragmentMmaChoice&, DType);
extern template ws::Kernel fragment_mma_kernel_k<4>(const FragmentMmaChoice&, DType);
extern template ws::Kernel fragment_mma_kernel_k<5>(const FragmentMmaChoice&, DType);

}  // namespace kbit::variants::fragment
