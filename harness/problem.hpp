// Problem data on the host: random weights quantized by the reference, activations, MoE
// routing, and the reference rows every variant is checked against.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "reference/awq.hpp"
#include "reference/dtype.hpp"
#include "reference/quantize.hpp"
#include "variants/variant_api.hpp"

namespace kbit {

// E experts (1 for a dense layer) of W[N, K_dim], N(0,1) weights (or a checkpoint's: a config's
// FileWeights, harness/config_weights.hpp) quantized by the reference:
// kbit (q and codebook), or AWQ int4 of group awq_group (awq; dense only, k_bits 4, no codebook).
struct HostWeights {
  std::int64_t N = 0, K_dim = 0;
  int k_bits = 0, experts = 1;
  int awq_group = 0;  // 0: kbit weights
  std::vector<float> codebook;
  QuantizedTensor q;     // expert-major: expert e holds elements [e*N*K_dim, (e+1)*N*K_dim)
  AwqTensor awq;         // awq_group > 0: the AutoAWQ tensors of W (docs/awq_format.md)
  std::vector<float> W;  // float32 dequantized weights (kbit or AWQ), [expert][N][K_dim]
  std::int64_t expert_elems() const { return N * K_dim; }
};
HostWeights make_host_weights(std::int64_t N, std::int64_t K_dim, int k_bits,
                              const std::vector<float>& codebook, int experts, std::uint64_t seed);
// The same N(0,1) weights as make_host_weights with this seed, quantized by awq_quantize with
// group `group` (32, 64, 128; N % 8 == 0, K_dim % group == 0); W = awq_dequantize. Throws
// kbit::Error for experts != 1 (AWQ problems are dense) and for a shape AWQ cannot hold.
HostWeights make_host_weights_awq(std::int64_t N, std::int64_t K_dim, int group, int experts,
                                  std::uint64_t seed);
// The same from given values x ([expert][N][K_dim] float32, a checkpoint's weight): kbit weights
// (quantize), AWQ weights of one dense weight (awq_quantize).
// x is freed once quantized.
HostWeights host_weights_kbit(std::vector<float> x, std::int64_t N, std::int64_t K_dim, int k_bits,
                              const std::vector<float>& codebook, int experts = 1);
HostWeights host_weights_awq(std::vector<float> x, std::int64_t N, std::int64_t K_dim, int group);
// AWQ tensors as they are (a checkpoint's qweight, qzeros, scales): awq_validate, then
// W = awq_dequantize.
HostWeights host_weights_awq(AwqTensor t);

// A[M, K_dim]: N(0,1) values rounded to `dtype`; `values` holds exactly what `bytes` encodes.
struct HostActivations {
  DType dtype = DType::f16;
  std::int64_t M = 0, K_dim = 0;
  std::vector<float> values;
  std::vector<unsigned char> bytes;
};
HostActivations make_activations(std::int64_t M, std::int64_t K_dim, DType dtype,
                                 std::uint64_t seed);

// Routes `tokens` tokens to `top_k` distinct experts each ("uniform", or "zipf" with
// exponent s over a seeded random ranking of the experts). Returns expert_offsets[E+1]
// over the tokens*top_k rows sorted by expert.
std::vector<std::int64_t> route_tokens(int experts, int tokens, int top_k,
                                       const std::string& routing, double zipf_s,
                                       std::uint64_t seed);
int active_experts(const std::vector<std::int64_t>& expert_offsets);

// Rows of C_ref = A * deq(W)^T (per expert for grouped problems) with |A| |W|^T and sum|A|.
struct RowReference {
  std::vector<std::int64_t> rows;  // global row indices, ascending
  Eigen::MatrixXd C, abs_dot;      // rows.size() x N
  Eigen::VectorXd abs_a_sum;
};
RowReference make_reference(const HostWeights& w, const HostActivations& a, const GemmDims& dims,
                            const std::vector<std::int64_t>& rows);

// The problem's floor inputs: bytes of the compressed weights touched (active experts; kbit
// K + 1/4 bits per weight, AWQ 4 + 20/G: the nibble, an fp16 scale and a 4-bit zero per group),
// A and C; flops 2*M*N*K_dim.
struct ProblemCost {
  double bytes = 0, flops = 0;
};
ProblemCost problem_cost(const GemmDims& dims);

// Device memory a run needs for one (layer, K, dtype) at its largest problem, estimated before
// anything is allocated: `run` refuses a config whose layers cannot fit instead of failing (or
// thrashing) halfway through.
struct DeviceMemoryNeed {
  std::int64_t weights = 0;    // one copy of every layout built (flat for kbit), all experts
  std::int64_t io = 0;         // A and C of the largest M
  std::int64_t workspace = 0;  // margin for the rows' workspaces (split-K, cuBLAS, scratch)
  std::int64_t total() const { return weights + io + workspace; }
};
// `layouts`: those the run's rows read (DeviceWeights adds flat for kbit weights);
// `scratch_weight`: a row dequantizes the weights of every expert into a scratch buffer of its
// own (dequant_cublas); `awq_group` > 0: AWQ weights of that group (k_bits is then 4).
DeviceMemoryNeed estimate_device_memory(std::int64_t N, std::int64_t K_dim, int k_bits, DType dtype,
                                        int experts, const std::vector<WeightLayout>& layouts,
                                        std::int64_t max_m, bool scratch_weight, int awq_group = 0);
// Throws kbit::Error "<what> needs ~X GB of device memory, Y GB are free" when it does not fit.
void check_device_memory(const std::string& what, const DeviceMemoryNeed& need,
                         std::int64_t free_bytes);

}  // namespace kbit
