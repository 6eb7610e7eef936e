// CPU: fragment_mma's setup refuses what it cannot run before any GPU work, naming the value and
// the limit (the GPU tests in harness/tests/test_variants_gpu.cpp run what it accepts).
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "reference/error.hpp"
#include "variants/07_fragment_mma/fragment_mma.hpp"
#include "variants/format/format_kernels.hpp"
#include "variants/variant_api.hpp"

using namespace kbit;

namespace {

// The layer of the refusal and option tests: GLM-4.7's shared gate/up (80 x 32 k-tiles), short
// walks at 32..128 tokens like a 256 x 256 layer, but above the small-layer rule's 12 k-tiles an
// SM, so that every M takes the token tile of its own.
constexpr std::int64_t kN = 10240, kK = 2048;

GemmDims dense(std::int64_t M, std::int64_t N, std::int64_t K_dim, int k_bits) {
  GemmDims d;
  d.M = M, d.N = N, d.K_dim = K_dim, d.k_bits = k_bits, d.dtype = DType::f16;
  return d;
}

// An AWQ problem of group G (defined below, beside the AWQ tests).
GemmDims awq_dense(std::int64_t M, std::int64_t N, std::int64_t K_dim, int group);

// Options by name, as a config's [options.fragment_mma] table gives them.
VariantOptions with(std::initializer_list<std::pair<const char*, std::int64_t>> kv) {
  VariantOptions o;
  for (const auto& [k, v] : kv) o.values.emplace_back(k, v);
  return o;
}

// Checks that fragment_mma's setup refuses M tokens on the kN x kK layer with options o, its
// message holding every one of parts.
void check_refused(std::int64_t M, const VariantOptions& o,
                   std::initializer_list<const char*> parts) {
  INFO("M = " << M);
  try {
    (void)variants::fragment_mma_setup(dense(M, kN, kK, 4), o);
    FAIL("accepted");
  } catch (const Error& e) {
    for (const char* part : parts) CHECK_THAT(e.what(), Catch::Contains(part));
  }
}

}  // namespace

TEST_CASE("fragment_mma refuses other widths and shapes before any GPU work", "[variants]") {
  using variants::fragment_mma_setup;
  for (int k : {1, 6, 8})
    CHECK_THROWS_WITH(fragment_mma_setup(dense(16, kN, kK, k), {}),
                      Catch::Contains("K = " + std::to_string(k)) &&
                          Catch::Contains("fragment-order layout is K = 2..5"));
  for (int k : {2, 3, 4, 5})  // the choice itself (the setup then needs a GPU)
    CHECK(variants::fragment_mma_choose(dense(16, kN, kK, k), {}, 132).k_bits == k);
  CHECK_THROWS_WITH(fragment_mma_setup(dense(16, 256, 100, 4), {}),
                    Catch::Contains("K_dim = 100") && Catch::Contains("multiple of 32"));
  GemmDims moe = dense(16, kN, kK, 4);
  moe.num_experts = 2;
  moe.expert_offsets = {0, 8, 16};
  CHECK_THROWS(fragment_mma_setup(moe, {}));
}

TEST_CASE("fragment_mma at K = 5 chooses what fits beside its 128 KB table and refuses the rest",
          "[variants]") {
  using variants::fragment_mma_choose;
  const auto llama = [](std::int64_t m) { return dense(m, 28672, 8192, 5); };
  // mma.sync at 8 and 16 tokens: 3 pipelines (4 leave no two stages each), two row blocks a warp.
  for (std::int64_t m : {1, 8, 16}) {
    const auto c = fragment_mma_choose(llama(m), {}, 132);
    CHECK(c.k_bits == 5);
    CHECK(c.pipelines == 3);
    CHECK(c.row_blocks == 2);
    CHECK(c.k_tiles == 2);
    CHECK(variants::fragment_mma_kernel_shape(c, DType::f16).stages == 2);
  }
  // 32 tokens: 3 pipelines of one warpgroup with 1 k-tile a stage (2 leave one stage each).
  const auto c32 = fragment_mma_choose(llama(32), {}, 132);
  CHECK(c32.wgmma);
  CHECK(c32.pipelines == 3);
  CHECK(c32.k_tiles == 1);
  // 128 tokens on 128-row tiles: one pipeline of 1 k-tile a stage (4 stages; 2 k-tiles would
  // leave 2), where K = 4 keeps 2 (3 stages).
  const VariantOptions rows128 = with({{"tile_rows", 128}});
  const auto c128 = fragment_mma_choose(llama(128), rows128, 132);
  CHECK(c128.pipelines == 1);
  CHECK(c128.k_tiles == 1);
  CHECK(variants::fragment_mma_kernel_shape(c128, DType::f16).stages == 4);
  const auto c128_k4 = fragment_mma_choose(dense(128, 28672, 8192, 4), rows128, 132);
  CHECK(c128_k4.k_tiles == 2);
  CHECK(variants::fragment_mma_kernel_shape(c128_k4, DType::f16).stages == 3);
  // By default Llama3-70B takes 256-row tiles there: 3 stages of 27 KB beside K = 5's table, 6 of
  // 25 KB beside K = 4's.
  const auto c256 = fragment_mma_choose(llama(128), {}, 132);
  CHECK(c256.tile_rows == 256);
  CHECK(c256.k_tiles == 1);
  CHECK(variants::fragment_mma_kernel_shape(c256, DType::f16).stages == 3);
  const auto c256_k4 = fragment_mma_choose(dense(128, 28672, 8192, 4), {}, 132);
  CHECK(c256_k4.tile_rows == 256);
  CHECK(variants::fragment_mma_kernel_shape(c256_k4, DType::f16).stages == 6);
  CHECK_THROWS_WITH(fragment_mma_choose(llama(16), with({{"pipelines", 4}}), 132),
                    Catch::Contains("pipelines = 4 leaves 1 ring stage(s) a pipeline, 2 needed") &&
                        Catch::Contains("K = 5") && Catch::Contains("at most 3 pipelines fit"));
  CHECK_THROWS_WITH(
      fragment_mma_choose(llama(32), with({{"pipelines", 3}, {"stage_k_tiles", 2}}), 132),
      Catch::Contains("pipelines = 3") && Catch::Contains("stage_k_tiles = 2") &&
          Catch::Contains("K = 5"));
  // The same options at K = 4 fit beside the 64 KB table.
  CHECK(fragment_mma_choose(dense(16, 28672, 8192, 4), with({{"pipelines", 4}}), 132).pipelines ==
        4);
  CHECK(fragment_mma_choose(dense(32, 28672, 8192, 4),
                            with({{"pipelines", 3}, {"stage_k_tiles", 2}}), 132)
            .k_tiles == 2);
}

TEST_CASE("fragment_mma refuses pipeline counts its own kernel cannot run, naming the value",
          "[variants]") {
  using variants::fragment_mma_setup;
  CHECK_THROWS_WITH(fragment_mma_setup(dense(16, kN, kK, 4), with({{"pipelines", 1}})),
                    Catch::Contains("pipelines = 1") && Catch::Contains("mma.sync runs 2, 3 or 4"));
  CHECK_THROWS_WITH(fragment_mma_setup(dense(64, kN, kK, 4),
                                       with({{"pipelines", 4}, {"mma", 2}, {"stage_k_tiles", 2}})),
                    Catch::Contains("pipelines = 4") && Catch::Contains("64 tokens") &&
                        Catch::Contains("stage_k_tiles = 2"));
}

TEST_CASE("fragment_mma refuses an option that would change nothing where it is given",
          "[variants]") {
  using variants::fragment_mma_setup;
  // The own kernel's options where the shared mainloop runs (256 tokens at M > 512: wgmma;
  // kernel = 1).
  for (const char* name : {"pipelines", "walk_order", "row_blocks", "wait_hint_ns"}) {
    CHECK_THROWS_WITH(fragment_mma_setup(dense(1024, kN, kK, 4), with({{name, 2}})),
                      Catch::Contains(std::string(name) + " = 2 is the own kernel's") &&
                          Catch::Contains("256 tokens run the shared mainloop"));
    CHECK_THROWS_WITH(fragment_mma_setup(dense(64, kN, kK, 4), with({{"kernel", 1}, {name, 2}})),
                      Catch::Contains(std::string(name) + " = 2 is the own kernel's") &&
                          Catch::Contains("64 tokens run the shared mainloop"));
  }
  CHECK_THROWS_WITH(
      fragment_mma_setup(dense(16, kN, kK, 4), with({{"kernel", 1}, {"row_blocks", 4}})),
      Catch::Contains("row_blocks = 4") && Catch::Contains("the shared mainloop"));
  for (const char* name : {"group_in_flight", "split_store", "staged_store", "partial_sums"})
    CHECK_THROWS_WITH(fragment_mma_setup(dense(1024, kN, kK, 4), with({{name, 1}})),
                      Catch::Contains(std::string(name) + " = 1 is the own kernel's") &&
                          Catch::Contains("256 tokens run the shared mainloop"));
  CHECK_THROWS_WITH(fragment_mma_setup(dense(16, kN, kK, 4), with({{"group_in_flight", 1}})),
                    Catch::Contains("group_in_flight = 1") && Catch::Contains("mma.sync"));
  // Values the own kernel does not take where it runs.
  for (int after : {1, 2}) {
    CHECK_THROWS_WITH(fragment_mma_setup(dense(32, kN, kK, 4), with({{"scale_after_mma", after}})),
                      Catch::Contains("scale_after_mma = " + std::to_string(after)) &&
                          Catch::Contains("8 and 16 tokens"));
    CHECK_THROWS_WITH(
        fragment_mma_setup(dense(16, kN, kK, 4), with({{"kernel", 1}, {"scale_after_mma", after}})),
        Catch::Contains("scale_after_mma = " + std::to_string(after)) &&
            Catch::Contains("the shared mainloop"));
  }
  CHECK_THROWS_WITH(fragment_mma_setup(dense(16, kN, kK, 4), with({{"stage_k_tiles", 1}})),
                    Catch::Contains("stage_k_tiles = 1") && Catch::Contains("2 k-tiles"));
  CHECK_THROWS_WITH(
      fragment_mma_setup(dense(16, kN, kK, 4), with({{"row_blocks", 4}, {"pipelines", 3}})),
      Catch::Contains("row_blocks = 4") && Catch::Contains("3 pipelines"));
  CHECK_THROWS_WITH(fragment_mma_setup(dense(32, kN, kK, 4), with({{"row_blocks", 4}})),
                    Catch::Contains("row_blocks = 4") && Catch::Contains("32 tokens"));
}

TEST_CASE("fragment_mma's own wgmma refuses what spills or does not exist, naming the value",
          "[variants]") {
  using variants::fragment_mma_setup;
  // 2 pipelines of two warpgroups hold 32 tokens, and 64 and 128 with 1 k-tile only (96
  // registers a thread; 120 at 128 tokens beside a producer warpgroup); 2 k-tiles spill there.
  check_refused(128, with({{"pipelines", 2}, {"stage_k_tiles", 2}}),
                {"pipelines = 2", "spills", "128 tokens run the own kernel"});
  CHECK(
      variants::fragment_mma_choose(dense(128, kN, kK, 4), with({{"pipelines", 2}}), 132).k_tiles ==
      1);
  check_refused(64, with({{"pipelines", 3}, {"row_blocks", 1}}),
                {"pipelines = 3", "1 or 2", "row_blocks = 2"});
  check_refused(64, with({{"pipelines", 4}}), {"pipelines = 4", "1 or 2"});
  // 3 pipelines of one warpgroup: 32 tokens, and 64 with 1 k-tile a stage (by default there).
  CHECK(variants::fragment_mma_choose(dense(64, kN, kK, 4),
                                      with({{"pipelines", 3}, {"row_blocks", 2}}), 132)
            .k_tiles == 1);
  check_refused(64, with({{"pipelines", 3}, {"row_blocks", 2}, {"stage_k_tiles", 2}}),
                {"pipelines = 3 with stage_k_tiles = 2 spills"});
  check_refused(128, with({{"pipelines", 3}, {"row_blocks", 2}}), {"pipelines = 3", "spills"});
  check_refused(32, with({{"row_blocks", 4}}), {"row_blocks = 4", "1 row block a warp"});
  check_refused(64, with({{"pipelines", 2}, {"row_blocks", 1}, {"stage_k_tiles", 2}}),
                {"row_blocks = 1", "spills"});
  check_refused(64, with({{"pipelines", 1}, {"row_blocks", 2}}),
                {"row_blocks = 2 with pipelines = 1"});
  // wait_hint_ns on the wgmma path: the producer's waits sleep, the consumers poll.
  CHECK(variants::fragment_mma_choose(dense(32, kN, kK, 4), with({{"wait_hint_ns", 100}}), 132)
            .wait_hint_ns == 100);
  // One warpgroup of two row blocks a pipeline takes 1 k-tile a stage at 128 tokens (two leave
  // no two ring stages); a group in flight needs 2 and spills on two warpgroups of 2 pipelines.
  check_refused(128, with({{"pipelines", 2}, {"row_blocks", 2}, {"stage_k_tiles", 2}}),
                {"stage_k_tiles = 2", "no two ring stages"});
  CHECK(variants::fragment_mma_choose(dense(128, kN, kK, 4),
                                      with({{"pipelines", 2}, {"row_blocks", 2}}), 132)
            .k_tiles == 1);
  check_refused(64, with({{"group_in_flight", 1}, {"row_blocks", 2}, {"stage_k_tiles", 1}}),
                {"group_in_flight = 1 with stage_k_tiles = 1"});
  check_refused(32, with({{"group_in_flight", 1}, {"pipelines", 2}, {"row_blocks", 1}}),
                {"group_in_flight = 1 on 2 pipelines of two warpgroups spills"});
  // The mma.sync kernel has no single pipeline.
  check_refused(64, with({{"mma", 2}, {"pipelines", 1}}),
                {"pipelines = 1", "mma.sync runs 2, 3 or 4"});
}

TEST_CASE("fragment_mma's group_in_flight runs a kernel of its own wherever it is accepted",
          "[variants]") {
  using variants::fragment_mma_choose;
  using variants::fragment_mma_kernel_shape;
  const std::vector<std::pair<int, std::vector<std::pair<std::string, std::int64_t>>>> sets = {
      {32, {{"pipelines", 1}}},
      {64, {{"pipelines", 1}}},
      {128, {{"pipelines", 1}}},
      {32, {{"pipelines", 2}, {"row_blocks", 2}}},
      {64, {{"pipelines", 2}, {"row_blocks", 2}}},
  };
  for (const auto& [m, opts] : sets) {
    VariantOptions off, on;
    for (const auto& [name, v] : opts) {
      off.values.emplace_back(name, v);
      on.values.emplace_back(name, v);
    }
    on.values.emplace_back("group_in_flight", 1);
    INFO("M = " << m << ", " << opts.size() << " options");
    const auto c0 = fragment_mma_choose(dense(m, 28672, 8192, 4), off, 132);
    const auto c1 = fragment_mma_choose(dense(m, 28672, 8192, 4), on, 132);
    CHECK(!c0.group_in_flight);
    CHECK(c1.group_in_flight);
    for (DType t : {DType::f16, DType::bf16})
      CHECK(fragment_mma_kernel_shape(c0, t).fn != fragment_mma_kernel_shape(c1, t).fn);
  }
}

TEST_CASE(
    "the fragment tile repack refuses a grid past its limit and another K, and does nothing for "
    "none",
    "[variants]") {
  for (int k : {2, 3, 4, 5}) {
    CHECK_NOTHROW(gpu::fragment_order(k, nullptr, nullptr, 0, nullptr, nullptr, nullptr));
    CHECK_THROWS_WITH(
        gpu::fragment_order(k, nullptr, nullptr, 1ll << 31, nullptr, nullptr, nullptr),
        Catch::Contains("2147483648 tiles") && Catch::Contains("2^31"));
  }
  for (int k : {1, 6})  // before any launch: one tile would reach the GPU
    CHECK_THROWS_WITH(gpu::fragment_order(k, nullptr, nullptr, 1, nullptr, nullptr, nullptr),
                      Catch::Contains("K = 2..5, not K = " + std::to_string(k)));
}

TEST_CASE(
    "fragment_mma's kernel by M: mma.sync to 16 tokens, the own wgmma to 128, then the "
    "shared mainloop",
    "[variants]") {
  using variants::fragment_mma_choose;
  struct Want {
    std::int64_t m_lo, m_hi;
    int tt;
    bool own, wgmma;
    int k_tiles, pipelines, row_blocks;
    bool scale_after;
    int tile_rows;
  };
  const Want wants[] = {
      {1, 8, 8, true, false, 2, 4, 2, true, 128},
      {9, 16, 16, true, false, 2, 4, 4, true, 128},
      {17, 32, 32, true, true, 2, 3, 2, false, 128},
      {33, 64, 64, true, true, 1, 3, 2, false, 128},
      {65, 128, 128, true, true, 1, 1, 1, false, 256},  // 256-row tiles: walks long enough
      {129, 300, 256, false, false, 1, 1, 1, false, 128},
  };
  for (const Want& w : wants)
    for (std::int64_t m = w.m_lo; m <= w.m_hi; ++m) {
      INFO("M = " << m);
      const auto c = fragment_mma_choose(dense(m, 28672, 8192, 4), {}, 132);
      CHECK(c.token_tile == w.tt);
      CHECK(c.own == w.own);
      CHECK(c.wgmma == w.wgmma);
      if (!w.own) continue;
      CHECK(c.k_tiles == w.k_tiles);
      CHECK(c.pipelines == w.pipelines);
      CHECK(c.row_blocks == w.row_blocks);
      CHECK(c.scale_after == w.scale_after);
      CHECK(c.tile_rows == w.tile_rows);
    }
  // Short walks (Qwen3 dense gate/up: 40 tiles of 2048 k) run one pipeline of two warpgroups at
  // 32 and 64 tokens; on a device of fewer SMs, 3 of one. A long K keeps 3 on few tiles (Llama3-70B
  // down: 64 tiles of 28672 k); Llama3-8B down (32 tiles of 14336 k) takes 1 at 64 tokens alone.
  for (std::int64_t m : {32, 64}) {
    INFO("M = " << m);
    const auto small = fragment_mma_choose(dense(m, 5120, 2048, 4), {}, 132);
    CHECK(small.pipelines == 1);
    CHECK(small.row_blocks == 1);
    CHECK(small.k_tiles == 2);
    const auto few_sms = fragment_mma_choose(dense(m, 5120, 2048, 4), {}, 16);
    CHECK(few_sms.pipelines == 3);
    CHECK(few_sms.row_blocks == 2);
    // The boundary: 40 tiles x 2048 k x 64 bytes = 5242880 bytes of weights against 3 x (3 x SMs)
    // walks x m x 512 bytes of partial: 35 SMs stay on 3 pipelines at 32 tokens, 36 take one; 17
    // and 18 at 64.
    CHECK(fragment_mma_choose(dense(m, 5120, 2048, 4), {}, m == 32 ? 35 : 17).pipelines == 3);
    CHECK(fragment_mma_choose(dense(m, 5120, 2048, 4), {}, m == 32 ? 36 : 18).pipelines == 1);
    CHECK(fragment_mma_choose(dense(m, 8192, 28672, 4), {}, 132).pipelines == 3);
    CHECK(fragment_mma_choose(dense(m, 4096, 14336, 4), {}, 132).pipelines == (m == 64 ? 1 : 3));
    CHECK(fragment_mma_choose(dense(m, 28672, 4096, 4), {}, 132).pipelines == 3);
    // The rule counts weights, not bytes: every K takes K = 4's choice (Llama3-8B gate/up at K =
    // 2 and 64 tokens: 29 MB of weights, 3 pipelines as at K = 4; 8B down at K = 2 and 32).
    for (int k : {2, 3, 5}) {
      INFO("K = " << k);
      CHECK(fragment_mma_choose(dense(m, 28672, 4096, k), {}, 132).pipelines == 3);
      CHECK(fragment_mma_choose(dense(m, 4096, 14336, k), {}, 132).pipelines == (m == 64 ? 1 : 3));
      CHECK(fragment_mma_choose(dense(m, 5120, 2048, k), {}, 132).pipelines == 1);
    }
    // row_blocks = 4 on a problem of many tiles is refused by its own name, not by a pipelines
    // count the default chose.
    CHECK_THROWS_WITH(fragment_mma_choose(dense(m, 28672, 8192, 4), with({{"row_blocks", 4}}), 132),
                      Catch::Contains("row_blocks = 4") && Catch::Contains("1 row block a warp"));
    // A device that none names is taken as 132 SMs.
    CHECK(fragment_mma_choose(dense(m, 5120, 2048, 4), {}, 0).pipelines == 1);
  }
}

TEST_CASE(
    "fragment_mma's small layers take the 64-token tile at 65..128 tokens, where the rules "
    "choose the kernel",
    "[variants]") {
  using variants::fragment_mma_choose;
  // Qwen3 dense gate/up and down: 40 x 32 and 16 x 80 k-tiles, 1280 <= 12 x 132; the GLM-4.7
  // shared layers (2560 k-tiles) and Llama3-8B down (7168) keep the tile of their M.
  for (std::int64_t m : {65, 100, 128}) {
    INFO("M = " << m);
    const int half = 64, whole = 128;
    CHECK(fragment_mma_choose(dense(m, 5120, 2048, 4), {}, 132).token_tile == half);
    CHECK(fragment_mma_choose(dense(m, 2048, 5120, 4), {}, 132).token_tile == half);
    CHECK(fragment_mma_choose(dense(m, 10240, 2048, 4), {}, 132).token_tile == whole);
    CHECK(fragment_mma_choose(dense(m, 4096, 14336, 4), {}, 132).token_tile == whole);
    // The boundary: 1280 k-tiles are small on 107 SMs (1284), not on 106 (1272); unknown SMs: 132.
    CHECK(fragment_mma_choose(dense(m, 5120, 2048, 4), {}, 107).token_tile == half);
    CHECK(fragment_mma_choose(dense(m, 5120, 2048, 4), {}, 106).token_tile == whole);
    CHECK(fragment_mma_choose(dense(m, 5120, 2048, 4), {}, 0).token_tile == half);
    // Every width: the rule counts weights, not bytes.
    for (int k : {2, 3, 5})
      CHECK(fragment_mma_choose(dense(m, 5120, 2048, k), {}, 132).token_tile == half);
    // A token tile, or any option of the own kernel, given: the rule is off (each names a
    // configuration of the tile of its M).
    CHECK(fragment_mma_choose(dense(m, 5120, 2048, 4), with({{"token_tile", whole}}), 132)
              .token_tile == whole);
    for (const auto& [name, value] : {std::pair<const char*, std::int64_t>{"kernel", 1},
                                      {"mma", 1},
                                      {"stage_k_tiles", 1},
                                      {"pipelines", 1},
                                      {"row_blocks", 1},
                                      {"walk_order", 2},
                                      {"wait_hint_ns", 100},
                                      {"group_in_flight", 1},
                                      {"split_store", 1},
                                      {"staged_store", 1},
                                      {"tile_rows", 128}}) {
      INFO(name << " = " << value);
      CHECK(fragment_mma_choose(dense(m, 5120, 2048, 4), with({{name, value}}), 132).token_tile ==
            whole);
    }
    // AWQ weights keep the tile of their M (unmeasured there).
    CHECK(variants::awq_fragment_mma_choose(awq_dense(m, 5120, 2048, 128), {}, 132).token_tile ==
          whole);
  }
  // Other token counts keep theirs.
  for (const auto& [m, tt] : {std::pair<std::int64_t, int>{1, 8},
                              {8, 8},
                              {17, 32},
                              {32, 32},
                              {33, 64},
                              {64, 64},
                              {129, 128},
                              {512, 128},
                              {513, 256}})
    CHECK(fragment_mma_choose(dense(m, 5120, 2048, 4), {}, 132).token_tile == tt);
}

TEST_CASE(
    "fragment_mma: prefill chunks of 129..512 tokens on the own kernel where a layer is small",
    "[variants]") {
  using variants::fragment_mma_choose;
  // At most 64 k-tiles of 128 x 64 an SM: the own wgmma kernel's 128-token tile over m-tiles.
  // Qwen3 dense (1280 k-tiles), GLM-4.7 shared (2560), Llama3-8B down (7168 = 54.3 an SM).
  for (const auto& [n, k] :
       {std::pair<std::int64_t, std::int64_t>{5120, 2048}, {2048, 10240}, {4096, 14336}})
    for (std::int64_t m : {129, 256, 300, 512}) {
      INFO("N " << n << " K_dim " << k << " M " << m);
      const auto c = fragment_mma_choose(dense(m, n, k, 4), {}, 132);
      CHECK(c.token_tile == 128);
      CHECK(c.own);
      CHECK(c.wgmma);
      // Above 512 tokens, or with the shared mainloop's options, the shared mainloop.
      CHECK_FALSE(fragment_mma_choose(dense(m + 512, n, k, 4), {}, 132).own);
      CHECK(fragment_mma_choose(dense(m, n, k, 4), with({{"kernel", 1}}), 132).token_tile == 256);
      CHECK(fragment_mma_choose(dense(m, n, k, 4), with({{"mma", 1}}), 132).token_tile == 256);
      // No SM count visible: taken as 132.
      CHECK(fragment_mma_choose(dense(m, n, k, 4), {}, 0).own);
    }
  // The tile's rows by the 256-row rule, whose walk counts every m-tile's weights: Llama3-8B down
  // (4096 x 14336) streams 3.4 bytes of weights a byte of partial at 256 tokens (128 rows), 6.8 at
  // 512 (256 rows).
  CHECK(fragment_mma_choose(dense(256, 4096, 14336, 4), {}, 132).tile_rows == 128);
  CHECK(fragment_mma_choose(dense(512, 4096, 14336, 4), {}, 132).tile_rows == 256);
  // The boundary: 64 k-tiles an SM on 132 SMs (8448) takes it, one more n-tile's worth does not;
  // on fewer SMs the bound moves with them.
  CHECK(fragment_mma_choose(dense(256, 128 * 132, 4096, 4), {}, 132).own);
  CHECK_FALSE(fragment_mma_choose(dense(256, 128 * 133, 4096, 4), {}, 132).own);
  CHECK_FALSE(fragment_mma_choose(dense(256, 5120, 2048, 4), {}, 19).own);
  CHECK(fragment_mma_choose(dense(256, 5120, 2048, 4), {}, 20).own);
  // Llama3-70B (217 k-tiles an SM) and the fused Llama3-8B gate/up (109) keep the shared
  // mainloop; AWQ weights are not taken (awq_fragment_mma holds 1..128 rows).
  CHECK_FALSE(fragment_mma_choose(dense(256, 28672, 8192, 4), {}, 132).own);
  CHECK_FALSE(fragment_mma_choose(dense(256, 28672, 4096, 4), {}, 132).own);
  CHECK_THROWS_WITH(variants::awq_fragment_mma_choose(awq_dense(256, 5120, 2048, 128), {}, 132),
                    Catch::Contains("token tile 256"));
}

TEST_CASE(
    "every option set fragment_mma accepts has its compiled kernel and the others are refused "
    "by name",
    "[variants]") {
  using variants::fragment_mma_choose;
  using variants::fragment_mma_kernel_shape;
  int accepted = 0, refused = 0;
  for (int k_bits : {2, 3, 4, 5})
    for (int sms : {132, 8})  // N = 5120, K_dim 2048: short walks on 132 SMs, not on 8
      for (std::int64_t m : {1, 8, 16, 24, 32, 48, 64, 100, 128, 256})
        for (int tt : {0, 8, 16, 32, 64, 128, 256})
          for (int mma : {0, 1, 2})
            for (int kernel : {0, 1})
              for (int kt : {0, 1, 2})
                for (int pipes : {0, 1, 2, 3, 4})
                  for (int rb : {0, 1, 2, 4})
                    for (int after : {0, 1, 2})
                      for (int gif : {0, 1}) {
                        const VariantOptions o = with({{"token_tile", tt},
                                                       {"mma", mma},
                                                       {"kernel", kernel},
                                                       {"stage_k_tiles", kt},
                                                       {"pipelines", pipes},
                                                       {"row_blocks", rb},
                                                       {"scale_after_mma", after},
                                                       {"group_in_flight", gif}});
                        variants::FragmentMmaChoice c;
                        try {
                          c = fragment_mma_choose(dense(m, 5120, 2048, k_bits), o, sms);
                        } catch (const Error& e) {
                          ++refused;
                          REQUIRE(std::string(e.what()).rfind("fragment_mma: ", 0) == 0);
                          continue;
                        }
                        ++accepted;
                        for (DType t : {DType::f16, DType::bf16}) {
                          INFO("K " << k_bits << " SMs " << sms << " M " << m << " token_tile "
                                    << tt << " mma " << mma << " kernel " << kernel
                                    << " stage_k_tiles " << kt << " pipelines " << pipes
                                    << " row_blocks " << rb << " scale_after_mma " << after
                                    << " group_in_flight " << gif);
                          const auto k = fragment_mma_kernel_shape(c, t);  // throws if none
                          REQUIRE(k.found);
                          if (!c.own) continue;
                          REQUIRE(k.sync == !c.wgmma);
                          REQUIRE(k.k_tiles == c.k_tiles);
                          REQUIRE(k.pipelines == c.pipelines);
                          // A pipeline: 8 / row_blocks consumer warps and a producer warp, or
                          // (wgmma, two row blocks, or 2 pipelines at 128 tokens) its consumers
                          // beside a producer warpgroup's.
                          const bool producer_warpgroup =
                              c.wgmma && (c.row_blocks == 2 || c.tile_rows == 256 ||
                                          (c.pipelines == 2 && c.token_tile == 128));
                          REQUIRE(k.tile_rows == c.tile_rows);
                          REQUIRE(k.threads ==
                                  c.pipelines * 32 * (c.tile_rows / 16) / c.row_blocks +
                                      (producer_warpgroup ? 128 : 32 * c.pipelines));
                          REQUIRE(k.stages >= 2);
                        }
                      }
  CHECK(accepted > 1000);
  CHECK(refused > 1000);
}

namespace {}  // namespace

TEST_CASE(
    "fragment_mma's 256-row tiles run a kernel of their own wherever they are accepted, and are "
    "refused by name elsewhere",
    "[variants]") {
  using variants::fragment_mma_choose;
  using variants::fragment_mma_kernel_shape;
  int accepted = 0, refused = 0;
  for (int k_bits : {2, 3, 4, 5})
    for (std::int64_t m : {1, 16, 32, 64, 100, 128, 256})
      for (int tt : {0, 16, 32, 64, 128})
        for (int mma : {0, 2})
          for (int kt : {0, 1, 2})
            for (int pipes : {0, 1, 2, 3})
              for (int rb : {0, 1, 2})
                for (int gif : {0, 1}) {
                  const VariantOptions o = with({{"token_tile", tt},
                                                 {"mma", mma},
                                                 {"stage_k_tiles", kt},
                                                 {"pipelines", pipes},
                                                 {"row_blocks", rb},
                                                 {"group_in_flight", gif},
                                                 {"tile_rows", 256}});
                  INFO("K " << k_bits << " M " << m << " token_tile " << tt << " mma " << mma
                            << " stage_k_tiles " << kt << " pipelines " << pipes << " row_blocks "
                            << rb << " group_in_flight " << gif);
                  variants::FragmentMmaChoice c;
                  try {
                    c = fragment_mma_choose(dense(m, 5120, 2048, k_bits), o, 132);
                  } catch (const Error& e) {
                    ++refused;
                    REQUIRE_THAT(e.what(),
                                 Catch::StartsWith("fragment_mma: ") &&
                                     (Catch::Contains("tile_rows") || Catch::Contains("mma.sync")));
                    continue;
                  }
                  ++accepted;
                  REQUIRE(c.own);
                  REQUIRE(c.wgmma);
                  REQUIRE((c.token_tile == 64 || c.token_tile == 128));
                  REQUIRE(c.tile_rows == 256);
                  REQUIRE(c.pipelines == 1);
                  REQUIRE(c.k_tiles == 1);
                  for (DType t : {DType::f16, DType::bf16}) {
                    const auto k = fragment_mma_kernel_shape(c, t);  // throws if none
                    REQUIRE(k.found);
                    REQUIRE(k.tile_rows == 256);
                    REQUIRE(k.pipelines == 1);
                    REQUIRE(k.k_tiles == 1);
                    REQUIRE(!k.sync);
                    // 16 row blocks over 16 / row_blocks consumer warps, and a producer warpgroup.
                    REQUIRE(k.threads == 32 * 16 / c.row_blocks + 128);
                    REQUIRE(k.stages >= 2);
                  }
                }
  CHECK(accepted > 100);
  CHECK(refused > 1000);
  // By name: the token tiles it is compiled at, its one pipeline, its one k-tile, the path.
  using variants::fragment_mma_setup;
  check_refused(32, with({{"tile_rows", 256}}), {"tile_rows = 256", "64 and 128 tokens"});
  check_refused(128, with({{"tile_rows", 256}, {"pipelines", 2}}),
                {"tile_rows = 256 with pipelines = 2", "1 pipeline"});
  check_refused(64, with({{"tile_rows", 256}, {"stage_k_tiles", 2}}),
                {"tile_rows = 256 with stage_k_tiles = 2", "spill"});
  check_refused(64, with({{"tile_rows", 256}, {"row_blocks", 2}}),
                {"row_blocks = 2", "128 tokens"});
  check_refused(16, with({{"tile_rows", 256}}), {"tile_rows = 256 is the own kernel's wgmma's"});
  check_refused(16, with({{"tile_rows", 128}}), {"tile_rows = 128 is the own kernel's wgmma's"});
  check_refused(64, with({{"tile_rows", 256}, {"kernel", 1}}),
                {"tile_rows = 256 is the own kernel's", "the shared mainloop"});
  CHECK_THROWS_WITH(fragment_mma_setup(dense(64, kN, kK, 4), with({{"tile_rows", 192}})),
                    Catch::Contains("tile_rows") && Catch::Contains("192"));
  // By default 256-row tiles at 128 tokens where a walk streams 5 bytes of weights a byte of
  // its split-K partial (Llama3-70B's layers), else 128 (Llama3-8B, Qwen3 dense, 64 tokens, or
  // another option given).
  CHECK(fragment_mma_choose(dense(128, 28672, 8192, 4), {}, 132).tile_rows == 256);
  CHECK(fragment_mma_choose(dense(128, 8192, 28672, 4), {}, 132).tile_rows == 256);
  CHECK(fragment_mma_choose(dense(100, 28672, 8192, 4), {}, 132).tile_rows == 256);
  CHECK(fragment_mma_choose(dense(128, 28672, 4096, 4), {}, 132).tile_rows == 128);
  CHECK(fragment_mma_choose(dense(128, 4096, 14336, 4), {}, 132).tile_rows == 128);
  CHECK(
      fragment_mma_choose(dense(128, 5120, 2048, 4), with({{"token_tile", 128}}), 132).tile_rows ==
      128);
  CHECK(fragment_mma_choose(dense(64, 28672, 8192, 4), {}, 132).tile_rows == 128);
  CHECK(fragment_mma_choose(dense(128, 28672, 8192, 4), with({{"pipelines", 1}}), 132).tile_rows ==
        128);
  CHECK(
      fragment_mma_choose(dense(128, 28672, 8192, 4), with({{"tile_rows", 128}}), 132).tile_rows ==
      128);
  // The shared mainloop and AWQ weights never take them.
  CHECK(fragment_mma_choose(dense(128, 28672, 8192, 4), with({{"kernel", 1}}), 132).tile_rows ==
        128);
  CHECK(variants::awq_fragment_mma_choose(awq_dense(128, 28672, 8192, 128), {}, 132).tile_rows ==
        128);
}

namespace {

GemmDims awq_dense(std::int64_t M, std::int64_t N, std::int64_t K_dim, int group) {
  GemmDims d = dense(M, N, K_dim, 4);
  d.awq_group = group;
  return d;
}

}  // namespace

TEST_CASE("awq_fragment_mma refuses what is not an AWQ problem to 128 rows, naming the value",
          "[variants]") {
  using variants::awq_fragment_mma_choose;
  CHECK_THROWS_WITH(awq_fragment_mma_choose(dense(16, kN, kK, 4), {}, 132),
                    Catch::Contains("awq_fragment_mma") && Catch::Contains("AWQ group is 0"));
  GemmDims bf16 = awq_dense(16, 256, 256, 128);
  bf16.dtype = DType::bf16;
  CHECK_THROWS_WITH(awq_fragment_mma_choose(bf16, {}, 132), Catch::Contains("dtype bf16"));
  CHECK_THROWS_WITH(awq_fragment_mma_choose(awq_dense(16, 250, 256, 128), {}, 132),
                    Catch::Contains("N = 250") && Catch::Contains("multiple of 8"));
  CHECK_THROWS_WITH(awq_fragment_mma_choose(awq_dense(16, 256, 192, 128), {}, 132),
                    Catch::Contains("K_dim = 192") && Catch::Contains("group 128"));
  CHECK_THROWS_WITH(awq_fragment_mma_choose(awq_dense(200, 256, 256, 128), {}, 132),
                    Catch::Contains("M = 200") && Catch::Contains("token tile 256") &&
                        Catch::Contains("8..128 tokens"));
  CHECK_THROWS_WITH(
      awq_fragment_mma_choose(awq_dense(16, 256, 256, 128), with({{"pipelines", 1}}), 132),
      Catch::Contains("awq_fragment_mma: pipelines = 1"));
}

TEST_CASE(
    "awq_fragment_mma takes fragment_mma's kernel to 16 tokens, then one warpgroup a pipeline, "
    "the scale after the MMA to 16 tokens where one scale spans a k-step",
    "[variants]") {
  using variants::awq_fragment_mma_choose;
  using variants::fragment_mma_choose;
  for (int group : {32, 64, 128})
    for (std::int64_t m = 1; m <= 128; ++m)
      for (std::int64_t n : {10240, 28672}) {  // short stream-K walks on kbit weights, and long
        INFO("G " << group << " M " << m << " N " << n);
        const auto a = awq_fragment_mma_choose(awq_dense(m, n, 2048, group), {}, 132);
        const auto k = fragment_mma_choose(dense(m, n, 2048, 4), {}, 132);
        CHECK(a.own);
        CHECK(a.token_tile == k.token_tile);
        CHECK(a.wgmma == k.wgmma);
        // After the MMA where a k-step (2 k-tiles, 128 k) holds one scale a row: G = 128.
        CHECK(a.scale_after == (m <= 16 && group == 128));
        if (m <= 16) {
          CHECK(a.k_tiles == k.k_tiles);
          CHECK(a.pipelines == k.pipelines);
          CHECK(a.row_blocks == k.row_blocks);
          CHECK(awq_fragment_mma_choose(awq_dense(m, n, 2048, group),
                                        with({{"scale_after_mma", 2}}), 132)
                    .scale_after);
          CHECK_FALSE(awq_fragment_mma_choose(awq_dense(m, n, 2048, group),
                                              with({{"scale_after_mma", 1}}), 132)
                          .scale_after);
          continue;
        }
        // One consumer warpgroup a pipeline: 3 at 32 and 64 tokens (2 k-tiles at 32), 2 at 128.
        CHECK(a.row_blocks == 2);
        CHECK(a.pipelines == (m <= 64 ? 3 : 2));
        CHECK(a.k_tiles == (m <= 32 ? 2 : 1));
        // row_blocks = 1 asks for two warpgroups a pipeline, as on kbit weights.
        const auto two =
            awq_fragment_mma_choose(awq_dense(m, n, 2048, group), with({{"row_blocks", 1}}), 132);
        CHECK(two.row_blocks == 1);
        CHECK(two.pipelines == (m <= 64 ? 2 : 1));
      }
  // The smallest layers (Qwen3 dense: 5 MB of weights, under 4 k-tiles a walk of 3 x 132) take
  // one pipeline of two warpgroups from 32 tokens; GLM's shared layers (10 MB) do not. The
  // boundary: 40 tiles x 2048 k x 64 bytes against 3 x SMs walks x 16 KB: 107 SMs take one
  // pipeline, 106 (longer walks) three.
  for (std::int64_t m : {32, 64, 128}) {
    INFO("M = " << m);
    for (const auto& [n, k] : {std::pair<std::int64_t, std::int64_t>{5120, 2048}, {2048, 5120}}) {
      const auto small = awq_fragment_mma_choose(awq_dense(m, n, k, 128), {}, 132);
      CHECK(small.pipelines == 1);
      CHECK(small.row_blocks == 1);
      CHECK(small.k_tiles == 2);
    }
    CHECK(awq_fragment_mma_choose(awq_dense(m, 10240, 2048, 128), {}, 132).pipelines ==
          (m <= 64 ? 3 : 2));
    CHECK(awq_fragment_mma_choose(awq_dense(m, 5120, 2048, 128), {}, 107).pipelines == 1);
    CHECK(awq_fragment_mma_choose(awq_dense(m, 5120, 2048, 128), {}, 106).pipelines ==
          (m <= 64 ? 3 : 2));
  }
}

TEST_CASE("every option set awq_fragment_mma accepts has its compiled kernel", "[variants]") {
  using variants::awq_fragment_mma_choose;
  using variants::awq_fragment_mma_kernel_shape;
  int accepted = 0, refused = 0;
  for (int sms : {132, 8})
    for (std::int64_t m : {1, 8, 16, 24, 32, 48, 64, 100, 128})
      for (int tt : {0, 8, 16, 32, 64, 128})
        for (int kt : {0, 1, 2})
          for (int pipes : {0, 1, 2, 3, 4})
            for (int rb : {0, 1, 2, 4})
              for (int after : {0, 1, 2}) {
                const VariantOptions o = with({{"token_tile", tt},
                                               {"stage_k_tiles", kt},
                                               {"pipelines", pipes},
                                               {"row_blocks", rb},
                                               {"scale_after_mma", after}});
                variants::FragmentMmaChoice c;
                try {
                  c = awq_fragment_mma_choose(awq_dense(m, 5120, 2048, 128), o, sms);
                } catch (const Error& e) {
                  ++refused;
                  REQUIRE(std::string(e.what()).rfind("awq_fragment_mma: ", 0) == 0);
                  continue;
                }
                ++accepted;
                INFO("SMs " << sms << " M " << m << " token_tile " << tt << " stage_k_tiles " << kt
                            << " pipelines " << pipes << " row_blocks " << rb << " scale_after_mma "
                            << after);
                REQUIRE(c.own);
                const auto k = awq_fragment_mma_kernel_shape(c);  // throws if none
                REQUIRE(k.found);
                REQUIRE(k.sync == !c.wgmma);
                REQUIRE(k.k_tiles == c.k_tiles);
                REQUIRE(k.pipelines == c.pipelines);
                REQUIRE(k.stages >= 2);
                // The consumers (8 / row_blocks warps a pipeline) beside a producer warp each, or
                // beside a producer warpgroup (wgmma with one warpgroup a pipeline, or 2 of two
                // at 128 tokens).
                const bool producer_warpgroup =
                    c.wgmma && (c.row_blocks == 2 || (c.pipelines == 2 && c.token_tile == 128));
                REQUIRE(k.threads == c.pipelines * 32 * 8 / c.row_blocks +
                                         (producer_warpgroup ? 128 : 32 * c.pipelines));
              }
  CHECK(accepted > 300);
  CHECK(refused > 300);
}

TEST_CASE(
    "fragment_mma's own kernel stores a split tile by its fixed owner on wgmma and on mma.sync's "
    "long walks",
    "[variants]") {
  using variants::fragment_mma_choose;
  for (std::int64_t m : {8, 16, 64, 128}) {
    const bool wgmma = m > 16;
    // Qwen3 dense gate/up: 40 tiles, walks of a tenth of a tile at 8 and 16 tokens (3 x 40 < 4
    // pipelines x 132): the last arrival on mma.sync.
    CHECK(fragment_mma_choose(dense(m, 5120, 2048, 4), {}, 132).split_owner == wgmma);
    CHECK_FALSE(
        fragment_mma_choose(dense(m, 5120, 2048, 4), with({{"split_store", 1}}), 132).split_owner);
    CHECK(
        fragment_mma_choose(dense(m, 5120, 2048, 4), with({{"split_store", 2}}), 132).split_owner);
    CHECK(variants::awq_fragment_mma_choose(awq_dense(m, 5120, 2048, 128), {}, 132).split_owner ==
          wgmma);
  }
  // The shared mainloop keeps its last arrival.
  CHECK_FALSE(fragment_mma_choose(dense(1024, 5120, 2048, 4), {}, 132).split_owner);
  // mma.sync (8 and 16 tokens, 4 pipelines a block) on kbit weights: the owner where 3 x tiles >=
  // 4 x SMs. Llama3-70B and 8B gate/up (224 tiles) yes; 176 tiles (N = 22528) just; 175, the
  // down projections (64 and 32 tiles) and AWQ weights no; on 100 SMs 134 tiles are enough.
  for (std::int64_t m : {1, 8, 16}) {
    INFO("M = " << m);
    CHECK(fragment_mma_choose(dense(m, 28672, 8192, 4), {}, 132).split_owner);
    CHECK(fragment_mma_choose(dense(m, 28672, 4096, 4), {}, 132).split_owner);
    CHECK(fragment_mma_choose(dense(m, 22528, 8192, 4), {}, 132).split_owner);
    CHECK_FALSE(fragment_mma_choose(dense(m, 22400, 8192, 4), {}, 132).split_owner);
    CHECK_FALSE(fragment_mma_choose(dense(m, 8192, 28672, 4), {}, 132).split_owner);
    CHECK_FALSE(fragment_mma_choose(dense(m, 4096, 14336, 4), {}, 132).split_owner);
    CHECK(fragment_mma_choose(dense(m, 17152, 8192, 4), {}, 100).split_owner);
    CHECK_FALSE(fragment_mma_choose(dense(m, 17024, 8192, 4), {}, 100).split_owner);
    CHECK_FALSE(
        fragment_mma_choose(dense(m, 28672, 8192, 4), with({{"split_store", 1}}), 132).split_owner);
    CHECK_FALSE(
        variants::awq_fragment_mma_choose(awq_dense(m, 28672, 8192, 128), {}, 132).split_owner);
    // A sole other partial stored whole under it.
    CHECK(fragment_mma_choose(dense(m, 28672, 8192, 4), {}, 132).stored_partials);
  }
}

TEST_CASE(
    "fragment_mma's own wgmma stores a walk's last piece through its ring unless asked not to",
    "[variants]") {
  using variants::fragment_mma_choose;
  for (std::int64_t m : {1, 8, 16, 32, 64, 128, 256}) {
    INFO("M = " << m);
    const bool own = m <= 128;  // 256 tokens on Llama3-70B's 217 k-tiles an SM: the shared mainloop
    const bool wgmma = own && m > 16;
    CHECK(fragment_mma_choose(dense(m, 28672, 8192, 4), {}, 132).staged_store == wgmma);
    const std::int64_t awq_m = std::min<std::int64_t>(m, 128);
    CHECK(variants::awq_fragment_mma_choose(awq_dense(awq_m, 28672, 8192, 128), {}, 132)
              .staged_store == (awq_m > 16));
    auto awq_with = [&](int v) {
      return variants::awq_fragment_mma_choose(awq_dense(awq_m, 28672, 8192, 128),
                                               with({{"staged_store", v}}), 132);
    };
    CHECK_FALSE(awq_with(1).staged_store);  // the registers, on wgmma and on mma.sync
    if (awq_m > 16)
      CHECK(awq_with(2).staged_store);
    else
      CHECK_THROWS_WITH(awq_with(2),
                        Catch::Contains("staged_store = 2 is the own kernel's wgmma's"));
    if (wgmma) {
      CHECK_FALSE(fragment_mma_choose(dense(m, 28672, 8192, 4), with({{"staged_store", 1}}), 132)
                      .staged_store);
      CHECK(fragment_mma_choose(dense(m, 28672, 8192, 4), with({{"staged_store", 2}}), 132)
                .staged_store);
    } else if (own) {  // the mma.sync kernel stores from the registers only
      CHECK_FALSE(fragment_mma_choose(dense(m, 28672, 8192, 4), with({{"staged_store", 1}}), 132)
                      .staged_store);
      CHECK_THROWS_WITH(
          fragment_mma_choose(dense(m, 28672, 8192, 4), with({{"staged_store", 2}}), 132),
          Catch::Contains("staged_store = 2 is the own kernel's wgmma's"));
    } else {  // the shared mainloop: no own-kernel option
      CHECK_THROWS_WITH(
          fragment_mma_choose(dense(m, 28672, 8192, 4), with({{"staged_store", 1}}), 132),
          Catch::Contains("staged_store = 1 is the own kernel's"));
    }
  }
}

TEST_CASE("fragment_mma's fixed owner takes a sole other partial stored whole unless asked not to",
          "[variants]") {
  using variants::fragment_mma_choose;
  for (std::int64_t m : {1, 8, 16, 32, 64, 128, 256}) {
    INFO("M = " << m);
    const bool own = m <= 128;
    const bool wgmma = own && m > 16;  // the fixed owner is the default there
    // Llama3-70B down: mma.sync's walks there are short (the last arrival by default).
    auto choose = [&](std::initializer_list<std::pair<const char*, std::int64_t>> options) {
      return fragment_mma_choose(dense(m, 8192, 28672, 4), with(options), 132);
    };
    CHECK(choose({}).stored_partials == wgmma);
    if (!own) {  // the shared mainloop: no own-kernel option
      CHECK_THROWS_WITH(choose({{"partial_sums", 2}}),
                        Catch::Contains("partial_sums = 2 is the own kernel's"));
      continue;
    }
    CHECK_FALSE(choose({{"partial_sums", 1}}).stored_partials);  // added, wherever asked
    CHECK(choose({{"split_store", 2}}).stored_partials);         // the owner on mma.sync too
    CHECK(choose({{"split_store", 2}, {"partial_sums", 2}}).stored_partials);
    CHECK_FALSE(choose({{"split_store", 2}, {"partial_sums", 1}}).stored_partials);
    // The last arrival (the default on mma.sync, or asked for): every contributor adds.
    CHECK_FALSE(choose({{"split_store", 1}}).stored_partials);
    CHECK_THROWS_WITH(choose({{"split_store", 1}, {"partial_sums", 2}}),
                      Catch::Contains("partial_sums = 2 needs the fixed owner"));
    if (!wgmma)
      CHECK_THROWS_WITH(choose({{"partial_sums", 2}}),
                        Catch::Contains("partial_sums = 2 needs the fixed owner"));
    // AWQ weights: the same rule (the same kernels and stores).
    auto awq = [&](std::initializer_list<std::pair<const char*, std::int64_t>> options) {
      return variants::awq_fragment_mma_choose(awq_dense(m, 8192, 28672, 128), with(options), 132);
    };
    CHECK(awq({}).stored_partials == wgmma);
    CHECK_FALSE(awq({{"partial_sums", 1}}).stored_partials);
  }
  // How a split tile's sums travel names no tile configuration: build N's 64-token tile on the
  // small layers stays (the rule that any other option of the own kernel turns off).
  CHECK(
      fragment_mma_choose(dense(128, 5120, 2048, 4), with({{"partial_sums", 1}}), 132).token_tile ==
      64);
}
