// recon-make-demo-model: writes an UNTRAINED demo model for scripts/demo: the MASt3R architecture
// (the same code paths as the released checkpoint) at a small size, with seeded random weights,
// as a safetensors file the engine and recond load like a converted checkpoint. Its outputs are
// meaningless (random weights): it exists so that the demo exercises the whole pipeline on a
// machine without a GPU in minutes, without downloading the non-commercial official weights.
// The file says so in its metadata ("recon.untrained", "recon.description"), and so does this tool.
//
// Weight initialisation follows tests/reference/make_golden.py (activations stay O(1)): linear
// and conv weights ~ N(0, gain²/fan_in), biases ~ N(0, 0.1²), LayerNorm weights 1 + N(0, 0.2²).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "gpu/weights/mast3r_config.h"
#include "gpu/weights/mast3r_weight_catalog.h"
#include "gpu/weights/safetensors_writer.h"

namespace {

using recon::gpu::Mast3rConfig;

constexpr const char* kUsage =
    "usage: recon-make-demo-model --out PATH [--seed N] [--size small|tiny]\n"
    "  Writes an UNTRAINED MASt3R-architecture model with seeded random weights (for the demo;\n"
    "  its outputs are meaningless). small (default): ViT encoder 192-d x 4, decoder 128-d x 4;\n"
    "  tiny: the tests' 32-d x 2 / 24-d x 4.\n";

constexpr const char* kDescription =
    "UNTRAINED demo model: the MASt3R architecture at a small size with seeded random weights, made by "
    "recon-make-demo-model for scripts/demo. Its point maps, confidences and descriptors are meaningless. "
    "Convert the official checkpoint with tools/convert-checkpoint for real reconstructions.";

Mast3rConfig demo_config(const std::string& size) {
  Mast3rConfig c;
  c.img_size = {512, 512};
  if (size == "tiny") {  // tests/reference/make_golden.py TINY_A
    c.enc_embed_dim = 32, c.enc_depth = 2, c.enc_num_heads = 2;
    c.dec_embed_dim = 24, c.dec_depth = 4, c.dec_num_heads = 2;
    c.mlp_ratio = 2;
    c.dpt_layer_dims = {8, 12, 16, 24};
    c.dpt_feature_dim = 8, c.dpt_last_dim = 8;
    c.local_mlp_ratio = 0.08;
  } else if (size == "demo") {  // runs a 512x384 pair in well under a minute on 2 CPU cores (lavapipe)
    c.enc_embed_dim = 64, c.enc_depth = 2, c.enc_num_heads = 2;
    c.dec_embed_dim = 48, c.dec_depth = 4, c.dec_num_heads = 2;
    c.mlp_ratio = 2;
    c.dpt_layer_dims = {8, 16, 24, 32};
    c.dpt_feature_dim = 8, c.dpt_last_dim = 8;
    c.local_mlp_ratio = 0.1;
  } else {  // small: head dims 32, like a scaled-down ViT; for GPUs
    c.enc_embed_dim = 192, c.enc_depth = 4, c.enc_num_heads = 6;
    c.dec_embed_dim = 128, c.dec_depth = 4, c.dec_num_heads = 4;
    c.mlp_ratio = 2;
    c.dpt_layer_dims = {24, 48, 96, 128};
    c.dpt_feature_dim = 32, c.dpt_last_dim = 16;
    c.local_mlp_ratio = 0.5;
  }
  return c;
}

bool contains(const std::string& s, const char* part) {
  return s.find(part) != std::string::npos;
}
bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The standard deviation (and mean) of one parameter, by what its name says it is.
void init_stats(const std::string& name, const std::vector<int64_t>& shape, double& mean, double& stddev) {
  mean = 0.0;
  const bool is_norm = contains(name, "norm") && shape.size() == 1;
  if (name == "mask_token") {
    stddev = 0.02;
  } else if (is_norm) {
    mean = ends_with(name, ".weight") ? 1.0 : 0.0;
    stddev = 0.2;
  } else if (ends_with(name, ".bias")) {
    stddev = 0.1;
  } else if (shape.size() == 2) {  // Linear [out, in]
    stddev = 1.0 / std::sqrt(static_cast<double>(shape[1]));
  } else if (shape.size() == 4) {
    // ConvTranspose2d (act_postprocess.0.1 and .1.1) stores [in, out, k, k] and has fan-in = in.
    const bool transposed = contains(name, "act_postprocess.0.1.") || contains(name, "act_postprocess.1.1.");
    const double fan_in =
        transposed ? static_cast<double>(shape[0]) : static_cast<double>(shape[1] * shape[2] * shape[3]);
    // ReLU-fed convs get sqrt(2), halved for the residual units (7 sums) and for the last head
    // conv (raw points stay readable).
    const bool damped = contains(name, ".resConfUnit") || contains(name, "dpt.head.4.");
    const double gain = damped ? std::sqrt(2.0) * 0.5 : 1.0;
    stddev = gain / std::sqrt(fan_in);
  } else {
    stddev = 0.02;
  }
}

int fail(const std::string& message) {
  std::fprintf(stderr, "recon-make-demo-model: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out, size = "demo";
  uint64_t seed = 20240;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "recon-make-demo-model: %s needs a value\n%s", a.c_str(), kUsage);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--out") {
      out = next();
    } else if (a == "--seed") {
      seed = std::strtoull(next().c_str(), nullptr, 10);
    } else if (a == "--size") {
      size = next();
    } else if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else {
      std::fprintf(stderr, "recon-make-demo-model: unknown argument %s\n%s", a.c_str(), kUsage);
      return 2;
    }
  }
  if (out.empty() || (size != "demo" && size != "small" && size != "tiny")) {
    std::fputs(kUsage, stderr);
    return 2;
  }

  const Mast3rConfig config = demo_config(size);
  if (recon::Status valid = config.validate(); !valid.is_ok()) return fail(valid.to_string());

  recon::gpu::SafetensorsWriter writer;
  writer.add_metadata(std::string(Mast3rConfig::kMetadataKey), config.to_json());
  writer.add_metadata("recon.untrained", "true");
  writer.add_metadata("recon.description", kDescription);
  writer.add_metadata("recon.seed", std::to_string(seed));
  writer.add_metadata("format", "pt");

  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  uint64_t parameters = 0;
  for (const recon::gpu::WeightSpec& spec : recon::gpu::mast3r_weight_catalog(config)) {
    if (!spec.alias_of.empty()) continue;  // the canonical name holds the tensor
    int64_t count = 1;
    for (int64_t d : spec.shape) count *= d;
    double mean = 0, stddev = 0;
    init_stats(spec.name, spec.shape, mean, stddev);
    std::vector<float> values(static_cast<size_t>(count));
    for (float& v : values) v = static_cast<float>(mean + stddev * normal(rng));
    if (recon::Status added = writer.add_f32(spec.name, spec.shape, values); !added.is_ok()) {
      return fail(added.to_string());
    }
    parameters += static_cast<uint64_t>(count);
  }
  if (recon::Status written = writer.write(out); !written.is_ok()) return fail(written.to_string());
  std::printf("wrote %s: UNTRAINED demo model (%s, seed %llu, %.2f M random parameters; outputs are meaningless)\n",
              out.c_str(), size.c_str(), static_cast<unsigned long long>(seed), static_cast<double>(parameters) / 1e6);
  return 0;
}
