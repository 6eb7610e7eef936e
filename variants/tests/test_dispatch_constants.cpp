// The host's runtime-to-template dispatch (variants/common/dispatch.hpp): every supported value
// reaches its constant, and a value outside the set is refused with the value named.
#include <catch2/catch.hpp>

#include "reference/error.hpp"
#include "variants/common/dispatch.hpp"

TEST_CASE("with_k_bits and with_rows_1_to_4 pass each value as its constant", "[dispatch]") {
  for (int k = 2; k <= 5; ++k)
    CHECK(kbit::with_k_bits(k, [](auto c) { return decltype(c)::value; }) == k);
  for (int r = 1; r <= 4; ++r)
    CHECK(kbit::with_rows_1_to_4(r, [](auto c) { return 10 * decltype(c)::value; }) == 10 * r);
  CHECK(kbit::with_one_of<16, 32, 256>(
            256, [](auto c) { return decltype(c)::value; }, [] { return std::string("never"); }) ==
        256);
}

TEST_CASE("a value outside the set is refused, naming it", "[dispatch]") {
  auto id = [](auto c) { return decltype(c)::value; };
  CHECK_THROWS_WITH(kbit::with_k_bits(6, id), "K = 6 is outside the supported range 2..5");
  CHECK_THROWS_WITH(kbit::with_k_bits(1, id), "K = 1 is outside the supported range 2..5");
  CHECK_THROWS_WITH(kbit::with_rows_1_to_4(0, id), "rows = 0 is outside 1..4");
  auto refuse_24 = [] { return std::string("24 refused"); };
  CHECK_THROWS_WITH((kbit::with_one_of<16, 32>(24, id, refuse_24)), "24 refused");
}
