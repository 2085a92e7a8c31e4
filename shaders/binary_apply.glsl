// a ∘ b for the ops of ops::BinaryOp, in its order; the includer declares the OP constant.
#include "unary_math.glsl"

float binary_apply(float x, float y) {
  switch (OP) {
    case 0: return x + y;
    case 1: return x - y;
    case 2: return x * y;
    case 3: return x / y;
    case 4: return max(x, y);
    case 5: return min(x, y);
    case 6: return recon_pow(x, y);
    default: return x < 0.0 ? y * x : x;  // 7: PRelu, y the slope
  }
}
