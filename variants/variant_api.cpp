#include "variants/variant_api.hpp"

#include "reference/error.hpp"

namespace kbit {

const char* layout_kind_name(LayoutKind k) {
  switch (k) {
    case LayoutKind::flat:
      return "flat";
    case LayoutKind::tiled:
      return "tiled";
    case LayoutKind::dequantized:
      return "dequantized";
    case LayoutKind::awq:
      return "awq";
    case LayoutKind::awq_tiled:
      return "awq tiled";
    case LayoutKind::fragment:
      return "fragment";
  }
  return "?";
}

std::string layout_name(const WeightLayout& l) {
  if (l.kind != LayoutKind::tiled) return layout_kind_name(l.kind);
  return "tiled " + std::to_string(l.tiles.tile_k) + "x" + std::to_string(l.tiles.tile_n);
}

void require_tiled_args(const GemmArgs& g, const GemmDims& d, TileConfig tiles, const char* who) {
  if (g.w.layout.kind != LayoutKind::tiled || !(g.w.layout.tiles == tiles))
    throw Error(std::string(who) + ": needs the tiled " + std::to_string(tiles.tile_k) + "x" +
                std::to_string(tiles.tile_n) + " layout, got " + layout_name(g.w.layout));
  if (g.codebook.k_bits != d.k_bits)
    throw Error(std::string(who) + ": codebook has K = " + std::to_string(g.codebook.k_bits) +
                ", the problem K = " + std::to_string(d.k_bits));
}

namespace {

// The checks both problem classes share; M at least m_min (1 dense, 0 grouped: no rows at all).
void require_gemm_dims(const GemmDims& d, std::int64_t m_min, const std::string& w) {
  if (d.dtype == DType::f32) throw Error(w + ": dtype fp32 is not supported (fp16, bf16)");
  if (d.M < m_min)
    throw Error(w + ": M = " + std::to_string(d.M) + " must be at least " + std::to_string(m_min));
  if (d.N < 1) throw Error(w + ": N = " + std::to_string(d.N) + " must be at least 1");
  if (d.K_dim < 32 || d.K_dim % 32 != 0)
    throw Error(w + ": K_dim = " + std::to_string(d.K_dim) + " must be a positive multiple of 32");
  if (d.M * d.N >= (1ll << 31))
    throw Error(w + ": M*N = " + std::to_string(d.M * d.N) +
                " reaches the 32-bit indexing limit 2^31");
  if (d.K_dim >= (1 << 30))
    throw Error(w + ": K_dim = " + std::to_string(d.K_dim) + " reaches the limit 2^30");
}

}  // namespace

void require_dense_gemm_dims(const GemmDims& d, const char* who) {
  if (d.grouped()) throw Error(std::string(who) + ": grouped problems are not supported");
  require_gemm_dims(d, 1, who);
}

void require_grouped_gemm_dims(const GemmDims& d, const char* who) {
  if (!d.grouped()) throw Error(std::string(who) + ": needs a grouped (MoE) problem");
  require_gemm_dims(d, 0, who);
}

void require_awq_dims(const GemmDims& d, const char* who) {
  const std::string w(who);
  if (d.awq_group != 32 && d.awq_group != 64 && d.awq_group != 128)
    throw Error(w + ": the weights' AWQ group is " + std::to_string(d.awq_group) +
                " (0: kbit weights); this row reads AWQ weights of group 32, 64 or 128");
  require_dense_gemm_dims(d, who);
  if (d.dtype != DType::f16)
    throw Error(w + ": dtype " + dtype_name(d.dtype) +
                ": AWQ scales are fp16, so the activations must be fp16 too");
  if (d.N % 8 != 0)
    throw Error(w + ": N = " + std::to_string(d.N) +
                " is not a multiple of 8 (eight 4-bit columns share an AWQ word)");
  if (d.K_dim % d.awq_group != 0)
    throw Error(w + ": K_dim = " + std::to_string(d.K_dim) + " is not a multiple of the group " +
                std::to_string(d.awq_group));
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
