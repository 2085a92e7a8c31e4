#version 450
// Grid-stride copy of n 16-byte words (ops::copy): a fixed grid (gpu/ops/wide_access.h,
// kGridStrideGroups) loops over the buffer, UNROLL words per invocation and pass, all loads before
// the stores. H200, 256 MiB (MemoryBench in elementwise_test): 3.7–3.8 TB/s, against 3.1 for one
// word per invocation and a workgroup per 256 words; UNROLL 1 and 4 measured alike.
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint UNROLL = 4;
layout(binding = 0) readonly buffer Src { uvec4 src[]; };
layout(binding = 1) writeonly buffer Dst { uvec4 dst[]; };
layout(push_constant) uniform Push { uint n; } p;
void main() {
  const uint step = gl_NumWorkGroups.x * 256 * UNROLL;
  for (uint base = gl_WorkGroupID.x * 256 * UNROLL + gl_LocalInvocationID.x; base < p.n; base += step) {
    uvec4 v[UNROLL];
    [[unroll]] for (uint u = 0; u < UNROLL; ++u) {
      const uint i = base + u * 256;
      v[u] = i < p.n ? src[i] : uvec4(0);
    }
    [[unroll]] for (uint u = 0; u < UNROLL; ++u) {
      const uint i = base + u * 256;
      if (i < p.n) dst[i] = v[u];
    }
  }
}
