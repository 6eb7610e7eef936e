// TOML input (experiment configs, shape files, dispatch tables) parsed with a bound on its
// nesting; the files themselves are read by read_input_file (harness/input_file.hpp).
#pragma once
#include <string>

#include <toml++/toml.h>

namespace kbit {

// TOML text parsed, or kbit::Error "PATH:LINE: ..." (a syntax error, a key of more than
// kMaxTomlKeyParts dotted parts).
toml::table parse_toml(const std::string& text, const std::string& path);

}  // namespace kbit
