#include "harness/toml_input.hpp"

#include <cstdint>

#include "harness/input_file.hpp"
#include "reference/error.hpp"

namespace kbit {
namespace {

// The most dotted parts of one key, counted over the text outside strings and comments: the
// dots between two separators ('=', '[', ']', '{', '}', ',', a line end). A float or a date has
// at most one. Throws naming the line of the first key beyond kMaxTomlKeyParts.
void check_key_parts(const std::string& s, const std::string& path) {
  std::uint32_t line = 1;
  int dots = 0;
  const std::size_t n = s.size();
  auto skip_string = [&](std::size_t& i, char q, bool multi) {
    i += multi ? 3 : 1;
    while (i < n) {
      const char c = s[i];
      if (c == '\n') {
        ++line;
        if (!multi) return;  // an unterminated string: the parser says so
      }
      if (c == '\\' && q == '"') {
        i += 2;
        continue;
      }
      if (c == q && (!multi || (i + 2 < n && s[i + 1] == q && s[i + 2] == q))) {
        i += multi ? 3 : 1;
        while (multi && i < n && s[i] == q) ++i;  // up to two quotes close a multi-line string
        return;
      }
      ++i;
    }
  };
  for (std::size_t i = 0; i < n;) {
    const char c = s[i];
    if (c == '"' || c == '\'') {
      skip_string(i, c, i + 2 < n && s[i + 1] == c && s[i + 2] == c);
      continue;
    }
    if (c == '#') {
      while (i < n && s[i] != '\n') ++i;
      continue;
    }
    if (c == '.') {
      if (++dots >= kMaxTomlKeyParts)
        throw Error(path + ":" + std::to_string(line) + ": a key of more than " +
                    std::to_string(kMaxTomlKeyParts) + " dotted parts (the limit)");
    } else if (c == '\n') {
      ++line;
      dots = 0;
    } else if (c == '=' || c == '[' || c == ']' || c == '{' || c == '}' || c == ',') {
      dots = 0;
    }
    ++i;
  }
}

}  // namespace

toml::table parse_toml(const std::string& text, const std::string& path) {
  check_key_parts(text, path);
  try {
    return toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    throw Error(path + ":" + std::to_string(e.source().begin.line) + ": " +
                std::string(e.description()));
  }
}

}  // namespace kbit
