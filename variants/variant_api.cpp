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

std::int64_t VariantOptions::get(const OptionSpec& spec) const {
  for (const auto& [n, v] : values)
    if (n == spec.name) return v;
  return spec.default_value;
}

std::string VariantOptions::describe() const {
  std::string out;
  for (const auto& [n, v] : values) out += (out.empty() ? "" : " ") + n + "=" + std::to_string(v);
  return out;
}

}  // namespace kbit
