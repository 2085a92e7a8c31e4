// Determinants of a batch of square matrices (ONNX Det), one kernel (shaders/det.comp): one
// invocation per matrix eliminates it with partial pivoting in fp32, the determinant the signed
// product of the pivots (0 at the first zero pivot). Serial per matrix (O(n³) steps): meant for
// the small matrices graphs take determinants of.
//
// Tolerance (tests/gpu/ops/det_test.cpp): fp32 elimination against float64, ≤ 1e-5 relative to
// the product of the rows' norms (Hadamard's bound) in fp32, ≤ 2e-3 in fp16 storage.
#pragma once

#include "gpu/graph.h"

namespace recon::gpu::ops {

// in [..., n, n] (f32 or f16, n ≥ 1), out [...] of in's dtype (in's leading axes), work an f32 tensor of
// in's element count the kernel eliminates in.
Status det(Graph& g, const Arg& in, const Arg& out, const Arg& work);

}  // namespace recon::gpu::ops
