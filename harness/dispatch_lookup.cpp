// The lookup the auto rows choose by (rules: harness/dispatch.hpp, choose_variant), the tables of
// one folder as the process reads them, and the `auto` / `grouped_auto` / `awq_auto` registry
// rows.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <tuple>

#include "harness/device_info.hpp"
#include "harness/dispatch.hpp"
#include "harness/options.hpp"
#include "harness/weight_format.hpp"
#include "reference/error.hpp"
#include "variants/05_grouped_mma/grouped_mma.hpp"
#include "variants/common/cuda_check.hpp"

namespace kbit {

bool is_auto_row(std::string_view name) {
  return name == "auto" || name == "grouped_auto" || name == "awq_auto";
}

namespace {

GemmDims dims_of(const DispatchProblem& p) {
  GemmDims d;
  d.M = p.M, d.N = p.N, d.K_dim = p.K_dim, d.k_bits = p.k_bits, d.dtype = p.dtype;
  d.awq_group = p.awq_group;
  d.num_experts = p.grouped ? std::max(p.experts, 1) : 0;
  return d;
}

// The row named `name` when the auto row of the problem's format may run it on this problem
// (kbit: auto_may_pick, AWQ: awq_auto_may_pick), else null.
const VariantRow* pickable(const std::string& name, const GemmDims& d, int device_sm) {
  for (const VariantRow& r : registry())
    if (r.name == name) {
      const bool may = d.awq_group > 0 ? awq_auto_may_pick(r) : auto_may_pick(r);
      return may && unsupported_reason(r, d, device_sm).empty() ? &r : nullptr;
    }
  return nullptr;  // a row the table names that the registry no longer has
}

// "K = 4 fp16 dense" or "awq_g128 fp16 dense": the entries a problem looks among.
std::string class_words(const DispatchProblem& p) {
  return (p.awq_group > 0 ? weight_format_name(p.awq_group) : "K = " + std::to_string(p.k_bits)) +
         " " + dtype_name(p.dtype) + " " + (p.grouped ? "grouped" : "dense");
}

std::string problem_words(const DispatchProblem& p) {
  std::string s =
      class_words(p) + " N = " + std::to_string(p.N) + " K_dim = " + std::to_string(p.K_dim);
  if (p.grouped) s += " experts = " + std::to_string(p.experts);
  return s + " M = " + std::to_string(p.M);
}

std::string us(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f us", v);
  return buf;
}

using ShapeKey = std::tuple<std::int64_t, std::int64_t, int>;  // N, K_dim, experts

// Entries of one shape in the order the M rule tries them: M' >= M ascending, then M' < M
// descending; at the same M' (two shape names of the same dimensions) the faster first.
std::vector<const DispatchEntry*> by_m_rule(std::vector<const DispatchEntry*> es, std::int64_t m) {
  std::sort(es.begin(), es.end(), [m](const DispatchEntry* a, const DispatchEntry* b) {
    const bool a_up = a->M >= m, b_up = b->M >= m;
    if (a_up != b_up) return a_up;
    if (a->M != b->M) return a_up ? a->M < b->M : a->M > b->M;
    return a->median_us < b->median_us;
  });
  return es;
}

}  // namespace

bool auto_may_pick(const VariantRow& row) {
  if (is_auto_row(row.name)) return false;
  if (row.family != Family::gemm && row.family != Family::gemv && row.family != Family::grouped)
    return false;
  // The auto rows dispatch kbit problems; the harness builds the chosen row's layout for them
  // (row_layout), any layout of kbit weights.
  switch (row.layout.kind) {
    case LayoutKind::flat:
    case LayoutKind::tiled:
    case LayoutKind::fragment:
    case LayoutKind::dequantized:
      return row.support.kbit;
    case LayoutKind::awq:
    case LayoutKind::awq_tiled:
      return false;
  }
  return false;
}

bool awq_auto_may_pick(const VariantRow& row) {
  if (is_auto_row(row.name)) return false;
  if (row.family != Family::gemm && row.family != Family::gemv) return false;
  const bool awq_layout =
      row.layout.kind == LayoutKind::awq || row.layout.kind == LayoutKind::awq_tiled;
  return awq_layout && !row.support.awq_groups.empty();
}

DispatchProblem dispatch_problem(const GemmDims& d) {
  DispatchProblem p;
  p.awq_group = d.awq_group;
  p.k_bits = d.k_bits;
  p.dtype = d.dtype;
  p.grouped = d.grouped();
  p.N = d.N;
  p.K_dim = d.K_dim;
  p.experts = d.grouped() ? d.num_experts : 0;
  p.M = d.M;
  return p;
}

namespace {

// " on compute capability 9.0", or nothing where it is not known (0).
std::string on_device(int device_sm) {
  return device_sm ? " on compute capability " + std::to_string(device_sm / 10) + "." +
                         std::to_string(device_sm % 10)
                   : std::string();
}

// MoE problems: the crossover rule on the mean rows per expert (M / experts, what a caller knows
// before routing), measured in variants/05_grouped_mma/README.md.
DispatchChoice grouped_rule(const DispatchProblem& p, const GemmDims& d, int device_sm) {
  const double rows = double(p.M) / double(std::max(p.experts, 1));
  char buf[96];
  std::snprintf(buf, sizeof buf, "crossover rule: %.2f rows per expert, grouped_mma from %.0f",
                rows, variants::kGroupedMmaFromRowsPerExpert);
  // grouped_mma's own limits beyond its Support (its setup refuses the rest).
  const bool mma_fits = p.experts <= variants::kGroupedMmaMaxExperts && p.M * p.N < (1ll << 31) &&
                        pickable("grouped_mma", d, device_sm);
  const bool gemv_fits = pickable("grouped_scalar_gemv", d, device_sm);
  if (mma_fits && (rows >= variants::kGroupedMmaFromRowsPerExpert || !gemv_fits))
    return {"grouped_mma", buf};
  if (gemv_fits) return {"grouped_scalar_gemv", buf};
  throw Error("no variant an auto row may run covers " + problem_words(p) + on_device(device_sm));
}

}  // namespace

DispatchChoice choose_variant(const DispatchTable* table, const DispatchProblem& p, int device_sm,
                              const std::string& no_table) {
  const GemmDims d = dims_of(p);
  if (p.grouped) return grouped_rule(p, d, device_sm);
  std::string why = no_table;
  if (table) {
    std::map<ShapeKey, std::vector<const DispatchEntry*>> shapes;
    // Entries of the problem's weight format only: a kbit entry never answers an AWQ problem,
    // nor an AWQ entry a kbit one.
    const std::string format = weight_format_name(p.awq_group);
    for (const DispatchEntry& e : table->entries)
      if (e.format == format && e.k_bits == p.k_bits && e.dtype == dtype_name(p.dtype) &&
          e.grouped == p.grouped)
        shapes[{e.N, e.K_dim, e.experts}].push_back(&e);
    if (shapes.empty()) {
      why = "the table has no " + class_words(p) + " entry";
    } else {
      // The problem's own shape first (distance -1), then the others by |log(N*K_dim)
      // difference|, then by the experts' (grouped), then by dimensions (a fixed order).
      const ShapeKey own{p.N, p.K_dim, p.experts};
      const double own_size = std::log(double(p.N) * double(p.K_dim));
      auto distance = [&](const ShapeKey& s) {
        if (s == own) return std::make_tuple(-1.0, 0.0, s);
        const auto [n, k, e] = s;
        return std::make_tuple(std::fabs(std::log(double(n) * double(k)) - own_size),
                               std::fabs(std::log((e + 1.0) / (p.experts + 1.0))), s);
      };
      std::vector<ShapeKey> order;
      for (const auto& [s, es] : shapes) order.push_back(s);
      std::sort(order.begin(), order.end(),
                [&](const ShapeKey& a, const ShapeKey& b) { return distance(a) < distance(b); });
      for (const ShapeKey& s : order) {
        for (const DispatchEntry* e : by_m_rule(shapes[s], p.M)) {
          if (!pickable(e->variant, d, device_sm)) continue;
          const std::string at = e->shape + " M = " + std::to_string(e->M);
          if (s != own)
            return {e->variant, "nearest shape: " + at + " (N = " + std::to_string(e->N) +
                                    ", K_dim = " + std::to_string(e->K_dim) + "), " +
                                    us(e->median_us)};
          if (e->M == p.M) return {e->variant, "exact: " + at + ", " + us(e->median_us)};
          return {e->variant,
                  "nearest M: " + at + " for M = " + std::to_string(p.M) + ", " + us(e->median_us)};
        }
      }
      why = "no entry's variant covers the problem";
    }
  }
  // The fixed rule, each name falling to the next that covers the problem (scalar_gemv,
  // warp_specialized, awq_fragment_mma and awq_gemm need compute capability 9.0; the sm_90a
  // kernels run there only; awq_fragment_mma covers M <= 128).
  std::vector<const char*> fixed;
  if (p.awq_group > 0) {
    if (p.M <= 4) fixed.push_back("awq_gemv");
    if (device_sm == 90) fixed.insert(fixed.end(), {"awq_fragment_mma", "awq_gemm"});
  } else {
    if (p.M <= 4) fixed.push_back("scalar_gemv");
    if (device_sm == 90) fixed.push_back("warp_specialized");
    fixed.push_back("fetch_dequant");
  }
  for (const char* name : fixed)
    if (pickable(name, d, device_sm)) return {name, "fixed rule: " + why};
  const std::string awq_note = p.awq_group > 0 && device_sm != 90
                                   ? "; awq_fragment_mma and awq_gemm run on compute capability "
                                     "9.0 only, awq_gemv at M <= 4"
                                   : "";
  throw Error("no variant an auto row may run covers " + problem_words(p) + on_device(device_sm) +
              " (" + why + awq_note + ")");
}

const DispatchTable* DispatchTables::load(const std::string& gpu) {
  const std::lock_guard<std::mutex> lock(mu_);
  return load_locked(gpu);
}

const DispatchTable* DispatchTables::load_locked(const std::string& gpu) {
  const std::string path = dir_ + "/" + dispatch_file_name(gpu);
  auto it = tables_.find(gpu);
  if (it == tables_.end()) {
    std::optional<DispatchTable> t;
    if (std::filesystem::exists(path)) t = read_dispatch_table(path);
    it = tables_.emplace(gpu, std::move(t)).first;
  }
  if (!it->second) return nullptr;
  if (it->second->gpu != gpu)
    throw Error(path + " is the dispatch table of GPU '" + it->second->gpu +
                "', not of this device's '" + gpu +
                "': rebuild it with `kbit-harness dispatch build` from runs on this GPU");
  return &*it->second;
}

DispatchChoice DispatchTables::choose(const DispatchProblem& p, const std::string& gpu,
                                      int device_sm) {
  const std::lock_guard<std::mutex> lock(mu_);
  const std::string path = dir_ + "/" + dispatch_file_name(gpu);
  if (const DispatchTable* t = load_locked(gpu)) return choose_variant(t, p, device_sm);
  if (!noted_missing_) {
    notes_ << "dispatch: no table for GPU '" << gpu << "' (" << path
           << "); the auto rows take the fixed rule (dense M <= 4 scalar_gemv, M >= 5 "
              "warp_specialized on compute capability 9.0 else fetch_dequant; AWQ M <= 4 "
              "awq_gemv, M = 5..128 awq_fragment_mma, above awq_gemm on compute capability 9.0; "
              "grouped problems take the crossover rule)"
           << std::endl;
    noted_missing_ = true;
  }
  return choose_variant(nullptr, p, device_sm, "no table for GPU '" + gpu + "'");
}

DispatchTables& process_dispatch_tables() {
  static DispatchTables tables(source_dir() + "/results/dispatch", std::cerr);
  return tables;
}

WeightLayout row_layout(const VariantRow& row, const GemmDims& d, DispatchTables& tables,
                        const std::string& gpu, int device_sm) {
  // A problem the auto row does not run builds nothing for it (its setup would refuse it), nor
  // one its lookup refuses (awq_auto past M = 4 below compute capability 9.0): the row's setup
  // then reports the refusal for that problem alone.
  if (!is_auto_row(row.name) || !unsupported_reason(row, d, device_sm).empty()) return row.layout;
  try {
    return find_variant(tables.choose(dispatch_problem(d), gpu, device_sm).variant).layout;
  } catch (const Error&) {
    return row.layout;
  }
}

std::string row_layout_name(const VariantRow& row) {
  return is_auto_row(row.name) ? "chosen row's" : layout_name(row.layout);
}

std::string AutoState::describe() const {
  const std::string set = options_.describe();
  return auto_name_ + " -> " + std::string(chosen_.name) + " (" + choice_.reason +
         "): " + (set.empty() ? "" : "[" + set + "] ") + inner_->describe();
}

namespace {

const std::string& device_name() {
  static const std::string name = query_device().name;
  return name;
}

}  // namespace

WeightLayout row_layout(const VariantRow& row, const GemmDims& d) {
  if (!is_auto_row(row.name)) return row.layout;
  return row_layout(row, d, process_dispatch_tables(), device_name(), current_device_sm());
}

namespace {

std::unique_ptr<VariantState> setup_as(const char* auto_name, const GemmDims& d, SplitMode split) {
  // awq_auto runs AWQ problems, the other auto rows kbit ones: never a row of the other format.
  const bool awq_row = std::string_view(auto_name) == "awq_auto";
  if ((d.awq_group > 0) != awq_row)
    throw Error(std::string(auto_name) + " runs " + (awq_row ? "AWQ" : "kbit") +
                " problems; the weights are " + weight_format_name(d.awq_group));
  const DispatchChoice c =
      process_dispatch_tables().choose(dispatch_problem(d), device_name(), current_device_sm());
  const VariantRow& row = find_variant(c.variant);
  // The chosen row's defaults (what the table's rows were timed at) and the split mode the
  // harness gave the auto row (validate forces it on and off).
  VariantOptions o = resolve_options(row, {}, split);
  std::unique_ptr<VariantState> inner;
  try {
    inner = row.setup(d, o);
  } catch (const CudaError&) {
    throw;  // names the call and the line already
  } catch (const Error& e) {
    throw Error(std::string(auto_name) + " -> " + c.variant + " (" + c.reason + "): " + e.what());
  }
  return std::make_unique<AutoState>(auto_name, row, c, std::move(o), std::move(inner));
}

}  // namespace

std::unique_ptr<VariantState> auto_setup(const GemmDims& dims, const VariantOptions& opts) {
  return setup_as("auto", dims, opts.split_k);
}

std::unique_ptr<VariantState> grouped_auto_setup(const GemmDims& dims, const VariantOptions& opts) {
  return setup_as("grouped_auto", dims, opts.split_k);
}

std::unique_ptr<VariantState> awq_auto_setup(const GemmDims& dims, const VariantOptions& opts) {
  return setup_as("awq_auto", dims, opts.split_k);
}

void auto_run(VariantState* state, const GemmDims& dims, const GemmArgs& args,
              cudaStream_t stream) {
  auto* s = dynamic_cast<AutoState*>(state);
  if (!s) throw Error("auto_run: the state was not made by an auto row's setup");
  if (!(args.w.layout == s->chosen().layout))
    throw Error("auto_run: the weights are in layout '" + layout_name(args.w.layout) + "'; " +
                std::string(s->chosen().name) + " reads '" + layout_name(s->chosen().layout) +
                "' (build the layout row_layout names for the problem)");
  s->chosen().run(s->inner(), dims, args, stream);
}

}  // namespace kbit
