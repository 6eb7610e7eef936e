#include "harness/cli_numbers.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "reference/error.hpp"

namespace kbit {
namespace {

std::string quoted(const std::string& text) {
  return "'" + text + "'";
}

// Digits only after an optional '-' (no '+', spaces, hex or exponent).
bool plain_integer(const std::string& t) {
  const std::size_t b = !t.empty() && t[0] == '-' ? 1 : 0;
  if (t.size() == b) return false;
  for (std::size_t i = b; i < t.size(); ++i)
    if (t[i] < '0' || t[i] > '9') return false;
  return true;
}

std::string g(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

template <typename T>
void refuse_twice(const std::string& flag, const std::vector<T>& values) {
  for (std::size_t i = 0; i < values.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (values[i] == values[j])
        throw Error(flag + " names " + std::to_string(values[i]) + " twice");
}

}  // namespace

std::string cli_integer_error(const std::string& text, std::int64_t lo, std::int64_t hi) {
  const std::string range = std::to_string(lo) + ".." + std::to_string(hi);
  if (!plain_integer(text)) return quoted(text) + " is not an integer (" + range + ")";
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno == ERANGE || v < lo || v > hi) return quoted(text) + " is outside " + range;
  return "";
}

std::string cli_unsigned_error(const std::string& text) {
  const std::string range = "0..18446744073709551615";
  if (!text.empty() && text[0] == '-' && plain_integer(text))
    return quoted(text) + " is negative; it must be in " + range;
  if (!plain_integer(text)) return quoted(text) + " is not an integer (" + range + ")";
  errno = 0;
  char* end = nullptr;
  std::strtoull(text.c_str(), &end, 10);
  if (errno == ERANGE) return quoted(text) + " is above " + range;
  return "";
}

std::string cli_number_error(const std::string& text, double lo, double hi) {
  const std::string range = "(" + g(lo) + ", " + g(hi) + "]";
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end == text.c_str() || *end != '\0') return quoted(text) + " is not a number";
  if (!std::isfinite(v) || (errno == ERANGE && std::fabs(v) == HUGE_VAL))
    return quoted(text) + " is not a finite number";
  if (!(v > lo && v <= hi)) return quoted(text) + " is outside " + range;
  return "";
}

void refuse_duplicates(const std::string& flag, const std::vector<int>& values) {
  refuse_twice(flag, values);
}
void refuse_duplicates(const std::string& flag, const std::vector<std::int64_t>& values) {
  refuse_twice(flag, values);
}

}  // namespace kbit
