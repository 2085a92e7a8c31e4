#version 450
// fp32 <-> fp16 conversion four elements at a time (one 16-byte fp32 word, one 8-byte fp16 pair),
// a fixed grid looping over the data (gpu/ops/wide_access.h, kGridStrideGroups). Rounds to
// nearest even as cast.comp does; the host takes this path when the count is a multiple of 4.
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 256) in;
#if SRC_F16
layout(binding = 0) readonly buffer Src { uvec2 src[]; };
layout(binding = 1) writeonly buffer Dst { uvec4 dst[]; };
#else
layout(binding = 0) readonly buffer Src { uvec4 src[]; };
layout(binding = 1) writeonly buffer Dst { uvec2 dst[]; };
#endif
layout(push_constant) uniform Push { uint quads; } p;  // elements / 4
void main() {
  const uint step = gl_NumWorkGroups.x * 256;
  for (uint i = gl_GlobalInvocationID.x; i < p.quads; i += step) {
#if SRC_F16
    const uvec2 h = src[i];
    const vec2 lo = vec2(unpackFloat2x16(h.x)), hi = vec2(unpackFloat2x16(h.y));
    dst[i] = floatBitsToUint(vec4(lo, hi));
#else
    const vec4 f = uintBitsToFloat(src[i]);
    dst[i] = uvec2(packFloat2x16(f16vec2(f.xy)), packFloat2x16(f16vec2(f.zw)));
#endif
  }
}
