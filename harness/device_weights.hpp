// The weights on the device in every layout the run's variants need, in `copies` copies so
// that L2-cold timing can rotate through more bytes than the L2 holds. kbit weights build flat,
// tiled and dequantized layouts; AWQ weights (HostWeights::awq_group > 0) awq, awq tiled and
// dequantized.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "harness/problem.hpp"
#include "variants/common/device_buffer.hpp"
#include "variants/variant_api.hpp"

namespace kbit {

class DeviceWeights {
 public:
  DeviceWeights(const HostWeights& hw, DType dtype, const std::vector<WeightLayout>& layouts,
                int copies, cudaStream_t stream);

  WeightView view(const WeightLayout& layout, int copy) const;
  int copies() const { return int(copies_.size()); }

  // Bytes of one expert's weights in `layout` (tiled padding included). Throws kbit::Error for
  // a layout of the other format (a kbit layout of AWQ weights, or the reverse).
  static std::int64_t expert_bytes(const HostWeights& hw, DType dtype, const WeightLayout& layout);

 private:
  struct Stored {
    WeightLayout layout;
    TiledGeometry geo;
    std::int64_t expert_words = 0, expert_bytes = 0, expert_elems = 0;
    DeviceBuffer<std::uint32_t> packed;
    DeviceBuffer<std::uint8_t> absmax;
    DeviceBuffer<unsigned char> dequantized;
    int awq_group = 0;
    DeviceBuffer<std::int32_t> awq_qweight, awq_qzeros;  // layout awq
    DeviceBuffer<std::uint16_t> awq_scales;
    DeviceBuffer<std::uint32_t> awq_tiles, awq_meta;  // layout awq tiled
  };
  using Copy = std::map<std::string, Stored>;
  static Stored build(const HostWeights& hw, DType dtype, const WeightLayout& layout,
                      const Stored* flat, cudaStream_t stream);
  static Stored clone(const Stored& s, cudaStream_t stream);

  std::vector<Copy> copies_;
};

// How many copies L2-cold timing needs: enough that the bytes one launch touches, times the
// copies, exceed 4x the L2; at most what `budget_bytes` holds (all copies of all layouts).
int rotation_copies(std::int64_t touched_bytes, std::int64_t bytes_per_copy, std::int64_t l2_bytes,
                    std::int64_t budget_bytes);

// Bytes of kbit::awq_tile's words and meta for an N x K_dim weight of group G, from the shape
// alone (reference/awq.hpp's tile constants): what the awq tiled layout occupies.
std::int64_t awq_tiled_bytes(std::int64_t N, std::int64_t K_dim, int group);

}  // namespace kbit
