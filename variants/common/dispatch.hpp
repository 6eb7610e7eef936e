// Host-side template dispatch: a runtime bit width or row count to a compile-time constant.
#pragma once
#include <string>
#include <type_traits>

#include "reference/error.hpp"

namespace kbit {

// fn(std::integral_constant<int, K>{}) for the runtime k in 2..5.
template <typename Fn>
decltype(auto) with_k_bits(int k, Fn&& fn) {
  switch (k) {
    case 2:
      return fn(std::integral_constant<int, 2>{});
    case 3:
      return fn(std::integral_constant<int, 3>{});
    case 4:
      return fn(std::integral_constant<int, 4>{});
    case 5:
      return fn(std::integral_constant<int, 5>{});
  }
  throw Error("K = " + std::to_string(k) + " is outside the supported range 2..5");
}

// fn(std::integral_constant<int, R>{}) for the runtime r in 1..4 (row blocks, GEMV rows).
template <typename Fn>
decltype(auto) with_rows_1_to_4(int r, Fn&& fn) {
  switch (r) {
    case 1:
      return fn(std::integral_constant<int, 1>{});
    case 2:
      return fn(std::integral_constant<int, 2>{});
    case 3:
      return fn(std::integral_constant<int, 3>{});
    case 4:
      return fn(std::integral_constant<int, 4>{});
  }
  throw Error("rows = " + std::to_string(r) + " is outside 1..4");
}

}  // namespace kbit
