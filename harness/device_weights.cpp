#include "harness/device_weights.hpp"

#include <algorithm>

#include "reference/error.hpp"
#include "variants/format/format_kernels.hpp"

namespace kbit {

std::int64_t DeviceWeights::expert_bytes(const HostWeights& hw, DType dtype,
                                         const WeightLayout& l) {
  switch (l.kind) {
    case LayoutKind::flat:
      return hw.expert_elems() / 32 * (hw.k_bits * 4 + 1);
    case LayoutKind::tiled: {
      const auto g = make_tiled_geometry(hw.N, hw.K_dim, hw.k_bits, l.tiles);
      return g.packed_words() * 4 + g.absmax_bytes();
    }
    case LayoutKind::dequantized:
      return hw.expert_elems() * std::int64_t(dtype_size(dtype));
  }
  return 0;
}

DeviceWeights::Stored DeviceWeights::build(const HostWeights& hw, DType dtype,
                                           const WeightLayout& l, const Stored* flat,
                                           cudaStream_t stream) {
  Stored s;
  s.layout = l;
  const std::int64_t E = hw.experts, elems = hw.expert_elems();
  switch (l.kind) {
    case LayoutKind::flat:
      s.expert_words = elems / 32 * hw.k_bits;
      s.expert_bytes = elems / 32;
      s.packed = DeviceBuffer<std::uint32_t>(hw.q.packed);
      s.absmax = DeviceBuffer<std::uint8_t>(hw.q.absmax_e4m4);
      break;
    case LayoutKind::tiled:
      s.geo = make_tiled_geometry(hw.N, hw.K_dim, hw.k_bits, l.tiles);
      s.expert_words = s.geo.packed_words();
      s.expert_bytes = s.geo.absmax_bytes();
      s.packed = DeviceBuffer<std::uint32_t>(std::size_t(E * s.expert_words));
      s.absmax = DeviceBuffer<std::uint8_t>(std::size_t(E * s.expert_bytes));
      for (std::int64_t e = 0; e < E; ++e) {
        gpu::repack(flat->packed.get() + e * flat->expert_words,
                    flat->absmax.get() + e * flat->expert_bytes, s.geo,
                    s.packed.get() + e * s.expert_words, s.absmax.get() + e * s.expert_bytes,
                    stream);
      }
      break;
    case LayoutKind::dequantized:
      s.expert_elems = elems;
      s.dequantized = DeviceBuffer<unsigned char>(std::size_t(E * elems) * dtype_size(dtype));
      gpu::dequantize(flat->packed.get(), flat->absmax.get(), AbsmaxStorage::e4m4, E * elems,
                      gpu::make_codebook_arg(hw.codebook, hw.k_bits), dtype, s.dequantized.get(),
                      stream);
      break;
  }
  return s;
}

DeviceWeights::Stored DeviceWeights::clone(const Stored& o, cudaStream_t stream) {
  Stored s;
  s.layout = o.layout;
  s.geo = o.geo;
  s.expert_words = o.expert_words;
  s.expert_bytes = o.expert_bytes;
  s.expert_elems = o.expert_elems;
  auto copy = [&](auto& dst, const auto& src) {
    using T = std::remove_pointer_t<decltype(src.get())>;
    dst = DeviceBuffer<T>(src.size());
    if (src.size())
      KBIT_CUDA_CHECK(
          cudaMemcpyAsync(dst.get(), src.get(), src.bytes(), cudaMemcpyDeviceToDevice, stream));
  };
  copy(s.packed, o.packed);
  copy(s.absmax, o.absmax);
  copy(s.dequantized, o.dequantized);
  return s;
}

DeviceWeights::DeviceWeights(const HostWeights& hw, DType dtype,
                             const std::vector<WeightLayout>& layouts, int copies,
                             cudaStream_t stream) {
  if (copies < 1)
    throw Error("DeviceWeights: copies = " + std::to_string(copies) + " must be at least 1");
  Copy first;
  const WeightLayout flat_layout{LayoutKind::flat, {}};
  first.emplace(layout_name(flat_layout), build(hw, dtype, flat_layout, nullptr, stream));
  const Stored* flat = &first.at(layout_name(flat_layout));
  for (const auto& l : layouts) {
    if (first.count(layout_name(l)) == 0)
      first.emplace(layout_name(l), build(hw, dtype, l, flat, stream));
  }
  copies_.push_back(std::move(first));
  for (int c = 1; c < copies; ++c) {
    Copy next;
    for (const auto& [name, s] : copies_.front()) {
      const bool needed = std::any_of(layouts.begin(), layouts.end(), [&](const WeightLayout& l) {
        return layout_name(l) == name;
      });
      if (needed) next.emplace(name, clone(s, stream));
    }
    copies_.push_back(std::move(next));
  }
  KBIT_CUDA_CHECK(cudaStreamSynchronize(stream));
}

WeightView DeviceWeights::view(const WeightLayout& l, int copy) const {
  const Copy& c = copies_.at(std::size_t(copy % copies()));
  const auto it = c.find(layout_name(l));
  if (it == c.end())
    throw Error("DeviceWeights: layout '" + layout_name(l) + "' was not built for this run");
  const Stored& s = it->second;
  WeightView v;
  v.layout = l;
  v.packed = s.packed.get();
  v.absmax = s.absmax.get();
  v.dequantized = s.dequantized.get();
  v.geo = s.geo;
  v.expert_words = s.expert_words;
  v.expert_bytes = s.expert_bytes;
  v.expert_elems = s.expert_elems;
  return v;
}

int rotation_copies(std::int64_t touched, std::int64_t per_copy, std::int64_t l2,
                    std::int64_t budget) {
  if (touched <= 0) return 1;
  const std::int64_t want = 4 * l2 / touched + 1;  // copies * touched > 4x L2
  const std::int64_t fit = per_copy > 0 ? std::max<std::int64_t>(1, budget / per_copy) : want;
  return int(std::max<std::int64_t>(1, std::min(want, fit)));
}

}  // namespace kbit
