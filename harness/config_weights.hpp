// Real weights in experiment configs (docs/harness.md, "Real weights in a config"): a dense
// shape may name tensors of a local .safetensors checkpoint instead of drawing N(0,1) weights,
//
//   shapes = [{ name = "up", weights = { file = "ckpt.safetensors",
//                                        tensor = "model.layers.0.mlp.up_proj.weight" } }]
//
// `tensor` is a float weight [N, K_dim] (F16, BF16, F32) that kbit problems quantize with the
// reference quantizer of each K and AWQ problems with awq_quantize, as they do the draw;
// `qweight`, `qzeros`, `scales` (all three) are AutoAWQ tensors that AWQ problems of their group
// read as they are. The file is read relative to the folder of the file that names it (the
// config, or a shape file it includes). The shape's `n` and `k_dim` may be left out (the tensors
// give them); when given they must be the tensors'. Everything is checked when the config is
// parsed, before any GPU work: each refusal throws kbit::Error naming the config, its line, the
// key, the shape, the safetensors file, the tensor and the value (exit 2).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <toml++/toml.h>
#include <nlohmann/json.hpp>

#include "harness/config.hpp"
#include "harness/problem.hpp"

namespace kbit {

// The `weights` value `n` of shape `shape` in `config_path` (a relative file is read from
// `base_dir`): a table of file and tensor and/or qweight, qzeros, scales, no other key. Opens
// the file (checking its header) and checks each tensor: `tensor` 2-D, F16 / BF16 / F32, K_dim
// a positive multiple of 32; qweight I32 [K_dim, N/8], scales F16 [K_dim/G, N] with G one of
// 32, 64, 128, qzeros I32 [K_dim/G, N/8]; N and K_dim at most kMaxDim, N x K_dim at most
// kMaxWeightElems, both kinds of the same N and K_dim, every float value finite.
FileWeights parse_file_weights(const toml::node& n, const std::string& config_path,
                               const std::string& base_dir, const std::string& shape);

// What the weights hold, for messages: "tensor 'W' in safetensors file 'P' is [N, K_dim]" (or the
// AWQ tensors' shapes).
std::string file_weights_text(const FileWeights& w);

// The config's formats against each shape's file weights: "kbit" needs `tensor`; an AWQ format
// of group G needs `tensor` or AWQ tensors of group G. Throws naming the shape's `weights` line.
void check_weights_formats(const ExperimentConfig& e);

// The host weights of dense shape s for one weight format (awq_group 0: kbit of k_bits bits with
// `codebook`; else AWQ of that group): the N(0,1) draw of `seed` (make_host_weights,
// make_host_weights_awq), or the shape's file weights: `tensor` quantized (host_weights_kbit,
// host_weights_awq), or the AWQ tensors as they are.
HostWeights shape_host_weights(const ShapeConfig& s, int k_bits, int awq_group,
                               const std::vector<float>& codebook, std::uint64_t seed);

// results.csv's `weights_source` of a problem: kDrawnWeights for the N(0,1) draw (w null or not
// given); "FILE:TENSOR" (FILE as the config wrote it) for `tensor` quantized by the problem's
// format; "FILE:QWEIGHT" for AWQ tensors read as they are (awq_group > 0 and has_awq()).
constexpr const char* kDrawnWeights = "normal";
std::string weights_source(const FileWeights* w, int awq_group);

// run.json's "weights": per dense shape and MoE layer its source ("normal" or "file"), and for
// file weights the file as written and as opened, N, K_dim, and each tensor's name, dtype and
// FNV-1a of its bytes (hex).
nlohmann::json weights_json(const ExperimentConfig& cfg);

}  // namespace kbit
