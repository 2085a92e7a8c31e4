#version 450
// Elementwise dtype conversion between fp32 and fp16 storage (round to nearest even).
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 256) in;
#if SRC_F16
#define SRC_T float16_t
#else
#define SRC_T float
#endif
#if DST_F16
#define DST_T float16_t
#else
#define DST_T float
#endif
layout(binding = 0) readonly buffer Src { SRC_T src[]; };
layout(binding = 1) writeonly buffer Dst { DST_T dst[]; };
layout(push_constant) uniform Push { uint n; } p;
void main() {
  uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256u;
  if (i < p.n) dst[i] = DST_T(float(src[i]));
}
