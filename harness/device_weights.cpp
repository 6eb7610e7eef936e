#include "harness/device_weights.hpp"

#include <algorithm>

#include "harness/weight_format.hpp"
#include "reference/awq.hpp"
#include "reference/error.hpp"
#include "reference/fragment.hpp"
#include "variants/common/cuda_check.hpp"
#include "variants/format/awq_repack.hpp"
#include "variants/format/format_kernels.hpp"

namespace kbit {

namespace {

bool awq_layout(const WeightLayout& l) {
  return l.kind == LayoutKind::awq || l.kind == LayoutKind::awq_tiled;
}

// A layout of the other format has nothing to be built from.
void check_layout_format(const HostWeights& hw, const WeightLayout& l) {
  if (hw.awq_group > 0 &&
      (l.kind == LayoutKind::flat || l.kind == LayoutKind::tiled || l.kind == LayoutKind::fragment))
    throw Error("DeviceWeights: layout '" + layout_name(l) + "' holds kbit weights; these are " +
                weight_format_name(hw.awq_group));
  if (hw.awq_group == 0 && awq_layout(l))
    throw Error("DeviceWeights: layout '" + layout_name(l) +
                "' holds AWQ weights; these are kbit (K = " + std::to_string(hw.k_bits) + ")");
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

std::int64_t awq_tiled_bytes(std::int64_t N, std::int64_t K_dim, int group) {
  const std::int64_t n_tiles = ceil_div(N, kAwqTileN), k_tiles = ceil_div(K_dim, kAwqTileK);
  const int span = awq_meta_tile_k(group);  // k of one meta tile: one or two groups
  const std::int64_t meta_tiles = ceil_div(K_dim, span);
  const std::int64_t words =
      k_tiles * n_tiles * kAwqTileWords + meta_tiles * n_tiles * kAwqTileN * (span / group);
  return words * 4;
}

std::int64_t DeviceWeights::expert_bytes(const HostWeights& hw, DType dtype,
                                         const WeightLayout& l) {
  check_layout_format(hw, l);
  switch (l.kind) {
    case LayoutKind::flat:
      return hw.expert_elems() / 32 * (hw.k_bits * 4 + 1);
    case LayoutKind::tiled: {
      const auto g = make_tiled_geometry(hw.N, hw.K_dim, hw.k_bits, l.tiles);
      return g.packed_words() * 4 + g.absmax_bytes();
    }
    case LayoutKind::fragment: {  // the tiled 64x128 layout's bytes, permuted
      const auto g = make_tiled_geometry(hw.N, hw.K_dim, hw.k_bits, {64, 128});
      return g.packed_words() * 4 + g.absmax_bytes();
    }
    case LayoutKind::dequantized:
      return hw.expert_elems() * std::int64_t(dtype_size(dtype));
    case LayoutKind::awq: {  // qweight, qzeros (int32, 8 nibbles each) and fp16 scales
      const std::int64_t groups = hw.K_dim / hw.awq_group;
      return hw.expert_elems() / 2 + groups * (hw.N / 8) * 4 + groups * hw.N * 2;
    }
    case LayoutKind::awq_tiled:
      return awq_tiled_bytes(hw.N, hw.K_dim, hw.awq_group);
  }
  return 0;
}

DeviceWeights::Stored DeviceWeights::build(const HostWeights& hw, DType dtype,
                                           const WeightLayout& l, const Stored* flat,
                                           cudaStream_t stream) {
  check_layout_format(hw, l);
  Stored s;
  s.layout = l;
  s.awq_group = awq_layout(l) ? hw.awq_group : 0;
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
    case LayoutKind::fragment: {  // the tiled 64x128 layout, then its tiles permuted
      if (hw.k_bits < FragmentTile::kMinBits || hw.k_bits > FragmentTile::kMaxBits)
        throw Error("DeviceWeights: the fragment layout is K = 2..5; these weights are K = " +
                    std::to_string(hw.k_bits));
      const Stored tiled = build(hw, dtype, {LayoutKind::tiled, {64, 128}}, flat, stream);
      s.geo = tiled.geo;
      s.expert_words = tiled.expert_words;
      s.expert_bytes = tiled.expert_bytes;
      s.packed = DeviceBuffer<std::uint32_t>(tiled.packed.size());
      s.absmax = DeviceBuffer<std::uint8_t>(tiled.absmax.size());
      gpu::fragment_order(hw.k_bits, tiled.packed.get(), tiled.absmax.get(),
                          E * s.geo.k_tiles() * s.geo.n_tiles(), s.packed.get(), s.absmax.get(),
                          stream);
      KBIT_CUDA_CHECK(cudaStreamSynchronize(stream));  // before `tiled` frees its buffers
      break;
    }
    case LayoutKind::dequantized:
      s.expert_elems = elems;
      if (hw.awq_group > 0) {  // AWQ: (q - zero) * scale rounded once to the dtype, on the host
        std::vector<unsigned char> host(std::size_t(elems) * dtype_size(dtype));
        awq_dequantize(hw.awq, dtype, host.data());
        s.dequantized = DeviceBuffer<unsigned char>(host);
        break;
      }
      s.dequantized = DeviceBuffer<unsigned char>(std::size_t(E * elems) * dtype_size(dtype));
      gpu::dequantize(flat->packed.get(), flat->absmax.get(), AbsmaxStorage::e4m4, E * elems,
                      gpu::make_codebook_arg(hw.codebook, hw.k_bits), dtype, s.dequantized.get(),
                      stream);
      break;
    case LayoutKind::awq:
      s.awq_qweight = DeviceBuffer<std::int32_t>(hw.awq.qweight);
      s.awq_qzeros = DeviceBuffer<std::int32_t>(hw.awq.qzeros);
      s.awq_scales = DeviceBuffer<std::uint16_t>(hw.awq.scales);
      break;
    case LayoutKind::awq_tiled: {  // the AutoAWQ tensors as they are, repacked on the device
      const AwqTensor& t = hw.awq;
      const gpu::AwqTileShape shape = gpu::awq_tile_shape(t.k_in, t.n_out, t.group);
      const DeviceBuffer<std::int32_t> qweight(t.qweight), qzeros(t.qzeros);
      const DeviceBuffer<std::uint16_t> scales(t.scales);
      s.awq_tiles = DeviceBuffer<std::uint32_t>(std::size_t(shape.tile_words()));
      s.awq_meta = DeviceBuffer<std::uint32_t>(std::size_t(shape.meta_words()));
      gpu::awq_tile(qweight.get(), qzeros.get(), scales.get(), t.k_in, t.n_out, t.group,
                    s.awq_tiles.get(), s.awq_meta.get(), stream);
      KBIT_CUDA_CHECK(cudaStreamSynchronize(stream));  // before the inputs free their buffers
      break;
    }
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
  s.awq_group = o.awq_group;
  copy(s.awq_qweight, o.awq_qweight);
  copy(s.awq_qzeros, o.awq_qzeros);
  copy(s.awq_scales, o.awq_scales);
  copy(s.awq_tiles, o.awq_tiles);
  copy(s.awq_meta, o.awq_meta);
  return s;
}

DeviceWeights::DeviceWeights(const HostWeights& hw, DType dtype,
                             const std::vector<WeightLayout>& layouts, int copies,
                             cudaStream_t stream) {
  if (copies < 1)
    throw Error("DeviceWeights: copies = " + std::to_string(copies) + " must be at least 1");
  if (hw.awq_group > 0 && hw.experts != 1)
    throw Error("DeviceWeights: AWQ weights of " + std::to_string(hw.experts) +
                " experts; AWQ problems are dense only");
  for (const auto& l : layouts) check_layout_format(hw, l);  // before anything is uploaded
  Copy first;
  const Stored* flat = nullptr;  // kbit: the other kbit layouts are made from it on the device
  if (hw.awq_group == 0) {
    const WeightLayout flat_layout{LayoutKind::flat, {}};
    first.emplace(layout_name(flat_layout), build(hw, dtype, flat_layout, nullptr, stream));
    flat = &first.at(layout_name(flat_layout));
  }
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
  v.awq_qweight = s.awq_qweight.get();
  v.awq_qzeros = s.awq_qzeros.get();
  v.awq_scales = s.awq_scales.get();
  v.awq_tiles = s.awq_tiles.get();
  v.awq_meta = s.awq_meta.get();
  v.awq_group = s.awq_group;
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
