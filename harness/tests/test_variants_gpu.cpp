// GPU: every registry row that is not a baseline passes the check on a small sweep (odd N,
// K_dim not a multiple of 64, every K, both dtypes, split-K forced on and off; AWQ rows on AWQ
// weights of each of their groups), and with
// split-K off two runs give identical bits; a row that supports programmatic dependent launch
// also passes with a PDL call right behind a plain one. Driven by the registry: a new row is tested
// here without touching this file. Each sweep counts the (problem, row) checks it ran per row
// (sweep_tally.hpp), prints them and fails a row that runs on the device but was checked on no
// problem. The full sweep is `kbit-harness validate --variant NAME`.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "harness/check.hpp"
#include "harness/dispatch.hpp"
#include "harness/execute.hpp"
#include "harness/options.hpp"
#include "harness/registry.hpp"
#include "harness/tests/sweep_tally.hpp"
#include "harness/timing.hpp"
#include "harness/weight_format.hpp"
#include "reference/codebook.hpp"
#include "reference/gemm_ref.hpp"
#include "variants/probes/probes.hpp"
#include "variants/tests/gpu_test_util.hpp"

using namespace kbit;

namespace {

struct Problem {
  HostWeights hw;
  HostActivations A;
  GemmDims d;
};

Problem dense(std::int64_t M, std::int64_t N, std::int64_t K, int k, DType t) {
  Problem p{make_host_weights(N, K, k, codebook_nf(k), 1, std::uint64_t(N * 7 + K + k)),
            make_activations(M, K, t, std::uint64_t(M + k)),
            {}};
  p.d.M = M, p.d.N = N, p.d.K_dim = K, p.d.k_bits = k, p.d.dtype = t;
  return p;
}

Problem grouped(int experts, int tokens, int top_k, std::int64_t N, std::int64_t K, int k,
                DType t) {
  GemmDims d;
  d.N = N, d.K_dim = K, d.k_bits = k, d.dtype = t, d.num_experts = experts;
  d.expert_offsets = route_tokens(experts, tokens, top_k, "zipf", 1.2, std::uint64_t(tokens));
  d.M = d.expert_offsets.back();
  return {make_host_weights(N, K, k, codebook_nf(k), experts, std::uint64_t(experts + k)),
          make_activations(d.M, K, t, std::uint64_t(tokens)), d};
}

// Checks the row on p with each split mode the row honours, where the row supports p; the tally
// counts the check, or the refusal and its reason. `given`: row options set (each kept in every
// split mode).
void check_row(const VariantRow& row, const Problem& p, Stream& s, test::SweepTally& tally,
               const std::vector<GivenOption>& given = {}) {
  if (!tally.admit(row, p.d)) return;
  DeviceWeights dw(p.hw, p.d.dtype, {row_layout(row, p.d)}, 1, s.get());
  const OwnedProblem owned(dw, p.A, p.d, p.hw.codebook);
  const DeviceProblem& dp = owned.view();
  const auto ref = make_reference(p.hw, p.A, p.d, sample_rows(p.d.M, 1 << 20));
  const std::vector<SplitMode> modes =
      row.support.split_k ? std::vector<SplitMode>{SplitMode::force_off, SplitMode::force_on}
                          : std::vector<SplitMode>{SplitMode::automatic};
  for (SplitMode m : modes) {
    INFO(row.name << " M=" << p.d.M << " N=" << p.d.N << " K_dim=" << p.d.K_dim << " "
                  << weights_label(p.d) << " " << dtype_name(p.d.dtype)
                  << " experts=" << p.d.num_experts
                  << " split=" << (m == SplitMode::force_on ? "on" : "off/auto"));
    const Outcome o =
        execute_and_check(row, resolve_options(row, given, m), p.d, dp, &ref, s.get());
    INFO("error: " << o.error << " violations " << o.check.violations << " max err/bound "
                   << o.check.max_err_over_bound);
    REQUIRE(o.error.empty());
    REQUIRE(o.check.pass);
    if (m != SplitMode::force_on) {
      std::vector<unsigned char> a(dp.C_bytes), b(dp.C_bytes);
      KBIT_CUDA_CHECK(cudaMemcpy(a.data(), dp.C, dp.C_bytes, cudaMemcpyDeviceToHost));
      row.run(o.state.get(), p.d, dp.args(row, p.d, 0), s.get());
      KBIT_CUDA_CHECK(cudaStreamSynchronize(s.get()));
      KBIT_CUDA_CHECK(cudaMemcpy(b.data(), dp.C, dp.C_bytes, cudaMemcpyDeviceToHost));
      REQUIRE(a == b);
    }
    if (row.support.pdl) {  // a PDL call right behind a plain one: its wait guards C and workspace
      run_again(row, o.state.get(), p.d, dp, s.get());
      std::vector<unsigned char> c(dp.C_bytes);
      KBIT_CUDA_CHECK(cudaMemcpy(c.data(), dp.C, dp.C_bytes, cudaMemcpyDeviceToHost));
      const GemmBound b = gemm_bound(p.d.dtype, p.d.dtype, p.d.K_dim, o.state->extra_additions());
      REQUIRE(check_output(ref, b, p.d.dtype, c, p.d.N).pass);
    }
  }
  tally.ran(row);
}

// Prints the sweep's checks per row; fails a sweep of no row and a row that runs on this device
// but was checked on no problem.
void require_every_row_checked(const test::SweepTally& tally) {
  std::cout << tally.report() << std::flush;
  INFO(tally.report());
  REQUIRE(tally.rows() > 0);
  CHECK(tally.unchecked_rows() == std::vector<std::string>{});
}

}  // namespace

TEST_CASE("every variant passes a small dense sweep", "[gpu][variants]") {
  KBIT_REQUIRE_GPU();
  Stream s;
  test::SweepTally tally("dense sweep", current_device_sm());
  for (const auto& row : registry()) {
    if (row.family == Family::baseline || !computes_gemm(row) || !row.support.dense) continue;
    if (!row.support.kbit) continue;  // AWQ rows: the sweep below
    for (int k = 2; k <= 5; ++k) {
      for (DType t : {DType::f16, DType::bf16}) {
        // 16 and 200: the 16-token tile (four row blocks a warp) and 256 (the shared mainloop)
        // through the split-K store.
        for (std::int64_t M : {1, 3, 4, 16, 17, 64, 200}) {
          check_row(row, dense(M, 200, 96, k, t), s, tally);
          check_row(row, dense(M, 257, 2080, k, t), s, tally);
        }
      }
    }
  }
  require_every_row_checked(tally);
}

namespace {

// A sweep set's row options, after `first` (given by the test).
std::vector<GivenOption> given_options(
    const std::vector<std::pair<const char*, std::int64_t>>& options,
    std::vector<GivenOption> first = {}) {
  for (const auto& [name, value] : options) first.push_back({name, value, "test"});
  return first;
}

}  // namespace

// fragment_mma's own kernel configurations that its defaults do not reach on the sweep's small
// problems (their short stream-K walks run one pipeline): one consumer warpgroup a pipeline beside
// a producer warpgroup (setmaxnreg) on 2 and 3 pipelines, 2 pipelines of two warpgroups beside one
// at 128 tokens, a commit group left in flight, 256-row tiles, the split tiles' store where it is
// not the default (the fixed owner on mma.sync, the last arrival on wgmma) and a walk's last piece
// from the registers on wgmma, on shapes whose stream-K stripes cut tiles, at K = 2..5.
TEST_CASE("fragment_mma's own kernel configurations pass a dense sweep", "[gpu][variants]") {
  KBIT_REQUIRE_GPU();
  Stream s;
  const VariantRow* row = &find_variant("fragment_mma");
  test::SweepTally tally("fragment_mma wgmma sweep", current_device_sm());
  struct Set {
    int token_tile;
    std::vector<std::pair<const char*, std::int64_t>> options;
  };
  const Set sets[] = {
      {32, {{"pipelines", 3}, {"row_blocks", 2}}},
      {64, {{"pipelines", 3}, {"row_blocks", 2}}},
      {64, {{"pipelines", 2}, {"row_blocks", 2}}},
      {128, {{"pipelines", 2}, {"row_blocks", 2}}},
      // A group in flight holds a stage's two k-tiles: asked for, since by default K = 5 takes 1
      // where 2 leave fewer than 3 ring stages.
      {32, {{"pipelines", 2}, {"row_blocks", 2}, {"group_in_flight", 1}, {"stage_k_tiles", 2}}},
      {64, {{"pipelines", 1}, {"group_in_flight", 1}, {"stage_k_tiles", 2}}},
      {128, {{"pipelines", 1}, {"group_in_flight", 1}, {"stage_k_tiles", 2}}},
      {128, {{"pipelines", 2}, {"row_blocks", 1}}},
      // 256-row tiles (two n-tiles a tile; N = 257: an odd n-tile count, the last tile one).
      {64, {{"tile_rows", 256}}},
      {128, {{"tile_rows", 256}}},
      {128, {{"tile_rows", 256}, {"row_blocks", 2}}},
      // The split tiles' two stores where they are not the default: a fixed owner on mma.sync,
      // the last arrival on wgmma.
      {16, {{"split_store", 2}}},
      {64, {{"split_store", 1}}},
      // A walk's last piece from the registers (the default: through the free ring), on tiles of
      // 128 rows and of 256 (the last of N = 257's one n-tile).
      {32, {{"staged_store", 1}}},
      {64, {{"staged_store", 1}}},
      {128, {{"staged_store", 1}}},
      {128, {{"tile_rows", 256}, {"staged_store", 1}}},
      {64, {{"split_store", 1}, {"staged_store", 1}}},  // the last arrival stores it
      // A split tile's other partials added into the zeroed workspace (the default stores a
      // sole one whole), on the owner's two stores; the fixed owner on mma.sync takes the default.
      {64, {{"partial_sums", 1}}},
      {128, {{"tile_rows", 256}, {"partial_sums", 1}}},
      {64, {{"staged_store", 1}, {"partial_sums", 1}}},
      {16, {{"split_store", 2}, {"partial_sums", 1}}},
  };
  for (const Set& set : sets) {
    const std::vector<GivenOption> given =
        given_options(set.options, {{"token_tile", set.token_tile, "test"}});
    for (int k : {2, 3, 4, 5})  // the layout's widths (K = 3: a rebuilt word; K = 5: 128 KB table)
      for (DType t : {DType::f16, DType::bf16})
        for (std::int64_t M : {17, 64, 100}) {
          INFO("K " << k << ", token_tile " << set.token_tile << ", " << set.options.size()
                    << " options");
          check_row(*row, dense(M, 257, 2080, k, t), s, tally, given);
          check_row(*row, dense(M, 1000, 1024, k, t), s, tally, given);
        }
  }
  require_every_row_checked(tally);
}

// A split tile's sole other partial stored whole (partial_sums = 2, the default under the fixed
// owner) needs tiles of two contributors, which the sweep's small problems rarely have (their
// short stream-K walks cut a tile many times). On 132 SMs at N = 28672, K_dim = 2048, one
// pipeline a block walks 28 k-steps over tiles of 16 (two k-tiles a stage: every split tile has
// two contributors) or of 32 (256-row tiles, one k-tile: most have two). The added partials
// (partial_sums = 1) beside them, and a short last k-step (K_dim 2080).
TEST_CASE("fragment_mma's sole stored partials pass on layers of long walks", "[gpu][variants]") {
  KBIT_REQUIRE_GPU();
  Stream s;
  test::SweepTally tally("fragment_mma long-walk sweep", current_device_sm());
  const std::pair<std::int64_t, std::vector<std::pair<const char*, std::int64_t>>> sets[] = {
      {100, {}},
      {100, {{"partial_sums", 1}}},
      {128, {{"tile_rows", 256}}},
      {64, {{"pipelines", 1}}},
  };
  for (const auto& [M, options] : sets)
    for (DType t : {DType::f16, DType::bf16})
      for (std::int64_t K : {2048, 2080}) {
        INFO("M " << M << ", K_dim " << K << ", " << options.size() << " options");
        check_row(find_variant("fragment_mma"), dense(M, 28672, K, 4, t), s, tally,
                  given_options(options));
      }
  require_every_row_checked(tally);
}

// AWQ weights (the same N(0,1) values as dense()'s at K = 4, quantized by awq_quantize).
static Problem dense_awq(std::int64_t M, std::int64_t N, std::int64_t K, int group, DType t) {
  Problem p{make_host_weights_awq(N, K, group, 1, std::uint64_t(N * 7 + K + 4)),
            make_activations(M, K, t, std::uint64_t(M + 4)),
            {}};
  p.d.M = M, p.d.N = N, p.d.K_dim = K, p.d.k_bits = 4, p.d.awq_group = group, p.d.dtype = t;
  return p;
}

TEST_CASE("every AWQ variant passes a small sweep of its groups", "[gpu][variants][awq]") {
  KBIT_REQUIRE_GPU();
  Stream s;
  test::SweepTally tally("AWQ sweep", current_device_sm());
  int rows = 0;
  for (const auto& row : registry()) {
    if (row.family == Family::baseline || !computes_gemm(row) || !row.support.dense) continue;
    rows += !row.support.awq_groups.empty();
    for (int g : row.support.awq_groups) {
      for (DType t : {DType::f16, DType::bf16}) {
        for (std::int64_t M : {1, 3, 4, 17, 64, 100}) {
          // N a multiple of 8, not of 128; K_dim a multiple of G, not of 128 where G allows.
          check_row(row, dense_awq(M, 200, g == 128 ? 384 : 192, g, t), s, tally);
          check_row(row, dense_awq(M, 264, 2176, g, t), s, tally);
          // G = 32 with K_dim % 64 = 32: the last k-tile's second group lies past K_dim.
          if (g == 32) check_row(row, dense_awq(M, 136, 160, g, t), s, tally);
        }
      }
    }
  }
  REQUIRE(rows >= 2);  // awq_gemv and awq_gemm at least: a sweep of nothing is no test
  require_every_row_checked(tally);
  // awq_auto (swept by its Support) runs the row its lookup chooses per problem (the device's
  // dispatch table, else the fixed rule), on weights in that row's layout (row_layout).
  if (current_device_sm() >= find_variant("awq_auto").support.min_sm)
    CHECK(tally.checked("awq_auto") > 0);
}

// awq_fragment_mma's configurations that its defaults do not reach on the sweep's small problems
// (short stream-K walks run one pipeline at 32 and 64 tokens): one consumer warpgroup a pipeline on
// 2 and 3 pipelines, 2 pipelines at 128 tokens, the scale after the MMA at 8 and 16 tokens, at
// groups 32 (two a k-tile) and 128 (one over two k-tiles).
TEST_CASE("awq_fragment_mma's configurations pass an AWQ sweep", "[gpu][variants][awq]") {
  KBIT_REQUIRE_GPU();
  Stream s;
  const VariantRow* row = nullptr;
  for (const auto& r : registry())
    if (r.name == "awq_fragment_mma") row = &r;
  REQUIRE(row != nullptr);
  test::SweepTally tally("awq_fragment_mma sweep", current_device_sm());
  struct Set {
    int token_tile;
    std::vector<std::pair<const char*, std::int64_t>> options;
  };
  const Set sets[] = {
      {8, {{"scale_after_mma", 2}}},
      {16, {{"scale_after_mma", 2}}},
      {32, {{"pipelines", 3}, {"row_blocks", 2}}},
      {64, {{"pipelines", 3}, {"row_blocks", 2}}},
      {64, {{"pipelines", 2}, {"row_blocks", 2}}},
      {128, {{"pipelines", 2}, {"row_blocks", 2}}},
      {128, {{"pipelines", 2}, {"row_blocks", 1}}},
      {64, {{"staged_store", 1}}},  // from the registers (the default: through the free ring)
  };
  for (const Set& set : sets) {
    std::vector<GivenOption> given{{"token_tile", set.token_tile, "test"}};
    for (const auto& [name, value] : set.options) given.push_back({name, value, "test"});
    for (int g : {32, 128})
      for (std::int64_t M : {5, 17, 64, 100}) {
        INFO("token_tile " << set.token_tile << ", " << set.options.size() << " options, G " << g);
        check_row(*row, dense_awq(M, 264, 2176, g, DType::f16), s, tally, given);
        check_row(*row, dense_awq(M, 1000, 1024, g, DType::f16), s, tally, given);
        // 33 k-tiles: with 2 a stage, the last k-step's second k-tile is a stale slot of the
        // ring (zeroed at the start) against the TMA's zero activations.
        if (g == 32) check_row(*row, dense_awq(M, 264, 2112, g, DType::f16), s, tally, given);
      }
  }
  require_every_row_checked(tally);
}

TEST_CASE("every grouped variant passes MoE problems with empty experts", "[gpu][variants]") {
  KBIT_REQUIRE_GPU();
  Stream s;
  test::SweepTally tally("MoE sweep", current_device_sm());
  for (const auto& row : registry()) {
    if (row.family == Family::baseline || !computes_gemm(row) || !row.support.grouped) continue;
    for (int k : {2, 4, 5}) {
      for (DType t : {DType::f16, DType::bf16}) {
        check_row(row, grouped(16, 3, 4, 200, 96, k, t), s, tally);
        check_row(row, grouped(8, 9, 2, 130, 2080, k, t), s, tally);
      }
    }
  }
  require_every_row_checked(tally);
}

TEST_CASE("variants refuse problems outside their support before launching", "[gpu][variants]") {
  KBIT_REQUIRE_GPU();
  GemmDims d;
  d.M = 16, d.N = 256, d.K_dim = 256, d.k_bits = 4, d.dtype = DType::f16;
  CHECK_THROWS_WITH(find_variant("scalar_gemv").setup(d, {}),
                    Catch::Contains("M = 16") && Catch::Contains("1..4"));
  GemmDims g = d;
  g.num_experts = 3;
  g.M = 5;
  g.expert_offsets = {0, 3, 2, 5};
  CHECK_THROWS_WITH(find_variant("grouped_scalar_gemv").setup(g, {}),
                    Catch::Contains("not monotonic"));
  g.expert_offsets = {0, 3, 4, 9};
  CHECK_THROWS_WITH(find_variant("grouped_scalar_gemv").setup(g, {}),
                    Catch::Contains("past the end of A"));
}

// The row's options with `set` given ("name=value" each), resolved as a config would.
static VariantOptions with_options(const VariantRow& row, std::initializer_list<const char*> set) {
  std::vector<GivenOption> given;
  for (const char* f : set) given.push_back(parse_option_flag(f));
  return resolve_options(row, given);
}

// XOR of a buffer's bytes taken as little-endian 32-bit words (its size a multiple of 4).
static std::uint32_t xor_words(const unsigned char* p, std::size_t bytes) {
  std::uint32_t x = 0;
  for (std::size_t i = 0; i < bytes; i += 4)
    x ^= std::uint32_t(p[i]) | std::uint32_t(p[i + 1]) << 8 | std::uint32_t(p[i + 2]) << 16 |
         std::uint32_t(p[i + 3]) << 24;
  return x;
}

TEST_CASE("read probes write C = 0, read_ldg and read_slices read every word, read_bulk A",
          "[gpu][variants]") {
  KBIT_REQUIRE_GPU();
  Stream s;
  for (const char* name : {"read_ldg", "read_bulk", "read_slices"}) {
    const VariantRow& row = find_variant(name);
    REQUIRE(row.family == Family::probe);
    for (int k : {3, 4}) {
      const Problem p = dense(3, 257, 2080, k, DType::bf16);
      INFO(name << " K=" << k);
      const auto& ks = row.support.k_bits;
      if (std::find(ks.begin(), ks.end(), k) == ks.end()) continue;  // read_slices: K = 4 only
      if (const std::string why = unsupported_reason(row, p.d); !why.empty()) {
        // read_bulk below sm_90: the device is the only reason a probe may refuse this problem
        std::cout << name << " does not run on this device: " << why << std::endl;
        REQUIRE(current_device_sm() < row.support.min_sm);
        continue;
      }
      DeviceWeights dw(p.hw, p.d.dtype, {row_layout(row, p.d)}, 1, s.get());
      const OwnedProblem owned(dw, p.A, p.d, p.hw.codebook);
      const DeviceProblem& dp = owned.view();
      const Outcome o = execute_and_check(row, {}, p.d, dp, nullptr, s.get());
      REQUIRE(o.error.empty());
      std::vector<unsigned char> c(dp.C_bytes);
      KBIT_CUDA_CHECK(cudaMemcpy(c.data(), dp.C, c.size(), cudaMemcpyDeviceToHost));
      CHECK(std::all_of(c.begin(), c.end(), [](unsigned char b) { return b == 0; }));  // was 0xFF
      if (row.name == "read_bulk") {
        // A_EACH: every streaming block read all of A (striped, all weights before the wait;
        // round-robin with the late trigger; 100 streaming blocks, the other slots held).
        const std::uint32_t a_xor = xor_words(p.A.bytes.data(), p.A.bytes.size());
        const std::vector<std::uint32_t> none = variants::read_bulk_a_words(o.state.get());
        CHECK(std::all_of(none.begin(), none.end(), [](std::uint32_t x) { return x == 0; }));
        for (const VariantOptions& opts :
             {with_options(row, {"striped=1", "a_each=1"}),
              with_options(row, {"chunk=4096", "stages=2", "blocks_per_sm=2", "before_wait=2",
                                 "late_trigger=1", "a_each=1"}),
              with_options(row, {"blocks_per_sm=2", "striped=1", "before_wait=4", "grid=100",
                                 "hold=1", "a_each=1"})}) {
          INFO("options " << opts.describe());
          const Outcome o2 = execute_and_check(row, opts, p.d, dp, nullptr, s.get());
          REQUIRE(o2.error.empty());
          const std::vector<std::uint32_t> words = variants::read_bulk_a_words(o2.state.get());
          CHECK(words.size() >= 100);
          CHECK(
              std::all_of(words.begin(), words.end(), [&](std::uint32_t x) { return x == a_xor; }));
        }
        CHECK_THROWS_WITH(with_options(row, {"a_each=2"}),
                          Catch::Contains("a_each of read_bulk = 2"));
        CHECK_THROWS_WITH(
            row.setup(p.d, with_options(row, {"chunk=1000"})),
            Catch::Contains("chunk of read_bulk = 1000") && Catch::Contains("multiple of 16"));
        CHECK_THROWS_WITH(row.setup(p.d, with_options(row, {"hold=1"})), Catch::Contains("grid"));
        continue;
      }
      const WeightView w = dp.args(row, p.d, 0).w;
      std::vector<unsigned char> planes(std::size_t(w.geo.packed_words()) * 4),
          codes(std::size_t(w.geo.absmax_bytes()));
      KBIT_CUDA_CHECK(cudaMemcpy(planes.data(), w.packed, planes.size(), cudaMemcpyDeviceToHost));
      KBIT_CUDA_CHECK(cudaMemcpy(codes.data(), w.absmax, codes.size(), cudaMemcpyDeviceToHost));
      const std::uint32_t weights =
          xor_words(planes.data(), planes.size()) ^ xor_words(codes.data(), codes.size());
      if (row.name == "read_ldg") {
        CHECK(variants::read_probe_checksum(o.state.get()) ==
              (weights ^ xor_words(p.A.bytes.data(), p.A.bytes.size())));
        continue;
      }
      // read_slices: every weight word landed once (the boxes past the last k-tile land zeros),
      // in its default units and in others: 16 and 128 columns, an odd k-tile count, 3 stages,
      // bulk copies per k-tile (the last unit of a slice partial), slices of 2 and 4 n-tiles (N =
      // 257: 3 n-tiles, so the last one partial), tiles read n-tile-major
      CHECK(variants::read_slices_checksum(o.state.get()) == weights);
      // slice, kt, stages, blocks_per_sm, smem, bulk, nt_major
      auto slices = [&](int slice, int kt, int stages, int per_sm, int smem, int bulk,
                        int nt_major = 0) {
        const std::string f[] = {
            "slice=" + std::to_string(slice),      "kt=" + std::to_string(kt),
            "stages=" + std::to_string(stages),    "blocks_per_sm=" + std::to_string(per_sm),
            "smem=" + std::to_string(smem),        "bulk=" + std::to_string(bulk),
            "nt_major=" + std::to_string(nt_major)};
        std::vector<GivenOption> given;
        for (const std::string& x : f) given.push_back(parse_option_flag(x));
        return resolve_options(row, given);
      };
      for (const VariantOptions& opts :
           {slices(16, 5, 3, 0, 0, 0), slices(128, 3, 1, 1, 110592, 0),
            slices(64, 33, 2, 0, 110592, 0), slices(128, 4, 2, 2, 0, 1), slices(32, 5, 3, 0, 0, 1),
            slices(512, 1, 2, 2, 0, 1), slices(256, 3, 2, 2, 110592, 0), slices(512, 2, 2, 2, 0, 0),
            // The same tiles read n-tile-major (every tile once, in another order).
            slices(128, 2, 3, 4, 0, 1, 1), slices(128, 3, 2, 2, 0, 1, 1)}) {
        INFO("options " << opts.describe());
        const Outcome o2 = execute_and_check(row, opts, p.d, dp, nullptr, s.get());
        REQUIRE(o2.error.empty());
        CHECK(variants::read_slices_checksum(o2.state.get()) == weights);
      }
      CHECK_THROWS_WITH(
          row.setup(p.d, slices(24, 16, 2, 2, 0, 0)),
          Catch::Contains("slice of read_slices = 24") && Catch::Contains("power of two"));
      CHECK_THROWS_WITH(row.setup(p.d, slices(32, 256, 8, 2, 0, 0)), Catch::Contains("more than"));
      CHECK_THROWS_WITH(slices(1024, 16, 2, 2, 0, 0), Catch::Contains("outside 16..512"));
      CHECK_THROWS_WITH(slices(32, 0, 2, 2, 0, 0), Catch::Contains("kt of read_slices = 0"));
      CHECK_THROWS_WITH(slices(32, 16, 9, 2, 0, 0), Catch::Contains("stages of read_slices = 9"));
      CHECK_THROWS_WITH(slices(32, 16, 2, 2, 300000, 0), Catch::Contains("smem"));
      CHECK_THROWS_WITH(row.setup(p.d, slices(64, 2, 2, 2, 0, 1, 1)),
                        Catch::Contains("nt_major = 1 needs slice = 128"));
      CHECK_THROWS_WITH(row.setup(p.d, slices(128, 2, 2, 2, 0, 0, 1)), Catch::Contains("bulk = 1"));
    }
    GemmDims g;
    g.M = 1, g.N = 256, g.K_dim = 256, g.k_bits = 4, g.dtype = DType::f32;
    CHECK_THROWS_WITH(row.setup(g, {}), Catch::Contains("fp32"));
  }
}

// grouped_mma lists its m-tiles on the device inside the launch: a CUDA graph captured once
// follows new expert offsets written into the same device buffer between replays (same M, other
// routing), and checked mode refuses malformed device offsets, naming the entry and its value,
// while the unchecked path clamps them without a fault.
TEST_CASE("grouped_mma builds its work list on the device and checks offsets when asked",
          "[gpu][variants]") {
  KBIT_REQUIRE_GPU();
  const VariantRow& row = find_variant("grouped_mma");
  Problem p = grouped(16, 40, 4, 200, 96, 4, DType::f16);
  if (const std::string why = unsupported_reason(row, p.d); !why.empty()) {
    REQUIRE(current_device_sm() < row.support.min_sm);  // the device, not the problem
    KBIT_SKIP("grouped_mma does not run on this device: " + why);
  }
  Stream s;
  DeviceWeights dw(p.hw, p.d.dtype, {row_layout(row, p.d)}, 1, s.get());
  const OwnedProblem owned(dw, p.A, p.d, p.hw.codebook);
  const DeviceProblem& dp = owned.view();
  auto state = row.setup(p.d, resolve_options(row, {}));
  auto* off = const_cast<std::int64_t*>(dp.expert_offsets);
  // On the test's stream, waited for: a pageable cudaMemcpy may return before the device has
  // the bytes, and the runs below are on a non-blocking stream.
  auto upload = [&](const std::vector<std::int64_t>& o) {
    KBIT_CUDA_CHECK(
        cudaMemcpyAsync(off, o.data(), o.size() * sizeof(o[0]), cudaMemcpyHostToDevice, s.get()));
    KBIT_CUDA_CHECK(cudaStreamSynchronize(s.get()));
  };
  auto output = [&] {
    std::vector<unsigned char> c(dp.C_bytes);
    KBIT_CUDA_CHECK(cudaMemcpy(c.data(), dp.C, dp.C_bytes, cudaMemcpyDeviceToHost));
    return c;
  };
  const GemmBound bound = gemm_bound(p.d.dtype, p.d.dtype, p.d.K_dim, state->extra_additions());

  // One run of `st` captured as a graph (the harness's timing graphs).
  auto run_graph = [&](VariantState* st) {
    return std::make_unique<LaunchGraph>(
        [&](int, cudaStream_t stream) { row.run(st, p.d, dp.args(row, p.d, 0), stream); }, 1, 1,
        s.get());
  };
  const auto graph = run_graph(state.get());
  GemmDims other = p.d;  // the same rows routed otherwise: uniform, another seed
  other.expert_offsets = route_tokens(16, 40, 4, "uniform", 1.2, 99);
  REQUIRE(other.expert_offsets != p.d.expert_offsets);
  REQUIRE(other.expert_offsets.back() == p.d.M);
  for (const GemmDims* d : {&p.d, &other, &p.d}) {
    upload(d->expert_offsets);
    KBIT_CUDA_CHECK(cudaMemsetAsync(dp.C, 0xff, dp.C_bytes, s.get()));
    graph->replay(s.get());
    KBIT_CUDA_CHECK(cudaStreamSynchronize(s.get()));
    const auto ref = make_reference(p.hw, p.A, *d, sample_rows(d->M, 1 << 20));
    CHECK(check_output(ref, bound, d->dtype, output(), d->N).pass);
  }

  const std::int64_t M = p.d.M;
  const auto checked = row.setup(p.d, with_options(row, {"checked=1"}));
  struct Case {
    std::size_t at;
    std::int64_t value;
    std::string words;
  };
  for (const Case& c :
       {Case{0, 1, "must be 0"}, Case{5, -3, "is below expert_offsets[4] = "},
        Case{16, M + 7, "past the end of A (M = " + std::to_string(M) + " rows)"}}) {
    auto o = p.d.expert_offsets;
    o[c.at] = c.value;
    upload(o);
    // The run itself returns (it never synchronizes); what it recorded throws after it.
    const std::string entry =
        "expert_offsets[" + std::to_string(c.at) + "] = " + std::to_string(c.value);
    row.run(checked.get(), p.d, dp.args(row, p.d, 0), s.get());
    CHECK_THROWS_WITH(checked->check_after_run(s.get()),
                      Catch::Contains(entry) && Catch::Contains(c.words));
    // A checked run captured into a graph: each replay records again.
    const auto checked_graph = run_graph(checked.get());
    checked_graph->replay(s.get());
    CHECK_THROWS_WITH(checked->check_after_run(s.get()),
                      Catch::Contains(entry) && Catch::Contains(c.words));
    upload(p.d.expert_offsets);  // well-formed: the replay records nothing
    checked_graph->replay(s.get());
    CHECK_NOTHROW(checked->check_after_run(s.get()));
    upload(o);
    // Unchecked: clamped into A and C, no fault (compute-sanitizer's memcheck runs this too).
    row.run(state.get(), p.d, dp.args(row, p.d, 0), s.get());
    KBIT_CUDA_CHECK(cudaStreamSynchronize(s.get()));
  }
  upload(p.d.expert_offsets);
  row.run(checked.get(), p.d, dp.args(row, p.d, 0), s.get());  // well-formed: runs and checks
  CHECK_NOTHROW(checked->check_after_run(s.get()));
  const auto ref = make_reference(p.hw, p.A, p.d, sample_rows(M, 1 << 20));
  CHECK(check_output(ref, bound, p.d.dtype, output(), p.d.N).pass);
}
