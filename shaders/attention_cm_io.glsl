// The operands of the tensor-core attention kernels (attention_cm.comp, attention_cm_rows.comp)
// and their K/V tile fetch. The includer defines DV (uvec4 per head row), TILE_VECS (uvec4 per
// tile), VPT (uvec4 per invocation) and WG before the #include.
// uvec4 views: 8 fp16 values per element. Rows of q/k/v/out are 16-byte aligned (host-checked).
layout(binding = 0) readonly buffer Q { uvec4 q[]; };
layout(binding = 1) readonly buffer K { uvec4 k[]; };
layout(binding = 2) readonly buffer V { uvec4 v[]; };
layout(binding = 3) writeonly buffer O { uvec4 o[]; };

layout(push_constant) uniform Push {
  uint nq, nk;
  uint q_stride, q_col;  // in fp16 elements, multiples of 8
  uint k_stride, k_col;
  uint v_stride, v_col;
  uint o_stride;
  float scale_log2e;
} p;

// The next key tile's K and V rows (keys past nk are zero), held in registers while the current
// tile is multiplied, then written to shared memory.
uvec4 k_regs[VPT];
uvec4 v_regs[VPT];

void fetch_tile(uint k0, uint k_base, uint v_base) {
  [[unroll]] for (uint u = 0; u < VPT; ++u) {
    const uint idx = gl_LocalInvocationID.x + u * WG;
    const uint c = idx / DV, cv = idx % DV;
    const bool valid = idx < TILE_VECS && k0 + c < p.nk;
    k_regs[u] = valid ? k[k_base + (k0 + c) * (p.k_stride / 8) + cv] : uvec4(0);
    v_regs[u] = valid ? v[v_base + (k0 + c) * (p.v_stride / 8) + cv] : uvec4(0);
  }
}
