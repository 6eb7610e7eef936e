// A registry row's options (VariantOptions::values) from what an experiment's [options.ROW]
// table or validate's --option flags gave: every name known to the row, every value in its
// range, checked before any GPU work; the defaults fill in the rest.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "harness/registry.hpp"

namespace kbit {

struct GivenOption {
  std::string name;
  std::int64_t value = 0;
  std::string where;     // for messages: "experiments/x.toml:12" or "--option"
  bool boolean = false;  // given as true / false: only a boolean option takes it
};

// Throws kbit::Error naming the place, the row, the value and the limit (or the known names), or
// the rule the value breaks (OptionSpec's multiple_of, power_of_two, needs), or a name given
// twice, or true / false given to an option that is not a boolean.
VariantOptions resolve_options(const VariantRow& row, const std::vector<GivenOption>& given,
                               SplitMode split = SplitMode::automatic);

// "" when v keeps the option's rules beyond its range, else which one it breaks ("is not a multiple
// of 16", "is not a power of two").
std::string option_rule_error(const OptionSpec& spec, std::int64_t v);

// "NAME=VALUE" (VALUE an integer of decimal digits with an optional leading '-', or true or
// false) as validate's --option takes it.
GivenOption parse_option_flag(const std::string& flag);

// "name (default, min..max): why" lines of a row's options, for `list --options`.
std::vector<std::string> describe_options(const VariantRow& row);

}  // namespace kbit
