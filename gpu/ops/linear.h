// nn.Linear with a fused epilogue, the model's main GEMM call:
//   out[..., N] = act(x[..., K] · weight[N,K]ᵀ + bias[N]) + residual[..., N]
// x and out are token-major with any number of leading dimensions (flattened into M rows);
// weight is in PyTorch's layout or transposed (WeightLayout). One matmul_strided (matmul.h), so the
// tensor-core path, tolerances and the splitting of oversized operands are matmul's: a weight
// beyond maxStorageBufferRange (the 6400×7168 fp32 head MLP weight, 175 MiB) is bound as row
// windows (slices of weight rows = output columns), one dispatch each; oversized x/out split by rows.
#pragma once

#include <optional>

#include "gpu/capabilities.h"
#include "gpu/graph.h"
#include "gpu/ops/matmul.h"

namespace recon::gpu::ops {

// How a weight is stored: PyTorch's [N, K] (out, in), or transposed to [K, N] (in, out), which the
// tensor-core GEMM reads 3–15 % faster (B row-major; MatmulBenchTest.CoopMatTileSweep, H200).
// A [K, N] weight must fit one binding (matmul cannot split a row-major B into windows).
enum class WeightLayout : uint8_t { kOutIn, kInOut };

// x [..., K], weight [N, K] ([K, N] with kInOut), bias [N] or none, out [..., N] (same leading dims
// as x), residual (in `epilogue`) shaped like out and allowed to be out itself (in-place residual
// add). All f32 or all f16. `caps` (Runtime::caps()) selects the path.
Status linear(Graph& g, const Capabilities& caps, const Arg& x, const Arg& weight, const std::optional<Arg>& bias,
              const Arg& out, const Epilogue& epilogue = {}, GemmPath path = GemmPath::kAuto,
              WeightLayout layout = WeightLayout::kOutIn);

}  // namespace recon::gpu::ops
