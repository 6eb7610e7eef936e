#include "harness/weight_format.hpp"

#include "reference/error.hpp"

namespace kbit {

const std::vector<int>& awq_group_sizes() {
  static const std::vector<int> g{32, 64, 128};
  return g;
}

const std::vector<std::string>& weight_format_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n{"kbit"};
    for (int g : awq_group_sizes()) n.push_back(weight_format_name(g));
    return n;
  }();
  return names;
}

std::string weight_format_name(int awq_group) {
  return awq_group > 0 ? "awq_g" + std::to_string(awq_group) : "kbit";
}

int parse_weight_format(const std::string& name) {
  if (name == "kbit") return 0;
  for (int g : awq_group_sizes())
    if (name == weight_format_name(g)) return g;
  std::string known;
  for (const std::string& n : weight_format_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error("format '" + name + "' is not one of " + known);
}

std::string format_of_codebook(const std::string& codebook) {
  const std::string first = codebook.substr(0, codebook.find(' '));
  for (int g : awq_group_sizes())
    if (first == weight_format_name(g)) return first;
  return "kbit";
}

std::string weights_label(int k_bits, int awq_group) {
  return awq_group > 0 ? weight_format_name(awq_group) : "K=" + std::to_string(k_bits);
}

std::string weights_label(const GemmDims& d) {
  return weights_label(d.k_bits, d.awq_group);
}

}  // namespace kbit
