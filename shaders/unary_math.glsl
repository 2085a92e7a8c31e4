// Accurate fp32 special functions for the unary and GELU shaders. GLSL has no erf; these keep a
// relative error of a few 1e-7 over the whole range (see gpu/ops/unary.h for the measured bounds).

// e^a with a few ulp of relative error over the whole range. The builtin exp() is only required to
// be within 3 + 2·|a| ulp, which costs GELU's tail 1e-5; reducing a = k·ln2 + r (Cody–Waite, exact
// for |k| ≤ 2^8) keeps the builtin on |r| ≤ ln2/2, and ldexp is exact.
float recon_exp(float a) {
  if (a > 88.72283) return uintBitsToFloat(0x7f800000u);  // +inf
  if (a < -103.972) return 0.0;
  float k = roundEven(a * 1.4426950408889634);
  precise float r = fma(-k, 0.693145751953125, a);  // ln2 high part: 16 bits, so k·ln2_hi is exact
  r = fma(-k, 1.4286068203094172e-6, r);             // ln2 low part
  return ldexp(exp(r), int(k));
}

// erfc(z) for z ≥ 0 with fractional error < 1.2e-7 in exact arithmetic (Numerical Recipes' Chebyshev
// fit "erfcc"), given z² as an unevaluated sum z2_hi + z2_lo: the factor exp(−z²) amplifies any
// rounding of z² by z², so callers pass it exactly (see recon_erfc_nonneg, recon_normal_cdf).
float recon_erfc_parts(float z, float z2_hi, float z2_lo) {
  float t = 1.0 / (1.0 + 0.5 * z);
  float poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 +
               t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  return t * recon_exp(-z2_hi) * recon_exp(poly - z2_lo);
}

float recon_erfc_nonneg(float z) {
  precise float hi = z * z;
  precise float lo = fma(z, z, -hi);  // z² = hi + lo exactly (precise: fma must not be split)
  return recon_erfc_parts(z, hi, lo);
}

// erf(z): a Taylor series near 0 (no cancellation), 1 − erfc(|z|) beyond.
float recon_erf(float z) {
  float a = abs(z);
  if (a < 0.5) {
    float z2 = z * z;
    // 2/√π · z · Σ (−z²)^k / (k!·(2k+1)), k = 0..5; the next term is < 2e-8 relative at |z| = 0.5.
    float s = 1.0 + z2 * (-1.0 / 3.0 + z2 * (1.0 / 10.0 + z2 * (-1.0 / 42.0 + z2 * (1.0 / 216.0 + z2 * (-1.0 / 1320.0)))));
    return 1.1283791670955126 * z * s;
  }
  float r = 1.0 - recon_erfc_nonneg(a);
  return z < 0.0 ? -r : r;
}

// Φ(x), the standard normal CDF = ½·erfc(−x/√2), accurate in relative terms in both tails.
// z = |x|/√2 is rounded, but z² = x²/2 is formed exactly from x.
float recon_normal_cdf(float x) {
  precise float hi = x * x;
  precise float lo = fma(x, x, -hi);
  float c = 0.5 * recon_erfc_parts(abs(x) * 0.70710678118654752, 0.5 * hi, 0.5 * lo);
  return x < 0.0 ? c : 1.0 - c;
}

// 1 / (1 + e^−x), without overflow and with relative accuracy for x ≪ 0.
float recon_sigmoid(float x) {
  if (x >= 0.0) return 1.0 / (1.0 + recon_exp(-x));
  float e = recon_exp(x);
  return e / (1.0 + e);
}

// tanh with relative accuracy near 0 (odd Taylor series) and no inf/inf for large |x|.
float recon_tanh(float x) {
  float a = abs(x);
  float r;
  if (a < 0.3) {
    float x2 = x * x;
    // x − x³/3 + 2x⁵/15 − 17x⁷/315 + 62x⁹/2835 − 1382x¹¹/155925
    return x * (1.0 + x2 * (-1.0 / 3.0 + x2 * (2.0 / 15.0 + x2 * (-17.0 / 315.0 + x2 * (62.0 / 2835.0 +
                x2 * (-1382.0 / 155925.0))))));
  }
  float e = recon_exp(-2.0 * a);
  r = (1.0 - e) / (1.0 + e);
  return x < 0.0 ? -r : r;
}

// GELU, exact form (PyTorch approximate='none'): x·Φ(x).
float recon_gelu_erf(float x) { return x * recon_normal_cdf(x); }

// GELU, tanh form (approximate='tanh'): ½x(1 + tanh(√(2/π)(x + 0.044715x³))), evaluated as
// x·σ(2u) so the x ≪ 0 tail does not cancel.
float recon_gelu_tanh(float x) {
  float u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
  return x * recon_sigmoid(2.0 * u);
}

// x^y as ONNX and NumPy define it for a negative base: defined for integer exponents only.
float recon_pow(float x, float y) {
  if (y == 2.0) return x * x;
  if (y == 1.0) return x;
  if (y == 0.0) return 1.0;
  if (y == 0.5) return sqrt(x);
  if (x == 0.0) return y > 0.0 ? 0.0 : 1.0 / 0.0;
  const float r = pow(abs(x), y);
  if (x > 0.0) return r;
  if (floor(y) != y) return 0.0 / 0.0;
  return mod(y, 2.0) == 0.0 ? r : -r;
}
