// The kbit-harness subcommands. Each returns the process exit code (docs/harness.md):
// 0 ok, 1 a check failed or a variant errored, 2 bad input, 3 no CUDA device.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "harness/options.hpp"

namespace kbit {

constexpr int kExitOk = 0;
constexpr int kExitCheckFailed = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitNoDevice = 3;

// --memory-budget-gb at most this (no device holds more; the budget times 1e9 stays an int64).
constexpr double kMaxMemoryBudgetGb = 4096;

struct RunOptions {
  std::string out_root;               // default: <source>/results
  std::vector<std::string> variants;  // overrides the config's list when not empty
  std::vector<std::string> shapes;    // only shapes / MoE layers matching these globs
  std::vector<std::int64_t> m;        // overrides the config's m (or tokens) when not empty
  bool plot = true;                   // run harness/plot.py on the results at the end
  double memory_budget_gb = 0;        // weight copies for L2-cold timing; 0: half the free memory
  bool quiet = false;
  bool pdl = false;               // forces [timing] pdl = true
  std::vector<std::string> argv;  // the command line, for run.json
  // --devices all|0,1: the problems sharded over these devices of the host, one child process
  // each, joined into one run folder (harness/run_devices.cpp); empty: the current device alone.
  std::string devices;
  // Set by run --devices for its children (hidden options): --shard I/N, the problems of shard I
  // of N (harness/shard.hpp); --device-index, the device's index on the host (the child sees it
  // alone, through CUDA_VISIBLE_DEVICES), recorded in the rows and run.json.
  std::string shard;
  int device_index = -1;
};
int run_experiment(const std::string& config_path, const RunOptions& opts);
// run --devices: one child process per device, each timing its shard; their folders joined by
// harness/tools/merge_runs.py. One device 0 (or all on a host of one) runs as run_experiment.
int run_on_devices(const std::string& config_path, const RunOptions& opts);
struct ExperimentConfig;
// The config as `run` times it (--shapes, --m, --pdl applied), its rows, baseline and peers
// checked: throws kbit::Error for bad input, before any device is looked for.
ExperimentConfig load_run_config(const std::string& config_path, const RunOptions& opts);
// The closing plot step of a run folder (harness/plot.py under the configured Python).
void plot_run(const std::string& dir);

struct ValidateOptions {
  std::string variant;
  std::string split_k = "both";  // auto | on | off | both
  bool quick = false;            // 14 M values (1..300) instead of 1..70 and more
  bool seed_shapes = true;       // include the model shapes of experiments/shapes/
  std::uint64_t seed = 99;
  std::string repro_dir = "validate-repro";
  std::vector<int> k_bits{2, 3, 4, 5};
  std::vector<std::string> cases;          // only the cases whose name matches one of these globs
  std::vector<GivenOption> given_options;  // --option NAME=VALUE (the row's options)
};
int validate_variant(const ValidateOptions& opts);

int list_variants();

struct FormatOptions {
  std::int64_t rows = 4096, k_dim = 4096;
  std::vector<int> k_bits{2, 3, 4, 5};
  std::string codebook = "nf";
  std::uint64_t seed = 1;
  bool awq = false;  // the AWQ int4 quantizers instead (docs/awq_format.md)
  int group = 128;   // AWQ group size along K_dim: 32, 64 or 128
  // --awq: write the weight, the reference's AWQ tensors, an activation, C_ref and its bound to
  // this folder (raw little-endian files and meta.json, for harness/peers/awq_parity.py).
  std::string dump_dir;
  // --weights FILE:TENSOR: that tensor of a .safetensors file instead of the N(0,1) draw (its
  // shape replaces --rows and --k-dim; the N(0,1) figures of that shape are printed beside).
  std::string weights;
};
int format_check(const FormatOptions& opts);
int format_weights(const FormatOptions& opts);  // format --weights (harness/format_weights.cpp)
int format_awq(const FormatOptions& opts);      // format --awq
int print_codebook(const std::string& name, int k);

struct DispatchOptions {
  std::string results_root;  // build reads <root>/*/CURRENT; default <source>/results
  std::string out_dir;       // the tables' folder; default <results_root>/dispatch
  std::string gpu;           // show: this GPU's table (default: the device's, else the only one)
};
int dispatch_build(const DispatchOptions& opts);  // harness/dispatch.cpp
int dispatch_show(const DispatchOptions& opts);

// profile CONFIG: each selected (problem, row) once under Nsight Compute (harness/profile.cpp).
struct ProfileOptions {
  std::string out_root;               // default: <source>/results
  std::vector<std::string> variants;  // our rows (names or globs); default: the config's
  std::vector<std::string> peers;     // peers (names or globs); default: the config's
  bool no_peers = false;              // none of the config's peers
  std::vector<std::string> shapes;    // only the dense shapes matching these globs
  std::vector<std::int64_t> m;        // replaces the config's m
  std::vector<int> k_bits;            // replaces the config's k_bits (kbit problems)
  std::string ncu;                    // Nsight Compute; default: the PATH's, /usr/local/cuda/bin
  bool plot = true;                   // harness/tools/profile_plot.py at the end
  std::vector<std::string> argv;      // the command line, for run.json
};
int profile_experiment(const std::string& config_path, const ProfileOptions& opts);

// profile-target (hidden): one (problem, row) launched once between cudaProfilerStart / Stop.
struct ProfileTargetOptions {
  std::string shape, format = "kbit", dtype = "fp16", variant;
  std::int64_t m = 1;
  int k_bits = 4;
};
int profile_target(const std::string& config_path, const ProfileTargetOptions& opts);

}  // namespace kbit
