#version 450
// Shader copy of n words (uvec4 per invocation when VEC4=1). Faster than vkCmdCopyBuffer for
// large device-to-device moves on NVIDIA (vulkan-anchors §0).
layout(local_size_x = 256) in;
#if VEC4
#define WORD uvec4
#else
#define WORD uint
#endif
layout(binding = 0) readonly buffer Src { WORD src[]; };
layout(binding = 1) writeonly buffer Dst { WORD dst[]; };
layout(push_constant) uniform Push { uint n; } p;
void main() {
  uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256;
  if (i < p.n) dst[i] = src[i];
}
