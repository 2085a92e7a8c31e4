#version 450
// y = f(alpha·x + beta) elementwise; f is chosen by the OP specialisation constant (the order of
// ops::UnaryOp in gpu/ops/unary.h) and may take two parameters, gamma and delta. In-place (same
// buffer bound twice) is allowed.
#include "common.glsl"
#include "unary_math.glsl"
layout(constant_id = 0) const uint OP = 0;
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer In { STORE_T x_data[]; };
layout(binding = 1) writeonly buffer Out { STORE_T y_data[]; };
// Mirrored by UnaryPush in gpu/ops/unary.cpp. base_* are element offsets into the bound windows.
layout(push_constant) uniform Push { uint n; float alpha, beta; uint base_in, base_out; float gamma, delta; } p;

// ln x to a few ulp: x = m·2^e with m in [√½, √2), ln m = 2·atanh(t), t = (m − 1)/(m + 1),
// |t| ≤ 0.172, by its odd series (GLSL's log is specified only to 3 ulp outside [0.5, 2] and to an
// absolute 2^-21 inside, which is a large relative error near x = 1).
float recon_log(float x) {
  if (!(x > 0.0) || isinf(x)) return x == 0.0 ? -1.0 / 0.0 : (x > 0.0 ? x : 0.0 / 0.0);
  int e;
  float m = frexp(x, e);  // m in [0.5, 1)
  if (m < 0.70710678) {
    m *= 2.0;
    e -= 1;
  }
  const float t = (m - 1.0) / (m + 1.0), t2 = t * t;
  const float series = t * (2.0 + t2 * (0.6666667 + t2 * (0.4 + t2 * (0.2857143 + t2 * (0.2222222 + t2 * 0.1818182)))));
  return fma(float(e), 0.693145752, fma(float(e), 1.42860677e-06, series));
}

// ln(1 + u) without losing u when it is small: its series below |u| = 1/16, where the rounding of
// 1 + u would cost up to 2^-24 / u of relative error.
float recon_log1p(float u) {
  if (abs(u) < 0.0625) {
    return u * (1.0 + u * (-0.5 + u * (0.33333333 + u * (-0.25 + u * (0.2 + u * (-0.16666667 + u * 0.14285714))))));
  }
  return recon_log(1.0 + u);
}

// eˣ − 1 without cancellation near 0, by the same rescaling.
float recon_expm1(float x) {
  const float u = recon_exp(x);
  if (u == 1.0) return x;
  const float um1 = u - 1.0;
  if (um1 == -1.0) return -1.0;
  return um1 * (x / recon_log(u));
}

// atan x to a few ulp (lavapipe's built-in misses by 2e-5): |x| > 1 through π/2 − atan(1/|x|), then
// above tan(π/8) through π/4 + atan((a − 1)/(a + 1)), leaving |t| ≤ 0.4143 for the odd series,
// whose first omitted term is below 1e-9. asin and acos go through it too (the built-ins miss by
// 4e-4 there): asin x = atan(x / √((1 − x)(1 + x))), acos x = 2·atan(√((1 − x)/(1 + x))), forms
// that stay accurate as |x| → 1.
float recon_atan(float x) {
  float a = abs(x);
  const bool inverted = a > 1.0;
  if (inverted) a = 1.0 / a;
  const bool shifted = a > 0.41421356;
  const float t = shifted ? (a - 1.0) / (a + 1.0) : a, t2 = t * t;
  float s = -0.05263158;  // −1/19
  s = fma(s, t2, 0.05882353);
  s = fma(s, t2, -0.06666667);
  s = fma(s, t2, 0.07692308);
  s = fma(s, t2, -0.09090909);
  s = fma(s, t2, 0.11111111);
  s = fma(s, t2, -0.14285714);
  s = fma(s, t2, 0.2);
  s = fma(s, t2, -0.33333333);
  float r = fma(t * t2, s, t);
  if (shifted) r += 0.78539816;
  if (inverted) r = 1.5707963 - r;
  return x < 0.0 ? -r : r;
}

// sin and cos to about an ulp for |x| up to ~8e3 (Cephes's sinf/cosf): x reduced to |r| ≤ π/4 in
// three exact steps of π/4, then the quadrant's polynomial. The H200's built-ins miss by ~1e-7
// absolute, 1e-4 relative to small results.
float recon_sin_cos(float x, bool cosine) {
  float a = abs(x);
  uint j = uint(a * 1.27323954);  // 4/π
  j = (j + 1u) & ~1u;
  const float y = float(j);
  float r = fma(-y, 0.78515625, a);
  r = fma(-y, 2.4187564849853515625e-4, r);
  r = fma(-y, 3.77489497744594108e-8, r);
  j &= 7u;
  bool negative = cosine ? false : x < 0.0;
  if (j > 3u) {
    negative = !negative;
    j -= 4u;
  }
  if (cosine && j > 1u) negative = !negative;
  const float z = r * r;
  const float sin_r = fma(fma(fma(-1.9515295891e-4, z, 8.3321608736e-3), z, -1.6666654611e-1) * z, r, r);
  const float cos_r = fma(fma(fma(2.443315711809948e-5, z, -1.388731625493765e-3), z, 4.166664568298827e-2) * z,
                          z, fma(-0.5, z, 1.0));
  const bool use_sin = (j == 1u || j == 2u) == cosine;
  const float result = use_sin ? sin_r : cos_r;
  return negative ? -result : result;
}

float apply(float v) {
  switch (OP) {
    case 0: return v;                          // identity: scale_shift
    case 1: return max(v, 0.0);                // relu
    case 2: return recon_sigmoid(v);
    case 3: return recon_tanh(v);
    case 4: return recon_gelu_erf(v);
    case 5: return recon_gelu_tanh(v);
    case 6: return recon_exp(v);
    case 7: return recon_erf(v);
    case 8: return sqrt(v);
    case 9: return 1.0 / v;
    case 10: return abs(v);
    case 11: return recon_log(v);
    case 12: return recon_pow(v, p.gamma);
    case 13: return v >= 0.0 ? v : p.gamma * v;                      // leaky relu
    case 14: return min(max(v, p.gamma), p.delta);                   // clip
    case 15: return v * (clamp(v + 3.0, 0.0, 6.0) / 6.0);            // hard swish
    case 16: return v > 0.0 ? v : p.gamma * recon_expm1(v);          // elu
    case 17: return max(v, 0.0) + recon_log1p(recon_exp(-abs(v)));  // softplus
    case 18: return floor(v);
    case 19: return ceil(v);
    case 20: return recon_sin_cos(v, false);
    case 21: return recon_sin_cos(v, true);
    case 22: return sign(v);
    case 23: return roundEven(v);
    case 24: return p.gamma * (v > 0.0 ? v : p.delta * recon_expm1(v));  // selu
    case 25: return v / (1.0 + abs(v));                              // softsign
    case 26: return v > p.gamma ? v : 0.0;                           // thresholded relu
    case 27: return recon_sin_cos(v, false) / recon_sin_cos(v, true);  // tan
    case 28: return abs(v) > 1.0 ? 0.0 / 0.0 : recon_atan(v / sqrt((1.0 - v) * (1.0 + v)));
    case 29: return abs(v) > 1.0 ? 0.0 / 0.0 : 2.0 * recon_atan(sqrt((1.0 - v) / (1.0 + v)));
    case 30: return recon_atan(v);
    // The hyperbolic ones through expm1 and log1p, which keep their relative accuracy near 0
    // (GLSL's sinh and asinh are specified as the textbook formulas, which cancel there).
    case 31: return 0.5 * (recon_expm1(v) - recon_expm1(-v));        // sinh
    case 32: return 0.5 * (recon_exp(v) + recon_exp(-v));            // cosh
    case 33: {                                                       // asinh = sign · log1p(|x| + x²/(1 + √(1 + x²)))
      const float a = abs(v);
      const float r = a > 1e18 ? recon_log(a) + 0.6931472 : recon_log1p(a + a * a / (1.0 + sqrt(1.0 + a * a)));
      return v < 0.0 ? -r : r;
    }
    case 34: return v > 1e18 ? recon_log(v) + 0.6931472 : recon_log(v + sqrt(v * v - 1.0));  // acosh
    case 35: return 0.5 * recon_log1p(2.0 * v / (1.0 - v));            // atanh
    case 36: return max(v, 0.0) + min(0.0, p.gamma * recon_expm1(v / p.gamma));  // celu
    default: return v < -p.gamma ? v + p.delta : (v > p.gamma ? v - p.delta : 0.0);  // 37: shrink
  }
}

void main() {
  uint i = linear_invocation(256);
  if (i >= p.n) return;
  y_data[p.base_out + i] = STORE_T(apply(fma(p.alpha, float(x_data[p.base_in + i]), p.beta)));
}
