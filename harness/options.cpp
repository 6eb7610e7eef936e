#include "harness/options.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "reference/error.hpp"

namespace kbit {
namespace {

std::string known_names(const VariantRow& row) {
  std::string out;
  for (const OptionSpec& s : row.options) out += (out.empty() ? "" : ", ") + std::string(s.name);
  return out.empty() ? "none" : out;
}

}  // namespace

VariantOptions resolve_options(const VariantRow& row, const std::vector<GivenOption>& given,
                               SplitMode split) {
  VariantOptions o;
  o.split_k = split;
  for (const OptionSpec& s : row.options)
    o.values.emplace_back(std::string(s.name), s.default_value);
  for (const GivenOption& g : given) {
    const std::string at = g.where.empty() ? "" : g.where + ": ";
    auto spec = std::find_if(row.options.begin(), row.options.end(),
                             [&](const OptionSpec& s) { return s.name == g.name; });
    if (spec == row.options.end())
      throw Error(at + "option '" + g.name + "' is not an option of " + std::string(row.name) +
                  " (its options: " + known_names(row) + ")");
    if (g.value < spec->min || g.value > spec->max)
      throw Error(at + "option " + g.name + " of " + std::string(row.name) + " = " +
                  std::to_string(g.value) + " is outside " + std::to_string(spec->min) + ".." +
                  std::to_string(spec->max) + (spec->boolean ? " (a boolean)" : ""));
    for (auto& [n, v] : o.values)
      if (n == g.name) v = g.value;
  }
  return o;
}

GivenOption parse_option_flag(const std::string& flag) {
  const auto eq = flag.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == flag.size())
    throw Error("--option '" + flag + "' is not NAME=VALUE");
  GivenOption g;
  g.name = flag.substr(0, eq);
  g.where = "--option " + flag;
  const std::string v = flag.substr(eq + 1);
  if (v == "true" || v == "false") {
    g.value = v == "true";
    return g;
  }
  errno = 0;
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (errno != 0 || end == v.c_str() || *end != '\0')
    throw Error("--option '" + flag + "': value '" + v + "' is not an integer, true or false");
  g.value = x;
  return g;
}

std::vector<std::string> describe_options(const VariantRow& row) {
  std::vector<std::string> out;
  for (const OptionSpec& s : row.options)
    out.push_back(std::string(s.name) + " (default " + std::to_string(s.default_value) + ", " +
                  std::to_string(s.min) + ".." + std::to_string(s.max) +
                  "): " + std::string(s.why));
  return out;
}

}  // namespace kbit
