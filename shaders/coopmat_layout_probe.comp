#version 450
// Reveals how a 16×16 fp32 NV cooperative matrix spreads over the lanes (gpu/coopmat_layout.h):
// one subgroup loads the matrix whose element (r, c) is r·16 + c and writes lane l's element i to
// out[l·length + i], then the length itself to out[256].
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_NV_cooperative_matrix : require
layout(constant_id = 0) const uint SG = 32;  // the device's subgroup size
layout(local_size_x_id = 0) in;
layout(binding = 0) writeonly buffer Out { float out_data[]; };
shared float index_s[256];
void main() {
  const uint lane = gl_SubgroupInvocationID;
  for (uint i = lane; i < 256; i += SG) index_s[i] = float(i);
  barrier();
  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> m;
  coopMatLoadNV(m, index_s, 0, 16, false);
  const uint n = uint(m.length());
  for (uint i = 0; i < n; ++i) {
    if (lane * n + i < 256) out_data[lane * n + i] = m[i];
  }
  if (lane == 0) out_data[256] = float(n);
}
