// Numbers given on the command line, checked as written before CLI11 converts them: a negative
// value for an unsigned option, nan, inf, a value that overflows its type or lies outside the
// option's range is refused (exit 2) with the value as given, never wrapped or clamped.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kbit {

// Each returns "" for a valid value, else why `text` is refused, naming it as given.
// An integer (decimal digits, an optional leading '-') in lo..hi.
std::string cli_integer_error(const std::string& text, std::int64_t lo, std::int64_t hi);
// An unsigned integer in 0..2^64 - 1 (a seed): a '-' is refused rather than wrapped.
std::string cli_unsigned_error(const std::string& text);
// A finite number in (lo, hi] (nan, inf and 1e999 are refused).
std::string cli_number_error(const std::string& text, double lo, double hi);

// Throws kbit::Error naming the flag and the value when `values` holds one twice.
void refuse_duplicates(const std::string& flag, const std::vector<int>& values);
void refuse_duplicates(const std::string& flag, const std::vector<std::int64_t>& values);

}  // namespace kbit
