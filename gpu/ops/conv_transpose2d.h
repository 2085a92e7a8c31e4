// 2-D transposed convolution for stride == kernel (no overlapping taps, no padding), as the DPT
// reassemble layers use it (k = s = 4 and k = s = 2), with a fused epilogue:
//   out[b, o, y·KH+i, x·KW+j] = act(bias[o] + Σ_c in[b,c,y,x]·W[c,o,i,j]) + R[...]
// NCHW activations, weights (Cin, Cout, KH, KW) as PyTorch stores ConvTranspose2d weights.
// GEMM view: M = Cout·KH·KW, N = H·W (per image), K = Cin, A = the weights read column-major, B =
// the input image; the store scatters rows into their strided output pixels
// (shaders/conv_transpose2d*.comp on the tile loops of matmul.h). Paths as for matmul (GemmPath).
//
// Large tensors: input, output or residual beyond maxStorageBufferRange split the batch into
// chunks of whole images (one dispatch each, window views); one image or the weights beyond the
// range is refused.
//
// Tolerance (tests/gpu/ops/conv_transpose2d_test.cpp): |got − ref| ≤ tol·(Σ|w·x| + |bias| + |r| +
// 1e-6), tol = 1e-5 for f32 storage, 2e-3 for f16 storage.
#pragma once

#include <optional>

#include "gpu/capabilities.h"
#include "gpu/graph.h"
#include "gpu/ops/matmul.h"

namespace recon::gpu::ops {

// input [B, Cin, H, W], weight [Cin, Cout, KH, KW], bias [Cout] or none,
// out [B, Cout, H·KH, W·KW]; the residual (in `epilogue`) is shaped like out. One dtype (f32/f16).
Status conv_transpose2d(Graph& g, const Capabilities& caps, const Arg& input, const Arg& weight,
                        const std::optional<Arg>& bias, const Arg& out, const Epilogue& epilogue = {},
                        GemmPath path = GemmPath::kAuto);

}  // namespace recon::gpu::ops
