// The weights' format of a problem: kbit (docs/format.md: K bits and a codebook) or AWQ int4 of
// one group (docs/awq_format.md). Configs name formats (`formats`); the CSV's `codebook` column
// and the peers' problems carry the name, so that a kbit and an AWQ problem of the same shape, M,
// K and dtype stay apart everywhere a problem is identified.
#pragma once
#include <string>
#include <vector>

#include "variants/variant_api.hpp"

namespace kbit {

// The AWQ group sizes the harness runs (docs/awq_format.md; vLLM's kernels take these too).
const std::vector<int>& awq_group_sizes();
// "kbit", "awq_g32", "awq_g64", "awq_g128": what a config's `formats` may hold.
const std::vector<std::string>& weight_format_names();
// "kbit" for group 0, "awq_g<G>" otherwise.
std::string weight_format_name(int awq_group);
// 0 for "kbit", G for "awq_g<G>"; throws kbit::Error naming the value and the allowed names.
int parse_weight_format(const std::string& name);
// The format of a results.csv row from its `codebook` column: "awq_g<G>" when the column is that
// name or starts with it followed by a space (a peer may add its own words), else "kbit".
std::string format_of_codebook(const std::string& codebook);
inline bool is_awq_codebook(const std::string& codebook) {
  return format_of_codebook(codebook) != "kbit";
}
// "K=4" for a kbit problem, "awq_g128" for an AWQ one: how logs and file names tell them apart.
std::string weights_label(const GemmDims& d);
std::string weights_label(int k_bits, int awq_group);

}  // namespace kbit
