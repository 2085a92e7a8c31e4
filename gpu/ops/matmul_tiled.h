// The runtime's simple tiled matrix product: C[M,N] = A[M,K] · B[K,N], row-major, fp32 accumulate.
// The scalar path every device runs (lavapipe included); the op library adds the fused and
// tensor-core variants.
#pragma once

#include "gpu/graph.h"

namespace recon::gpu::ops {

// `tile` is the square workgroup tile edge (specialisation constant); 16 unless tuning.
Status matmul_tiled(Graph& g, const Arg& a, const Arg& b, const Arg& c, uint32_t tile = 16);

}  // namespace recon::gpu::ops
