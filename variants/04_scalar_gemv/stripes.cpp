#include "variants/04_scalar_gemv/stripes.hpp"

#include <algorithm>
#include <string>

#include "reference/error.hpp"

namespace kbit::variants::gemv {

namespace {
void add_tiles(std::vector<OutTile>& out, int expert, int row0, int rows, int n_tiles) {
  for (int nt = 0; nt < n_tiles; ++nt) out.push_back({expert, row0, rows, nt});
}
}  // namespace

std::vector<OutTile> dense_tiles(int rows, int n_tiles) {
  std::vector<OutTile> tiles;
  add_tiles(tiles, 0, 0, rows, n_tiles);
  return tiles;
}

std::vector<OutTile> grouped_tiles(const std::vector<std::int64_t>& off, int num_experts,
                                   std::int64_t M, int n_tiles, int max_rows, const char* who) {
  const std::string w(who);
  if (off.size() != std::size_t(num_experts) + 1)
    throw Error(w + ": expert_offsets has " + std::to_string(off.size()) + " entries; " +
                std::to_string(num_experts) + " experts need " + std::to_string(num_experts + 1));
  if (off.front() != 0)
    throw Error(w + ": expert_offsets[0] = " + std::to_string(off.front()) + " must be 0");
  for (std::size_t e = 0; e + 1 < off.size(); ++e)
    if (off[e + 1] < off[e])
      throw Error(w + ": expert_offsets is not monotonic at expert " + std::to_string(e) + " (" +
                  std::to_string(off[e]) + " then " + std::to_string(off[e + 1]) + ")");
  if (off.back() > M)
    throw Error(w + ": expert_offsets ends at row " + std::to_string(off.back()) +
                ", past the end of A (" + std::to_string(M) + " rows)");
  std::vector<OutTile> tiles;
  for (int e = 0; e < num_experts; ++e)
    for (std::int64_t r = off[std::size_t(e)]; r < off[std::size_t(e) + 1]; r += max_rows)
      add_tiles(tiles, e, int(r),
                int(std::min<std::int64_t>(max_rows, off[std::size_t(e) + 1] - r)), n_tiles);
  return tiles;
}

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

int cluster_size(const Stripes& s, int max_cluster) {
  if (s.grid == 0 || s.segs.size() != std::size_t(s.grid)) return 1;  // a stripe spans tiles
  const int c = s.segs.front().contributors;
  if (c < 2 || c > max_cluster || s.grid % c != 0) return 1;
  for (int b = 0; b < s.grid; ++b) {
    const Segment& g = s.segs[std::size_t(b)];
    if (s.first[std::size_t(b)] != b || g.contributors != c || g.tile_id != b / c) return 1;
  }
  return c;
}

int max_windows_per_block(const Stripes& s, int window_units) {
  if (window_units < 1)
    throw Error("max_windows_per_block: window_units " + std::to_string(window_units) + " < 1");
  int most = 0;
  for (int b = 0; b < s.grid; ++b) {
    int windows = 0;
    for (int i = s.first[std::size_t(b)]; i < s.first[std::size_t(b) + 1]; ++i) {
      const Segment& g = s.segs[std::size_t(i)];
      windows += (g.u1 - g.u0 + window_units - 1) / window_units;
    }
    most = std::max(most, windows);
  }
  return most;
}

}  // namespace kbit::variants::gemv
