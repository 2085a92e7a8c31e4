// The decoder stage of Mast3rForward (spec §4): decoder_embed, then dec_depth layers in which each
// view's block self-attends, cross-attends to the other view's previous-layer tokens, and runs its
// MLP. Every layer output gets its own buffer, so both views read the previous layer without
// copies and the DPT hooks read their entries directly.
#include "gpu/models/mast3r/mast3r_forward.h"
#include "gpu/models/mast3r/mast3r_layers.h"
#include "gpu/ops/attention.h"
#include "gpu/ops/layer_norm.h"

namespace recon::gpu {

Status Mast3rForward::build_decoder() {
  const Mast3rConfig& c = w_.config();
  const DType dt = w_.trunk_dtype();
  const int64_t B = shape_.batch, D = c.dec_embed_dim;
  const Capabilities& caps = rt_.caps();
  const float eps = static_cast<float>(c.norm_eps);
  const ops::AttentionConfig attn{c.dec_num_heads, c.dec_head_dim(), 0.0f, ops::AttentionPath::kAuto};
  auto A = [&](const std::string& name) -> std::optional<Arg> { return Arg(w_.at(name)); };

  // Per-view scratch, reused by every layer.
  struct Scratch {
    Tensor t, qkv, att, y, q, k, v, hid;
  };
  std::array<Scratch, 2> s;
  for (int v = 0; v < 2; ++v) {
    View& view = views_[v];
    const int64_t n = view.n, n_other = views_[1 - v].n;
    RECON_ASSIGN_OR_RETURN(s[v].t, alloc(dt, {B, n, D}));
    RECON_ASSIGN_OR_RETURN(s[v].qkv, alloc(dt, {B, n, 3 * D}));
    RECON_ASSIGN_OR_RETURN(s[v].att, alloc(dt, {B, n, D}));
    RECON_ASSIGN_OR_RETURN(s[v].y, alloc(dt, {B, n_other, D}));
    RECON_ASSIGN_OR_RETURN(s[v].q, alloc(dt, {B, n, D}));
    RECON_ASSIGN_OR_RETURN(s[v].k, alloc(dt, {B, n_other, D}));
    RECON_ASSIGN_OR_RETURN(s[v].v, alloc(dt, {B, n_other, D}));
    RECON_ASSIGN_OR_RETURN(s[v].hid, alloc(dt, {B, n, c.dec_mlp_hidden()}));
    view.dec.resize(c.dec_depth + 1);
    for (int64_t l = 0; l <= c.dec_depth; ++l) {
      const std::string tap = l == 0 ? "dec_embed_" + std::to_string(v + 1) : "";
      RECON_ASSIGN_OR_RETURN(view.dec[l], alloc(dt, {B, n, D}, tap));
    }
    RECON_RETURN_IF_ERROR(mast3r::linear(*graph_, caps, view.enc_in, w_.linear("decoder_embed.weight"),
                                         &w_.at("decoder_embed.bias"), view.dec[0]));
  }

  // Each step is recorded for view 1, then for view 2: the two views' dispatches of a step share
  // no data, so the graph puts no barrier between them and they run side by side. A view alone
  // fills a fraction of the GPU (768-row GEMMs, 16-head attention of one image).
  auto both = [](auto&& step) -> Status {
    for (int v = 0; v < 2; ++v) RECON_RETURN_IF_ERROR(step(v));
    return Status::ok();
  };
  for (int64_t l = 1; l <= c.dec_depth; ++l) {
    auto prefix = [l](int v) {
      return std::string(v == 0 ? "dec_blocks." : "dec_blocks2.") + std::to_string(l - 1) + ".";
    };
    auto grid = [&](int v) { return ops::RopeGrid{views_[v].h, views_[v].w}; };
    auto lin = [&](int v, const Arg& in, const std::string& name, const Tensor& out,
                   mast3r::Act act = mast3r::Act::kNone, const Arg* residual = nullptr) {
      const std::string b = prefix(v);
      return mast3r::linear(*graph_, caps, in, w_.linear(b + name + ".weight"), &w_.at(b + name + ".bias"), out, act,
                            residual);
    };
    // A projection whose first `heads` heads get RoPE on `g` (q; the q and k of a packed qkv; k).
    auto lin_rope = [&](int v, const Arg& in, const std::string& name, const Tensor& out, const ops::RopeGrid& g,
                        int64_t heads) {
      const std::string b = prefix(v);
      return mast3r::linear_rope(*graph_, caps, in, w_.linear(b + name + ".weight"), &w_.at(b + name + ".bias"), out, g,
                                 heads, attn.head_dim);
    };
    auto norm = [&](int v, const Tensor& in, const std::string& name, const Tensor& out) {
      const std::string b = prefix(v);
      return ops::layer_norm(*graph_, in, A(b + name + ".weight"), A(b + name + ".bias"), out, eps);
    };
    const Tensor* in[2] = {&views_[0].dec[l - 1], &views_[1].dec[l - 1]};
    const Tensor* out[2] = {&views_[0].dec[l], &views_[1].dec[l]};
    // x = x + SelfAttn(LN1(x)); LN_y(y) of the cross attention (y = the other view's previous-layer
    // tokens) depends only on the previous layer, so it joins the first step.
    RECON_RETURN_IF_ERROR(both([&](int v) {
      RECON_RETURN_IF_ERROR(norm(v, *in[v], "norm1", s[v].t));
      return norm(v, *in[1 - v], "norm_y", s[v].y);
    }));
    RECON_RETURN_IF_ERROR(
        both([&](int v) { return lin_rope(v, s[v].t, "attn.qkv", s[v].qkv, grid(v), 2 * attn.heads); }));
    RECON_RETURN_IF_ERROR(both([&](int v) {
      return ops::attention(*graph_, caps, {s[v].qkv, 0}, {s[v].qkv, D}, {s[v].qkv, 2 * D}, s[v].att, attn);
    }));
    RECON_RETURN_IF_ERROR(both([&](int v) {
      const Arg residual = *in[v];
      return lin(v, s[v].att, "attn.proj", *out[v], mast3r::Act::kNone, &residual);
    }));
    // x = x + CrossAttn(LN2(x), LN_y(y))
    RECON_RETURN_IF_ERROR(both([&](int v) { return norm(v, *out[v], "norm2", s[v].t); }));
    RECON_RETURN_IF_ERROR(both([&](int v) {
      RECON_RETURN_IF_ERROR(lin_rope(v, s[v].t, "cross_attn.projq", s[v].q, grid(v), attn.heads));
      RECON_RETURN_IF_ERROR(lin_rope(v, s[v].y, "cross_attn.projk", s[v].k, grid(1 - v), attn.heads));
      return lin(v, s[v].y, "cross_attn.projv", s[v].v);
    }));
    RECON_RETURN_IF_ERROR(both([&](int v) {
      return ops::attention(*graph_, caps, {s[v].q, 0}, {s[v].k, 0}, {s[v].v, 0}, s[v].att, attn);
    }));
    RECON_RETURN_IF_ERROR(both([&](int v) {
      const Arg residual = *out[v];
      return lin(v, s[v].att, "cross_attn.proj", *out[v], mast3r::Act::kNone, &residual);
    }));
    // x = x + MLP(LN3(x))
    RECON_RETURN_IF_ERROR(both([&](int v) { return norm(v, *out[v], "norm3", s[v].t); }));
    RECON_RETURN_IF_ERROR(both([&](int v) { return lin(v, s[v].t, "mlp.fc1", s[v].hid, mast3r::Act::kGelu); }));
    RECON_RETURN_IF_ERROR(both([&](int v) {
      const Arg residual = *out[v];
      return lin(v, s[v].hid, "mlp.fc2", *out[v], mast3r::Act::kNone, &residual);
    }));
  }
  for (int v = 0; v < 2; ++v) {
    View& view = views_[v];
    for (int64_t l = 1; l < c.dec_depth; ++l)
      taps_.emplace_back("dec" + std::to_string(l) + "_" + std::to_string(v + 1), view.dec[l]);
    RECON_ASSIGN_OR_RETURN(
        view.dec_final, alloc(dt, {B, view.n, D}, "dec" + std::to_string(c.dec_depth) + "_" + std::to_string(v + 1)));
    RECON_RETURN_IF_ERROR(
        ops::layer_norm(*graph_, view.dec[c.dec_depth], A("dec_norm.weight"), A("dec_norm.bias"), view.dec_final, eps));
  }
  return Status::ok();
}

}  // namespace recon::gpu
