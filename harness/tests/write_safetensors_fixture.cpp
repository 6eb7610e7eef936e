// Writes (creating DIR) the .safetensors files the format --weights command-line tests read
// (CMakeLists.txt): DIR/weights.safetensors, a BF16 weight of heavy-tailed columns and tensors each
// refusal needs, and DIR/truncated.safetensors, the same file cut inside its header; and the
// experiment configs naming its tensors that `run` and `profile` must refuse (config_*.toml).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "harness/tests/safetensors_writer.hpp"
#include "reference/fp16.hpp"
#include "reference/random.hpp"

using namespace kbit::test;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  std::filesystem::create_directories(dir);
  // W[64, 256] ~ N(0, 0.02^2), columns 3 and 100 (outlier channels) 30 times larger.
  const std::vector<float> x = kbit::random_normal(64 * 256, 7, 0.02f);
  std::vector<std::uint16_t> w(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t col = i % 256;
    w[i] = kbit::float_to_bf16(x[i] * (col == 3 || col == 100 ? 30.0f : 1.0f));
  }
  std::vector<std::uint16_t> bad(64, kbit::float_to_half(0.5f));
  bad[33] = 0x7C00;  // inf at [1, 1]
  const std::string file =
      safetensors_file({{"model.layers.0.mlp.down_proj.weight", "BF16", {64, 256}, le16(w)},
                        {"bias", "F32", {64}, le32(std::vector<std::uint32_t>(64, 0x3F800000))},
                        {"odd", "F16", {8, 48}, le16(std::vector<std::uint16_t>(8 * 48, 0x3C00))},
                        {"ids", "I32", {4, 32}, le32(std::vector<std::uint32_t>(128, 5))},
                        {"bad", "F16", {2, 32}, le16(bad)}},
                       R"({"format":"pt"})");
  std::ofstream(dir + "/weights.safetensors", std::ios::binary | std::ios::trunc) << file;
  std::ofstream(dir + "/truncated.safetensors", std::ios::binary | std::ios::trunc)
      << file.substr(0, 100);
  // Configs whose shape names a tensor of weights.safetensors (read from the config's folder).
  auto config = [&](const std::string& name, const std::string& layer) {
    std::ofstream(dir + "/" + name, std::ios::trunc)
        << "name = \"weights\"\n"
        << layer << "\nk_bits = [4]\ndtype = [\"fp16\"]\nvariants = [\"cublas_fp16\"]\n";
  };
  const std::string weights =
      "weights = { file = \"weights.safetensors\", tensor = "
      "\"model.layers.0.mlp.down_proj.weight\" }";
  config("config_n.toml", "shapes = [{ name = \"down\", n = 100, " + weights + " }]\nm = [1]");
  config("config_tensor.toml",
         "shapes = [{ name = \"down\", weights = { file = \"weights.safetensors\", tensor = "
         "\"model.layers.0.mlp.up_proj.weight\" } }]\nm = [1]");
  config("config_moe.toml",
         "moe = [{ name = \"experts\", experts = 8, k_dim = 256, n = 64, top_k = 2, " + weights +
             " }]\ntokens = [4]");
  return std::ofstream(dir + "/weights.safetensors", std::ios::app) ? 0 : 1;
}
