#version 450
// Elementwise dtype conversion between fp32 and fp16 storage (round to nearest even).
// Four elements per invocation: one 16-byte fp32 word and one 8-byte fp16 pair, so that every
// access of a subgroup is contiguous (every binding starts at element 0, whole in both dtypes);
// the partial last group of four is converted element by element. Scalar 2-byte accesses ran at a
// fifth of HBM bandwidth.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 256) in;
#if SRC_F16
#define SRC_T float16_t
#define SRC_WORD uvec2
#define DST_WORD uvec4
#else
#define SRC_T float
#define SRC_WORD uvec4
#define DST_WORD uvec2
#endif
#if DST_F16
#define DST_T float16_t
#else
#define DST_T float
#endif
layout(binding = 0) readonly buffer Src { SRC_T src[]; };
layout(binding = 0) readonly buffer SrcW { SRC_WORD src_w[]; };
layout(binding = 1) writeonly buffer Dst { DST_T dst[]; };
layout(binding = 1) writeonly buffer DstW { DST_WORD dst_w[]; };
layout(push_constant) uniform Push { uint n; } p;

void main() {
  const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256u;
  const uint e = i * 4u;
  if (e >= p.n) return;
  if (e + 4u > p.n) {
    for (uint k = e; k < p.n; ++k) dst[k] = DST_T(float(src[k]));
    return;
  }
  const SRC_WORD w = src_w[i];
#if SRC_F16
  dst_w[i] = uvec4(floatBitsToUint(vec2(unpackFloat2x16(w.x))), floatBitsToUint(vec2(unpackFloat2x16(w.y))));
#else
  dst_w[i] = uvec2(packFloat2x16(f16vec2(uintBitsToFloat(w.xy))), packFloat2x16(f16vec2(uintBitsToFloat(w.zw))));
#endif
}
