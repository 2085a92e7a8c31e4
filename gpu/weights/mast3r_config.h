// The hyper-parameters of an AsymmetricMASt3R model with the catmlp+dpt head, named after the
// official Python constructor arguments (mast3r-spec.md §1), plus a few NON-OFFICIAL test-only
// fields that let tiny test models shrink the heads. The encoder is MASt3R's CroCo ViT, or a DUNE
// ViT (encoder = "dune": AsymmetricMASt3RWithDUNEBackbone, docs/MAST3R.md) whose settings are the
// dune_* fields; enc_embed_dim / enc_depth / enc_num_heads then describe the DUNE ViT. Read from the safetensors
// metadata entry "mast3r.config" (a JSON object); absent keys keep the defaults below, which are the released
// MASt3R_ViTLarge_BaseDecoder_512_catmlpdpt_metric checkpoint's. Holds no weights.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "gpu/official_crop.h"
#include "gpu/status.h"
#include "gpu/weights/json.h"

namespace recon::gpu {

class SafetensorsFile;

// A Python (mode, vmin, vmax) tuple such as ('exp', 1, inf).
struct ActivationMode {
  std::string mode;
  double vmin = 0.0;
  double vmax = 0.0;
  bool operator==(const ActivationMode&) const = default;
};

struct Mast3rConfig {
  static constexpr std::string_view kMetadataKey = "mast3r.config";
  static constexpr double kInf = std::numeric_limits<double>::infinity();

  // ---- Official constructor arguments (CroCoNet / AsymmetricCroCo3DStereo / AsymmetricMASt3R).
  std::int64_t patch_size = 16;
  std::array<std::int64_t, 2> img_size = {512, 512};  // only used by asserts upstream
  std::int64_t enc_embed_dim = 1024;
  std::int64_t enc_depth = 24;
  std::int64_t enc_num_heads = 16;
  std::int64_t dec_embed_dim = 768;
  std::int64_t dec_depth = 12;
  std::int64_t dec_num_heads = 12;
  double mlp_ratio = 4.0;
  bool norm_im2_in_dec = true;        // false is rejected: the runtime always has norm_y
  std::string pos_embed = "RoPE100";  // "RoPE<base>"; additive "cosine" is not supported
  std::string head_type = "catmlp+dpt";
  std::string output_mode = "pts3d+desc24";  // "pts3d+desc<N>"
  ActivationMode depth_mode{"exp", -kInf, kInf};
  ActivationMode conf_mode{"exp", 1.0, kInf};
  std::string desc_mode = "norm";
  bool two_confs = true;
  ActivationMode desc_conf_mode{"exp", 0.0, kInf};  // JSON null means "same as conf_mode"
  // Accepted and kept for round trips; they do not change inference.
  std::string freeze = "none";
  bool landscape_only = false;
  std::string patch_embed_cls = "PatchEmbedDust3R";
  double mask_ratio = 0.9;
  // The official norm_layer is LayerNorm(eps=1e-6); JSON key "norm_eps".
  double norm_eps = 1e-6;

  // ---- The encoder: "croco" (AsymmetricMASt3R's own) or "dune". The dune_* fields matter only for
  // "dune" and are stored only then; their defaults are naver/dune's (EncoderOptions and
  // DinoVisionTransformer) and naver/mast3r's wrapper's.
  std::string encoder = "croco";
  std::string dune_backbone;                  // the torch.hub name the checkpoint loads; informational
  std::int64_t dune_num_register_tokens = 4;  // inserted after the class token, without position
  std::int64_t dune_pos_embed_grid = 32;      // pos_embed holds 1 + grid² rows (448 / 14)
  double dune_interpolate_offset = 0.1;       // 0: resample to the size; else by (n + offset) / grid
  bool dune_interpolate_antialias = false;
  bool dune_layerscale = true;         // blocks carry ls1.gamma / ls2.gamma
  std::string dune_ffn_layer = "mlp";  // SwiGLU variants are refused
  double dune_ln_eps = 1e-6;           // the ViT's block norms
  double dune_norm_eps = 1e-5;         // the wrapper's LayerNorm on the patch tokens

  // ---- NON-OFFICIAL, test-only: the released model hard-codes these values.
  std::array<std::int64_t, 4> dpt_layer_dims = {96, 192, 384, 768};
  std::int64_t dpt_feature_dim = 256;
  std::int64_t dpt_last_dim = 128;
  // unset = 4, the hidden_dim_factor the official head factory hard-codes whatever mlp_ratio is
  // (tests/reference/mast3r_config.py does the same).
  std::optional<double> local_mlp_ratio;

  // ---- Derived values (meaningful once validate() passed).
  bool is_dune() const { return encoder == "dune"; }
  std::int64_t desc_dim() const;  // 24 from "pts3d+desc24"
  double rope_base() const;       // 100 from "RoPE100"
  std::int64_t enc_head_dim() const { return enc_num_heads > 0 ? enc_embed_dim / enc_num_heads : 0; }
  std::int64_t dec_head_dim() const { return dec_num_heads > 0 ? dec_embed_dim / dec_num_heads : 0; }
  std::int64_t enc_mlp_hidden() const;  // int(enc_embed_dim * mlp_ratio)
  std::int64_t dec_mlp_hidden() const;  // int(dec_embed_dim * mlp_ratio)
  double effective_local_mlp_ratio() const { return local_mlp_ratio.value_or(4.0); }
  std::int64_t local_mlp_in() const { return enc_embed_dim + dec_embed_dim; }
  std::int64_t local_mlp_hidden() const;          // int(local_mlp_in * local ratio)
  std::int64_t local_mlp_out() const;             // (desc_dim + two_confs) * patch_size²
  std::array<std::int64_t, 4> dpt_hooks() const;  // [0, L/2, 3L/4, L] with L = dec_depth
  // How the official loader prepares images for this model: its "size" (the long side; max(img_size),
  // or for DUNE the resolution of its position table, 448 for the released encoders) and its crop
  // (patch size; squares kept for DUNE, whose README loads with square_ok=True).
  std::int64_t image_long_side() const;
  CropRule image_crop() const;
  std::int64_t dpt_num_channels() const { return 4; }  // xyz + conf

  // kInvalidArgument naming the first inconsistent or unsupported field.
  Status validate() const;

  // Parses and validates. Unknown keys are rejected (all of them named); known official keys
  // that do not matter for inference are accepted. Infinities are the strings "inf"/"-inf".
  static Result<Mast3rConfig> from_json(std::string_view json);
  static Result<Mast3rConfig> from_json_value(const JsonValue& object);
  // The "mast3r.config" metadata entry, or the official defaults when the file has none.
  static Result<Mast3rConfig> from_safetensors(const SafetensorsFile& file);

  // All official keys; the non-official ones (norm_eps, dpt_*, local_mlp_ratio) only when they
  // differ from the released model; encoder and dune_* only for a DUNE encoder. Infinities become
  // "inf"/"-inf".
  JsonValue to_json_value() const;
  std::string to_json() const;

  bool operator==(const Mast3rConfig&) const = default;
};

}  // namespace recon::gpu
