#include "gpu/models/mast3r/dune_encoder.h"

#include <cstring>
#include <string>
#include <vector>

#include "gpu/models/mast3r/dune_pos_embed.h"
#include "gpu/models/mast3r/mast3r_layers.h"
#include "gpu/ops/attention.h"
#include "gpu/ops/elementwise.h"
#include "gpu/ops/layer_norm.h"
#include "gpu/ops/layout.h"
#include "gpu/weights/half_float.h"

namespace recon::gpu {
namespace {

class DuneEncoder final : public Mast3rEncoder {
 public:
  DuneEncoder(Runtime& rt, const Mast3rWeights& w, int64_t batch, ViewSize size) : Mast3rEncoder(rt, w, batch, size) {}

 private:
  Status build_all() override;
  // A constant of the graph made on the host (fp32 values), in the trunk dtype.
  Result<Tensor> upload(const Shape& shape, const std::vector<float>& values);
};

Result<Tensor> DuneEncoder::upload(const Shape& shape, const std::vector<float>& values) {
  Result<Tensor> t = invalid_argument("unreachable");
  if (w_.trunk_dtype() == DType::kF32) {
    t = Tensor::from_host(rt_, DType::kF32, shape, values.data(), values.size() * sizeof(float));
  } else {
    std::vector<uint16_t> half(values.size());
    for (size_t i = 0; i < values.size(); ++i) half[i] = f32_to_f16(values[i]);
    t = Tensor::from_host(rt_, DType::kF16, shape, half.data(), half.size() * sizeof(uint16_t));
  }
  if (t.is_ok()) keep_.push_back(*t);
  return t;
}

Status DuneEncoder::build_all() {
  const Mast3rConfig& c = w_.config();
  const DType dt = w_.trunk_dtype();
  const int64_t B = batch_, C = c.enc_embed_dim, p = c.patch_size, H = size_.height, W = size_.width;
  const int64_t gh = H / p, gw = W / p, N = gh * gw, R = c.dune_num_register_tokens, T = 1 + R + N;
  tokens_ = N;
  const Capabilities& caps = rt_.caps();
  Graph& g = *graph_;

  // Host constants. The position table is resampled to this grid once, here; the first 1 + R
  // tokens are the same for every image: class token + its position, then the register tokens
  // (which get no position), repeated over the batch for the concatenation below.
  const std::vector<float>& table = w_.host("dune_backbone.pos_embed");
  const DunePositionGrid grid{c.dune_pos_embed_grid, C, c.dune_interpolate_offset, c.dune_interpolate_antialias};
  const std::vector<float> positions = dune_patch_positions(table, grid, gh, gw, H == W);
  std::vector<float> prefix(static_cast<size_t>(B * (1 + R) * C));
  const std::vector<float>& cls = w_.host("dune_backbone.cls_token");
  for (int64_t b = 0; b < B; ++b) {
    float* row = prefix.data() + b * (1 + R) * C;
    for (int64_t k = 0; k < C; ++k) row[k] = cls[k] + table[k];
    if (R > 0) std::memcpy(row + C, w_.host("dune_backbone.register_tokens").data(), R * C * sizeof(float));
  }
  RECON_ASSIGN_OR_RETURN(Tensor pos, upload({1, N, C}, positions));
  RECON_ASSIGN_OR_RETURN(Tensor head_tokens, upload({B, 1 + R, C}, prefix));

  RECON_ASSIGN_OR_RETURN(Tensor image, build_input("dune_preprocess"));
  const std::string v = "dune_backbone.";
  RECON_ASSIGN_OR_RETURN(Tensor patches, alloc(dt, {B, C, gh, gw}));
  RECON_RETURN_IF_ERROR(mast3r::conv2d(g, caps, image, w_.conv(v + "patch_embed.proj.weight"),
                                       &w_.at(v + "patch_embed.proj.bias"), patches, static_cast<int>(p), 0));
  RECON_ASSIGN_OR_RETURN(Tensor embedded, alloc(dt, {B, N, C}));
  RECON_RETURN_IF_ERROR(ops::nchw_to_tokens(g, patches, embedded));
  RECON_RETURN_IF_ERROR(ops::binary(g, ops::BinaryOp::kAdd, embedded, pos, embedded));
  RECON_ASSIGN_OR_RETURN(Tensor x, alloc(dt, {B, T, C}));
  RECON_RETURN_IF_ERROR(ops::concat(g, {Arg(head_tokens), Arg(embedded)}, 1, x));

  mast3r::VitBlockScratch scratch;
  RECON_ASSIGN_OR_RETURN(scratch.t, alloc(dt, {B, T, C}));
  RECON_ASSIGN_OR_RETURN(scratch.qkv, alloc(dt, {B, T, 3 * C}));
  RECON_ASSIGN_OR_RETURN(scratch.att, alloc(dt, {B, T, C}));
  RECON_ASSIGN_OR_RETURN(scratch.hid, alloc(dt, {B, T, c.enc_mlp_hidden()}));
  const ops::AttentionConfig attn{c.enc_num_heads, c.enc_head_dim(), 0.0f, ops::AttentionPath::kAuto};
  const float eps = static_cast<float>(c.dune_ln_eps);
  for (int64_t l = 0; l < c.enc_depth; ++l) {
    RECON_RETURN_IF_ERROR(mast3r::vit_block(g, caps, w_, v + "blocks.0." + std::to_string(l) + ".", x, scratch, attn,
                                            eps, /*rope=*/nullptr));
  }
  // The patch tokens of the last block (not the ViT's own final norm) through the wrapper's norm.
  RECON_ASSIGN_OR_RETURN(Tensor patch_tokens, alloc(dt, {B, N, C}));
  RECON_RETURN_IF_ERROR(ops::slice(g, x, patch_tokens, {{}, {1 + R, T, 1}}));
  RECON_ASSIGN_OR_RETURN(output_, alloc(dt, {B, N, C}));
  return ops::layer_norm(g, patch_tokens, w_.at("norm.weight"), w_.at("norm.bias"), output_,
                         static_cast<float>(c.dune_norm_eps));
}

}  // namespace

std::unique_ptr<Mast3rEncoder> make_dune_encoder(Runtime& rt, const Mast3rWeights& weights, int64_t batch,
                                                 ViewSize size) {
  return std::make_unique<DuneEncoder>(rt, weights, batch, size);
}

}  // namespace recon::gpu
