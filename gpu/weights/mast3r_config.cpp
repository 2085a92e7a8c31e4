// Derived values and validation of Mast3rConfig (see mast3r_config.h); JSON I/O is in
// mast3r_config_json.cpp.
#include "gpu/weights/mast3r_config.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace recon::gpu {

namespace {

constexpr std::string_view kDescPrefix = "pts3d+desc";
constexpr std::string_view kRopePrefix = "RoPE";
constexpr std::int64_t kMaxDim = 1 << 16;
constexpr std::int64_t kMaxDepth = 1 << 10;

// Python's int(x * ratio) for the positive values validate() admits.
std::int64_t scaled(std::int64_t x, double ratio) {
  const double v = static_cast<double>(x) * ratio;
  return v >= 1.0 && v < static_cast<double>(kMaxDim) * 64 ? static_cast<std::int64_t>(v) : 0;
}

Status field_error(std::string_view field, const std::string& what) {
  return invalid_argument("MASt3R config: " + std::string(field) + " " + what);
}

Status check_range(std::string_view field, std::int64_t v, std::int64_t lo, std::int64_t hi) {
  if (v < lo || v > hi) {
    return field_error(
        field, "= " + std::to_string(v) + " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return Status::ok();
}

Status check_attention(std::string_view prefix, std::int64_t dim, std::int64_t heads, bool rope = true) {
  const std::string name(prefix);
  RECON_RETURN_IF_ERROR(check_range(name + "_embed_dim", dim, 1, kMaxDim));
  RECON_RETURN_IF_ERROR(check_range(name + "_num_heads", heads, 1, dim));
  if (dim % heads != 0) {
    return field_error(name + "_embed_dim", "= " + std::to_string(dim) + " is not divisible by " + name +
                                                "_num_heads = " + std::to_string(heads));
  }
  if (rope && (dim / heads) % 4 != 0) {
    return field_error(name + "_embed_dim", "/ " + name + "_num_heads = " + std::to_string(dim / heads) +
                                                " is not a multiple of 4 (2D RoPE splits each head in x/y pairs)");
  }
  return Status::ok();
}

Status check_conf_mode(std::string_view field, const ActivationMode& m) {
  if (m.mode != "exp" && m.mode != "sigmoid") {
    return field_error(field, "mode '" + m.mode + "' is not supported (exp, sigmoid)");
  }
  if (std::isnan(m.vmin) || std::isnan(m.vmax) || !std::isfinite(m.vmin) || m.vmin > m.vmax) {
    return field_error(field, "needs a finite vmin <= vmax");
  }
  if (m.mode == "sigmoid" && !std::isfinite(m.vmax)) return field_error(field, "sigmoid needs a finite vmax");
  return Status::ok();
}

bool parse_positive_double(std::string_view s, double& out) {
  if (s.empty()) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && std::isfinite(out) && out > 0;
}

Status check_eps(std::string_view field, double eps) {
  if (!(eps > 0 && eps < 1)) return field_error(field, "must be in (0, 1)");
  return Status::ok();
}

// The DUNE encoder's settings (mast3r_config.h); enc_* are its ViT's.
Status validate_dune(const Mast3rConfig& c) {
  // AsymmetricMASt3RWithDUNEBackbone scales the DPT's last upsampling by the constant 14/16.
  if (c.patch_size != 14) {
    return field_error("patch_size", "= " + std::to_string(c.patch_size) + ": a DUNE encoder has 14-pixel patches");
  }
  RECON_RETURN_IF_ERROR(check_range("dune_num_register_tokens", c.dune_num_register_tokens, 0, 64));
  RECON_RETURN_IF_ERROR(check_range("dune_pos_embed_grid", c.dune_pos_embed_grid, 1, 1024));
  if (!(c.dune_interpolate_offset >= 0 && c.dune_interpolate_offset < 1)) {
    return field_error("dune_interpolate_offset", "must be in [0, 1)");
  }
  if (c.dune_ffn_layer != "mlp") {
    return field_error("dune_ffn_layer", "'" + c.dune_ffn_layer + "' is not supported (mlp)");
  }
  RECON_RETURN_IF_ERROR(check_eps("dune_ln_eps", c.dune_ln_eps));
  return check_eps("dune_norm_eps", c.dune_norm_eps);
}

}  // namespace

std::int64_t Mast3rConfig::desc_dim() const {
  if (output_mode.compare(0, kDescPrefix.size(), kDescPrefix) != 0) return 0;
  const std::string_view digits = std::string_view(output_mode).substr(kDescPrefix.size());
  if (digits.empty() || digits.front() < '0' || digits.front() > '9') return 0;  // no sign, no space
  std::int64_t n = 0;
  const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  return r.ec == std::errc() && r.ptr == digits.data() + digits.size() ? n : 0;
}

double Mast3rConfig::rope_base() const {
  if (pos_embed.compare(0, kRopePrefix.size(), kRopePrefix) != 0) return 0.0;
  double base = 0.0;
  return parse_positive_double(std::string_view(pos_embed).substr(kRopePrefix.size()), base) ? base : 0.0;
}

std::int64_t Mast3rConfig::enc_mlp_hidden() const {
  return scaled(enc_embed_dim, mlp_ratio);
}
std::int64_t Mast3rConfig::dec_mlp_hidden() const {
  return scaled(dec_embed_dim, mlp_ratio);
}
std::int64_t Mast3rConfig::local_mlp_hidden() const {
  return scaled(local_mlp_in(), effective_local_mlp_ratio());
}

std::int64_t Mast3rConfig::local_mlp_out() const {
  return (desc_dim() + (two_confs ? 1 : 0)) * patch_size * patch_size;
}

std::array<std::int64_t, 4> Mast3rConfig::dpt_hooks() const {
  return {0, dec_depth * 2 / 4, dec_depth * 3 / 4, dec_depth};
}

std::int64_t Mast3rConfig::image_long_side() const {
  return is_dune() ? dune_pos_embed_grid * patch_size : std::max(img_size[0], img_size[1]);
}

CropRule Mast3rConfig::image_crop() const {
  return CropRule{static_cast<uint32_t>(patch_size), is_dune()};
}

Status Mast3rConfig::validate() const {
  RECON_RETURN_IF_ERROR(check_range("patch_size", patch_size, 1, 256));
  for (const std::int64_t s : img_size) RECON_RETURN_IF_ERROR(check_range("img_size", s, 1, kMaxDim));
  if (encoder != "croco" && encoder != "dune") {
    return field_error("encoder", "'" + encoder + "' is not supported (croco, dune)");
  }
  if (is_dune()) RECON_RETURN_IF_ERROR(validate_dune(*this));
  RECON_RETURN_IF_ERROR(check_attention("enc", enc_embed_dim, enc_num_heads, /*rope=*/!is_dune()));
  RECON_RETURN_IF_ERROR(check_attention("dec", dec_embed_dim, dec_num_heads));
  RECON_RETURN_IF_ERROR(check_range("enc_depth", enc_depth, 1, kMaxDepth));
  // The DPT taps decoder outputs [0, L/2, 3L/4, L]; below 4 layers they collide. (Upstream asserts
  // dec_depth > 9; smaller values exist only for tiny test models.)
  RECON_RETURN_IF_ERROR(check_range("dec_depth", dec_depth, 4, kMaxDepth));
  if (!(mlp_ratio > 0) || enc_mlp_hidden() == 0 || dec_mlp_hidden() == 0) {
    return field_error("mlp_ratio", "must give hidden sizes between 1 and " + std::to_string(kMaxDim * 64));
  }
  if (!(norm_eps > 0) || !std::isfinite(norm_eps)) return field_error("norm_eps", "must be positive and finite");
  if (!norm_im2_in_dec) return field_error("norm_im2_in_dec", "= false is not supported");
  if (rope_base() <= 0.0) {
    return field_error("pos_embed", "'" + pos_embed + "' is not supported (expected RoPE<base>, e.g. RoPE100)");
  }
  if (head_type != "catmlp+dpt") return field_error("head_type", "'" + head_type + "' is not supported (catmlp+dpt)");
  if (desc_dim() < 1 || desc_dim() > 4096) {
    return field_error("output_mode",
                       "'" + output_mode + "' is not supported (expected pts3d+desc<N>, 1 <= N <= 4096)");
  }
  if (depth_mode.mode != "exp" && depth_mode.mode != "linear" && depth_mode.mode != "square") {
    return field_error("depth_mode", "mode '" + depth_mode.mode + "' is not supported (exp, linear, square)");
  }
  if (!(depth_mode.vmin == -kInf && depth_mode.vmax == kInf)) {
    return field_error("depth_mode", "bounds must be (-inf, inf), as upstream asserts");
  }
  RECON_RETURN_IF_ERROR(check_conf_mode("conf_mode", conf_mode));
  RECON_RETURN_IF_ERROR(check_conf_mode("desc_conf_mode", desc_conf_mode));
  if (desc_mode != "norm") return field_error("desc_mode", "'" + desc_mode + "' is not supported (norm)");
  if (!(mask_ratio >= 0 && mask_ratio <= 1)) return field_error("mask_ratio", "must be in [0, 1]");
  for (const std::int64_t d : dpt_layer_dims) RECON_RETURN_IF_ERROR(check_range("dpt_layer_dims", d, 1, kMaxDim));
  RECON_RETURN_IF_ERROR(check_range("dpt_feature_dim", dpt_feature_dim, 2, kMaxDim));
  RECON_RETURN_IF_ERROR(check_range("dpt_last_dim", dpt_last_dim, 1, kMaxDim));
  if (local_mlp_ratio && (!(*local_mlp_ratio > 0) || local_mlp_hidden() == 0)) {
    return field_error("local_mlp_ratio", "must give a hidden size between 1 and " + std::to_string(kMaxDim * 64));
  }
  return Status::ok();
}

}  // namespace recon::gpu
