#include "gpu/models/mast3r/mast3r_forward.h"

#include "gpu/models/mast3r/mast3r_layers.h"
#include "gpu/ops/attention.h"
#include "gpu/ops/cast.h"
#include "gpu/ops/elementwise_basic.h"
#include "gpu/ops/layer_norm.h"
#include "gpu/ops/layout.h"

namespace recon::gpu {

std::string ForwardShape::to_string() const {
  return std::to_string(batch) + "x[" + std::to_string(view1.width) + "x" + std::to_string(view1.height) + ", " +
         std::to_string(view2.width) + "x" + std::to_string(view2.height) + "]";
}

Mast3rForward::Mast3rForward(Runtime& rt, const Mast3rWeights& w, const ForwardShape& s)
    : rt_(rt), w_(w), shape_(s), graph_(std::make_unique<Graph>(rt)) {}

Result<std::unique_ptr<Mast3rForward>> Mast3rForward::build(Runtime& rt, const Mast3rWeights& weights,
                                                            const ForwardShape& shape) {
  const int64_t p = weights.config().patch_size;
  for (const ViewSize& v : {shape.view1, shape.view2}) {
    if (v.height <= 0 || v.width <= 0 || v.height % p != 0 || v.width % p != 0) {
      return invalid_argument("view size " + std::to_string(v.width) + "x" + std::to_string(v.height) +
                              " is not a positive multiple of the patch size " + std::to_string(p));
    }
  }
  if (shape.batch < 1 || shape.batch > 64) return invalid_argument("batch must be 1..64");
  std::unique_ptr<Mast3rForward> f(new Mast3rForward(rt, weights, shape));
  Status s = f->build_all();
  if (!s.is_ok()) return s.with_context("building the MASt3R graph for " + shape.to_string());
  return f;
}

Result<Tensor> Mast3rForward::alloc(DType dtype, const Shape& shape, const std::string& tap_name) {
  RECON_ASSIGN_OR_RETURN(Tensor t, Tensor::empty(rt_, dtype, shape));
  activation_bytes_ += t.bytes();
  keep_.push_back(t);
  if (!tap_name.empty()) taps_.emplace_back(tap_name, t);
  return t;
}

Result<Tensor> Mast3rForward::as_dtype(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return t;
  RECON_ASSIGN_OR_RETURN(Tensor converted, alloc(dtype, t.shape()));
  RECON_RETURN_IF_ERROR(ops::cast(*graph_, t, converted));
  return converted;
}

const Tensor* Mast3rForward::tap(const std::string& name) const {
  for (const auto& [n, t] : taps_) {
    if (n == name) return &t;
  }
  return nullptr;
}

namespace {
struct PreprocessPush {
  uint32_t batch, height, width, stride, image_bytes;
};
static_assert(sizeof(PreprocessPush) == 20, "mirrors Push in shaders/mast3r_preprocess.comp");
}  // namespace

Status Mast3rForward::build_all() {
  const int64_t p = w_.config().patch_size, B = shape_.batch;
  const ViewSize sizes[2] = {shape_.view1, shape_.view2};
  graph_->timestamp("preprocess");
  for (int v = 0; v < 2; ++v) {
    View& view = views_[v];
    view.h = sizes[v].height / p;
    view.w = sizes[v].width / p;
    view.n = view.h * view.w;
    RECON_ASSIGN_OR_RETURN(input_u8_[v], alloc(DType::kU8, {B, sizes[v].height, sizes[v].width, 3}));
    RECON_ASSIGN_OR_RETURN(view.image,
                           alloc(DType::kF32, {B, 3, sizes[v].height, sizes[v].width}, v == 0 ? "input_1" : "input_2"));
    const uint32_t stride = static_cast<uint32_t>(sizes[v].width * 3);
    PreprocessPush push{static_cast<uint32_t>(B), static_cast<uint32_t>(sizes[v].height),
                        static_cast<uint32_t>(sizes[v].width), stride, static_cast<uint32_t>(stride * sizes[v].height)};
    const uint64_t pixels = static_cast<uint64_t>(B * sizes[v].height * sizes[v].width);
    RECON_RETURN_IF_ERROR(graph_->dispatch("mast3r_preprocess", {},
                                           {{input_u8_[v], Access::kRead}, {view.image, Access::kWrite}}, push,
                                           Graph::grid_1d((pixels + 255) / 256)));
  }
  graph_->timestamp("encoder");
  RECON_RETURN_IF_ERROR(build_encoder());
  graph_->timestamp("decoder");
  RECON_RETURN_IF_ERROR(build_decoder());
  graph_->timestamp("head1");
  RECON_RETURN_IF_ERROR(build_head(0));
  graph_->timestamp("head2");
  RECON_RETURN_IF_ERROR(build_head(1));
  graph_->timestamp("postprocess");
  RECON_RETURN_IF_ERROR(build_postprocess(0));
  RECON_RETURN_IF_ERROR(build_postprocess(1));
  return Status::ok();
}

// Encoder (spec §3): patch embedding, 24 pre-norm blocks with RoPE self-attention, enc_norm.
// Views of equal size run as one batch of 2B, as the reference does.
Status Mast3rForward::build_encoder() {
  const Mast3rConfig& c = w_.config();
  const DType dt = w_.trunk_dtype();
  const int64_t B = shape_.batch, C = c.enc_embed_dim, p = c.patch_size;
  const bool together = shape_.view1 == shape_.view2;
  const Capabilities& caps = rt_.caps();
  ops::AttentionConfig attn{c.enc_num_heads, c.enc_head_dim(), 0.0f, ops::AttentionPath::kAuto};

  auto encode = [&](std::vector<int> which) -> Status {
    const View& first = views_[which.front()];
    const int64_t nb = B * static_cast<int64_t>(which.size()), N = first.n;
    const int64_t H = first.h * p, W = first.w * p;
    // The stacked input images, as trunk dtype.
    RECON_ASSIGN_OR_RETURN(Tensor image, alloc(dt, {nb, 3, H, W}));
    for (size_t i = 0; i < which.size(); ++i) {
      RECON_ASSIGN_OR_RETURN(Tensor part,
                             image.slice_rows(static_cast<int64_t>(i) * B, static_cast<int64_t>(i + 1) * B));
      RECON_RETURN_IF_ERROR(ops::cast(*graph_, views_[which[i]].image, part));
    }
    RECON_ASSIGN_OR_RETURN(Tensor patches, alloc(dt, {nb, C, first.h, first.w}));
    RECON_RETURN_IF_ERROR(mast3r::conv2d(*graph_, caps, image, w_.at("patch_embed.proj.weight"),
                                         &w_.at("patch_embed.proj.bias"), patches, static_cast<int>(p), 0));
    RECON_ASSIGN_OR_RETURN(Tensor x, alloc(dt, {nb, N, C}));
    RECON_RETURN_IF_ERROR(ops::nchw_to_tokens(*graph_, patches, x));
    RECON_ASSIGN_OR_RETURN(Tensor t, alloc(dt, {nb, N, C}));
    RECON_ASSIGN_OR_RETURN(Tensor qkv, alloc(dt, {nb, N, 3 * C}));
    RECON_ASSIGN_OR_RETURN(Tensor att, alloc(dt, {nb, N, C}));
    RECON_ASSIGN_OR_RETURN(Tensor hid, alloc(dt, {nb, N, c.enc_mlp_hidden()}));
    const ops::RopeGrid grid{first.h, first.w};
    const float eps = static_cast<float>(c.norm_eps);
    for (int64_t l = 0; l < c.enc_depth; ++l) {
      const std::string b = "enc_blocks." + std::to_string(l) + ".";
      RECON_RETURN_IF_ERROR(ops::layer_norm(*graph_, x, w_.at(b + "norm1.weight"), w_.at(b + "norm1.bias"), t, eps));
      RECON_RETURN_IF_ERROR(
          mast3r::linear(*graph_, caps, t, w_.at(b + "attn.qkv.weight"), &w_.at(b + "attn.qkv.bias"), qkv));
      RECON_RETURN_IF_ERROR(ops::self_attention_rope(*graph_, caps, qkv, att, grid, attn));
      const Arg residual = x;
      RECON_RETURN_IF_ERROR(mast3r::linear(*graph_, caps, att, w_.at(b + "attn.proj.weight"),
                                           &w_.at(b + "attn.proj.bias"), x, mast3r::Act::kNone, &residual));
      RECON_RETURN_IF_ERROR(ops::layer_norm(*graph_, x, w_.at(b + "norm2.weight"), w_.at(b + "norm2.bias"), t, eps));
      RECON_RETURN_IF_ERROR(mast3r::linear(*graph_, caps, t, w_.at(b + "mlp.fc1.weight"), &w_.at(b + "mlp.fc1.bias"),
                                           hid, mast3r::Act::kGelu));
      RECON_RETURN_IF_ERROR(mast3r::linear(*graph_, caps, hid, w_.at(b + "mlp.fc2.weight"), &w_.at(b + "mlp.fc2.bias"),
                                           x, mast3r::Act::kNone, &residual));
    }
    RECON_ASSIGN_OR_RETURN(Tensor out, alloc(dt, {nb, N, C}));
    RECON_RETURN_IF_ERROR(ops::layer_norm(*graph_, x, w_.at("enc_norm.weight"), w_.at("enc_norm.bias"), out,
                                          static_cast<float>(c.norm_eps)));
    for (size_t i = 0; i < which.size(); ++i) {
      RECON_ASSIGN_OR_RETURN(views_[which[i]].enc_out,
                             out.slice_rows(static_cast<int64_t>(i) * B, static_cast<int64_t>(i + 1) * B));
      taps_.emplace_back(which[i] == 0 ? "enc_out_1" : "enc_out_2", views_[which[i]].enc_out);
    }
    return Status::ok();
  };
  if (together) return encode({0, 1});
  RECON_RETURN_IF_ERROR(encode({0}));
  return encode({1});
}

}  // namespace recon::gpu
