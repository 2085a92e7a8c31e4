// Fused GEMM epilogue math shared by the matmul and convolution shaders: the activation codes and
// accurate fp32 exp, erf/erfc, tanh, sigmoid and the two GELUs. GLSL's own exp/tanh may lose
// several ulp (Vulkan allows 3 + 2|x| ulp for exp) and GLSL has no erf, so these are written out.
// Maximum relative errors, same formulas in C++ fp32 against long double on a 1e-5 grid over
// [-12, 12]: exp 8e-8, erf 1.7e-7, erfc 3.7e-7, tanh 1.5e-7, GELU-erf 6.3e-7. On the GPU
// (MatmulTest.ActivationsAreAccurateOverTheirWholeRange, lavapipe and H100): GELU-erf 4.1e-7,
// sigmoid 1.4e-7, tanh 8.2e-8, GELU-tanh 8.9e-6 (its cubic argument is rounded in fp32: ~|2y|·6e-8
// in the far negative tail, where the value is below 1e-15).
// Polynomial coefficients are our own Lawson-weighted minimax fits (mpmath, 40 digits).
// Must not touch buffers: pure functions only.

// Activation codes, mirrored by recon::gpu::ops::Activation (gpu/ops/matmul.h).
#define GEMM_ACT_NONE 0u
#define GEMM_ACT_RELU 1u
#define GEMM_ACT_GELU_ERF 2u
#define GEMM_ACT_GELU_TANH 3u
#define GEMM_ACT_SIGMOID 4u
#define GEMM_ACT_TANH 5u

// Flag bits of the epilogue word in the push constants (mirrored in gpu/ops/matmul.cpp).
#define GEMM_FLAG_ACT_MASK 0xfu
#define GEMM_FLAG_BIAS 0x10u
#define GEMM_FLAG_BIAS_PER_ROW 0x20u
#define GEMM_FLAG_RESIDUAL 0x40u
#define GEMM_FLAG_BETA 0x80u
#define GEMM_FLAG_INPUT_RELU 0x100u
#define GEMM_FLAG_TRANS_A 0x200u  // scalar matmul only; the coopmat shaders specialise transposes
#define GEMM_FLAG_TRANS_B 0x400u
#define GEMM_FLAG_RESIDUAL_FIRST 0x800u  // act(v + residual), not act(v) + residual

// exp(x) with Cody-Waite reduction by ln 2 and a degree-7 Taylor polynomial on |r| <= ln2/2.
float gemm_exp(float x) {
  if (x > 88.72283f) return uintBitsToFloat(0x7f800000u);
  if (x < -103.972f) return 0.0f;
  float n = round(x * 1.44269504f);
  // r = x − n·ln2 in two steps (Cody-Waite): ln 2's high part has 15 bits, so n·hi is exact; the
  // low part (ln 2 − hi = 12566158·2^-43) goes through an integer product, so that no compiler can
  // fold the two steps back into x − n·ln2 with a rounded product. Lavapipe did exactly that with
  // two fma()s, `precise` notwithstanding: 4e-6 relative error at |x| = 72.
  float r = fma(n, -0.693145751953125f, x);
  r -= float(int(n) * 12566158) * 1.1368683772161603e-13f;
  float p = 1.98412698e-4f;
  p = fma(p, r, 1.38888889e-3f);
  p = fma(p, r, 8.33333333e-3f);
  p = fma(p, r, 4.16666667e-2f);
  p = fma(p, r, 1.66666667e-1f);
  p = fma(p, r, 0.5f);
  p = fma(p, r, 1.0f);
  p = fma(p, r, 1.0f);
  return ldexp(p, int(n));
}

// g(t) of erfc(z) = exp(-z²)·g(t), t = 2/(2+z), for z >= 0.875: a degree-8 polynomial (9.5e-9 fit
// error on [0.875, 10]).
float gemm_erfc_poly(float t) {
  float g = 0.0724420615356f;
  g = fma(g, t, -0.158502450364f);
  g = fma(g, t, -0.0103820249522f);
  g = fma(g, t, 0.131585712502f);
  g = fma(g, t, 0.146275771214f);
  g = fma(g, t, 0.256233988571f);
  g = fma(g, t, 0.280442708466f);
  g = fma(g, t, 0.282250197274f);
  g = fma(g, t, -6.09457248544e-6f);
  return g;
}

// erfc(a·s) for a·s >= 0.875, where s2 == s·s exactly (s = 1 or 1/sqrt(2)).
// exp(-s2·a²) is split as exp(-s2·ah²)·exp(-s2·(a-ah)(a+ah)) with ah = a cut to 12 significant
// bits, so that ah² is exact and the large exponent carries no rounding error.
float gemm_erfc_tail(float a, float s, float s2) {
  float z = a * s;
  float g = gemm_erfc_poly(2.0f / (2.0f + z));
  float ah = uintBitsToFloat(floatBitsToUint(a) & 0xfffff000u);
  return gemm_exp(-s2 * (ah * ah)) * gemm_exp(-s2 * ((a - ah) * (a + ah))) * g;
}

// erf(x) = x·P(x²) for |x| < 0.875 (degree-5 fit, 8.5e-9).
float gemm_erf_small(float x) {
  float s = x * x;
  float p = -0.000620353714829f;
  p = fma(p, s, 0.00503224101909f);
  p = fma(p, s, -0.0267915090292f);
  p = fma(p, s, 0.112824568813f);
  p = fma(p, s, -0.376125506779f);
  p = fma(p, s, 1.12837915757f);
  return x * p;
}

// erf(x): gemm_erf_small below 0.875, 1 - erfc beyond, exactly ±1 past 4.
float gemm_erf(float x) {
  float a = abs(x);
  if (a < 0.875f) return gemm_erf_small(x);
  float r = a > 4.0f ? 1.0f : 1.0f - gemm_erfc_tail(a, 1.0f, 1.0f);
  return x < 0.0f ? -r : r;
}

// tanh(x): x + x³·P(x²) below 0.625 (degree-5 fit), 1 - 2/(e^{2|x|} + 1) beyond.
float gemm_tanh(float x) {
  float a = abs(x);
  if (a < 0.625f) {
    float s = x * x;
    float p = 0.00229305513663f;
    p = fma(p, s, -0.00834427089294f);
    p = fma(p, s, 0.0217690417557f);
    p = fma(p, s, -0.0539592797039f);
    p = fma(p, s, 0.133333036883f);
    p = fma(p, s, -0.333333331744f);
    return fma(x * s, p, x);
  }
  float r = 1.0f - 2.0f / (gemm_exp(2.0f * a) + 1.0f);
  return x < 0.0f ? -r : r;
}

float gemm_sigmoid(float x) { return 1.0f / (1.0f + gemm_exp(-x)); }

// GELU with the exact erf (PyTorch nn.GELU()). The negative tail uses erfc directly, computed
// from x itself, so that it keeps its relative accuracy where 1 + erf(z) would cancel.
float gemm_gelu_erf(float x) {
  float z = x * 0.707106781f;
  if (z >= -0.875f) return 0.5f * x * (1.0f + gemm_erf(z));
  return 0.5f * x * gemm_erfc_tail(-x, 0.707106781f, 0.5f);
}

// GELU tanh approximation (PyTorch approximate='tanh'): 0.5·x·(1 + tanh(y)) = x·sigmoid(2y),
// the second form without cancellation for negative x.
float gemm_gelu_tanh(float x) {
  float y = 0.7978845608f * fma(0.044715f * x, x * x, x);
  return x / (1.0f + gemm_exp(-2.0f * y));
}

// The same activations for epilogues that store fp16 (the tensor-core shaders): GLSL's exp (a few
// ulp) in place of gemm_exp, one exp per activation, and no branches. GELU-erf takes Φ(−|x|) =
// erfc(|x|/√2)/2 from Numerical Recipes' erfcc, t·exp(−z² + P(t)) with t = 1/(1 + z/2), whose
// fractional error is under 1.2e-7 for every z ≥ 0: one formula over the whole range, where a
// split at |z| = 0.875 made a subgroup run both sides. Relative error ~1e-6 (fp32, |x| ≤ 8), far
// under fp16 rounding (4.9e-4).
float gemm_gelu_erf_fast(float x) {
  const float z = abs(x) * 0.707106781f;
  const float t = 1.0f / fma(0.5f, z, 1.0f);
  float q = 0.17087277f;
  q = fma(q, t, -0.82215223f);
  q = fma(q, t, 1.48851587f);
  q = fma(q, t, -1.13520398f);
  q = fma(q, t, 0.27886807f);
  q = fma(q, t, -0.18628806f);
  q = fma(q, t, 0.09678418f);
  q = fma(q, t, 0.37409196f);
  q = fma(q, t, 1.00002368f);
  q = fma(q, t, -1.26551223f);
  const float half_erfc = 0.5f * t * exp(fma(-z, z, q));  // Φ(−|x|)
  return x * (x > 0.0f ? 1.0f - half_erfc : half_erfc);
}

float gemm_activation_fp16_out(float v, uint act) {
  switch (act) {
    case GEMM_ACT_RELU: return max(v, 0.0f);
    case GEMM_ACT_GELU_ERF: return gemm_gelu_erf_fast(v);
    case GEMM_ACT_GELU_TANH: return v / (1.0f + exp(-2.0f * 0.7978845608f * fma(0.044715f * v, v * v, v)));
    case GEMM_ACT_SIGMOID: return 1.0f / (1.0f + exp(-v));
    case GEMM_ACT_TANH: return tanh(v);
    default: return v;
  }
}

float gemm_activation(float v, uint act) {
  switch (act) {
    case GEMM_ACT_RELU: return max(v, 0.0f);
    case GEMM_ACT_GELU_ERF: return gemm_gelu_erf(v);
    case GEMM_ACT_GELU_TANH: return gemm_gelu_tanh(v);
    case GEMM_ACT_SIGMOID: return gemm_sigmoid(v);
    case GEMM_ACT_TANH: return gemm_tanh(v);
    default: return v;
  }
}

// The activation and the residual `r` (read by the caller only when GEMM_FLAG_RESIDUAL is set) in
// the order the flags ask for: act(v) + r, or act(v + r) with GEMM_FLAG_RESIDUAL_FIRST (ResNet's
// ReLU after the shortcut).
float gemm_act_residual(float v, float r, uint flags) {
  const bool residual = (flags & GEMM_FLAG_RESIDUAL) != 0u;
  if (residual && (flags & GEMM_FLAG_RESIDUAL_FIRST) != 0u) return gemm_activation(v + r, flags & GEMM_FLAG_ACT_MASK);
  v = gemm_activation(v, flags & GEMM_FLAG_ACT_MASK);
  return residual ? v + r : v;
}

// The same for the epilogues that store fp16.
float gemm_act_residual_fp16_out(float v, float r, uint flags) {
  const bool residual = (flags & GEMM_FLAG_RESIDUAL) != 0u;
  if (residual && (flags & GEMM_FLAG_RESIDUAL_FIRST) != 0u) {
    return gemm_activation_fp16_out(v + r, flags & GEMM_FLAG_ACT_MASK);
  }
  v = gemm_activation_fp16_out(v, flags & GEMM_FLAG_ACT_MASK);
  return residual ? v + r : v;
}
