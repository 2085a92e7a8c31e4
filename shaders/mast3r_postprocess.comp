#version 450
// MASt3R's output activations (spec §5.3), per pixel, straight from the two heads' raw outputs:
//   dpt    [B, 4, H, W]              raw xyz + raw conf (the DPT, channel-major)
//   tokens [B, h·w, (D+1)·P·P]       the local-feature MLP's output before its pixel shuffle: pixel
//                                    (ty·P + dy, tx·P + dx), channel c is token ty·w + tx, feature
//                                    c·P² + dy·P + dx (spec §5.2)
// in the heads' storage dtype (STORE_T: fp16 or fp32), → fp32 pts3d [B,H,W,3], conf [B,H,W],
// desc [B,H,W,D] (L2-normalised, no epsilon), desc_conf [B,H,W].
// A workgroup takes one token's P×P pixels, an invocation one pixel: the token's features are one
// contiguous block, read once at the heads' precision, where the separate pixel shuffle and fp32
// casts before this kernel moved them three more times.
// POINTS=0 builds the variant for a view whose DPT head did not run (a graph without view 2's
// points): only tokens, desc and desc_conf are bound, at bindings 0-2.
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
layout(local_size_x_id = 1) in;
#if POINTS
layout(binding = 0) readonly buffer Dpt { STORE_T dpt[]; };
layout(binding = 1) readonly buffer Tokens { STORE_T tokens[]; };
layout(binding = 2) writeonly buffer Pts { float pts[]; };
layout(binding = 3) writeonly buffer Conf { float conf[]; };
layout(binding = 4) writeonly buffer Desc { float desc[]; };
layout(binding = 5) writeonly buffer DescConf { float desc_conf[]; };
#else
layout(binding = 0) readonly buffer Tokens { STORE_T tokens[]; };
layout(binding = 1) writeonly buffer Desc { float desc[]; };
layout(binding = 2) writeonly buffer DescConf { float desc_conf[]; };
#endif
layout(push_constant) uniform Push {
  uint batch, grid_h, grid_w;  // grid_h × grid_w tokens per image
  uint depth_mode;                       // 0 linear, 1 square, 2 exp
  uint conf_kind, dconf_kind;            // 0 exp, 1 sigmoid
  float conf_vmin, conf_vmax, dconf_vmin, dconf_vmax;
} p;

float dense_conf(float x, uint kind, float vmin, float vmax) {
  if (kind == 1u) return (vmax - vmin) / (1.0 + exp(-x)) + vmin;
  return vmin + min(exp(x), vmax - vmin);
}

// The interleaved outputs (pts3d's 3 and desc's D values per pixel) are staged channel-major in
// shared memory and written row by row of the token as contiguous blocks, so that consecutive
// invocations store consecutive floats: with a pixel per invocation storing its own D values (D
// floats apart from its neighbour's) the kernel ran at ~0.55 TB/s on an H200. CHUNK (at least 3)
// channels are staged at a time: the host sets it to the descriptor's size where the device's
// shared memory holds that many.
layout(constant_id = 0) const uint CHUNK = 24;
layout(constant_id = 1) const uint GROUP = 256;  // P², the pixels of a token
layout(constant_id = 2) const uint P = 16;       // the patch size
// The descriptor's size, a constant so that an invocation's loads of its D + 1 features unroll and
// are in flight together: over a loop to a push-constant bound each load waited for the one
// before (both views' activations took 0.79 ms per call of 8 pairs on an H200, ~0.6 TB/s).
layout(constant_id = 3) const uint D = 24;
const uint STAGE_STRIDE = GROUP + 1;             // one float of skew: channel c of pixel q is bank (c + q) % 32
shared float stage[CHUNK * STAGE_STRIDE];

void main() {
  const uint q = gl_LocalInvocationID.x;  // pixel (dy, dx) of the token
  const uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  const uint n = p.grid_h * p.grid_w;
  if (wg >= p.batch * n) return;  // uniform over the workgroup
  const uint b = wg / n, token = wg % n;
  const uint ty = token / p.grid_w, tx = token % p.grid_w;
  const uint H = p.grid_h * P, W = p.grid_w * P, hw = H * W;
  const uint y = ty * P + q / P, x = tx * P + q % P;
  // The image's pixel index of the token's row r, column 0.
  const uint row0 = ty * P * W + tx * P;

#if POINTS
  const uint dpt_base = b * 4u * hw + y * W + x;
  const vec3 r = vec3(float(dpt[dpt_base]), float(dpt[dpt_base + hw]), float(dpt[dpt_base + 2u * hw]));
  vec3 xyz = r;
  if (p.depth_mode != 0u) {
    const float d = length(r);
    const vec3 dir = r / max(d, 1e-8);
    // expm1 without cancellation near 0: exp(d) - 1 loses digits for small d.
    const float scale = p.depth_mode == 1u ? d * d : (abs(d) < 1e-3 ? d + 0.5 * d * d + d * d * d / 6.0 : exp(d) - 1.0);
    xyz = dir * scale;
  }
  [[unroll]] for (uint c = 0u; c < 3u; ++c) stage[c * STAGE_STRIDE + q] = xyz[c];
  conf[b * hw + y * W + x] = dense_conf(float(dpt[dpt_base + 3u * hw]), p.conf_kind, p.conf_vmin, p.conf_vmax);
  barrier();
  // Row r of the token holds P pixels × 3 floats, contiguous in pts3d.
  for (uint e = q; e < 3u * GROUP; e += GROUP) {
    const uint row = e / (3u * P), within = e % (3u * P);
    pts[(b * hw + row0 + row * W) * 3u + within] = stage[(within % 3u) * STAGE_STRIDE + row * P + within / 3u];
  }
#endif

  const uint feat = (b * n + token) * (D + 1u) * GROUP + q;  // channel c at feat + c·GROUP
  float sq = 0.0;
  [[unroll]] for (uint c = 0u; c < D; ++c) {
    const float v = float(tokens[feat + c * GROUP]);
    sq += v * v;
  }
  desc_conf[b * hw + y * W + x] =
      dense_conf(float(tokens[feat + D * GROUP]), p.dconf_kind, p.dconf_vmin, p.dconf_vmax);
  const float inv = 1.0 / sqrt(sq);
  [[unroll]] for (uint c0 = 0u; c0 < D; c0 += CHUNK) {
    const uint channels = min(CHUNK, D - c0);
    barrier();  // the previous block's stores have read `stage`
    [[unroll]] for (uint c = 0u; c < channels; ++c) {
      stage[c * STAGE_STRIDE + q] = float(tokens[feat + (c0 + c) * GROUP]) * inv;
    }
    barrier();
    // Row r of the token: P pixels × `channels` floats, each pixel's D floats apart.
    for (uint e = q; e < channels * GROUP; e += GROUP) {
      const uint pix = e / channels, c = e - pix * channels;
      const uint row = pix / P, col = pix % P;
      desc[(b * hw + row0 + row * W + col) * D + c0 + c] = stage[c * STAGE_STRIDE + pix];
    }
  }
}
