// Storage-type plumbing of the tensor-core GEMM includers (matmul_coopmat.comp, conv2d_coopmat.comp,
// conv_transpose2d_coopmat.comp), included after common.glsl and before their loaders. Buffers are
// also declared as 16-byte words (GEMM_WORD) for vector loads and stores; 8 consecutive elements
// (the unit of the tile loop's loads and of the epilogue's gemm_store8) are one word in fp16 and two
// in fp32.
//
// DTYPE_F16=1: fp16 storage; a load of 8 elements (GemmLoad8) is the packed word itself, staged as is.
// DTYPE_F16=0: fp32 storage on fp16 tensor cores (GEMM_SPLIT, the "3xFP16" technique): a load is 8
// fp32 values, which gemm_coopmat.glsl splits into hi (x to fp16's 11 bits) and lo = fp16((x − hi)·2¹¹)
// when it stages them, and multiplies as hi·hi + (hi·lo + lo·hi)·2⁻¹¹ with fp32 accumulation. lo
// holds the next 11 bits (scaled so that it stays a normal fp16 while x does), so a product is
// exact to about 2⁻²¹ relative, near fp32's 2⁻²⁴; the dropped lo·lo term is of that order too.
// Below fp16's normal range (|x| < 2⁻¹⁴) lo alone carries x, to 11 bits. Values must lie within
// fp16's range (|x| < 65520): larger ones become inf and the result NaN. The tensor cores' sums
// truncate, so unless the caller asks for the coarse form each K slice's hi·hi sum is added to the
// total with rounding adds (gemm_coopmat.glsl, ROUND_SLICES): MASt3R's fp32 forward is then 2.2e-5
// from float64, where the scalar path is 1.5e-5 and PyTorch's fp32 1.4e-5 (H200). Callers opt in
// (GemmPath::kAutoSplitF32, or kAutoSplitF32Coarse without the rounding).
#extension GL_EXT_control_flow_attributes : require

#if DTYPE_F16
#define GEMM_SPLIT 0
#define GEMM_WORD uvec4
#define GemmLoad8 uvec4
#else
#define GEMM_SPLIT 1
#define GEMM_WORD vec4
struct GemmLoad8 {
  vec4 lo, hi;  // elements 0..3 and 4..7
};
#endif

// The 8 elements at element index i (a multiple of 8) of a buffer's word view W4, as a tile-loop load.
#if GEMM_SPLIT
#define GEMM_WORDS_LOAD8(W4, i) GemmLoad8(W4[(i) / 4u], W4[(i) / 4u + 1u])
#else
#define GEMM_WORDS_LOAD8(W4, i) W4[(i) / 8u]
#endif

GemmLoad8 gemm_zero_load8() {
#if GEMM_SPLIT
  return GemmLoad8(vec4(0.0), vec4(0.0));
#else
  return uvec4(0u);
#endif
}

// 8 loose elements as a tile-loop load.
GemmLoad8 gemm_pack_load8(STORE_T v[8]) {
#if GEMM_SPLIT
  return GemmLoad8(vec4(v[0], v[1], v[2], v[3]), vec4(v[4], v[5], v[6], v[7]));
#else
  return uvec4(packFloat2x16(f16vec2(v[0], v[1])), packFloat2x16(f16vec2(v[2], v[3])),
               packFloat2x16(f16vec2(v[4], v[5])), packFloat2x16(f16vec2(v[6], v[7])));
#endif
}

// Epilogue reads and writes of 8 elements at element index i (a multiple of 8) through W4, in fp32.
#if GEMM_SPLIT
#define GEMM_READ8(W4, i, v)                          \
  {                                                   \
    const vec4 w0_ = W4[(i) / 4u], w1_ = W4[(i) / 4u + 1u]; \
    v[0] = w0_.x, v[1] = w0_.y, v[2] = w0_.z, v[3] = w0_.w; \
    v[4] = w1_.x, v[5] = w1_.y, v[6] = w1_.z, v[7] = w1_.w; \
  }
#define GEMM_WRITE8(W4, i, v)                         \
  {                                                   \
    W4[(i) / 4u] = vec4(v[0], v[1], v[2], v[3]);      \
    W4[(i) / 4u + 1u] = vec4(v[4], v[5], v[6], v[7]); \
  }
#else
#define GEMM_READ8(W4, i, v)                                          \
  {                                                                   \
    const uvec4 w_ = W4[(i) / 8u];                                    \
    [[unroll]] for (uint e_ = 0; e_ < 8u; ++e_) v[e_] = float(unpackFloat2x16(w_[e_ / 2u])[e_ % 2u]); \
  }
#define GEMM_WRITE8(W4, i, v)                                                                          \
  W4[(i) / 8u] = uvec4(packFloat2x16(f16vec2(v[0], v[1])), packFloat2x16(f16vec2(v[2], v[3])), \
                       packFloat2x16(f16vec2(v[4], v[5])), packFloat2x16(f16vec2(v[6], v[7])))
#endif

// A tile-loop load's 8 values as fp32 (an epilogue operand loaded ahead: GEMM_ROW8_PREFETCH).
void gemm_load8_floats(GemmLoad8 w, out float v[8]) {
#if GEMM_SPLIT
  v[0] = w.lo.x, v[1] = w.lo.y, v[2] = w.lo.z, v[3] = w.lo.w;
  v[4] = w.hi.x, v[5] = w.hi.y, v[6] = w.hi.z, v[7] = w.hi.w;
#else
  [[unroll]] for (uint e = 0; e < 8u; ++e) v[e] = float(unpackFloat2x16(w[e / 2u])[e % 2u]);
#endif
}

// The epilogue's activation and residual, with the fp16-output activations where C is fp16.
float gemm_epilogue_out(float v, float r, uint flags) {
#if GEMM_SPLIT
  return gemm_act_residual(v, r, flags);
#else
  return gemm_act_residual_fp16_out(v, r, flags);
#endif
}
