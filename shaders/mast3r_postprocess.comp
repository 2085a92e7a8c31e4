#version 450
// MASt3R's output activations (spec §5.3), per pixel, from the two head maps to the four outputs:
//   dpt   [B, 4, H, W]    raw xyz + raw conf (channel-major, fp32)
//   local [B, D+1, H, W]  raw descriptor + raw desc_conf (channel-major, fp32)
// → pts3d [B,H,W,3], conf [B,H,W], desc [B,H,W,D] (L2-normalised, no epsilon), desc_conf [B,H,W].
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer Dpt { float dpt[]; };
layout(binding = 1) readonly buffer Local { float local_map[]; };
layout(binding = 2) writeonly buffer Pts { float pts[]; };
layout(binding = 3) writeonly buffer Conf { float conf[]; };
layout(binding = 4) writeonly buffer Desc { float desc[]; };
layout(binding = 5) writeonly buffer DescConf { float desc_conf[]; };
layout(push_constant) uniform Push {
  uint batch, height, width, desc_dim;
  uint depth_mode;           // 0 linear, 1 square, 2 exp
  uint conf_kind, dconf_kind;  // 0 exp, 1 sigmoid
  float conf_vmin, conf_vmax, dconf_vmin, dconf_vmax;
} p;

float dense_conf(float x, uint kind, float vmin, float vmax) {
  if (kind == 1u) return (vmax - vmin) / (1.0 + exp(-x)) + vmin;
  return vmin + min(exp(x), vmax - vmin);
}

void main() {
  uint pix = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256u;
  uint hw = p.height * p.width;
  if (pix >= p.batch * hw) return;
  uint b = pix / hw, s = pix % hw;
  uint dpt_base = b * 4u * hw + s;
  vec3 r = vec3(dpt[dpt_base], dpt[dpt_base + hw], dpt[dpt_base + 2u * hw]);
  vec3 xyz = r;
  if (p.depth_mode != 0u) {
    float d = length(r);
    vec3 dir = r / max(d, 1e-8);
    // expm1 without cancellation near 0: exp(d) - 1 loses digits for small d.
    float scale = p.depth_mode == 1u ? d * d : (abs(d) < 1e-3 ? d + 0.5 * d * d + d * d * d / 6.0 : exp(d) - 1.0);
    xyz = dir * scale;
  }
  pts[pix * 3u] = xyz.x;
  pts[pix * 3u + 1u] = xyz.y;
  pts[pix * 3u + 2u] = xyz.z;
  conf[pix] = dense_conf(dpt[dpt_base + 3u * hw], p.conf_kind, p.conf_vmin, p.conf_vmax);

  uint local_base = b * (p.desc_dim + 1u) * hw + s;
  float sq = 0.0;
  for (uint c = 0u; c < p.desc_dim; ++c) {
    float v = local_map[local_base + c * hw];
    sq += v * v;
  }
  float inv = 1.0 / sqrt(sq);
  for (uint c = 0u; c < p.desc_dim; ++c) desc[pix * p.desc_dim + c] = local_map[local_base + c * hw] * inv;
  desc_conf[pix] = dense_conf(local_map[local_base + p.desc_dim * hw], p.dconf_kind, p.dconf_vmin, p.dconf_vmax);
}
