#include "gpu/ops/pixel_shuffle.h"

#include <string>

#include "gpu/ops/layout.h"

namespace recon::gpu::ops {

Status pixel_shuffle(Graph& g, const Arg& in, const Arg& out, int64_t r) {
  const Shape& s = in.shape();
  const Shape& o = out.shape();
  if (r < 1) return invalid_argument("pixel_shuffle: upscale factor " + std::to_string(r) + " must be ≥ 1");
  if (s.size() != 4 || s[1] % (r * r) != 0) {
    return invalid_argument("pixel_shuffle: in " + shape_string(s) +
                            " must be [B, C·r², H, W] with r = " + std::to_string(r));
  }
  const int64_t b = s[0], c = s[1] / (r * r), h = s[2], w = s[3];
  if (o != Shape{b, c, h * r, w * r}) {
    return invalid_argument("pixel_shuffle: out must be " + shape_string({b, c, h * r, w * r}) + ", is " +
                            shape_string(o));
  }
  if (in.dtype() != out.dtype()) return invalid_argument("pixel_shuffle: in and out dtypes differ");
  // in [B, C, i, j, H, W] → out [B, C, H, i, W, j]
  RECON_ASSIGN_OR_RETURN(Arg in6, reshape_view(in, {b, c, r, r, h, w}));
  RECON_ASSIGN_OR_RETURN(Arg out6, reshape_view(out, {b, c, h, r, w, r}));
  return permute(g, in6, out6, {0, 1, 4, 2, 5, 3});
}

Status pixel_shuffle_tokens(Graph& g, const Arg& in, const Arg& out, int64_t r, ShuffleLayout layout) {
  const Shape& s = in.shape();
  const Shape& o = out.shape();
  if (r < 1) return invalid_argument("pixel_shuffle_tokens: upscale factor " + std::to_string(r) + " must be ≥ 1");
  const bool last = layout == ShuffleLayout::kChannelsLast;
  if (s.size() != 3 || o.size() != 4 || s[2] % (r * r) != 0) {
    return invalid_argument("pixel_shuffle_tokens: in " + shape_string(s) + " must be [B, h·w, C·r²] and out 4-D, " +
                            "got out " + shape_string(o));
  }
  const int64_t b = s[0], c = s[2] / (r * r);
  const int64_t hh = last ? o[1] : o[2], ww = last ? o[2] : o[3];
  const Shape want = last ? Shape{b, hh, ww, c} : Shape{b, c, hh, ww};
  if (o != want || hh % r != 0 || ww % r != 0 || (hh / r) * (ww / r) != s[1]) {
    return invalid_argument("pixel_shuffle_tokens: in " + shape_string(s) + " with r = " + std::to_string(r) +
                            " does not give out " + shape_string(o) + (last ? " [B, H, W, C]" : " [B, C, H, W]") +
                            " (need H·W = N·r², C·r² features)");
  }
  if (in.dtype() != out.dtype()) return invalid_argument("pixel_shuffle_tokens: in and out dtypes differ");
  const int64_t h = hh / r, w = ww / r;
  // in [B, ty, tx, c, dy, dx]
  RECON_ASSIGN_OR_RETURN(Arg in6, reshape_view(in, {b, h, w, c, r, r}));
  if (last) {  // out [B, ty, dy, tx, dx, c]
    RECON_ASSIGN_OR_RETURN(Arg out6, reshape_view(out, {b, h, r, w, r, c}));
    return permute(g, in6, out6, {0, 1, 4, 2, 5, 3});
  }
  // out [B, c, ty, dy, tx, dx]
  RECON_ASSIGN_OR_RETURN(Arg out6, reshape_view(out, {b, c, h, r, w, r}));
  return permute(g, in6, out6, {0, 3, 1, 4, 2, 5});
}

}  // namespace recon::gpu::ops
