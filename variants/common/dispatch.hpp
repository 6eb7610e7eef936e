// Host-side template dispatch: a runtime bit width or row count to a compile-time constant.
#pragma once
#include <string>
#include <type_traits>
#include <utility>

#include "reference/error.hpp"

namespace kbit {

// fn(std::integral_constant<int, V>{}) for the first V of Vs equal to the runtime v; throws
// kbit::Error(refusal()) when none is (the message is built only then).
template <int V, int... Rest, typename Fn, typename Refusal>
decltype(auto) with_one_of(int v, Fn&& fn, Refusal&& refusal) {
  if (v == V) return fn(std::integral_constant<int, V>{});
  if constexpr (sizeof...(Rest) > 0)
    return with_one_of<Rest...>(v, std::forward<Fn>(fn), std::forward<Refusal>(refusal));
  else
    throw Error(refusal());
}

// fn(std::integral_constant<int, K>{}) for the runtime k in 2..5.
template <typename Fn>
decltype(auto) with_k_bits(int k, Fn&& fn) {
  return with_one_of<2, 3, 4, 5>(k, std::forward<Fn>(fn), [&] {
    return "K = " + std::to_string(k) + " is outside the supported range 2..5";
  });
}

// fn(std::integral_constant<int, R>{}) for the runtime r in 1..4 (row blocks, GEMV rows).
template <typename Fn>
decltype(auto) with_rows_1_to_4(int r, Fn&& fn) {
  return with_one_of<1, 2, 3, 4>(
      r, std::forward<Fn>(fn), [&] { return "rows = " + std::to_string(r) + " is outside 1..4"; });
}

}  // namespace kbit
