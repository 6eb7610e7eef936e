// GPU format kernels against the CPU reference, bit for bit.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include <chrono>

#include "reference/awq.hpp"
#include "reference/codebook.hpp"
#include "reference/e4m4.hpp"
#include "reference/error.hpp"
#include "reference/fp16.hpp"
#include "reference/fragment.hpp"
#include "reference/quantize.hpp"
#include "reference/random.hpp"
#include "reference/tiled.hpp"
#include "variants/format/awq_repack.hpp"
#include "variants/format/format_kernels.hpp"
#include "variants/tests/awq_random.hpp"
#include "variants/tests/gpu_test_util.hpp"

using namespace kbit;

namespace {

// Random data with a spread of block scales: some blocks tiny (E4M4 subnormal codes), some
// saturating (absmax > 31), most ordinary.
std::vector<float> mixed_scale_data(std::int64_t n, std::uint64_t seed) {
  auto x = random_normal(n, seed);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t blk = i / 32;
    const float s = blk % 7 == 3 ? 1e-4f : blk % 11 == 5 ? 20.0f : blk % 13 == 1 ? 3e-6f : 1.0f;
    x[std::size_t(i)] *= s;
  }
  return x;
}

// The input as `t` bit patterns (or floats) and the float values those patterns hold.
std::vector<unsigned char> as_dtype(const std::vector<float>& x, DType t) {
  std::vector<unsigned char> bytes(x.size() * dtype_size(t));
  for (std::size_t i = 0; i < x.size(); ++i) store_from_float(t, bytes.data(), i, x[i]);
  return bytes;
}

std::vector<float> custom_codebook(int k) {
  // Asymmetric, unsorted, mostly positive: still a valid codebook.
  std::vector<float> cb;
  for (int i = 0; i < (1 << k); ++i) cb.push_back(float(std::fmod(0.37 * i * i + 0.11, 1.3) - 0.2));
  return cb;
}

}  // namespace

TEST_CASE("GPU quantize is bit-exact with the reference", "[gpu][format]") {
  KBIT_REQUIRE_GPU();
  const std::int64_t sizes[] = {1, 31, 32, 33, 1000, 4096 + 7, 1 << 18};
  for (int k = 2; k <= 5; ++k) {
    for (const std::vector<float>& cb : {codebook_nf(k), codebook_uniform(k), custom_codebook(k)}) {
      for (DType t : {DType::f32, DType::f16, DType::bf16}) {
        for (std::int64_t n : sizes) {
          INFO("K=" << k << " dtype " << dtype_name(t) << " n=" << n << " cb[1]=" << cb[1]);
          const auto x = mixed_scale_data(n, std::uint64_t(n * 31 + k));
          const auto host_in = as_dtype(x, t);
          const auto ref = quantize(t, host_in.data(), n, cb, k);
          DeviceBuffer<unsigned char> d_in(host_in);
          const std::size_t nb = std::size_t(ref.num_blocks());
          auto d_packed = test::poisoned<std::uint32_t>(nb * std::size_t(k));
          auto d_absmax = test::poisoned<float>(nb);
          auto d_e4m4 = test::poisoned<std::uint8_t>(nb);
          auto d_fp16 = test::poisoned<std::uint16_t>(nb);
          const std::int64_t sat =
              gpu::quantize(t, d_in.get(), n, cb, k,
                            {d_packed.get(), d_absmax.get(), d_e4m4.get(), d_fp16.get()}, nullptr);
          REQUIRE(d_packed.download() == ref.packed);
          REQUIRE(d_absmax.download() == ref.absmax);
          REQUIRE(d_e4m4.download() == ref.absmax_e4m4);
          REQUIRE(d_fp16.download() == ref.absmax_fp16);
          REQUIRE(sat == ref.saturated_blocks);
        }
      }
    }
  }
}

TEST_CASE("GPU quantize matches at decision boundaries (no fast math)", "[gpu][format]") {
  KBIT_REQUIRE_GPU();
  for (int k = 2; k <= 5; ++k) {
    const auto cb = codebook_nf(k);
    // Each block: absmax 1 (element 0) and midpoints between adjacent entries, nudged by
    // -2..+2 ulp, where one rounding more or less moves the index.
    std::vector<float> x;
    for (std::size_t i = 0; i + 1 < cb.size(); ++i) {
      const float mid = (cb[i] + cb[i + 1]) / 2;
      for (int d = -2; d <= 2; ++d) {
        if (x.size() % 32 == 0) x.push_back(1.0f);
        float v = mid;
        for (int step = 0; step < std::abs(d); ++step) v = std::nextafter(v, d < 0 ? -2.0f : 2.0f);
        x.push_back(v);
      }
    }
    // The same midpoints scaled by an absmax that is not a power of two (the division rounds).
    const std::size_t base = x.size();
    for (std::size_t i = 0; i < base; ++i) x.push_back(x[i] * 1.37f);
    const auto ref = quantize(x, cb, k);
    DeviceBuffer<float> d_in(x);
    auto d_packed = test::poisoned<std::uint32_t>(ref.packed.size());
    gpu::quantize(DType::f32, d_in.get(), std::int64_t(x.size()), cb, k, {d_packed.get()}, nullptr);
    CHECK(d_packed.download() == ref.packed);
  }
}

TEST_CASE("GPU quantize refuses non-finite input and writes nothing", "[gpu][format]") {
  KBIT_REQUIRE_GPU();
  auto x = random_normal(5000, 1);
  x[4321] = NAN;
  x[4500] = -INFINITY;
  DeviceBuffer<float> d_in(x);
  auto d_packed = test::poisoned<std::uint32_t>(std::size_t(num_blocks_for(5000) * 4));
  CHECK_THROWS_WITH(
      gpu::quantize(DType::f32, d_in.get(), 5000, codebook_nf(4), 4, {d_packed.get()}, nullptr),
      Catch::Contains("element 4321"));
  for (std::uint32_t w : d_packed.download()) REQUIRE(w == 0xFFFFFFFFu);
  CHECK_THROWS_WITH(
      gpu::quantize(DType::f32, d_in.get(), 10, codebook_nf(4), 5, {d_packed.get()}, nullptr),
      Catch::Contains("16 entries"));
}

TEST_CASE("GPU dequantize is bit-exact for every output type and absmax storage", "[gpu][format]") {
  KBIT_REQUIRE_GPU();
  for (int k = 2; k <= 5; ++k) {
    const auto cb = k == 3 ? custom_codebook(k) : codebook_nf(k);
    for (std::int64_t n :
         {std::int64_t(1), std::int64_t(37), std::int64_t(4096), std::int64_t(100003)}) {
      const auto x = mixed_scale_data(n, std::uint64_t(n + k));
      const auto q = quantize(x, cb, k);
      DeviceBuffer<std::uint32_t> d_packed(q.packed);
      DeviceBuffer<std::uint8_t> d_e4m4(q.absmax_e4m4);
      DeviceBuffer<std::uint16_t> d_fp16(q.absmax_fp16);
      DeviceBuffer<float> d_f32(q.absmax);
      for (AbsmaxStorage s : {AbsmaxStorage::e4m4, AbsmaxStorage::fp16, AbsmaxStorage::fp32}) {
        const void* abs_host =
            s == AbsmaxStorage::e4m4   ? static_cast<const void*>(q.absmax_e4m4.data())
            : s == AbsmaxStorage::fp16 ? static_cast<const void*>(q.absmax_fp16.data())
                                       : static_cast<const void*>(q.absmax.data());
        const void* abs_dev = s == AbsmaxStorage::e4m4   ? static_cast<const void*>(d_e4m4.get())
                              : s == AbsmaxStorage::fp16 ? static_cast<const void*>(d_fp16.get())
                                                         : static_cast<const void*>(d_f32.get());
        for (DType t : {DType::f32, DType::f16, DType::bf16}) {
          INFO("K=" << k << " n=" << n << " storage " << absmax_storage_name(s) << " out "
                    << dtype_name(t));
          std::vector<unsigned char> expect(std::size_t(n) * dtype_size(t));
          dequantize(q.packed.data(), abs_host, s, n, k, cb, t, expect.data());
          auto d_out = test::poisoned<unsigned char>(expect.size());
          gpu::dequantize(d_packed.get(), abs_dev, s, n, gpu::make_codebook_arg(cb, k), t,
                          d_out.get(), nullptr);
          KBIT_CUDA_CHECK(cudaDeviceSynchronize());
          REQUIRE(d_out.download() == expect);
        }
      }
    }
  }
}

TEST_CASE("GPU E4M4 encode matches the reference, boundaries and ties included", "[gpu][format]") {
  KBIT_REQUIRE_GPU();
  std::vector<float> v;
  for (int c = 0; c < 256; ++c) {
    const float d = e4m4_decode(std::uint8_t(c));
    v.push_back(d);
    if (c < 255) {
      const float mid = (d + e4m4_decode(std::uint8_t(c + 1))) / 2;  // exact tie
      v.push_back(mid);
      v.push_back(std::nextafter(mid, 0.0f));
      v.push_back(std::nextafter(mid, 100.0f));
    }
  }
  for (float f : {31.4f, 31.5f, 31.6f, 32.0f, 1e6f, 3e-6f, 1e-9f}) v.push_back(f);
  const auto r = random_normal(100000, 8);
  for (float f : r) v.push_back(std::fabs(f) * 4);
  std::vector<std::uint8_t> expect;
  std::int64_t sat = 0;
  for (float f : v) {
    bool s;
    expect.push_back(e4m4_encode(f, &s));
    sat += s;
  }
  DeviceBuffer<float> d_v(v);
  auto d_out = test::poisoned<std::uint8_t>(v.size());
  CHECK(gpu::encode_e4m4(d_v.get(), std::int64_t(v.size()), d_out.get(), nullptr) == sat);
  CHECK(d_out.download() == expect);
  v[17] = -1.0f;
  d_v.upload(v);
  CHECK_THROWS_WITH(gpu::encode_e4m4(d_v.get(), std::int64_t(v.size()), d_out.get(), nullptr),
                    Catch::Contains("absmax 17"));
}

TEST_CASE("GPU repack and unrepack are bit-exact, padding included", "[gpu][format]") {
  KBIT_REQUIRE_GPU();
  const struct { std::int64_t N, K_dim; } shapes[] = {{200, 96}, {1, 32}, {513, 4096}, {2048, 160}};
  for (int k = 2; k <= 5; ++k) {
    for (auto s : shapes) {
      const auto q =
          quantize(random_normal(s.N * s.K_dim, std::uint64_t(s.N + k)), codebook_nf(k), k);
      DeviceBuffer<std::uint32_t> d_packed(q.packed);
      DeviceBuffer<std::uint8_t> d_absmax(q.absmax_e4m4);
      for (TileConfig t : {TileConfig{64, 128}, TileConfig{32, 64}, TileConfig{128, 256}}) {
        INFO("K=" << k << " N=" << s.N << " K_dim=" << s.K_dim << " tiles " << t.tile_k << "x"
                  << t.tile_n);
        const auto ref = repack(q.packed.data(), q.absmax_e4m4.data(), s.N, s.K_dim, k, t);
        auto d_tp = test::poisoned<std::uint32_t>(ref.packed.size());
        auto d_ta = test::poisoned<std::uint8_t>(ref.absmax.size());
        gpu::repack(d_packed.get(), d_absmax.get(), ref.geo, d_tp.get(), d_ta.get(), nullptr);
        REQUIRE(d_tp.download() == ref.packed);
        REQUIRE(d_ta.download() == ref.absmax);
        auto d_fp = test::poisoned<std::uint32_t>(q.packed.size());
        auto d_fa = test::poisoned<std::uint8_t>(q.absmax_e4m4.size());
        gpu::unrepack(d_tp.get(), d_ta.get(), ref.geo, d_fp.get(), d_fa.get(), nullptr);
        REQUIRE(d_fp.download() == q.packed);
        REQUIRE(d_fa.download() == q.absmax_e4m4);
      }
    }
  }
}

TEST_CASE("GPU fragment order is bit-exact with the reference, padding included", "[gpu][format]") {
  KBIT_REQUIRE_GPU();
  const struct { std::int64_t N, K_dim; } shapes[] = {{200, 96}, {1, 32}, {513, 4096}, {128, 64}};
  for (int k : {2, 3, 4, 5})
    for (auto s : shapes) {
      INFO("K=" << k << " N=" << s.N << " K_dim=" << s.K_dim);
      const auto q =
          quantize(random_normal(s.N * s.K_dim, std::uint64_t(s.N * 7 + k)), codebook_nf(k), k);
      const auto tiled = repack(q.packed.data(), q.absmax_e4m4.data(), s.N, s.K_dim, k, {64, 128});
      const auto ref = fragment_order(tiled);
      DeviceBuffer<std::uint32_t> d_words(tiled.packed);
      DeviceBuffer<std::uint8_t> d_codes(tiled.absmax);
      auto d_out = test::poisoned<std::uint32_t>(ref.packed.size());
      auto d_out_codes = test::poisoned<std::uint8_t>(ref.absmax.size());
      gpu::fragment_order(k, d_words.get(), d_codes.get(),
                          tiled.geo.k_tiles() * tiled.geo.n_tiles(), d_out.get(), d_out_codes.get(),
                          nullptr);
      REQUIRE(d_out.download() == ref.packed);
      REQUIRE(d_out_codes.download() == ref.absmax);
    }
}

namespace {

// gpu::awq_tile of `a` into poisoned outputs, downloaded.
AwqTiled gpu_awq_tile(const AwqTensor& a) {
  const gpu::AwqTileShape s = gpu::awq_tile_shape(a.k_in, a.n_out, a.group);
  DeviceBuffer<std::int32_t> d_qweight(a.qweight), d_qzeros(a.qzeros);
  DeviceBuffer<std::uint16_t> d_scales(a.scales);
  auto d_words = test::poisoned<std::uint32_t>(std::size_t(s.tile_words()));
  auto d_meta = test::poisoned<std::uint32_t>(std::size_t(s.meta_words()));
  gpu::awq_tile(d_qweight.get(), d_qzeros.get(), d_scales.get(), a.k_in, a.n_out, a.group,
                d_words.get(), d_meta.get(), nullptr);
  AwqTiled o;
  o.words = d_words.download();
  o.meta = d_meta.download();
  return o;
}

}  // namespace

TEST_CASE("GPU AWQ tile repack is bit-exact with awq_tile, padding included",
          "[gpu][format][awq]") {
  KBIT_REQUIRE_GPU();
  // Tile multiples (128 columns x 64 k: {128, 64}) and shapes that are not, nor at G = 32 of the
  // two-group meta tile.
  const struct {
    std::int64_t n_out, k_in;
  } shapes[] = {{200, 96}, {264, 160}, {8, 2176}, {264, 2176}, {200, 640}, {128, 64}, {136, 384}};
  for (int g : {32, 64, 128})
    for (auto sh : shapes) {
      if (sh.k_in % g) continue;
      INFO("G = " << g << " N_out = " << sh.n_out << " K_in = " << sh.k_in);
      // Random words (every nibble, every fp16 pattern), and at one shape a quantized weight.
      const AwqTensor random = test::random_awq_tensor(sh.k_in, sh.n_out, g, std::uint64_t(g));
      const AwqTiled ref = awq_tile(random), got = gpu_awq_tile(random);
      REQUIRE(got.words == ref.words);
      REQUIRE(got.meta == ref.meta);
      if (sh.n_out == 264 && sh.k_in == 2176) {
        const AwqTensor q =
            awq_quantize(random_normal(sh.n_out * sh.k_in, 5), sh.n_out, sh.k_in, g);
        const AwqTiled qref = awq_tile(q), qgot = gpu_awq_tile(q);
        REQUIRE(qgot.words == qref.words);
        REQUIRE(qgot.meta == qref.meta);
      }
    }
}

TEST_CASE("GPU AWQ tile repack of a 28672 x 8192 layer: bit-exact, its time and GB/s",
          "[gpu][format][awq]") {
  KBIT_REQUIRE_GPU();
  const std::int64_t n_out = 28672, k_in = 8192;
  const int g = 128;
  const AwqTensor a = test::random_awq_tensor(k_in, n_out, g, 11);
  const gpu::AwqTileShape s = gpu::awq_tile_shape(k_in, n_out, g);
  DeviceBuffer<std::int32_t> d_qweight(a.qweight), d_qzeros(a.qzeros);
  DeviceBuffer<std::uint16_t> d_scales(a.scales);
  auto d_words = test::poisoned<std::uint32_t>(std::size_t(s.tile_words()));
  auto d_meta = test::poisoned<std::uint32_t>(std::size_t(s.meta_words()));
  auto repack = [&] {
    gpu::awq_tile(d_qweight.get(), d_qzeros.get(), d_scales.get(), k_in, n_out, g, d_words.get(),
                  d_meta.get(), nullptr);
  };
  repack();  // the checked run, and the warm-up
  KBIT_CUDA_CHECK(cudaDeviceSynchronize());
  const auto cpu_start = std::chrono::steady_clock::now();
  const AwqTiled ref = awq_tile(a);
  const double cpu_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - cpu_start).count();
  REQUIRE(d_words.download() == ref.words);
  REQUIRE(d_meta.download() == ref.meta);

  constexpr int kReps = 20;
  cudaEvent_t start, stop;
  KBIT_CUDA_CHECK(cudaEventCreate(&start));
  KBIT_CUDA_CHECK(cudaEventCreate(&stop));
  KBIT_CUDA_CHECK(cudaEventRecord(start, nullptr));
  for (int r = 0; r < kReps; ++r) repack();
  KBIT_CUDA_CHECK(cudaEventRecord(stop, nullptr));
  KBIT_CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  KBIT_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  KBIT_CUDA_CHECK(cudaEventDestroy(start));
  KBIT_CUDA_CHECK(cudaEventDestroy(stop));
  const double us = 1e3 * ms / kReps;
  const double bytes = double(d_qweight.bytes() + d_qzeros.bytes() + d_scales.bytes() +
                              d_words.bytes() + d_meta.bytes());  // read + written
  WARN("gpu::awq_tile N_out = " << n_out << ", K_in = " << k_in << ", G = " << g << ": " << us
                                << " us a repack (mean of " << kReps << "), " << bytes / 1e6
                                << " MB read + written, " << bytes / (us * 1e3)
                                << " GB/s; the CPU awq_tile: " << cpu_s << " s");
  CHECK(us > 0.0);
}
