// Experiment configs (experiments/*.toml): one file per question or figure. The keys are
// documented in docs/harness.md; unknown or mistyped keys, wrong types and impossible values
// are errors naming the file, the line and the key.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "harness/options.hpp"
#include "reference/dtype.hpp"

namespace kbit {

// Size limits, checked when a config is parsed (and for `run --m`), before any GPU work. Real LLM
// layers sit far below them; a value above one is a typo (an extra digit) that would otherwise
// allocate for minutes or overflow the kernels' int indexing.
// N and K_dim: LLM MLP layers stay below 64Ki, vocabulary projections below 256Ki.
constexpr std::int64_t kMaxDim = std::int64_t(1) << 20;
// Rows of A (m; tokens x top_k for MoE layers, and tokens itself): a 1Mi-token prefill is beyond
// any layer benchmark (A alone is 16 GiB at K_dim 8192, its float copy on the host 32 GiB).
constexpr std::int64_t kMaxRows = std::int64_t(1) << 20;
// N x K_dim of one expert (or one dense weight): the kernels index a weight's elements with int.
constexpr std::int64_t kMaxWeightElems = (std::int64_t(1) << 31) - 1;
// Experts of an MoE layer: today's largest MoE models route over a few hundred experts.
constexpr int kMaxExperts = 4096;
// The experiment's name (a folder under results/) and each shape's or MoE layer's name (a CSV
// field, a plot label): at least one character, at most this many.
constexpr std::size_t kMaxNameChars = 100;
// `description` (run.json).
constexpr std::size_t kMaxDescriptionChars = 4096;
// [timing] and [check] (the timed loop's and the check's bounds).
constexpr int kMaxWarmup = 1000;
constexpr int kMaxMinSamples = 100000;
constexpr int kMaxMaxSamples = 10000000;
constexpr double kMaxTimeoutS = 3600;
constexpr double kMaxZipfS = 10;

struct TimingConfig {
  bool cold = true;             // mode = "cold" (rotate weight copies > 4x L2) | "hot"
  int warmup = 3;               // untimed launches (or graph replays) first
  int min_samples = 10;         // at least this many timed samples
  int max_samples = 400;        // at most this many
  double max_rel_noise = 0.03;  // stop once (p90 - p10) / median is below this
  double timeout_s = 2.0;       // or once sampling has taken this long
  // Programmatic dependent launch for the rows that support it (Support::pdl): each launch may
  // start while the one before it still runs, so a sample is the time per launch of a stream of
  // dependent launches. The CSV's `pdl` column says which rows ran so; the others are unchanged.
  bool pdl = false;
};

struct CheckConfig {
  bool enabled = true;
  std::uint64_t seed = 1234;  // data seed (weights, activations)
  int max_rows = 16;          // rows of C checked per problem (spread, first and last included)
};

class SafetensorsFile;

// A dense shape's weights from a local .safetensors checkpoint instead of the N(0,1) draw:
// `weights = { file = "...", tensor = "..." }` and/or the AutoAWQ tensors `qweight`, `qzeros`,
// `scales` (docs/harness.md, "Real weights in a config"; harness/config_weights.hpp). Checked
// when the config is parsed: the file's header, each tensor's dtype and shape against the
// shape's n and k_dim (or giving them), and every value finite.
struct FileWeights {
  std::string file;  // as the config wrote it
  std::string at;    // "CONFIG:LINE" of the `weights` key, for messages
  std::string path;  // as opened: a relative `file` from the folder of the file naming it
  // A float weight [N, K_dim] (F16, BF16, F32): kbit problems quantize it with the reference
  // quantizer of each K, AWQ problems with awq_quantize (as they do the N(0,1) draw).
  std::string tensor;
  // AutoAWQ's tensors (qweight I32 [K_dim, N/8], qzeros I32 [K_dim/G, N/8], scales F16
  // [K_dim/G, N]): AWQ problems of their group G read them as they are.
  std::string qweight, qzeros, scales;
  int awq_group = 0;              // G of the AWQ tensors (K_dim / rows of scales); 0 without them
  std::int64_t n = 0, k_dim = 0;  // as the tensors give them
  std::string tensor_dtype;       // "BF16": the dtype of `tensor` in the file
  std::uint64_t tensor_hash = 0;  // tensor_fnv1a of `tensor`
  std::uint64_t awq_hash[3] = {0, 0, 0};      // of qweight, qzeros, scales
  std::shared_ptr<const SafetensorsFile> st;  // the file as checked, mapped until the run ends
  bool given() const { return !file.empty(); }
  bool has_tensor() const { return !tensor.empty(); }
  bool has_awq() const { return !qweight.empty(); }
};

struct ShapeConfig {
  std::string name;
  std::int64_t k_dim = 0, n = 0;
  FileWeights weights;  // given(): from a file, else N(0,1)
};

// An MoE layer: E experts of one shape, `tokens` routed to top_k experts each.
struct MoeConfig {
  std::string name;
  int experts = 0;
  std::int64_t k_dim = 0, n = 0;
  int top_k = 0;
  std::string routing;  // "uniform" | "zipf" for this layer; empty: the experiment's `routing`
};

struct ExperimentConfig {
  std::string path, text, name, description;
  std::vector<ShapeConfig> shapes;
  std::vector<MoeConfig> moe;
  std::vector<std::int64_t> m;       // rows of A for dense shapes
  std::vector<std::int64_t> tokens;  // tokens for MoE layers
  std::string routing = "uniform";   // "uniform" | "zipf"
  double zipf_s = 1.1;
  std::uint64_t routing_seed = 7;
  // Weight formats (harness/weight_format.hpp): "kbit" runs the k_bits list; "awq_g32",
  // "awq_g64", "awq_g128" add AWQ int4 problems of that group for every dense shape x M x dtype.
  std::vector<std::string> formats{"kbit"};
  std::vector<int> k_bits;  // kbit format only
  std::vector<DType> dtypes;
  std::string codebook = "nf";  // a name, or "custom" with codebook_values
  std::vector<float> codebook_values;
  std::vector<std::string> variants;  // names or globs
  std::string baseline = "cublas_fp16";
  // [options.ROW] tables: per registry row, the options set (checked against the row).
  std::vector<std::pair<std::string, std::vector<GivenOption>>> options;
  std::vector<std::string> peers;  // peer names or globs (harness/peers.hpp), run after our rows
  TimingConfig timing;
  CheckConfig check;
  bool has_kbit() const;
  std::vector<int> awq_groups() const;  // of the awq formats, in the order given
};

// The options an experiment sets for `row`, resolved (defaults filled in).
VariantOptions options_for(const ExperimentConfig& cfg, const VariantRow& row,
                           SplitMode split = SplitMode::automatic);

// Parses a config file (shape includes are resolved relative to its directory). The file and
// its includes are read by read_input_file (regular files of at most kMaxConfigBytes).
ExperimentConfig load_experiment(const std::string& path);
// Parses config text; `path` is used in messages and to resolve includes.
ExperimentConfig parse_experiment(const std::string& text, const std::string& path);

// FNV-1a of the config text, as 16 hex digits (recorded in run.json).
std::string config_hash(const std::string& text);

}  // namespace kbit
