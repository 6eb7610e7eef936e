// Rows of a table (the registry, the peers) selected by names or globs ("*gemv*"), in table order,
// each once. A pattern that matches no row is an error: `missing(pattern)` throws, naming it and
// the known rows.
#pragma once
#include <fnmatch.h>

#include <algorithm>
#include <string>
#include <vector>

namespace kbit {

template <typename Row, typename Missing>
std::vector<const Row*> match_rows(const std::vector<Row>& rows,
                                   const std::vector<std::string>& patterns, Missing&& missing) {
  std::vector<const Row*> out;
  for (const auto& p : patterns) {
    bool any = false;
    for (const auto& r : rows) {
      if (fnmatch(p.c_str(), std::string(r.name).c_str(), 0) != 0) continue;
      any = true;
      if (std::find(out.begin(), out.end(), &r) == out.end()) out.push_back(&r);
    }
    if (!any) missing(p);
  }
  std::sort(out.begin(), out.end());  // table order (the rows live in one vector)
  return out;
}

}  // namespace kbit
