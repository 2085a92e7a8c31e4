#version 450
// MASt3R's output activations (spec §5.3), per pixel, from the two head maps to the four outputs:
//   dpt   [B, 4, H, W]    raw xyz + raw conf (channel-major, fp32)
//   local [B, D+1, H, W]  raw descriptor + raw desc_conf (channel-major, fp32)
// → pts3d [B,H,W,3], conf [B,H,W], desc [B,H,W,D] (L2-normalised, no epsilon), desc_conf [B,H,W].
#extension GL_EXT_control_flow_attributes : require
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

// A workgroup takes GROUP consecutive pixels. Their interleaved outputs (pts3d's 3 and desc's D
// values per pixel) are staged channel-major in shared memory and written as one contiguous block,
// so that consecutive invocations store consecutive floats: with a pixel per invocation storing its
// own D values (D floats apart from its neighbour's), the kernel ran at ~0.55 TB/s on an H200.
// CHUNK (at least 3) channels are staged at a time: the host sets it to the descriptor's size where
// the device's shared memory holds that many.
layout(constant_id = 0) const uint CHUNK = 24;
const uint GROUP = 256;
const uint STAGE_STRIDE = GROUP + 1;  // one float of skew: channel c of pixel q is bank (c + q) % 32
shared float stage[CHUNK * STAGE_STRIDE];

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint first = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * GROUP;
  const uint hw = p.height * p.width, total = p.batch * hw;
  if (first >= total) return;  // uniform over the workgroup
  const uint count = min(GROUP, total - first), pix = first + tid;
  const bool valid = tid < count;
  const uint b = pix / hw, s = pix % hw;

  if (valid) {
    const uint dpt_base = b * 4u * hw + s;
    const vec3 r = vec3(dpt[dpt_base], dpt[dpt_base + hw], dpt[dpt_base + 2u * hw]);
    vec3 xyz = r;
    if (p.depth_mode != 0u) {
      const float d = length(r);
      const vec3 dir = r / max(d, 1e-8);
      // expm1 without cancellation near 0: exp(d) - 1 loses digits for small d.
      const float scale =
          p.depth_mode == 1u ? d * d : (abs(d) < 1e-3 ? d + 0.5 * d * d + d * d * d / 6.0 : exp(d) - 1.0);
      xyz = dir * scale;
    }
    [[unroll]] for (uint c = 0u; c < 3u; ++c) stage[c * STAGE_STRIDE + tid] = xyz[c];
    conf[pix] = dense_conf(dpt[dpt_base + 3u * hw], p.conf_kind, p.conf_vmin, p.conf_vmax);
  }
  barrier();
  for (uint e = tid; e < 3u * count; e += GROUP) pts[first * 3u + e] = stage[(e % 3u) * STAGE_STRIDE + e / 3u];

  const uint local_base = b * (p.desc_dim + 1u) * hw + s;
  float sq = 0.0;
  if (valid) {
    for (uint c = 0u; c < p.desc_dim; ++c) {
      const float v = local_map[local_base + c * hw];
      sq += v * v;
    }
    desc_conf[pix] = dense_conf(local_map[local_base + p.desc_dim * hw], p.dconf_kind, p.dconf_vmin, p.dconf_vmax);
  }
  const float inv = 1.0 / sqrt(sq);
  for (uint c0 = 0u; c0 < p.desc_dim; c0 += CHUNK) {
    const uint channels = min(CHUNK, p.desc_dim - c0);
    barrier();  // the previous block's stores have read `stage`
    if (valid) {
      for (uint c = 0u; c < channels; ++c) stage[c * STAGE_STRIDE + tid] = local_map[local_base + (c0 + c) * hw] * inv;
    }
    barrier();
    for (uint e = tid; e < channels * count; e += GROUP) {
      const uint q = e / channels, c = e - q * channels;
      desc[(first + q) * p.desc_dim + c0 + c] = stage[c * STAGE_STRIDE + q];
    }
  }
}
