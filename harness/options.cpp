#include "harness/options.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <limits>

#include "reference/error.hpp"

namespace kbit {
namespace {

bool given_twice(const std::vector<GivenOption>& given, const GivenOption& g) {
  return std::count_if(given.begin(), given.end(),
                       [&](const GivenOption& x) { return x.name == g.name; }) > 1;
}

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
    if (g.boolean && !spec->boolean)
      throw Error(at + "option " + g.name + " of " + std::string(row.name) + " = " +
                  (g.value ? "true" : "false") + " is not a boolean option; give an integer in " +
                  std::to_string(spec->min) + ".." + std::to_string(spec->max));
    if (g.value < spec->min || g.value > spec->max)
      throw Error(at + "option " + g.name + " of " + std::string(row.name) + " = " +
                  std::to_string(g.value) + " is outside " + std::to_string(spec->min) + ".." +
                  std::to_string(spec->max) + (spec->boolean ? " (a boolean)" : ""));
    const std::string rule = option_rule_error(*spec, g.value);
    if (!rule.empty())
      throw Error(at + "option " + g.name + " of " + std::string(row.name) + " = " +
                  std::to_string(g.value) + " " + rule);
    for (auto& [n, v] : o.values)
      if (n == g.name) {
        if (given_twice(given, g)) throw Error(at + "option " + g.name + " is given twice");
        v = g.value;
      }
  }
  // Rules across options: a nonzero value that needs another option nonzero.
  for (const OptionSpec& s : row.options) {
    if (s.needs.empty() || o.get(s) == 0) continue;
    const auto other = std::find_if(row.options.begin(), row.options.end(),
                                    [&](const OptionSpec& x) { return x.name == s.needs; });
    if (other != row.options.end() && o.get(*other) == 0) {
      const auto g = std::find_if(given.begin(), given.end(),
                                  [&](const GivenOption& x) { return x.name == s.name; });
      const std::string at = g == given.end() || g->where.empty() ? "" : g->where + ": ";
      throw Error(at + "option " + std::string(s.name) + " of " + std::string(row.name) + " = " +
                  std::to_string(o.get(s)) + " needs " + std::string(s.needs) + " > 0 (it is 0)");
    }
  }
  return o;
}

std::string option_rule_error(const OptionSpec& s, std::int64_t v) {
  if (s.multiple_of > 1 && v % s.multiple_of != 0)
    return "is not a multiple of " + std::to_string(s.multiple_of);
  if (s.power_of_two && v != 0 && (v < 0 || (v & (v - 1)) != 0)) return "is not a power of two";
  return "";
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
    g.boolean = true;
    return g;
  }
  // Digits after an optional '-' (no '+', spaces or hex), as every number of the command line.
  const std::size_t first = v[0] == '-' ? 1 : 0;
  const bool digits =
      v.size() > first && std::all_of(v.begin() + std::ptrdiff_t(first), v.end(),
                                      [](char ch) { return ch >= '0' && ch <= '9'; });
  if (!digits)
    throw Error("--option '" + flag + "': value '" + v + "' is not an integer, true or false");
  errno = 0;
  const long long x = std::strtoll(v.c_str(), nullptr, 10);
  if (errno == ERANGE)
    throw Error("--option '" + flag + "': value '" + v + "' is outside " +
                std::to_string(std::numeric_limits<std::int64_t>::min()) + ".." +
                std::to_string(std::numeric_limits<std::int64_t>::max()));
  g.value = x;
  return g;
}

std::vector<std::string> describe_options(const VariantRow& row) {
  std::vector<std::string> out;
  for (const OptionSpec& s : row.options) {
    std::string rules;
    if (s.multiple_of > 1) rules += ", a multiple of " + std::to_string(s.multiple_of);
    if (s.power_of_two) rules += s.min > 0 ? ", a power of two" : ", 0 or a power of two";
    if (!s.needs.empty()) rules += ", needs " + std::string(s.needs) + " > 0";
    out.push_back(std::string(s.name) + " (default " + std::to_string(s.default_value) + ", " +
                  std::to_string(s.min) + ".." + std::to_string(s.max) + rules +
                  "): " + std::string(s.why));
  }
  return out;
}

}  // namespace kbit
