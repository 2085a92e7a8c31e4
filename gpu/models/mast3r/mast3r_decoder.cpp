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
    RECON_RETURN_IF_ERROR(mast3r::linear(*graph_, caps, view.enc_in, w_.at("decoder_embed.weight"),
                                         &w_.at("decoder_embed.bias"), view.dec[0]));
  }

  for (int64_t l = 1; l <= c.dec_depth; ++l) {
    for (int v = 0; v < 2; ++v) {
      const View& me = views_[v];
      const View& other = views_[1 - v];
      Scratch& x = s[v];
      const std::string b = std::string(v == 0 ? "dec_blocks." : "dec_blocks2.") + std::to_string(l - 1) + ".";
      const Tensor& in = me.dec[l - 1];
      const Tensor& out = me.dec[l];
      const ops::RopeGrid my_grid{me.h, me.w}, other_grid{other.h, other.w};
      // x = x + SelfAttn(LN1(x))
      RECON_RETURN_IF_ERROR(ops::layer_norm(*graph_, in, A(b + "norm1.weight"), A(b + "norm1.bias"), x.t, eps));
      RECON_RETURN_IF_ERROR(
          mast3r::linear(*graph_, caps, x.t, w_.at(b + "attn.qkv.weight"), &w_.at(b + "attn.qkv.bias"), x.qkv));
      RECON_RETURN_IF_ERROR(ops::self_attention_rope(*graph_, caps, x.qkv, x.att, my_grid, attn));
      const Arg in_arg = in, out_arg = out;
      RECON_RETURN_IF_ERROR(mast3r::linear(*graph_, caps, x.att, w_.at(b + "attn.proj.weight"),
                                           &w_.at(b + "attn.proj.bias"), out, mast3r::Act::kNone, &in_arg));
      // x = x + CrossAttn(LN2(x), LN_y(y)), y = the other view's previous-layer tokens.
      RECON_RETURN_IF_ERROR(
          ops::layer_norm(*graph_, other.dec[l - 1], A(b + "norm_y.weight"), A(b + "norm_y.bias"), x.y, eps));
      RECON_RETURN_IF_ERROR(ops::layer_norm(*graph_, out, A(b + "norm2.weight"), A(b + "norm2.bias"), x.t, eps));
      RECON_RETURN_IF_ERROR(mast3r::linear(*graph_, caps, x.t, w_.at(b + "cross_attn.projq.weight"),
                                           &w_.at(b + "cross_attn.projq.bias"), x.q));
      RECON_RETURN_IF_ERROR(mast3r::linear(*graph_, caps, x.y, w_.at(b + "cross_attn.projk.weight"),
                                           &w_.at(b + "cross_attn.projk.bias"), x.k));
      RECON_RETURN_IF_ERROR(mast3r::linear(*graph_, caps, x.y, w_.at(b + "cross_attn.projv.weight"),
                                           &w_.at(b + "cross_attn.projv.bias"), x.v));
      RECON_RETURN_IF_ERROR(ops::cross_attention_rope(*graph_, caps, x.q, x.k, x.v, x.att, my_grid, other_grid, attn));
      RECON_RETURN_IF_ERROR(mast3r::linear(*graph_, caps, x.att, w_.at(b + "cross_attn.proj.weight"),
                                           &w_.at(b + "cross_attn.proj.bias"), out, mast3r::Act::kNone, &out_arg));
      // x = x + MLP(LN3(x))
      RECON_RETURN_IF_ERROR(ops::layer_norm(*graph_, out, A(b + "norm3.weight"), A(b + "norm3.bias"), x.t, eps));
      RECON_RETURN_IF_ERROR(mast3r::linear(*graph_, caps, x.t, w_.at(b + "mlp.fc1.weight"), &w_.at(b + "mlp.fc1.bias"),
                                           x.hid, mast3r::Act::kGelu));
      RECON_RETURN_IF_ERROR(mast3r::linear(*graph_, caps, x.hid, w_.at(b + "mlp.fc2.weight"),
                                           &w_.at(b + "mlp.fc2.bias"), out, mast3r::Act::kNone, &out_arg));
    }
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
