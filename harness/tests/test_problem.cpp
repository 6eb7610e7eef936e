#include <catch2/catch.hpp>

#include <cstdio>
#include <numeric>

#include "harness/device_weights.hpp"
#include "harness/problem.hpp"
#include "harness/timing.hpp"
#include "reference/codebook.hpp"
#include "reference/error.hpp"
#include "reference/gemm_ref.hpp"
#include "reference/random.hpp"
#include "variants/format/awq_repack.hpp"

using namespace kbit;

TEST_CASE("routing gives every token top_k distinct experts", "[problem]") {
  for (const char* routing : {"uniform", "zipf"}) {
    for (int tokens : {1, 7, 64}) {
      const auto off = route_tokens(64, tokens, 8, routing, 1.2, 5);
      REQUIRE(off.size() == 65);
      CHECK(off.front() == 0);
      CHECK(off.back() == tokens * 8);
      for (std::size_t e = 0; e + 1 < off.size(); ++e) {
        CHECK(off[e + 1] >= off[e]);
        CHECK(off[e + 1] - off[e] <= tokens);  // distinct experts per token
      }
      CHECK(active_experts(off) >= std::min(64, 8));
    }
  }
  // zipf concentrates tokens on few experts
  const auto u = route_tokens(256, 64, 4, "uniform", 1.2, 1);
  const auto z = route_tokens(256, 64, 4, "zipf", 1.2, 1);
  CHECK(active_experts(z) < active_experts(u));
  CHECK_THROWS_WITH(route_tokens(8, 1, 9, "uniform", 1, 1), Catch::Contains("top_k = 9"));
  CHECK_THROWS_WITH(route_tokens(8, 1, 2, "round_robin", 1, 1), Catch::Contains("round_robin"));
  CHECK(route_tokens(64, 7, 8, "zipf", 1.2, 5) == route_tokens(64, 7, 8, "zipf", 1.2, 5));
}

TEST_CASE("grouped references equal per-expert dense references", "[problem]") {
  const auto hw = make_host_weights(40, 64, 3, codebook_nf(3), 4, 9);
  GemmDims d;
  d.N = 40, d.K_dim = 64, d.k_bits = 3, d.dtype = DType::bf16, d.num_experts = 4;
  d.expert_offsets = {0, 2, 2, 5, 6};  // expert 1 has no rows
  d.M = 6;
  const auto A = make_activations(6, 64, DType::bf16, 3);
  const auto ref = make_reference(hw, A, d, {0, 1, 2, 3, 4, 5});
  for (std::int64_t row = 0; row < 6; ++row) {
    const int e = row < 2 ? 0 : row < 5 ? 2 : 3;
    const auto g = reference_gemm(A.values.data(), 6, 64, hw.W.data() + e * 40 * 64, 40, {row});
    for (int n = 0; n < 40; ++n) CHECK(ref.C(row, n) == g.C(0, n));
  }
}

TEST_CASE("problem cost counts compressed weights of active experts, A and C", "[problem]") {
  GemmDims d;
  d.M = 4, d.N = 128, d.K_dim = 256, d.k_bits = 4, d.dtype = DType::f16;
  const auto c = problem_cost(d);
  CHECK(c.flops == 2.0 * 4 * 128 * 256);
  CHECK(c.bytes == 128 * 256 * (0.5 + 1.0 / 32) + 4 * (256 + 128) * 2);
  d.num_experts = 8;
  d.expert_offsets = {0, 0, 4, 4, 4, 4, 4, 4, 4};
  CHECK(problem_cost(d).bytes == c.bytes);  // one active expert
}

TEST_CASE("rotation copies exceed 4x L2 within the budget", "[problem]") {
  const std::int64_t L2 = 50 << 20;
  CHECK(rotation_copies(L2, L2, L2, std::int64_t(1) << 40) == 5);
  CHECK(rotation_copies(5 * L2, 5 * L2, L2, std::int64_t(1) << 40) == 1);
  CHECK(rotation_copies(1 << 20, 4 << 20, L2, 40 << 20) == 10);  // budget-bound
  CHECK(rotation_copies(0, 0, L2, 1) == 1);
}

TEST_CASE("a problem that needs more device memory than is free is refused with both figures",
          "[problem]") {
  // Llama3-70B gate/up (N 28672, K_dim 8192) at K = 4, fp16, M = 1Mi: A is 17 GB, C 60 GB.
  const std::vector<WeightLayout> cublas{{LayoutKind::dequantized, {}}};
  const DeviceMemoryNeed need =
      estimate_device_memory(28672, 8192, 4, DType::f16, 1, cublas, 1 << 20, false);
  const std::int64_t flat = 28672LL * 8192 / 32 * (4 * 4 + 1);
  CHECK(need.weights == flat + 28672LL * 8192 * 2);  // flat always, then the dequantized copy
  CHECK(need.io == (1LL << 20) * (8192 + 28672) * 2);
  CHECK(need.workspace >= (1LL << 20) * 28672 * 4);  // a split-K fp32 workspace of C
  CHECK(need.total() == need.weights + need.io + need.workspace);
  char total[32];
  std::snprintf(total, sizeof total, "%.2f", double(need.total()) / 1e9);
  const std::int64_t free_80gb = 80000000000LL;
  CHECK_THROWS_WITH(check_device_memory("llama3_70b.gate_up K=4 M=1048576", need, free_80gb),
                    Catch::Contains(std::string("llama3_70b.gate_up K=4 M=1048576 needs ~") +
                                    total + " GB of device memory, 80.00 GB are free"));
  // M = 1 fits with room to spare; a small free figure refuses it all the same.
  const DeviceMemoryNeed small =
      estimate_device_memory(28672, 8192, 4, DType::f16, 1, cublas, 1, false);
  CHECK_NOTHROW(check_device_memory("llama3_70b.gate_up K=4 M=1", small, free_80gb));
  CHECK_THROWS_WITH(check_device_memory("llama3_70b.gate_up K=4 M=1", small, 500000000),
                    Catch::Contains("M=1 needs ~") && Catch::Contains("0.50 GB are free"));
  // Experts multiply the weights; a scratch dequantized weight (dequant_cublas) counts too.
  const std::vector<WeightLayout> tiled{{LayoutKind::tiled, {64, 128}}};
  const DeviceMemoryNeed moe =
      estimate_device_memory(512, 2048, 4, DType::bf16, 64, tiled, 32, false);
  CHECK(moe.weights >= 2 * 64 * (512LL * 2048 / 32 * 17));  // flat and tiled, every expert
  CHECK(estimate_device_memory(512, 2048, 4, DType::bf16, 64, tiled, 32, true).workspace >=
        64 * 512LL * 2048 * 2);
}

TEST_CASE("percentiles interpolate between order statistics", "[problem]") {
  CHECK(percentile({3, 1, 2}, 50) == 2);
  CHECK(percentile({1, 2, 3, 4}, 50) == 2.5);
  CHECK(percentile({5}, 90) == 5);
  CHECK(percentile({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 10) == Approx(2));
}

TEST_CASE("AWQ host weights: the kbit weights' N(0,1) values, quantized by awq_quantize",
          "[problem][awq]") {
  const std::int64_t N = 264, K = 192;
  for (int g : {32, 64}) {
    INFO("G = " << g);
    const HostWeights hw = make_host_weights_awq(N, K, g, 1, 21);
    CHECK(hw.N == N);
    CHECK(hw.K_dim == K);
    CHECK(hw.k_bits == 4);
    CHECK(hw.experts == 1);
    CHECK(hw.awq_group == g);
    CHECK(hw.codebook.empty());
    CHECK(hw.q.packed.empty());
    REQUIRE(hw.awq.k_in == K);
    REQUIRE(hw.awq.n_out == N);
    CHECK(hw.awq.group == g);
    CHECK(hw.awq.qweight.size() == std::size_t(K * N / 8));
    CHECK(hw.awq.scales.size() == std::size_t(K / g * N));
    // W is the dequantized tensor, [N][K_dim], and the tensor is that of the kbit weights' data.
    CHECK(hw.W == awq_dequantize(hw.awq));
    const HostWeights kb = make_host_weights(N, K, 4, codebook_nf(4), 1, 21);
    const AwqTensor same = awq_quantize(random_normal(N * K, 21), N, K, g);
    CHECK(hw.awq.qweight == same.qweight);
    CHECK(hw.awq.qzeros == same.qzeros);
    CHECK(hw.awq.scales == same.scales);
    // Both quantize the same values: their dequantized weights are close, not equal.
    double diff = 0, norm = 0;
    for (std::size_t i = 0; i < hw.W.size(); ++i) {
      diff += double(hw.W[i] - kb.W[i]) * (hw.W[i] - kb.W[i]);
      norm += double(kb.W[i]) * kb.W[i];
    }
    CHECK(diff > 0);
    CHECK(diff < 0.05 * norm);
  }
  CHECK_THROWS_WITH(make_host_weights_awq(N, K, 128, 1, 1),
                    Catch::Contains("K_in = 192") && Catch::Contains("group size 128"));
  CHECK_THROWS_WITH(make_host_weights_awq(100, K, 32, 1, 1), Catch::Contains("N_out = 100"));
  CHECK_THROWS_WITH(make_host_weights_awq(N, K, 48, 1, 1), Catch::Contains("group size 48"));
  CHECK_THROWS_WITH(make_host_weights_awq(N, K, 32, 8, 1),
                    Catch::Contains("experts = 8") && Catch::Contains("dense only"));
}

TEST_CASE("AWQ problems: reference on the dequantized W, cost 4 + 20/G bits a weight",
          "[problem][awq]") {
  const HostWeights hw = make_host_weights_awq(24, 128, 64, 1, 5);
  GemmDims d;
  d.M = 3, d.N = 24, d.K_dim = 128, d.k_bits = 4, d.awq_group = 64, d.dtype = DType::f16;
  const auto A = make_activations(3, 128, DType::f16, 8);
  const auto ref = make_reference(hw, A, d, {0, 2});
  const GemmReference g = awq_gemm_ref(A.values.data(), 3, hw.awq, {0, 2});
  for (int r = 0; r < 2; ++r)
    for (int n = 0; n < 24; ++n) CHECK(ref.C(r, n) == g.C(r, n));

  GemmDims p;
  p.M = 4, p.N = 128, p.K_dim = 256, p.k_bits = 4, p.dtype = DType::f16;
  const double io = 4 * (256 + 128) * 2;
  for (int G : {32, 64, 128}) {
    INFO("G = " << G);
    p.awq_group = G;
    // Nibbles, then per (group, column) an fp16 scale and a 4-bit zero.
    const double weights = 128.0 * 256 / 2 + (256.0 / G) * 128 * (2 + 0.5);
    CHECK(problem_cost(p).bytes == weights + io);
    CHECK(problem_cost(p).bytes == 128.0 * 256 * (4 + 20.0 / G) / 8 + io);
    CHECK(problem_cost(p).flops == 2.0 * 4 * 128 * 256);
  }
  p.awq_group = 0;
  CHECK(problem_cost(p).bytes == 128 * 256 * (0.5 + 1.0 / 32) + io);  // kbit K = 4: 4.25 bits
}

TEST_CASE("AWQ layouts hold the tensors and awq_tile's words and meta, and no kbit layout",
          "[problem][awq]") {
  for (int g : {32, 64, 128}) {
    for (auto [N, K] : {std::pair<std::int64_t, std::int64_t>{264, 384}, {128, 128}, {8, 256},
                        {1000, 2176}}) {
      INFO("G = " << g << " N = " << N << " K_dim = " << K);
      const HostWeights hw = make_host_weights_awq(N, K, g, 1, 3);
      const AwqTiled t = awq_tile(hw.awq);
      CHECK(DeviceWeights::expert_bytes(hw, DType::f16, {LayoutKind::awq_tiled, {}}) ==
            std::int64_t(t.words.size() + t.meta.size()) * 4);
      CHECK(awq_tiled_bytes(N, K, g) == std::int64_t(t.words.size() + t.meta.size()) * 4);
      const gpu::AwqTileShape shape = gpu::awq_tile_shape(K, N, g);  // what the device build takes
      CHECK(awq_tiled_bytes(N, K, g) == (shape.tile_words() + shape.meta_words()) * 4);
      CHECK(DeviceWeights::expert_bytes(hw, DType::f16, {LayoutKind::awq, {}}) ==
            std::int64_t(hw.awq.qweight.size() * 4 + hw.awq.qzeros.size() * 4 +
                         hw.awq.scales.size() * 2));
      CHECK(DeviceWeights::expert_bytes(hw, DType::bf16, {LayoutKind::dequantized, {}}) ==
            N * K * 2);
    }
  }
  const HostWeights awq = make_host_weights_awq(264, 256, 128, 1, 3);
  CHECK_THROWS_WITH(DeviceWeights::expert_bytes(awq, DType::f16, {LayoutKind::tiled, {64, 128}}),
                    Catch::Contains("'tiled 64x128'") && Catch::Contains("awq_g128"));
  CHECK_THROWS_WITH(DeviceWeights::expert_bytes(awq, DType::f16, {LayoutKind::flat, {}}),
                    Catch::Contains("'flat'"));
  const HostWeights kbit = make_host_weights(264, 256, 4, codebook_nf(4), 1, 3);
  CHECK_THROWS_WITH(DeviceWeights::expert_bytes(kbit, DType::f16, {LayoutKind::awq, {}}),
                    Catch::Contains("'awq'") && Catch::Contains("kbit (K = 4)"));
}

TEST_CASE("device memory of an AWQ problem: its layouts only, no flat kbit copy",
          "[problem][awq]") {
  const std::vector<WeightLayout> both{{LayoutKind::dequantized, {}}, {LayoutKind::awq_tiled, {}}};
  const DeviceMemoryNeed need =
      estimate_device_memory(28672, 8192, 4, DType::f16, 1, both, 16, false, 128);
  CHECK(need.weights == 28672LL * 8192 * 2 + awq_tiled_bytes(28672, 8192, 128));
  const std::vector<WeightLayout> awq{{LayoutKind::awq, {}}};
  const std::int64_t groups = 8192 / 32;
  CHECK(estimate_device_memory(28672, 8192, 4, DType::f16, 1, awq, 16, false, 32).weights ==
        28672LL * 8192 / 2 + groups * 28672 / 8 * 4 + groups * 28672 * 2);
  // The same layouts for kbit weights add the flat copy.
  const std::vector<WeightLayout> deq{{LayoutKind::dequantized, {}}};
  CHECK(estimate_device_memory(28672, 8192, 4, DType::f16, 1, deq, 16, false).weights ==
        28672LL * 8192 / 32 * 17 + 28672LL * 8192 * 2);
}
