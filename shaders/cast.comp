#version 450
// Elementwise dtype conversion between f32, f16 and i32 storage (gpu/ops/cast.h): to a float rounds
// to nearest even; a float to an integer truncates toward zero. TRUTH (i32 destinations only): 1
// writes 1 where the source is non-zero and 0 elsewhere, NaN counting as non-zero (NumPy's bool());
// 2 the opposite (logical not). Float sources only: 3 writes 1 where the source is NaN; 4 + m where
// it is infinite with a sign picked by m's bits (1: +inf, 2: −inf; m = 0 matches nothing). 8 + m
// (i32 destinations): the value (a float truncated) wrapped into a narrow integer type held in i32,
// modulo 2^8 (m bit 1 clear) or 2^16 (set), signed where m bit 0 is set; shifts and masks, no %.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#ifndef SRC_F16
#define SRC_F16 0
#endif
#ifndef SRC_I32
#define SRC_I32 0
#endif
#ifndef DST_F16
#define DST_F16 0
#endif
#ifndef DST_I32
#define DST_I32 0
#endif
layout(constant_id = 0) const uint TRUTH = 0;
layout(local_size_x = 256) in;
#if SRC_F16
#define SRC_T float16_t
#elif SRC_I32
#define SRC_T int
#else
#define SRC_T float
#endif
#if DST_F16
#define DST_T float16_t
#elif DST_I32
#define DST_T int
#else
#define DST_T float
#endif
layout(binding = 0) readonly buffer Src { SRC_T src[]; };
layout(binding = 1) writeonly buffer Dst { DST_T dst[]; };
layout(push_constant) uniform Push { uint n; } p;

// Zero tested on the bits (±0), so that a NaN is non-zero whatever the driver assumes of NaNs.
bool source_nonzero(SRC_T v) {
#if SRC_I32
  return v != 0;
#else
  return (floatBitsToUint(float(v)) & 0x7fffffffu) != 0u;
#endif
}

#if !SRC_I32
// NaN and infinities tested on the bits, as above.
bool source_in_class(SRC_T v) {
  const uint bits = floatBitsToUint(float(v));
  if (TRUTH == 3u) return (bits & 0x7fffffffu) > 0x7f800000u;
  const uint sign_mask = (bits & 0x80000000u) != 0u ? 2u : 1u;
  return (bits & 0x7fffffffu) == 0x7f800000u && ((TRUTH - 4u) & sign_mask) != 0u;
}
#endif

void main() {
  uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256u;
  if (i >= p.n) return;
#if DST_I32
  if (TRUTH >= 8u) {
#if SRC_I32
    const int v = src[i];
#else
    const int v = int(float(src[i]));
#endif
    const int shift = (TRUTH & 2u) != 0u ? 16 : 24;
    // Signed: the low bits shifted to the top and back, arithmetically (sign-extended).
    dst[i] = (TRUTH & 1u) != 0u ? (v << shift) >> shift : int(uint(v) & (0xffffffffu >> uint(shift)));
    return;
  }
#if !SRC_I32
  if (TRUTH >= 3u) {
    dst[i] = source_in_class(src[i]) ? 1 : 0;
    return;
  }
#endif
  if (TRUTH != 0u) {
    dst[i] = source_nonzero(src[i]) == (TRUTH == 1u) ? 1 : 0;
    return;
  }
#endif
#if DST_I32 && SRC_I32
  dst[i] = src[i];
#elif DST_I32
  dst[i] = int(float(src[i]));
#else
  dst[i] = DST_T(float(src[i]));
#endif
}
