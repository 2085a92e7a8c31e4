// Split-K plumbing shared by the GEMM cores (gemm_coopmat.glsl, gemm_scalar.glsl), which each
// define KSPLITS (specialisation constant 6) before including it. Workgroup z = image·KSPLITS +
// share; each share stores its fp32 partial tile to gemm_partials (tiles·KSPLITS·BM·BN floats,
// binding 5) and counts itself in its tile's counter (binding 6, zero before the dispatch). The
// workgroup that completes the count resets it to zero, for the graph's next split GEMM, whose
// workspace this is too (Graph::scratch), and adds the shares and runs the epilogue. The
// tensor-core core includes this always (with KSPLITS = 1 the bindings are unused and the host
// binds dummies), the scalar core in its _split variants only. The arrival is the classic
// fence-then-count (no Vulkan memory model, which the scalar core's devices need not have).

layout(binding = 5) coherent buffer GemmPartials { float gemm_partials[]; };
layout(binding = 6) coherent buffer GemmArrivals { uint gemm_arrivals[]; };
shared uint gemm_arrived_last;

// This workgroup's tile: x = M tiles, y = N tiles, image bz.
uint gemm_split_tile(uint bz) {
  return (bz * gl_NumWorkGroups.y + gl_WorkGroupID.y) * gl_NumWorkGroups.x + gl_WorkGroupID.x;
}

// Called by the whole workgroup after it stored its share of `tile`: releases the share and counts
// it. True (in every invocation) for the workgroup that completes the count, whose later reads of
// gemm_partials see every share.
bool gemm_split_arrive(uint tile) {
  memoryBarrierBuffer();
  barrier();
  if (gl_LocalInvocationIndex == 0u) {
    gemm_arrived_last = atomicAdd(gemm_arrivals[tile], 1u) == KSPLITS - 1u ? 1u : 0u;
    if (gemm_arrived_last != 0u) gemm_arrivals[tile] = 0u;  // every share has counted
  }
  barrier();
  if (gemm_arrived_last == 0u) return false;
  memoryBarrierBuffer();
  return true;
}
