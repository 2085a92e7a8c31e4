// MASt3R's 2-D RoPE rotation (gpu/ops/rope2d.h's formula), shared by rope2d.comp and the GEMM
// epilogue that rotates q and k as the projection writes them (matmul_coopmat.comp), so both round
// the same way: ω_j = 1 / base^(j / quarter), θ = p·ω_j in fp32,
//   (a, b) → (a·cos θ − b·sin θ, b·cos θ + a·sin θ).

float rope_theta(float pos, float base, uint j, uint quarter) {
  return pos * (1.0 / pow(base, float(j) / float(quarter)));
}

// θ is reduced to [−π, π] before sin/cos because Vulkan only bounds their error there: Cody–Waite
// by 2π (the high part has 8 significant bits, so k·hi is exact).
vec2 rope_rotate(float a, float b, float theta) {
  const float k = round(theta * 0.15915494309189535);
  precise float r = (theta - k * 6.28125) - k * 0.0019353071795864769;
  const float c = cos(r), s = sin(r);
  return vec2(a * c - b * s, b * c + a * s);
}
