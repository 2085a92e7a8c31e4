// 16-byte words of fp32 or fp16 storage for the memory-bound kernels' wide paths: a word holds VW
// elements (4 floats or 8 halves). A shader declares its buffer twice at one binding, as STORE_T
// elements (the general path) and as uvec4 words (the wide path), and the host picks the wide path
// only when every word index it produces is whole (extent and element offset multiples of VW).
// One 16-byte access per invocation and operand is what keeps enough bytes in flight to reach HBM
// bandwidth; fp16 with scalar 2-byte accesses reached about half the fp32 GB/s.
// Include after common.glsl (STORE_T, DTYPE_F16).
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require

#if DTYPE_F16
#define VW 8
#else
#define VW 4
#endif

// The VW elements of word w, widened to fp32 (exact).
void unpack_word(uvec4 w, out float f[VW]) {
#if DTYPE_F16
  for (uint i = 0; i < 4; ++i) {
    const vec2 h = vec2(unpackFloat2x16(w[i]));
    f[2 * i] = h.x;
    f[2 * i + 1] = h.y;
  }
#else
  for (uint i = 0; i < 4; ++i) f[i] = uintBitsToFloat(w[i]);
#endif
}

// The word of VW fp32 values in storage type; fp16 rounds as STORE_T(v) does on the general path.
uvec4 pack_word(float f[VW]) {
  uvec4 w;
#if DTYPE_F16
  for (uint i = 0; i < 4; ++i) w[i] = packFloat2x16(f16vec2(f[2 * i], f[2 * i + 1]));
#else
  for (uint i = 0; i < 4; ++i) w[i] = floatBitsToUint(f[i]);
#endif
  return w;
}
