// kbit-harness validate --variant NAME: the correctness sweep a new variant must pass before
// any of its timings is trusted. Every element of every problem is checked, except in grouped
// problems of more than kAllRowsUpTo rows: there every element of every active expert's first
// and last row and of a seeded sample of the others.
#include <sys/stat.h>

#include <dirent.h>
#include <fnmatch.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "harness/check.hpp"
#include "harness/commands.hpp"
#include "harness/config.hpp"
#include "harness/device_info.hpp"
#include "harness/dispatch.hpp"
#include "harness/execute.hpp"
#include "harness/options.hpp"
#include "harness/results.hpp"
#include "harness/weight_format.hpp"
#include "reference/codebook.hpp"
#include "reference/error_budget.hpp"
#include "reference/random.hpp"
#include "variants/common/cuda_check.hpp"

namespace kbit {
namespace {

struct Case {
  std::string name;
  std::int64_t N, K_dim;
  int experts = 0;           // 0: dense
  bool model_shape = false;  // a seed model shape: a few M values (its reference is costly)
  int awq_group = 0;         // > 0: AWQ int4 weights of this group (dense only)
};

// Tile multiples and not, tiny and large; K_dim multiples of 32 that are not of 64 or 128.
// n5000_k480: every tile split in two k-bands (scalar_gemv's cluster end, F-020);
// n4000_k2048: 8 k-bands per tile, 32 clusters of 8 do not fit (its tagged end, F-021).
std::vector<Case> dense_cases(bool quick) {
  std::vector<Case> c = {
      {"n200_k96", 200, 96},       {"n64_k32", 64, 32},       {"n128_k64", 128, 64},
      {"n257_k160", 257, 160},     {"n1_k64", 1, 64},         {"n300_k1024", 300, 1024},
      {"n1000_k2080", 1000, 2080}, {"n5000_k480", 5000, 480}, {"n4000_k2048", 4000, 2048}};
  if (!quick) c.push_back({"n4096_k4096", 4096, 4096});
  return c;
}

// The dense cases for AWQ weights of group G, the dense list's shapes with N a multiple of 8
// (AWQ packs eight columns to a word): N a multiple of the tiled repack's 128 columns and not,
// K_dim a multiple of G, and where G allows, not of 64 (a k-tile) or 128. A K_dim the group does
// not divide is left out for it (k32, k96, k160, k480, k2080 run at G = 32 only). n8_k128: one
// word column; n5000_k384 and n4000_k2048: many k-tiles per tile. `quick`: the marked few.
std::vector<Case> awq_cases(int group, bool quick) {
  struct Shape {
    const char* name;
    std::int64_t N, K_dim;
    bool in_quick;
  };
  static const Shape shapes[] = {
      {"n200_k96", 200, 96, true},        {"n64_k32", 64, 32, false},
      {"n128_k64", 128, 64, true},        {"n264_k160", 264, 160, false},
      {"n8_k128", 8, 128, true},          {"n296_k1024", 296, 1024, true},
      {"n1000_k2080", 1000, 2080, false}, {"n1000_k2176", 1000, 2176, true},
      {"n5000_k480", 5000, 480, true},    {"n5000_k384", 5000, 384, true},
      {"n4000_k2048", 4000, 2048, false}, {"n4096_k4096", 4096, 4096, false}};
  std::vector<Case> c;
  for (const Shape& x : shapes) {
    if (x.K_dim % group != 0 || (quick && !x.in_quick)) continue;
    Case k{weight_format_name(group) + "_" + x.name, x.N, x.K_dim};
    k.awq_group = group;
    c.push_back(k);
  }
  return c;
}

// 8 / 16 / 64 / 512 experts; N and K_dim tile multiples and not.
std::vector<Case> moe_cases() {
  return {{"moe_e8_n200_k96", 200, 96, 8},
          {"moe_e64_n256_k160", 256, 160, 64},
          {"moe_e16_n512_k2048", 512, 2048, 16},
          {"moe_e512_n136_k128", 136, 128, 512}};
}

// Grouped problems: tokens x top-k, decode to prefill. The quick sweep keeps the ends.
std::vector<int> moe_tokens(bool quick) {
  if (quick) return {1, 5, 33, 300, 8192};
  return {1, 2, 5, 16, 33, 130, 300, 2048, 8192};
}
std::vector<int> moe_top_k(bool quick) {
  if (quick) return {1, 4, 10};
  return {1, 4, 8, 10};
}
// A grouped problem's A is built and uploaded whole: larger ones are left out of the sweep.
constexpr std::int64_t kMaxGroupedAElems = std::int64_t(1) << 25;
// Grouped problems up to this many rows are checked whole; larger ones on every active expert's
// first and last row and a seeded sample of kSampledRows others.
constexpr std::int64_t kAllRowsUpTo = 512;
constexpr int kSampledRows = 256;

std::vector<std::int64_t> checked_rows(const std::vector<std::int64_t>& off, std::int64_t M,
                                       std::uint64_t seed) {
  std::vector<std::int64_t> rows;
  if (M <= kAllRowsUpTo) {
    for (std::int64_t i = 0; i < M; ++i) rows.push_back(i);
    return rows;
  }
  for (std::size_t e = 0; e + 1 < off.size(); ++e)
    if (off[e + 1] > off[e]) {
      rows.push_back(off[e]);
      rows.push_back(off[e + 1] - 1);
    }
  for (int i = 0; i < kSampledRows; ++i)
    rows.push_back(std::int64_t(splitmix64(seed + std::uint64_t(i)) % std::uint64_t(M)));
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

std::vector<Case> seed_shape_cases() {
  std::vector<Case> out;
  const std::string dir = source_dir() + "/experiments/shapes";
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  std::vector<std::string> files;
  while (dirent* e = readdir(d)) {
    const std::string f = e->d_name;
    if (f.size() > 5 && f.substr(f.size() - 5) == ".toml") files.push_back(dir + "/" + f);
  }
  closedir(d);
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    const std::string text =
        "name = \"v\"\nm = 1\nk_bits = 4\ndtype = \"fp16\"\nvariants = \"cublas_fp16\"\n"
        "shapes = [{include = \"" +
        f.substr(dir.size() + 1) + "\"}]\n";
    for (const auto& s : parse_experiment(text, dir + "/validate.toml").shapes)
      out.push_back({s.name, s.n, s.k_dim, 0, true});
  }
  return out;
}

// The seed model shapes with AWQ weights of group G (those AWQ can hold: N % 8, K_dim % G).
std::vector<Case> awq_seed_shape_cases(int group) {
  std::vector<Case> out;
  for (Case c : seed_shape_cases()) {
    if (c.N % 8 != 0 || c.K_dim % group != 0) continue;
    c.name = weight_format_name(group) + "_" + c.name;
    c.awq_group = group;
    out.push_back(c);
  }
  return out;
}

// Every AWQ case of every group, model shapes included (what --cases may name).
std::vector<Case> all_awq_cases() {
  std::vector<Case> all;
  for (int g : awq_group_sizes()) {
    for (const std::vector<Case>& more : {awq_cases(g, false), awq_seed_shape_cases(g)})
      all.insert(all.end(), more.begin(), more.end());
  }
  return all;
}

std::vector<std::int64_t> m_values(const Case& c, bool quick) {
  const std::vector<std::int64_t> issue = {1, 2, 3, 4, 15, 16, 17, 31, 33, 48, 64, 65, 128, 300};
  if (c.model_shape) return {1, 4, 17, 64};
  if (quick || c.N * c.K_dim > (1 << 22)) return issue;
  std::vector<std::int64_t> m;
  for (std::int64_t i = 1; i <= 70; ++i) m.push_back(i);
  for (std::int64_t i : {96, 128, 255, 300, 1024}) m.push_back(i);
  return m;
}

struct Tally {
  int problems = 0, failed = 0, nondeterministic = 0;
  double worst = 0;
  std::vector<std::string> repros;
  void add(const Tally& t) {
    problems += t.problems;
    failed += t.failed;
    nondeterministic += t.nondeterministic;
    worst = std::max(worst, t.worst);
    repros.insert(repros.end(), t.repros.begin(), t.repros.end());
  }
};

std::string split_name(SplitMode s) {
  return s == SplitMode::force_on ? "on" : s == SplitMode::force_off ? "off" : "auto";
}

std::string write_repro(const ValidateOptions& o, const Case& c, const GemmDims& d, SplitMode split,
                        const Outcome& out) {
  ::mkdir(o.repro_dir.c_str(), 0755);
  nlohmann::json j;
  j["variant"] = o.variant;
  j["case"] = c.name;
  j["N"] = d.N;
  j["K_dim"] = d.K_dim;
  j["M"] = d.M;
  j["k_bits"] = d.k_bits;
  j["awq_group"] = d.awq_group;
  j["dtype"] = dtype_name(d.dtype);
  j["experts"] = d.num_experts;
  j["expert_offsets"] = d.expert_offsets;
  j["split_k"] = split_name(split);
  for (const GivenOption& g : o.given_options) j["options"][g.name] = g.value;
  j["seed"] = o.seed;
  j["codebook"] = d.awq_group > 0 ? weight_format_name(d.awq_group) : "nf";
  j["error"] = out.error;
  j["checked"] = out.check.checked;
  j["violations"] = out.check.violations;
  j["max_err_over_bound"] = out.check.max_err_over_bound;
  for (const auto& b : out.check.first_bad)
    j["first_bad"].push_back(
        {{"row", b.row}, {"col", b.col}, {"got", b.got}, {"ref", b.ref}, {"bound", b.bound}});
  const std::string path =
      o.repro_dir + "/" + o.variant + "_" + c.name + "_M" + std::to_string(d.M) + "_" +
      (d.awq_group > 0 ? weight_format_name(d.awq_group) : "K" + std::to_string(d.k_bits)) + "_" +
      dtype_name(d.dtype) + "_split-" + split_name(split) + ".json";
  write_json_file(path, j);
  return path;
}

// Runs one problem (dims) with the given split modes and checks it; then runs it again
// (run_again: for a PDL row, a PDL call behind a plain one). A run that cannot split (split off, or
// a row without split-K) must repeat its bits; one that may split (atomics: the order of additions
// differs) must pass the check again, which is what tests that its workspace, counters and work
// pools cleaned up after the first call.
void validate_problem(const ValidateOptions& o, const VariantRow& row, const Case& c,
                      const GemmDims& d, const DeviceProblem& p, const RowReference& ref,
                      const std::vector<SplitMode>& splits, cudaStream_t stream, Tally& t) {
  for (SplitMode split : splits) {
    ++t.problems;
    VariantOptions opts = resolve_options(row, o.given_options, split);
    const Outcome out = execute_and_check(row, opts, d, p, &ref, stream);
    bool bad = !out.error.empty() || !out.check.pass;
    const bool may_split = row.support.split_k && split != SplitMode::force_off;
    if (!bad) {
      std::vector<unsigned char> first(p.C_bytes), second(p.C_bytes);
      KBIT_CUDA_CHECK(cudaMemcpy(first.data(), p.C, p.C_bytes, cudaMemcpyDeviceToHost));
      run_again(row, out.state.get(), d, p, stream);
      KBIT_CUDA_CHECK(cudaMemcpy(second.data(), p.C, p.C_bytes, cudaMemcpyDeviceToHost));
      if (may_split && out.checked) {
        const GemmBound b = gemm_bound(d.dtype, d.dtype, d.K_dim, out.state->extra_additions());
        const CheckResult again = check_output(ref, b, d.dtype, second, d.N);
        if (!again.pass) {
          bad = true;
          std::printf("  SECOND CALL FAILS%s %s M=%lld %s %s split=%s: %lld of %lld outside\n",
                      row.support.pdl ? " (PDL behind a plain call)" : "", c.name.c_str(),
                      (long long)d.M, weights_label(d).c_str(), dtype_name(d.dtype),
                      split_name(split).c_str(), (long long)again.violations,
                      (long long)again.checked);
        }
      } else if (!may_split && first != second) {
        ++t.nondeterministic;
        bad = true;
        std::printf("  NONDETERMINISTIC %s M=%lld %s %s split=%s: two runs differ\n",
                    c.name.c_str(), (long long)d.M, weights_label(d).c_str(), dtype_name(d.dtype),
                    split_name(split).c_str());
      }
    }
    if (out.checked) t.worst = std::max(t.worst, out.check.max_err_over_bound);
    if (bad) {
      ++t.failed;
      const std::string path = write_repro(o, c, d, split, out);
      t.repros.push_back(path);
      std::printf(
          "  FAIL %s M=%lld %s %s split=%s: %s; repro: %s\n", c.name.c_str(), (long long)d.M,
          weights_label(d).c_str(), dtype_name(d.dtype), split_name(split).c_str(),
          out.error.empty()
              ? (std::to_string(out.check.violations) + " of " + std::to_string(out.check.checked) +
                 " elements outside the bound (max err/bound " +
                 std::to_string(out.check.max_err_over_bound) + ")")
                    .c_str()
              : out.error.c_str(),
          path.c_str());
      if (out.sticky) throw Error("the CUDA context is broken; stopping (repro: " + path + ")");
    }
  }
}

// The first `M` rows of a reference computed for more rows.
RowReference prefix_rows(const RowReference& r, std::int64_t M) {
  RowReference p;
  const Eigen::Index n = Eigen::Index(std::min<std::int64_t>(M, std::int64_t(r.rows.size())));
  p.rows.assign(r.rows.begin(), r.rows.begin() + n);
  p.C = r.C.topRows(n);
  p.abs_dot = r.abs_dot.topRows(n);
  p.abs_a_sum = r.abs_a_sum.head(n);
  return p;
}

bool selected(const ValidateOptions& o, const Case& c) {
  if (o.cases.empty()) return true;
  return std::any_of(o.cases.begin(), o.cases.end(), [&](const std::string& g) {
    return fnmatch(g.c_str(), c.name.c_str(), 0) == 0;
  });
}

// One dense case's weights (kbit or AWQ), fp16 and bf16, every M of the case the row takes.
void validate_dense_weights(const ValidateOptions& o, const VariantRow& row, const Case& c,
                            const HostWeights& hw, const std::vector<SplitMode>& splits,
                            Stream& stream, Tally& total) {
  const int k = hw.k_bits;
  for (DType t : {DType::f16, DType::bf16}) {
    GemmDims dmax;
    dmax.N = c.N, dmax.K_dim = c.K_dim, dmax.k_bits = k, dmax.awq_group = hw.awq_group;
    dmax.dtype = t;
    std::vector<std::int64_t> ms;
    for (std::int64_t m : m_values(c, o.quick)) {
      GemmDims d = dmax;
      d.M = m;
      if (unsupported_reason(row, d).empty()) ms.push_back(m);
    }
    if (ms.empty()) continue;
    const std::int64_t max_m = ms.back();
    dmax.M = max_m;
    const HostActivations A =
        make_activations(max_m, c.K_dim, t, splitmix64(o.seed + std::uint64_t(k) * 17 + int(t)));
    std::vector<std::int64_t> all_rows(static_cast<std::size_t>(max_m));
    for (std::int64_t i = 0; i < max_m; ++i) all_rows[std::size_t(i)] = i;
    const RowReference ref = make_reference(hw, A, dmax, all_rows);
    std::vector<WeightLayout> layouts;  // what the row reads at each M (an auto row: its choice's)
    for (std::int64_t m : ms) {
      GemmDims d = dmax;
      d.M = m;
      const WeightLayout l = row_layout(row, d);
      if (std::find(layouts.begin(), layouts.end(), l) == layouts.end()) layouts.push_back(l);
    }
    const DeviceWeights dw(hw, t, layouts, 1, stream.get());
    DeviceBuffer<unsigned char> dA(A.bytes), dC(std::size_t(max_m * c.N) * dtype_size(t));
    Tally tl;
    for (std::int64_t m : ms) {
      GemmDims d = dmax;
      d.M = m;
      DeviceProblem p;
      p.weights = &dw;
      p.A = dA.get();
      p.C = dC.get();
      p.C_bytes = std::size_t(m * c.N) * dtype_size(t);
      p.codebook = codebook_arg(hw);
      validate_problem(o, row, c, d, p, prefix_rows(ref, m), splits, stream.get(), tl);
    }
    std::printf(
        "%s %-22s %-8s %-4s M=%lld..%lld (%zu values) x split %zu: %d problems, max err/bound "
        "%.3f\n",
        tl.failed ? "FAIL" : "ok  ", c.name.c_str(), weights_label(dmax).c_str(), dtype_name(t),
        (long long)ms.front(), (long long)ms.back(), ms.size(), splits.size(), tl.problems,
        tl.worst);
    std::fflush(stdout);
    total.add(tl);
  }
}

// Dense cases: kbit weights for each of --k-bits, or the case's AWQ weights (the N(0,1) values
// of the same case at K = 4).
void validate_dense(const ValidateOptions& o, const VariantRow& row, const std::vector<Case>& cases,
                    const std::vector<SplitMode>& splits, Stream& stream, Tally& total) {
  for (const Case& c : cases) {
    if (!selected(o, c)) continue;
    auto seed = [&](int k) {
      return splitmix64(o.seed ^ std::uint64_t(c.N * 131 + c.K_dim * 7 + k));
    };
    if (c.awq_group > 0) {
      validate_dense_weights(o, row, c,
                             make_host_weights_awq(c.N, c.K_dim, c.awq_group, 1, seed(4)), splits,
                             stream, total);
      continue;
    }
    for (int k : o.k_bits)
      validate_dense_weights(o, row, c,
                             make_host_weights(c.N, c.K_dim, k, codebook_nf(k), 1, seed(k)), splits,
                             stream, total);
  }
}

void validate_grouped(const ValidateOptions& o, const VariantRow& row,
                      const std::vector<SplitMode>& splits, Stream& stream, Tally& total) {
  for (const Case& c : moe_cases()) {
    if (!selected(o, c)) continue;
    for (int k : o.k_bits) {
      const HostWeights hw =
          make_host_weights(c.N, c.K_dim, k, codebook_nf(k), c.experts,
                            splitmix64(o.seed ^ std::uint64_t(c.experts * 1000 + k)));
      for (DType t : {DType::f16, DType::bf16}) {
        // The problems the row runs (tokens, top-k, routing), then the weights in every layout
        // it reads on them (an auto row: its choices'), built once.
        struct Grouped {
          GemmDims d;
          int tokens, top_k;
        };
        std::vector<Grouped> problems;
        std::vector<WeightLayout> layouts;
        for (int tokens : moe_tokens(o.quick)) {
          for (int top_k : moe_top_k(o.quick)) {
            if (top_k > c.experts || std::int64_t(tokens) * top_k * c.K_dim > kMaxGroupedAElems)
              continue;
            for (const char* routing : {"uniform", "zipf"}) {
              GemmDims d;
              d.N = c.N, d.K_dim = c.K_dim, d.k_bits = k, d.dtype = t, d.num_experts = c.experts;
              d.expert_offsets = route_tokens(c.experts, tokens, top_k, routing, 1.2,
                                              o.seed + std::uint64_t(tokens));
              d.M = d.expert_offsets.back();
              if (!unsupported_reason(row, d).empty()) continue;
              const WeightLayout l = row_layout(row, d);
              if (std::find(layouts.begin(), layouts.end(), l) == layouts.end())
                layouts.push_back(l);
              problems.push_back({std::move(d), tokens, top_k});
            }
          }
        }
        const DeviceWeights dw(hw, t, layouts, 1, stream.get());
        Tally tl;
        for (const Grouped& g : problems) {
          const GemmDims& d = g.d;
          const HostActivations A = make_activations(
              d.M, d.K_dim, t, splitmix64(o.seed + std::uint64_t(g.tokens * 7 + g.top_k)));
          const RowReference ref = make_reference(
              hw, A, d, checked_rows(d.expert_offsets, d.M, o.seed + std::uint64_t(g.tokens)));
          const OwnedProblem p(dw, A, d, hw.codebook);
          validate_problem(o, row, c, d, p.view(), ref, splits, stream.get(), tl);
        }
        std::printf(
            "%s %-22s K=%d %-4s tokens 1..8192, top-k 1..10, uniform+zipf: %d problems, max "
            "err/bound %.3f\n",
            tl.failed ? "FAIL" : "ok  ", c.name.c_str(), k, dtype_name(t), tl.problems, tl.worst);
        std::fflush(stdout);
        total.add(tl);
      }
    }
  }
}

// Every --cases pattern must name at least one case: a typo would otherwise validate nothing
// and pass.
void check_case_patterns(const ValidateOptions& o) {
  std::vector<Case> all = dense_cases(false);
  for (auto* more : {moe_cases, seed_shape_cases, all_awq_cases}) {
    const std::vector<Case> m = more();
    all.insert(all.end(), m.begin(), m.end());
  }
  for (const std::string& g : o.cases) {
    const bool hit = std::any_of(all.begin(), all.end(), [&](const Case& c) {
      return fnmatch(g.c_str(), c.name.c_str(), 0) == 0;
    });
    if (hit) continue;
    std::string names;
    for (const Case& c : all) names += " " + c.name;
    throw Error("--cases '" + g + "' matches no case; the cases are:" + names);
  }
}

// AWQ weights are 4-bit: --k-bits without 4 leaves them out.
bool awq_selected(const ValidateOptions& o, const VariantRow& row) {
  return row.support.dense && !row.support.awq_groups.empty() &&
         std::find(o.k_bits.begin(), o.k_bits.end(), 4) != o.k_bits.end();
}

// The dense case lists this row validates under --quick, --no-seed-shapes and --k-bits, in
// order: kbit, then AWQ of each group (whose cases carry their group, awq_g128_n200_k96).
std::vector<std::vector<Case>> dense_case_lists(const ValidateOptions& o, const VariantRow& row) {
  std::vector<std::vector<Case>> lists;
  if (row.support.dense && row.support.kbit) {
    lists.push_back(dense_cases(o.quick));
    if (o.seed_shapes) lists.push_back(seed_shape_cases());
  }
  if (awq_selected(o, row))
    for (int g : row.support.awq_groups) {
      lists.push_back(awq_cases(g, o.quick));
      if (o.seed_shapes) lists.push_back(awq_seed_shape_cases(g));
    }
  return lists;
}

// The --cases patterns must select at least one of the cases this row validates (its dense lists
// and, where it takes grouped problems, the MoE cases): a selection of none would validate
// nothing and pass.
void check_row_selection(const ValidateOptions& o, const VariantRow& row) {
  std::vector<Case> cases;
  for (const std::vector<Case>& list : dense_case_lists(o, row))
    cases.insert(cases.end(), list.begin(), list.end());
  if (row.support.grouped && row.support.kbit) {
    const std::vector<Case> moe = moe_cases();
    cases.insert(cases.end(), moe.begin(), moe.end());
  }
  if (std::any_of(cases.begin(), cases.end(), [&](const Case& c) { return selected(o, c); }))
    return;
  std::string names;
  for (const Case& c : cases) names += " " + c.name;
  std::string ks;
  for (int k : o.k_bits) ks += (ks.empty() ? "" : " ") + std::to_string(k);
  throw Error(
      "--cases and --k-bits " + ks + " select none of " + std::string(row.name) + "'s cases" +
      (names.empty() ? std::string(" (it has none at these widths)") : "; they are:" + names));
}

}  // namespace

int validate_variant(const ValidateOptions& o) {
  const VariantRow& row = find_variant(o.variant);
  if (!computes_gemm(row))
    throw Error("variant '" + o.variant + "' is a " + family_name(row.family) +
                " row: it computes no GEMM by design, so there is nothing to validate");
  for (int k : o.k_bits) check_k_bits(k);
  check_case_patterns(o);
  check_row_selection(o, row);
  const std::string options = resolve_options(row, o.given_options).describe();  // checks them
  // The value is checked for every row, those without split-K included (they ignore it).
  if (o.split_k != "auto" && o.split_k != "on" && o.split_k != "off" && o.split_k != "both")
    throw Error("--split-k '" + o.split_k + "' is not one of auto, on, off, both");
  std::vector<SplitMode> splits;
  if (!row.support.split_k || o.split_k == "auto") {
    splits = {SplitMode::automatic};
  } else if (o.split_k == "on") {
    splits = {SplitMode::force_on};
  } else if (o.split_k == "off") {
    splits = {SplitMode::force_off};
  } else {
    splits = {SplitMode::force_off, SplitMode::force_on};
  }
  if (!cuda_device_available()) {
    std::cerr << "kbit-harness validate: no CUDA device; nothing was validated (exit "
              << kExitNoDevice << ")\n";
    return kExitNoDevice;
  }
  // The auto rows' dispatch table is read and checked before any GPU work.
  if (is_auto_row(row.name)) process_dispatch_tables().load(query_device().name);
  std::printf("validating %s (%s)%s on %s\n", std::string(row.name).c_str(),
              std::string(row.description).c_str(),
              options.empty() ? "" : (" with options " + options).c_str(),
              query_device().name.c_str());
  Stream stream;
  Tally total;
  for (const std::vector<Case>& list : dense_case_lists(o, row))
    validate_dense(o, row, list, splits, stream, total);
  if (row.support.grouped && row.support.kbit) validate_grouped(o, row, splits, stream, total);
  std::printf("\n%s: %d problems, %d failed (%d nondeterministic), max err/bound %.4f\n",
              std::string(row.name).c_str(), total.problems, total.failed, total.nondeterministic,
              total.worst);
  for (const auto& r : total.repros) std::printf("repro: %s\n", r.c_str());
  if (total.problems == 0) {  // every selected problem outside the row's support
    std::cerr << "kbit-harness validate: no problem of " << std::string(row.name)
              << " was run (every selected case and width is outside what it takes); nothing "
                 "was validated\n";
    return kExitBadInput;
  }
  return total.failed ? kExitCheckFailed : kExitOk;
}

}  // namespace kbit
