// a ∘ b for the ops of ops::BinaryOp, in its order; the includer declares the OP constant.
#include "unary_math.glsl"

// C's fmod: x − q·y for q = trunc(x / y), with the sign of x (NaN for y = 0 or an infinite x; x for
// |x| < |y|, an infinite y among them). q·y is formed exactly as p + e (Dekker's product; `precise`
// keeps the compiler from fusing or reordering it, and llvmpipe's fma is not always fused), and
// x − p is exact (Sterbenz), so the result is exact wherever the fp32 quotient truncates to the
// right integer (|x / y| < 2^24). A quotient rounded up to the next integer leaves the opposite
// sign, undone by one y (one more rounding).
float binary_fmod(float x, float y) {
  precise float q = trunc(x / y);
  if (q == 0.0) return x;
  precise float cq = 4097.0 * q, cy = 4097.0 * y;
  precise float qh = cq - (cq - q), yh = cy - (cy - y);
  precise float ql = q - qh, yl = y - yh;
  precise float p = q * y;
  precise float e = ((qh * yh - p) + qh * yl + ql * yh) + ql * yl;
  precise float r = (x - p) - e;
  if (r != 0.0 && (r < 0.0) != (x < 0.0)) r += x < 0.0 ? -abs(y) : abs(y);
  return r;
}

float binary_apply(float x, float y) {
  switch (OP) {
    case 0: return x + y;
    case 1: return x - y;
    case 2: return x * y;
    case 3: return x / y;
    case 4: return max(x, y);
    case 5: return min(x, y);
    case 6: return recon_pow(x, y);
    case 16: {  // Python's %: the remainder takes the sign of y
      float r = binary_fmod(x, y);
      return r != 0.0 && (r < 0.0) != (y < 0.0) ? r + y : r;
    }
    case 17: return binary_fmod(x, y);
    default: return x < 0.0 ? y * x : x;  // 7: PRelu, y the slope
  }
}
