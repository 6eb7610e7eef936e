// kbit-harness: the testbed's one binary (docs/harness.md).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>
#include <limits>
#include <string>

#include "harness/cli_numbers.hpp"
#include "harness/commands.hpp"
#include "reference/error.hpp"

namespace {

// Validators that see each number as written, before CLI11 converts it (harness/cli_numbers.hpp).
CLI::Validator integer_in(std::int64_t lo, std::int64_t hi) {
  return CLI::Validator([=](std::string& s) { return kbit::cli_integer_error(s, lo, hi); },
                        "INT in " + std::to_string(lo) + ".." + std::to_string(hi));
}
CLI::Validator any_int64() {
  return integer_in(std::numeric_limits<std::int64_t>::min(),
                    std::numeric_limits<std::int64_t>::max());
}
CLI::Validator any_int() {
  return integer_in(std::numeric_limits<int>::min(), std::numeric_limits<int>::max());
}
CLI::Validator unsigned_seed() {
  return CLI::Validator([](std::string& s) { return kbit::cli_unsigned_error(s); },
                        "UINT in 0..2^64-1");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kbit-testbed harness: run experiments, validate variants, check the format"};
  app.require_subcommand(1);

  auto* list = app.add_subcommand("list", "the variant registry as a table");

  kbit::RunOptions run_opts;
  std::string config;
  auto* run = app.add_subcommand("run", "check and time every problem of an experiment config");
  run->add_option("config", config, "experiments/NAME.toml")->required()->check(CLI::ExistingFile);
  run->add_option("--out-root", run_opts.out_root, "results root (default: <source>/results)");
  run->add_option("--variants", run_opts.variants, "names or globs that replace the config's list");
  run->add_option("--shapes", run_opts.shapes,
                  "only the shapes (or MoE layers) matching these globs");
  run->add_option("--m", run_opts.m, "rows of A (tokens for MoE layers) that replace the config's")
      ->check(any_int64());
  run->add_flag("!--no-plot", run_opts.plot, "do not run harness/plot.py at the end");
  run->add_option("--memory-budget-gb", run_opts.memory_budget_gb,
                  "device memory for L2-rotation weight copies (default: half the free memory)")
      ->check(CLI::Validator(
          [](std::string& s) { return kbit::cli_number_error(s, 0, kbit::kMaxMemoryBudgetGb); },
          "GB in (0, " + std::to_string(int(kbit::kMaxMemoryBudgetGb)) + "]"));
  run->add_flag("--quiet", run_opts.quiet, "no progress lines");
  run->add_flag("--pdl", run_opts.pdl,
                "time the rows that support it with programmatic dependent launch ([timing] pdl)");
  run->add_option("--devices", run_opts.devices,
                  "all | 0,1: shard the problems over these GPUs of the host (one model), one "
                  "process each, into one run folder");
  // What run --devices gives its children (an empty group hides them from --help).
  run->add_option("--shard", run_opts.shard, "I/N: only the problems of shard I of N")->group("");
  run->add_option("--device-index", run_opts.device_index, "the device's index on the host")
      ->check(integer_in(0, std::numeric_limits<int>::max()))
      ->group("");

  kbit::ValidateOptions val;
  auto* validate =
      app.add_subcommand("validate", "correctness sweep of one variant against the CPU reference");
  validate->add_option("--variant", val.variant, "registry name")->required();
  validate->add_option("--split-k", val.split_k,
                       "auto | on | off | both (for variants with split-K)");
  validate->add_flag("--quick", val.quick, "14 M values (1..300) instead of 1..70 and more");
  validate->add_flag("!--no-seed-shapes", val.seed_shapes,
                     "skip the model shapes of experiments/shapes/");
  validate->add_option("--seed", val.seed, "data seed")->check(unsigned_seed());
  validate->add_option("--k-bits", val.k_bits, "bit widths (default 2 3 4 5)")->check(any_int());
  validate->add_option("--repro-dir", val.repro_dir, "where failing cases are written");
  std::vector<std::string> option_flags;
  validate->add_option("--option", option_flags,
                       "NAME=VALUE: set one of the row's options (repeatable; `list` shows them)");
  validate->add_option(
      "--cases", val.cases,
      "only the cases (n200_k96, moe_e8_n200_k96, llama3_8b.gate_up, ...) matching these globs");

  kbit::FormatOptions fmt;
  auto* format = app.add_subcommand(
      "format", "quantize on the CPU and the GPU, compare bytes, print error stats");
  auto* rows_opt = format->add_option("--rows", fmt.rows, "N (rows of W)")->check(any_int64());
  auto* k_dim_opt =
      format->add_option("--k-dim", fmt.k_dim, "K_dim (multiple of 32)")->check(any_int64());
  format->add_option("--k-bits", fmt.k_bits, "bit widths")->check(any_int());
  format->add_option("--codebook", fmt.codebook, "nf | nf_expected | uniform");
  format->add_option("--seed", fmt.seed, "data seed")->check(unsigned_seed());
  auto* awq_flag =
      format->add_flag("--awq", fmt.awq,
                       "the AWQ int4 quantizers (fused and multi-pass GPU against the CPU "
                       "reference, with throughput) instead of kbit");
  format->add_option("--group", fmt.group, "--awq: group size along K_dim (32, 64, 128)")
      ->check(any_int())
      ->needs(awq_flag);
  format
      ->add_option("--dump", fmt.dump_dir,
                   "--awq: write the fp16 weight, the reference's qweight, qzeros, scales, a "
                   "16-row fp16 A, C_ref and its bound to DIR (before any GPU work; "
                   "harness/peers/awq_parity.py)")
      ->needs(awq_flag);
  format
      ->add_option("--weights", fmt.weights,
                   "FILE:TENSOR: quantize that 2-D weight [N, K_dim] of a .safetensors file on "
                   "the CPU, beside N(0,1) weights of its shape")
      ->excludes(rows_opt)
      ->excludes(k_dim_opt)
      ->excludes(awq_flag);

  std::string cb_name = "nf";
  int cb_k = 4;
  auto* codebook =
      app.add_subcommand("codebook", "print a codebook with the hex bits of each entry");
  codebook->add_option("name", cb_name, "nf | nf_expected | uniform");
  codebook->add_option("--k", cb_k, "bits (2..5)")->check(any_int());

  kbit::DispatchOptions disp;
  auto* dispatch = app.add_subcommand(
      "dispatch", "the fastest checked variant per problem, from the CURRENT runs (auto rows)");
  dispatch->require_subcommand(1);
  auto* dispatch_build = dispatch->add_subcommand(
      "build", "read every results/<experiment>/CURRENT run; write one table per GPU");
  dispatch_build->add_option("--results", disp.results_root,
                             "results root to read (default: <source>/results)");
  dispatch_build->add_option("--out", disp.out_dir,
                             "folder for the tables (default: <results root>/dispatch)");
  auto* dispatch_show = dispatch->add_subcommand(
      "show", "print a table: --gpu's, else the device's, else the only one there is");
  dispatch_show->add_option("--gpu", disp.gpu, "GPU name as run.json records it");
  dispatch_show->add_option("--out", disp.out_dir,
                            "folder of the tables (default: <source>/results/dispatch)");

  kbit::ProfileOptions prof;
  std::string prof_config;
  auto* profile = app.add_subcommand(
      "profile", "each (problem, row) of a config once under Nsight Compute: counters per kernel");
  profile->add_option("config", prof_config, "experiments/NAME.toml")
      ->required()
      ->check(CLI::ExistingFile);
  profile->add_option("--out-root", prof.out_root, "results root (default: <source>/results)");
  profile->add_option("--variants", prof.variants,
                      "our rows (names or globs) instead of the config's");
  profile->add_option("--peers", prof.peers, "peers (names or globs) instead of the config's");
  profile->add_flag("--no-peers", prof.no_peers, "profile none of the config's peers");
  profile->add_option("--shapes", prof.shapes, "only the dense shapes matching these globs");
  profile->add_option("--m", prof.m, "rows of A that replace the config's")->check(any_int64());
  profile->add_option("--k-bits", prof.k_bits, "bit widths that replace the config's k_bits")
      ->check(any_int());
  profile->add_option("--ncu", prof.ncu,
                      "Nsight Compute (default: ncu on the PATH, then "
                      "/usr/local/cuda/bin/ncu)");
  profile->add_flag("!--no-plot", prof.plot, "do not draw the figure");
  kbit::ProfileTargetOptions target;
  std::string target_config;
  auto* profile_target = app.add_subcommand("profile-target", "");  // profile's child: hidden
  profile_target->group("");
  profile_target->add_option("config", target_config)->required()->check(CLI::ExistingFile);
  profile_target->add_option("--shape", target.shape)->required();
  profile_target->add_option("--m", target.m)->required()->check(any_int64());
  profile_target->add_option("--format", target.format);
  profile_target->add_option("--k-bits", target.k_bits)->check(any_int());
  profile_target->add_option("--dtype", target.dtype);
  profile_target->add_option("--variant", target.variant)->required();

  run_opts.argv.assign(argv, argv + argc);
  prof.argv = run_opts.argv;
  // The first word that is no option must be a subcommand: name a wrong one and list them (CLI11
  // itself only says that a subcommand is required).
  std::string names;
  bool known = false;
  const char* const* word =
      std::find_if(argv + 1, argv + argc, [](const char* a) { return a[0] != '-'; });
  for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (!s->get_group().empty())  // hidden ones (profile-target) are known but not listed
      names += (names.empty() ? "" : ", ") + s->get_name();
    known = known || (word != argv + argc && s->get_name() == *word);
  }
  if (word != argv + argc && !known) {
    std::cerr << "kbit-harness: '" << *word
              << "' is not a subcommand; the subcommands are: " << names << " (--help for more)\n";
    return kbit::kExitBadInput;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : kbit::kExitBadInput;
  }
  try {
    if (*list) return kbit::list_variants();
    if (*run) {
      kbit::refuse_duplicates("--m", run_opts.m);
      return run_opts.devices.empty() ? kbit::run_experiment(config, run_opts)
                                      : kbit::run_on_devices(config, run_opts);
    }
    if (*validate) {
      kbit::refuse_duplicates("--k-bits", val.k_bits);
      for (const std::string& f : option_flags)
        val.given_options.push_back(kbit::parse_option_flag(f));
      return kbit::validate_variant(val);
    }
    if (*format) {
      kbit::refuse_duplicates("--k-bits", fmt.k_bits);
      if (!fmt.weights.empty()) return kbit::format_weights(fmt);
      return fmt.awq ? kbit::format_awq(fmt) : kbit::format_check(fmt);
    }
    if (*codebook) return kbit::print_codebook(cb_name, cb_k);
    if (*dispatch_build) return kbit::dispatch_build(disp);
    if (*dispatch_show) return kbit::dispatch_show(disp);
    if (*profile) {
      kbit::refuse_duplicates("--m", prof.m);
      kbit::refuse_duplicates("--k-bits", prof.k_bits);
      return kbit::profile_experiment(prof_config, prof);
    }
    if (*profile_target) return kbit::profile_target(target_config, target);
  } catch (const kbit::Error& e) {
    std::cerr << "kbit-harness: " << e.what() << "\n";
    return kbit::kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "kbit-harness: unexpected error: " << e.what() << "\n";
    return kbit::kExitCheckFailed;
  }
  return kbit::kExitBadInput;
}
