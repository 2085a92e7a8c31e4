#include "gpu/models/mast3r/mast3r_encoder.h"

#include "gpu/models/mast3r/dune_encoder.h"
#include "gpu/models/mast3r/mast3r_layers.h"
#include "gpu/ops/attention.h"
#include "gpu/ops/cast.h"
#include "gpu/ops/layer_norm.h"
#include "gpu/ops/layout.h"

namespace recon::gpu {

namespace {
struct PreprocessPush {
  uint32_t batch, height, width, stride, image_bytes;
};
static_assert(sizeof(PreprocessPush) == 20, "mirrors Push in shaders/mast3r_preprocess.comp, dune_preprocess.comp");

// MASt3R's own encoder (spec §3): patch embedding, enc_depth pre-norm blocks with RoPE
// self-attention, enc_norm, on the input 2·v/255 − 1.
class CrocoEncoder final : public Mast3rEncoder {
 public:
  CrocoEncoder(Runtime& rt, const Mast3rWeights& w, int64_t batch, ViewSize size) : Mast3rEncoder(rt, w, batch, size) {}

 private:
  Status build_all() override;
};

}  // namespace

Mast3rEncoder::Mast3rEncoder(Runtime& rt, const Mast3rWeights& w, int64_t batch, ViewSize size)
    : rt_(rt), w_(w), batch_(batch), size_(size), graph_(std::make_unique<Graph>(rt)) {}

Result<std::unique_ptr<Mast3rEncoder>> Mast3rEncoder::build(Runtime& rt, const Mast3rWeights& weights, int64_t batch,
                                                            ViewSize size) {
  const int64_t p = weights.config().patch_size;
  if (size.height <= 0 || size.width <= 0 || size.height % p != 0 || size.width % p != 0) {
    return invalid_argument("image size " + std::to_string(size.width) + "x" + std::to_string(size.height) +
                            " is not a positive multiple of the patch size " + std::to_string(p));
  }
  if (batch < 1 || batch > 128) return invalid_argument("encoder batch must be 1..128");
  std::unique_ptr<Mast3rEncoder> e;
  if (weights.config().is_dune()) {
    e = make_dune_encoder(rt, weights, batch, size);
  } else {
    e.reset(new CrocoEncoder(rt, weights, batch, size));
  }
  Status s = e->build_all();
  if (!s.is_ok()) {
    return s.with_context(std::string("building the ") + (weights.config().is_dune() ? "DUNE" : "MASt3R") +
                          " encoder graph for " + std::to_string(batch) + "x" + std::to_string(size.width) + "x" +
                          std::to_string(size.height));
  }
  return e;
}

Result<Tensor> Mast3rEncoder::alloc(DType dtype, const Shape& shape) {
  RECON_ASSIGN_OR_RETURN(Tensor t, Tensor::empty(rt_, dtype, shape));
  keep_.push_back(t);
  return t;
}

const Tensor* Mast3rEncoder::tap(const std::string& name) const {
  if (name == "input") return &image_;
  if (name == "enc_out") return &output_;
  return nullptr;
}

Result<Tensor> Mast3rEncoder::build_input(const char* shader) {
  const int64_t B = batch_, H = size_.height, W = size_.width;
  Graph& g = *graph_;
  g.timestamp("preprocess");
  RECON_ASSIGN_OR_RETURN(input_u8_, alloc(DType::kU8, {B, H, W, 3}));
  RECON_ASSIGN_OR_RETURN(image_, alloc(DType::kF32, {B, 3, H, W}));
  const uint32_t stride = static_cast<uint32_t>(W * 3);
  const PreprocessPush push{static_cast<uint32_t>(B), static_cast<uint32_t>(H), static_cast<uint32_t>(W), stride,
                            static_cast<uint32_t>(stride * H)};
  const uint64_t pixels = static_cast<uint64_t>(B * H * W);
  RECON_RETURN_IF_ERROR(g.dispatch(shader, {}, {{input_u8_, Access::kRead}, {image_, Access::kWrite}}, push,
                                   Graph::grid_1d((pixels + 255) / 256)));
  g.timestamp("encoder");
  const DType dt = w_.trunk_dtype();
  if (dt == DType::kF32) return image_;
  RECON_ASSIGN_OR_RETURN(Tensor image, alloc(dt, {B, 3, H, W}));
  RECON_RETURN_IF_ERROR(ops::cast(g, image_, image));
  return image;
}

Status CrocoEncoder::build_all() {
  const Mast3rConfig& c = w_.config();
  const DType dt = w_.trunk_dtype();
  const int64_t B = batch_, C = c.enc_embed_dim, p = c.patch_size, H = size_.height, W = size_.width;
  const int64_t gh = H / p, gw = W / p, N = gh * gw;
  tokens_ = N;
  const Capabilities& caps = rt_.caps();
  Graph& g = *graph_;

  RECON_ASSIGN_OR_RETURN(Tensor image, build_input("mast3r_preprocess"));
  RECON_ASSIGN_OR_RETURN(Tensor patches, alloc(dt, {B, C, gh, gw}));
  RECON_RETURN_IF_ERROR(mast3r::conv2d(g, caps, image, w_.conv("patch_embed.proj.weight"),
                                       &w_.at("patch_embed.proj.bias"), patches, static_cast<int>(p), 0));
  RECON_ASSIGN_OR_RETURN(Tensor x, alloc(dt, {B, N, C}));
  RECON_RETURN_IF_ERROR(ops::nchw_to_tokens(g, patches, x));
  mast3r::VitBlockScratch scratch;
  RECON_ASSIGN_OR_RETURN(scratch.t, alloc(dt, {B, N, C}));
  RECON_ASSIGN_OR_RETURN(scratch.qkv, alloc(dt, {B, N, 3 * C}));
  RECON_ASSIGN_OR_RETURN(scratch.att, alloc(dt, {B, N, C}));
  RECON_ASSIGN_OR_RETURN(scratch.hid, alloc(dt, {B, N, c.enc_mlp_hidden()}));
  const ops::RopeGrid grid{gh, gw};
  const ops::AttentionConfig attn{c.enc_num_heads, c.enc_head_dim(), 0.0f, ops::AttentionPath::kAuto};
  const float eps = static_cast<float>(c.norm_eps);
  for (int64_t l = 0; l < c.enc_depth; ++l) {
    RECON_RETURN_IF_ERROR(
        mast3r::vit_block(g, caps, w_, "enc_blocks." + std::to_string(l) + ".", x, scratch, attn, eps, &grid));
  }
  RECON_ASSIGN_OR_RETURN(output_, alloc(dt, {B, N, C}));
  return ops::layer_norm(g, x, w_.at("enc_norm.weight"), w_.at("enc_norm.bias"), output_, eps);
}

}  // namespace recon::gpu
