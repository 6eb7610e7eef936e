// The tensor-map encoder's own checks run before the driver is asked, so they are testable
// without a GPU: each refusal names the value and its limit.
#include <catch2/catch.hpp>

#include <cstdint>

#include "variants/common/tensor_map.hpp"

using kbit::variants::encode_tensor_map;
using kbit::variants::TensorDim;

namespace {
alignas(16) unsigned char buffer[1 << 12];

void encode(const void* base, std::initializer_list<TensorDim> dims,
            CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_NONE) {
  (void)encode_tensor_map(base, CU_TENSOR_MAP_DATA_TYPE_UINT32, 4, dims, swizzle);
}
}  // namespace

TEST_CASE("tensor maps refuse what the TMA cannot describe, naming the value", "[variants]") {
  CHECK_THROWS_WITH(encode(buffer + 4, {{32, 0, 32}}), Catch::Contains("not 16-byte aligned"));
  CHECK_THROWS_WITH(
      encode(buffer, {{1, 0, 1}, {1, 16, 1}, {1, 16, 1}, {1, 16, 1}, {1, 16, 1}, {1, 16, 1}}),
      Catch::Contains("rank 6 is outside 1..5"));
  CHECK_THROWS_WITH(encode(buffer, {{0, 0, 1}}), Catch::Contains("dimension 0 extent 0"));
  CHECK_THROWS_WITH(encode(buffer, {{32, 0, 32}, {8, 128, 257}}),
                    Catch::Contains("dimension 1 box 257 is outside 1..256"));
  CHECK_THROWS_WITH(encode(buffer, {{32, 0, 32}, {8, 100, 1}}),
                    Catch::Contains("dimension 1 stride 100 B is not a multiple of 16"));
  CHECK_THROWS_WITH(encode(buffer, {{32, 0, 3}}),
                    Catch::Contains("inner row is 12 B, not a multiple of 16"));
  CHECK_THROWS_WITH(encode(buffer, {{64, 0, 64}}, CU_TENSOR_MAP_SWIZZLE_128B),
                    Catch::Contains("256 B, more than the 128 B"));
}
