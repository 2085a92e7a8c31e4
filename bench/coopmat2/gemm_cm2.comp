#version 450
#pragma use_vulkan_memory_model
#extension GL_KHR_memory_scope_semantics : enable
#extension GL_KHR_cooperative_matrix : enable
#extension GL_NV_cooperative_matrix2 : enable
#extension GL_EXT_shader_explicit_arithmetic_types : enable
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : enable

// The speed issue's NV coopmat2 question, as a GEMM: C (M×N, fp16) = A (M×K, fp16, row-major) ·
// B (K×N row-major, or N×K with BCOL), with workgroup-scope matrices loaded straight from the
// buffers through tensor layouts (bounds clamped to zero), the driver staging them. Needs
// GL_NV_cooperative_matrix2, which Debian 12's glslc cannot compile (build.sh fetches Debian 13's).
// MODE 0: fp32 accumulator. 1: fp16 accumulator over all of K. 2: fp16 accumulator over CHUNK
// slices of BK, each chunk added into an fp32 accumulator.
layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint BM = 128;
layout(constant_id = 2) const uint BN = 128;
layout(constant_id = 3) const uint BK = 32;
layout(constant_id = 4) const uint MODE = 0;
layout(constant_id = 5) const uint CHUNK = 4;
layout(constant_id = 6) const uint BCOL = 0;  // 1: B stored N×K (each output column's K values contiguous)
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer A { uvec4 a[]; };
layout(binding = 1) readonly buffer B { uvec4 b[]; };
layout(binding = 2) writeonly buffer C { uvec4 c[]; };
layout(push_constant) uniform P { uint M, N, K; } p;

void main() {
  const uint m0 = gl_WorkGroupID.x * BM, n0 = gl_WorkGroupID.y * BN;
  tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> la = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
  tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> lb = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
  tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> lc = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
  la = setTensorLayoutDimensionNV(la, p.M, p.K);
  if (BCOL != 0) {
    lb = setTensorLayoutDimensionNV(lb, p.N, p.K);
  } else {
    lb = setTensorLayoutDimensionNV(lb, p.K, p.N);
  }
  tensorViewNV<2, false, 1, 0> transposed = createTensorViewNV(2, false, 1, 0);
  lc = setTensorLayoutDimensionNV(lc, p.M, p.N);

  coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator> acc32 =
      coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>(0.0);
  coopmat<float16_t, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator> acc16 =
      coopmat<float16_t, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>(0.0);
  const uint slices = (p.K + BK - 1) / BK;
  for (uint s = 0; s < slices; ++s) {
    const uint k0 = s * BK;
    coopmat<float16_t, gl_ScopeWorkgroup, BM, BK, gl_MatrixUseA> ma;
    coopmat<float16_t, gl_ScopeWorkgroup, BK, BN, gl_MatrixUseB> mb;
    coopMatLoadTensorNV(ma, a, 0, sliceTensorLayoutNV(la, m0, BM, k0, BK));
    if (BCOL != 0) {
      coopMatLoadTensorNV(mb, b, 0, sliceTensorLayoutNV(lb, n0, BN, k0, BK), transposed);
    } else {
      coopMatLoadTensorNV(mb, b, 0, sliceTensorLayoutNV(lb, k0, BK, n0, BN));
    }
    if (MODE == 0) {
      acc32 = coopMatMulAdd(ma, mb, acc32);
    } else {
      acc16 = coopMatMulAdd(ma, mb, acc16);
      if (MODE == 2 && ((s + 1) % CHUNK == 0 || s + 1 == slices)) {
        acc32 += coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>(acc16);
        acc16 = coopmat<float16_t, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>(0.0);
      }
    }
  }
  coopmat<float16_t, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator> res;
  if (MODE == 1) {
    res = acc16;
  } else {
    res = coopmat<float16_t, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>(acc32);
  }
  coopMatStoreTensorNV(res, c, 0, sliceTensorLayoutNV(lc, m0, BM, n0, BN));
}
