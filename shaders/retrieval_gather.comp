#version 450
// Gathers the selected tokens' features: out[b, r, :] = feat[b, idx[b, r], :]. One workgroup per
// output row, coalesced over the feature axis. feat is this chunk's; idx and out are bound whole and
// this chunk's rows start at image image0.
layout(constant_id = 0) const uint WG = 128;
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer Feat { float feat[]; };  // [B, N, C]
layout(binding = 1) readonly buffer Idx { int idx[]; };      // [image0 + B, K]
layout(binding = 2) writeonly buffer Out { float out_feat[]; };  // [image0 + B, K, C]

// Mirrored by GatherPush in gpu/models/retrieval/retrieval_kernels.cpp. Grid: x = K, y = images.
layout(push_constant) uniform Push { uint tokens, keep, cols, image0; } p;

void main() {
  const uint b = gl_WorkGroupID.y, r = gl_WorkGroupID.x;
  const uint row = (p.image0 + b) * p.keep + r;
  // Clamped: a NaN attention row leaves rank slots unwritten (retrieval_select.comp); reads stay in bounds.
  const uint src = (b * p.tokens + min(uint(idx[row]), p.tokens - 1)) * p.cols;
  const uint dst = row * p.cols;
  for (uint c = gl_LocalInvocationID.x; c < p.cols; c += WG) out_feat[dst + c] = feat[src + c];
}
