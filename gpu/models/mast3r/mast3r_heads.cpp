// The head and post-processing stages of Mast3rForward (spec §5): per view, the DPT (four hooked
// decoder entries → reassemble → RefineNet fusion → head convs → 4 raw channels) and the local
// feature MLP (concat(enc_out, dec_final) → fc1 GELU → fc2 → (D+1)·p² raw features per token),
// in fp32 as the official code runs them (fp16 in kF16Heads); then the output activations, which
// read the local features in the pixel shuffle's order (shaders/mast3r_postprocess.comp). View 2's
// DPT runs only where the shape asks for its points (ForwardShape::view2_points).
#include <algorithm>
#include <cmath>
#include <limits>

#include "gpu/models/mast3r/mast3r_forward.h"
#include "gpu/models/mast3r/mast3r_layers.h"
#include "gpu/ops/elementwise_basic.h"
#include "gpu/ops/layout.h"
#include "gpu/ops/unary.h"

namespace recon::gpu {

Status Mast3rForward::build_heads(int v) {
  View& view = views_[v];
  const DType hd = w_.head_dtype();
  // Hooked entries [enc_out, dec[h1], dec[h2], dec_final] as tokens of the head dtype; the local
  // features read the first and the last.
  const auto hooks = w_.config().dpt_hooks();
  RECON_ASSIGN_OR_RETURN(const Tensor enc, as_dtype(view.enc_in, hd));
  RECON_ASSIGN_OR_RETURN(const Tensor dec_final, as_dtype(view.dec_final, hd));
  if (v == 0 || shape_.view2_points) {
    RECON_ASSIGN_OR_RETURN(const Tensor hook1, as_dtype(view.dec[hooks[1]], hd));
    RECON_ASSIGN_OR_RETURN(const Tensor hook2, as_dtype(view.dec[hooks[2]], hd));
    const Tensor* entries[4] = {&enc, &hook1, &hook2, &dec_final};
    RECON_RETURN_IF_ERROR(build_dpt(v, entries));
  }
  return build_local_features(v, enc, dec_final);
}

Status Mast3rForward::build_dpt(int v, std::span<const Tensor* const, 4> head_tokens) {
  const Mast3rConfig& c = w_.config();
  const Capabilities& caps = rt_.caps();
  const int64_t B = shape_.batch, p = c.patch_size;
  View& view = views_[v];
  const int64_t h = view.h, w = view.w;
  const std::string dp = "downstream_head" + std::to_string(v + 1) + ".dpt.";
  const std::string sfx = "_" + std::to_string(v + 1);
  auto W = [&](const std::string& name) -> const Tensor& { return w_.at(name); };
  auto Conv = [&](const std::string& name) { return w_.conv(name); };
  using mast3r::Act;
  const DType hd = w_.head_dtype();

  // Reassemble (act_postprocess) and project to the feature width (layerN_rn).
  const auto& dims = c.dpt_layer_dims;
  const int64_t F = c.dpt_feature_dim;
  std::array<Tensor, 4> rn;
  for (int i = 0; i < 4; ++i) {
    const int64_t cin = head_tokens[i]->shape()[2];
    RECON_ASSIGN_OR_RETURN(Tensor map, alloc(hd, {B, cin, h, w}));
    RECON_RETURN_IF_ERROR(ops::tokens_to_nchw(*graph_, *head_tokens[i], map));
    const std::string ap = dp + "act_postprocess." + std::to_string(i) + ".";
    RECON_ASSIGN_OR_RETURN(Tensor proj, alloc(hd, {B, dims[i], h, w}));
    RECON_RETURN_IF_ERROR(mast3r::conv2d(*graph_, caps, map, Conv(ap + "0.weight"), &W(ap + "0.bias"), proj, 1, 0));
    Tensor act = proj;
    if (i == 0 || i == 1) {
      const int k = i == 0 ? 4 : 2;
      RECON_ASSIGN_OR_RETURN(act, alloc(hd, {B, dims[i], h * k, w * k}));
      RECON_RETURN_IF_ERROR(mast3r::conv_transpose2d(*graph_, caps, proj, W(ap + "1.weight"), &W(ap + "1.bias"), act, k,
                                                     w_.gemm_path(ap + "1.weight")));
    } else if (i == 3) {
      RECON_ASSIGN_OR_RETURN(act, alloc(hd, {B, dims[i], (h + 1) / 2, (w + 1) / 2}));
      RECON_RETURN_IF_ERROR(mast3r::conv2d(*graph_, caps, proj, Conv(ap + "1.weight"), &W(ap + "1.bias"), act, 2, 1));
    }
    taps_.emplace_back("dpt_act" + std::to_string(i) + sfx, act);
    RECON_ASSIGN_OR_RETURN(rn[i],
                           alloc(hd, {B, F, act.shape()[2], act.shape()[3]}, "dpt_rn" + std::to_string(i) + sfx));
    RECON_RETURN_IF_ERROR(mast3r::conv2d(
        *graph_, caps, act, Conv(dp + "scratch.layer" + std::to_string(i + 1) + "_rn.weight"), nullptr, rn[i], 1, 1));
  }

  // ResidualConvUnit: x + conv2(relu(conv1(relu(x)))); the skip uses the un-ReLU'd x.
  auto rcu = [&](const std::string& prefix, const Tensor& x, const Tensor& out) -> Status {
    RECON_ASSIGN_OR_RETURN(Tensor mid, alloc(hd, x.shape()));
    RECON_RETURN_IF_ERROR(mast3r::conv2d(*graph_, caps, x, Conv(prefix + "conv1.weight"), &W(prefix + "conv1.bias"),
                                         mid, 1, 1, Act::kRelu, nullptr, /*input_relu=*/true));
    const Arg skip = x;
    return mast3r::conv2d(*graph_, caps, mid, Conv(prefix + "conv2.weight"), &W(prefix + "conv2.bias"), out, 1, 1,
                          Act::kNone, &skip);
  };
  // Fusion block: s = a (+ RCU1(b)); s = RCU2(s); s = up×2(s); out_conv(s).
  auto fusion = [&](int index, const Tensor& a, const Tensor* b) -> Result<Tensor> {
    const std::string prefix = dp + "scratch.refinenet" + std::to_string(index) + ".";
    Tensor sum = a;
    if (b != nullptr) {
      RECON_ASSIGN_OR_RETURN(sum, alloc(hd, a.shape()));
      RECON_ASSIGN_OR_RETURN(Tensor r1, alloc(hd, b->shape()));
      RECON_RETURN_IF_ERROR(rcu(prefix + "resConfUnit1.", *b, r1));
      RECON_RETURN_IF_ERROR(ops::add(*graph_, a, r1, sum));
    }
    RECON_ASSIGN_OR_RETURN(Tensor r2, alloc(hd, sum.shape()));
    RECON_RETURN_IF_ERROR(rcu(prefix + "resConfUnit2.", sum, r2));
    const Shape& s = r2.shape();
    RECON_ASSIGN_OR_RETURN(Tensor up, alloc(hd, {s[0], s[1], s[2] * 2, s[3] * 2}));
    RECON_RETURN_IF_ERROR(mast3r::upsample2x(*graph_, r2, up));
    RECON_ASSIGN_OR_RETURN(Tensor out, alloc(hd, up.shape()));
    RECON_RETURN_IF_ERROR(
        mast3r::conv2d(*graph_, caps, up, Conv(prefix + "out_conv.weight"), &W(prefix + "out_conv.bias"), out, 1, 0));
    return out;
  };

  RECON_ASSIGN_OR_RETURN(Tensor path4_full, fusion(4, rn[3], nullptr));
  // Crop to layer 3's grid: matters when h or w is odd (spec §5.1).
  Tensor path4 = path4_full;
  if (path4_full.shape()[2] != h || path4_full.shape()[3] != w) {
    RECON_ASSIGN_OR_RETURN(path4, alloc(hd, {B, F, h, w}));
    RECON_RETURN_IF_ERROR(ops::slice(*graph_, path4_full, path4, {{}, {}, {0, h, 1}, {0, w, 1}}));
  }
  taps_.emplace_back("dpt_refinenet4" + sfx, path4);
  RECON_ASSIGN_OR_RETURN(Tensor path3, fusion(3, path4, &rn[2]));
  taps_.emplace_back("dpt_refinenet3" + sfx, path3);
  RECON_ASSIGN_OR_RETURN(Tensor path2, fusion(2, path3, &rn[1]));
  taps_.emplace_back("dpt_refinenet2" + sfx, path2);
  RECON_ASSIGN_OR_RETURN(Tensor path1, fusion(1, path2, &rn[0]));
  taps_.emplace_back("dpt_refinenet1" + sfx, path1);

  // dpt.head: conv3×3 F→F/2, up×2, conv3×3 F/2→last + ReLU, conv1×1 → 4 channels at full
  // resolution. (In the released model F/2 = last = 128; the tiny test configs tell them apart.)
  const int64_t half = F / 2, last = c.dpt_last_dim, H = h * p, Wd = w * p;
  const Shape& s1 = path1.shape();
  RECON_ASSIGN_OR_RETURN(Tensor h0, alloc(hd, {B, half, s1[2], s1[3]}));
  RECON_RETURN_IF_ERROR(
      mast3r::conv2d(*graph_, caps, path1, Conv(dp + "head.0.weight"), &W(dp + "head.0.bias"), h0, 1, 1));
  RECON_ASSIGN_OR_RETURN(Tensor h1, alloc(hd, {B, half, H, Wd}));
  RECON_RETURN_IF_ERROR(mast3r::upsample2x(*graph_, h0, h1));
  RECON_ASSIGN_OR_RETURN(Tensor h2, alloc(hd, {B, last, H, Wd}));
  RECON_RETURN_IF_ERROR(
      mast3r::conv2d(*graph_, caps, h1, Conv(dp + "head.2.weight"), &W(dp + "head.2.bias"), h2, 1, 1, Act::kRelu));
  RECON_ASSIGN_OR_RETURN(Tensor dpt_out, alloc(hd, {B, 4, H, Wd}, "dpt_out" + sfx));
  RECON_RETURN_IF_ERROR(
      mast3r::conv2d(*graph_, caps, h2, Conv(dp + "head.4.weight"), &W(dp + "head.4.bias"), dpt_out, 1, 0));
  view.dpt_raw = dpt_out;
  return Status::ok();
}

// Local features: concat(enc 1024, dec 768) → fc1 GELU → fc2; the output activations read the
// tokens in the pixel shuffle's order.
Status Mast3rForward::build_local_features(int v, const Tensor& enc, const Tensor& dec_final) {
  const Mast3rConfig& c = w_.config();
  const Capabilities& caps = rt_.caps();
  const int64_t B = shape_.batch, p = c.patch_size;
  View& view = views_[v];
  const std::string hp = "downstream_head" + std::to_string(v + 1) + ".";
  const std::string sfx = "_" + std::to_string(v + 1);
  const DType hd = w_.head_dtype();
  auto W = [&](const std::string& name) -> const Tensor& { return w_.at(name); };
  using mast3r::Act;

  const int64_t in = c.local_mlp_in(), hid = c.local_mlp_hidden(), outc = c.local_mlp_out();
  RECON_ASSIGN_OR_RETURN(Tensor cat, alloc(hd, {B, view.n, in}));
  RECON_RETURN_IF_ERROR(ops::concat(*graph_, {Arg(enc), Arg(dec_final)}, 2, cat));
  RECON_ASSIGN_OR_RETURN(Tensor mid, alloc(hd, {B, view.n, hid}));
  const std::string lp = hp + "head_local_features.";
  RECON_RETURN_IF_ERROR(
      mast3r::linear(*graph_, caps, cat, w_.linear(lp + "fc1.weight"), &W(lp + "fc1.bias"), mid, Act::kGelu));
  if (outc != (c.desc_dim() + 1) * p * p) {
    return unimplemented("local features of " + std::to_string(outc) + " channels per token (desc_dim + 1 per pixel)");
  }
  RECON_ASSIGN_OR_RETURN(view.local_tokens, alloc(hd, {B, view.n, outc}, "local_mlp" + sfx));
  return mast3r::linear(*graph_, caps, mid, w_.linear(lp + "fc2.weight"), &W(lp + "fc2.bias"), view.local_tokens);
}

namespace {
struct PostprocessPush {
  uint32_t batch, grid_h, grid_w;
  uint32_t depth_mode, conf_kind, dconf_kind;
  float conf_vmin, conf_vmax, dconf_vmin, dconf_vmax;
};
static_assert(sizeof(PostprocessPush) == 40, "mirrors Push in shaders/mast3r_postprocess.comp");

Result<uint32_t> conf_kind(const ActivationMode& m) {
  if (m.mode == "exp") return 0u;
  if (m.mode == "sigmoid") return 1u;
  return unimplemented("confidence mode " + m.mode);
}
}  // namespace

void Mast3rForward::add_output_slots() {
  const Mast3rConfig& c = w_.config();
  const int64_t B = shape_.batch, D = c.desc_dim();
  for (size_t i = 0; i < Mast3rOutputs::kNames.size(); ++i) {
    const View& view = views_[i % 2];  // the names alternate between the views
    const bool points = i < 4;         // pts3d and conf come from the DPT
    if (points && !view.dpt_raw.defined()) continue;
    const int64_t H = view.h * c.patch_size, W = view.w * c.patch_size;
    Shape shape = i < 2 ? Shape{B, H, W, 3} : i >= 4 && i < 6 ? Shape{B, H, W, D} : Shape{B, H, W};
    output_slots_[i] = output_graph_->add_slot(Mast3rOutputs::kNames[i], DType::kF32, std::move(shape));
  }
}

Status Mast3rForward::build_postprocess(int v) {
  const Mast3rConfig& c = w_.config();
  View& view = views_[v];
  const int64_t B = shape_.batch, P = c.patch_size, D = c.desc_dim();
  const Capabilities& caps = rt_.caps();
  const uint64_t group = static_cast<uint64_t>(P * P);  // a workgroup per token, an invocation per pixel
  if (group > caps.max_workgroup_invocations || group > caps.max_workgroup_size[0]) {
    return unimplemented("output activations for patches of " + std::to_string(P) + "×" + std::to_string(P) +
                         " pixels: beyond the device's workgroup size");
  }
  PostprocessPush push{};
  push.batch = static_cast<uint32_t>(B);
  push.grid_h = static_cast<uint32_t>(view.h);
  push.grid_w = static_cast<uint32_t>(view.w);
  const std::string& dm = c.depth_mode.mode;
  if (dm == "linear")
    push.depth_mode = 0;
  else if (dm == "square")
    push.depth_mode = 1;
  else if (dm == "exp")
    push.depth_mode = 2;
  else
    return unimplemented("depth mode " + dm);
  RECON_ASSIGN_OR_RETURN(push.conf_kind, conf_kind(c.conf_mode));
  RECON_ASSIGN_OR_RETURN(push.dconf_kind, conf_kind(c.desc_conf_mode));
  push.conf_vmin = static_cast<float>(c.conf_mode.vmin);
  push.conf_vmax = static_cast<float>(c.conf_mode.vmax);
  push.dconf_vmin = static_cast<float>(c.desc_conf_mode.vmin);
  push.dconf_vmax = static_cast<float>(c.desc_conf_mode.vmax);
  // The shader stages CHUNK channels of P² + 1 floats (a token's pixels and a skew) in shared memory.
  const uint64_t fit = caps.max_compute_shared_memory / ((group + 1) * sizeof(float));
  if (fit < 3) return unimplemented("output activations: a token's pts3d do not fit the device's shared memory");
  const uint32_t spec[] = {static_cast<uint32_t>(std::min<uint64_t>(std::max<int64_t>(D, 3), fit)),
                           static_cast<uint32_t>(group), static_cast<uint32_t>(P), static_cast<uint32_t>(D)};
  const bool f16 = w_.head_dtype() == DType::kF16;
  const auto groups = Graph::grid_1d(static_cast<uint64_t>(B * view.n));
  // Slots in Mast3rOutputs::kNames order: pts3d, conf, desc, desc_conf, alternating views.
  if (!view.dpt_raw.defined()) {
    return output_graph_->dispatch(f16 ? "mast3r_postprocess_desc_f16" : "mast3r_postprocess_desc_f32", spec,
                                   {{view.local_tokens, Access::kRead},
                                    {*output_slots_[4 + v], Access::kWrite},
                                    {*output_slots_[6 + v], Access::kWrite}},
                                   push, groups);
  }
  return output_graph_->dispatch(f16 ? "mast3r_postprocess_f16" : "mast3r_postprocess_f32", spec,
                                 {{view.dpt_raw, Access::kRead},
                                  {view.local_tokens, Access::kRead},
                                  {*output_slots_[0 + v], Access::kWrite},
                                  {*output_slots_[2 + v], Access::kWrite},
                                  {*output_slots_[4 + v], Access::kWrite},
                                  {*output_slots_[6 + v], Access::kWrite}},
                                 push, groups);
}

}  // namespace recon::gpu
