#version 450
// Shader copy of n 4-byte words, one per invocation: sizes that are not whole 16-byte words
// (ops::copy takes copy_grid.comp for those). Faster than vkCmdCopyBuffer for large
// device-to-device moves on NVIDIA (vulkan-anchors §0).
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer Src { uint src[]; };
layout(binding = 1) writeonly buffer Dst { uint dst[]; };
layout(push_constant) uniform Push { uint n; } p;
void main() {
  uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256;
  if (i < p.n) dst[i] = src[i];
}
