// fp32 values as the two fp16 parts of the "3xFP16" products (gemm_io.glsl describes the scheme):
// hi is x with its 13 low mantissa bits cleared, an fp16 value exactly where x is a normal fp16
// (below 2⁻¹⁴ hi is 0 and lo carries x alone), and lo = fp16((x − hi)·2¹¹), scaled into fp16's
// normal range; x − hi is exact. The parts are made without a float → half → float round trip,
// which a driver may fold away (the H200's did: fp32 errors of 1e-3, as fp16). The includer enables
// GL_EXT_shader_explicit_arithmetic_types_float16.
void fp16_split4(vec4 x, out uvec2 hi, out uvec2 lo) {
  const bvec4 tiny = lessThan(abs(x), vec4(6.103515625e-05));  // 2⁻¹⁴
  const vec4 h = mix(uintBitsToFloat(floatBitsToUint(x) & 0xffffe000u), vec4(0.0), tiny);
  const f16vec4 hh = f16vec4(h), ll = f16vec4((x - h) * 2048.0);
  hi = uvec2(packFloat2x16(hh.xy), packFloat2x16(hh.zw));
  lo = uvec2(packFloat2x16(ll.xy), packFloat2x16(ll.zw));
}
