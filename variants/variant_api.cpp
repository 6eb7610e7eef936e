#include "variants/variant_api.hpp"

namespace kbit {

const char* layout_kind_name(LayoutKind k) {
  switch (k) {
    case LayoutKind::flat:
      return "flat";
    case LayoutKind::tiled:
      return "tiled";
    case LayoutKind::dequantized:
      return "dequantized";
  }
  return "?";
}

std::string layout_name(const WeightLayout& l) {
  if (l.kind != LayoutKind::tiled) return layout_kind_name(l.kind);
  return "tiled " + std::to_string(l.tiles.tile_k) + "x" + std::to_string(l.tiles.tile_n);
}

}  // namespace kbit
