#include "variants/gemv_stripes.hpp"

#include <algorithm>
#include <string>

#include "reference/error.hpp"

namespace kbit::variants::gemv {

Stripes cut_stripes(const std::vector<OutTile>& tiles, int k_units, int per) {
  if (k_units < 1 || per < 1)
    throw Error("cut_stripes: k_units = " + std::to_string(k_units) +
                " and per = " + std::to_string(per) + " must be at least 1");
  const long long units = (long long)tiles.size() * k_units;
  Stripes s;
  s.grid = int((units + per - 1) / per);
  s.first.assign(std::size_t(s.grid) + 1, 0);
  std::vector<int> contributors(tiles.size(), 0);
  for (int b = 0; b < s.grid; ++b) {
    s.first[std::size_t(b)] = int(s.segs.size());
    for (long long u = (long long)b * per, end = std::min(units, (long long)(b + 1) * per);
         u < end;) {
      const int ti = int(u / k_units), u0 = int(u % k_units);
      const int u1 = int(std::min<long long>(k_units, u0 + (end - u)));
      const OutTile& o = tiles[std::size_t(ti)];
      s.segs.push_back({o.expert, o.row0, o.rows, o.nt, u0, u1, ti, 0});
      ++contributors[std::size_t(ti)];
      u += u1 - u0;
    }
  }
  s.first[std::size_t(s.grid)] = int(s.segs.size());
  for (auto& g : s.segs) g.contributors = contributors[std::size_t(g.tile_id)];
  for (int c : contributors) s.split_tiles += c > 1;
  return s;
}

int stripe_units(long long units, int k_units, int slots, SplitMode mode, int slack_pct) {
  if (mode == SplitMode::force_off) {
    const long long tiles = units / k_units, blocks = std::min<long long>(tiles, slots);
    return int((tiles + blocks - 1) / blocks) * k_units;
  }
  if (mode == SplitMode::force_on && k_units >= 2) return (k_units + 1) / 2;
  const int per = int(std::max<long long>(1, (units + slots - 1) / slots));
  const int limit = per + per * slack_pct / 100;
  for (int d = per; d <= std::min(limit, k_units); ++d)
    if (k_units % d == 0) return d;
  return per;
}

}  // namespace kbit::variants::gemv
