#include "harness/problem.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "harness/device_weights.hpp"
#include "reference/error.hpp"
#include "reference/fp16.hpp"
#include "reference/gemm_ref.hpp"
#include "reference/random.hpp"

namespace kbit {

HostWeights host_weights_kbit(std::vector<float> x, std::int64_t N, std::int64_t K_dim, int k,
                              const std::vector<float>& cb, int experts) {
  if (std::int64_t(x.size()) != std::int64_t(experts) * N * K_dim)
    throw Error("host_weights_kbit: " + std::to_string(x.size()) + " values for " +
                std::to_string(experts) + " x " + std::to_string(N) + " x " +
                std::to_string(K_dim));
  HostWeights w;
  w.N = N;
  w.K_dim = K_dim;
  w.k_bits = k;
  w.experts = experts;
  w.codebook = cb;
  w.q = quantize(x, cb, k);
  std::vector<float>().swap(x);  // freed before W is allocated (a 70B layer's is 1 GB)
  w.W = dequantize_f32(w.q, cb);
  return w;
}

HostWeights make_host_weights(std::int64_t N, std::int64_t K_dim, int k,
                              const std::vector<float>& cb, int experts, std::uint64_t seed) {
  return host_weights_kbit(random_normal(std::int64_t(experts) * N * K_dim, seed), N, K_dim, k, cb,
                           experts);
}

HostWeights host_weights_awq(AwqTensor t) {
  awq_validate(t);
  HostWeights w;
  w.N = t.n_out;
  w.K_dim = t.k_in;
  w.k_bits = 4;
  w.experts = 1;
  w.awq_group = t.group;
  w.awq = std::move(t);
  w.W = awq_dequantize(w.awq);
  return w;
}

HostWeights host_weights_awq(std::vector<float> x, std::int64_t N, std::int64_t K_dim, int group) {
  if (std::int64_t(x.size()) != N * K_dim)
    throw Error("host_weights_awq: " + std::to_string(x.size()) + " values for " +
                std::to_string(N) + " x " + std::to_string(K_dim));
  AwqTensor t = awq_quantize(x, N, K_dim, group);  // checks the shape and the group
  std::vector<float>().swap(x);
  return host_weights_awq(std::move(t));
}

HostWeights make_host_weights_awq(std::int64_t N, std::int64_t K_dim, int group, int experts,
                                  std::uint64_t seed) {
  if (experts != 1)
    throw Error("AWQ weights: experts = " + std::to_string(experts) +
                "; AWQ problems are dense only (1 expert)");
  return host_weights_awq(random_normal(N * K_dim, seed), N, K_dim, group);
}

HostActivations make_activations(std::int64_t M, std::int64_t K_dim, DType t, std::uint64_t seed) {
  HostActivations a;
  a.dtype = t;
  a.M = M;
  a.K_dim = K_dim;
  a.values = random_normal(M * K_dim, seed);
  a.bytes.resize(a.values.size() * dtype_size(t));
  for (std::size_t i = 0; i < a.values.size(); ++i) {
    store_from_float(t, a.bytes.data(), i, a.values[i]);
    a.values[i] = load_as_float(t, a.bytes.data(), i);
  }
  return a;
}

std::vector<std::int64_t> route_tokens(int experts, int tokens, int top_k,
                                       const std::string& routing, double zipf_s,
                                       std::uint64_t seed) {
  if (top_k < 1 || top_k > experts)
    throw Error("top_k = " + std::to_string(top_k) + " must be in 1.." + std::to_string(experts));
  if (routing != "uniform" && routing != "zipf")
    throw Error("routing '" + routing + "' is not uniform or zipf");
  // A seeded random ranking of the experts; zipf weight of rank r is 1/(r+1)^s.
  std::vector<int> rank(static_cast<std::size_t>(experts));
  std::iota(rank.begin(), rank.end(), 0);
  for (int i = experts - 1; i > 0; --i) {
    const int j = int(hashed_uniform(seed, std::uint64_t(i)) * (i + 1));
    std::swap(rank[std::size_t(i)], rank[std::size_t(j)]);
  }
  std::vector<double> weight(static_cast<std::size_t>(experts));
  for (int r = 0; r < experts; ++r)
    weight[std::size_t(rank[std::size_t(r)])] =
        routing == "zipf" ? 1.0 / std::pow(r + 1.0, zipf_s) : 1.0;
  std::vector<std::int64_t> count(std::size_t(experts), 0);
  std::uint64_t draw = 1u << 20;
  for (int t = 0; t < tokens; ++t) {
    std::vector<double> wt = weight;  // sample top_k distinct experts, weight-proportional
    for (int s = 0; s < top_k; ++s) {
      const double total = std::accumulate(wt.begin(), wt.end(), 0.0);
      double u = hashed_uniform(seed, draw++) * total;
      int e = 0;
      while (e < experts - 1 && (u -= wt[std::size_t(e)]) >= 0) ++e;
      while (wt[std::size_t(e)] == 0) e = (e + 1) % experts;  // rounding at the very end
      ++count[std::size_t(e)];
      wt[std::size_t(e)] = 0;
    }
  }
  std::vector<std::int64_t> off(std::size_t(experts) + 1, 0);
  for (int e = 0; e < experts; ++e)
    off[std::size_t(e) + 1] = off[std::size_t(e)] + count[std::size_t(e)];
  return off;
}

int active_experts(const std::vector<std::int64_t>& off) {
  int n = 0;
  for (std::size_t e = 0; e + 1 < off.size(); ++e) n += off[e + 1] > off[e];
  return n;
}

RowReference make_reference(const HostWeights& w, const HostActivations& a, const GemmDims& d,
                            const std::vector<std::int64_t>& rows) {
  RowReference r;
  r.rows = rows;
  const Eigen::Index R = Eigen::Index(rows.size());
  r.C.resize(R, d.N);
  r.abs_dot.resize(R, d.N);
  r.abs_a_sum.resize(R);
  auto expert_of = [&](std::int64_t row) {
    if (!d.grouped()) return 0;
    return int(std::upper_bound(d.expert_offsets.begin(), d.expert_offsets.end(), row) -
               d.expert_offsets.begin()) -
           1;
  };
  // Group the requested rows by expert and run one reference GEMM per expert.
  std::size_t i = 0;
  while (i < rows.size()) {
    const int e = expert_of(rows[i]);
    std::size_t j = i;
    while (j < rows.size() && expert_of(rows[j]) == e) ++j;
    const std::vector<std::int64_t> sub(rows.begin() + std::ptrdiff_t(i),
                                        rows.begin() + std::ptrdiff_t(j));
    const GemmReference g = reference_gemm(
        a.values.data(), a.M, d.K_dim, w.W.data() + std::int64_t(e) * w.expert_elems(), d.N, sub);
    r.C.middleRows(Eigen::Index(i), Eigen::Index(j - i)) = g.C;
    r.abs_dot.middleRows(Eigen::Index(i), Eigen::Index(j - i)) = g.abs_dot;
    r.abs_a_sum.segment(Eigen::Index(i), Eigen::Index(j - i)) = g.abs_a_sum;
    i = j;
  }
  return r;
}

ProblemCost problem_cost(const GemmDims& d) {
  const double experts = d.grouped() ? active_experts(d.expert_offsets) : 1;
  // AWQ per group of G: G nibbles, an fp16 scale, a 4-bit zero.
  const double per_weight = d.awq_group > 0 ? 0.5 + 2.5 / d.awq_group : d.k_bits / 8.0 + 1.0 / 32.0;
  const double weight_bytes = experts * double(d.N) * double(d.K_dim) * per_weight;
  const double io = double(d.M) * double(d.K_dim + d.N) * double(dtype_size(d.dtype));
  return {weight_bytes + io, 2.0 * double(d.M) * double(d.N) * double(d.K_dim)};
}

DeviceMemoryNeed estimate_device_memory(std::int64_t N, std::int64_t K_dim, int k_bits, DType dtype,
                                        int experts, const std::vector<WeightLayout>& layouts,
                                        std::int64_t max_m, bool scratch_weight, int awq_group) {
  HostWeights shape;  // expert_bytes reads only the shape
  shape.N = N;
  shape.K_dim = K_dim;
  shape.k_bits = awq_group > 0 ? 4 : k_bits;
  shape.experts = experts;
  shape.awq_group = awq_group;
  // kbit: flat always (the other kbit layouts come from it); AWQ: the layouts asked for.
  std::vector<WeightLayout> built;
  if (awq_group == 0) built.push_back(WeightLayout{LayoutKind::flat, {}});
  for (const WeightLayout& l : layouts)
    if (std::find(built.begin(), built.end(), l) == built.end()) built.push_back(l);
  DeviceMemoryNeed need;
  for (const WeightLayout& l : built)
    need.weights += DeviceWeights::expert_bytes(shape, dtype, l) * std::max(1, experts);
  const std::int64_t es = std::int64_t(dtype_size(dtype));
  need.io = max_m * (K_dim + N) * es;
  // One row's state lives at a time: the larger of a split-K fp32 workspace of C (with its
  // counters) and a scratch dequantized weight, plus 256 MiB for cuBLAS workspaces, tables,
  // routing arrays and the allocator's rounding.
  // The tiled kernels' workspace is tile-local: M and N rounded up to whole tiles (256 tokens,
  // 128 rows at most).
  const std::int64_t split_k = (max_m + 255) / 256 * 256 * ((N + 127) / 128 * 128) * 4 + N * 4;
  const std::int64_t scratch = scratch_weight ? N * K_dim * es * std::max(1, experts) : 0;
  need.workspace = std::max(split_k, scratch) + (std::int64_t(256) << 20);
  return need;
}

void check_device_memory(const std::string& what, const DeviceMemoryNeed& need,
                         std::int64_t free_bytes) {
  if (need.total() <= free_bytes) return;
  auto gb = [](std::int64_t b) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", double(b) / 1e9);
    return std::string(buf);
  };
  throw Error(what + " needs ~" + gb(need.total()) + " GB of device memory, " + gb(free_bytes) +
              " GB are free (weights " + gb(need.weights) + " GB, A and C " + gb(need.io) +
              " GB, workspaces " + gb(need.workspace) +
              " GB); nothing was run: narrow the config, or the run with --m or --shapes");
}

}  // namespace kbit
