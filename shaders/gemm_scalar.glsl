// The scalar GEMM core (no tensor cores): C[bz] (M×N) = Σ_k A(m,k)·B(k,n) with fp32 accumulation,
// for every device. One workgroup computes a BM×BN tile; each of its WG_SIZE = (BM/TM)·(BN/TN)
// invocations holds a TM×TN register micro-tile whose rows are strided by BM/TM and columns by
// BN/TN (conflict-free shared reads, coalesced stores). A and B go through shared memory in BK
// slices; the next slice is fetched into registers while the current one is multiplied.
// Workgroup grid: x = M tiles, y = N tiles, z = batch·KSPLITS (M fastest: the workgroups that run
// together share one panel of B, typically the weights, and stream it from memory once). Ragged
// edges read zeros and skip stores. Split-K (KSPLITS > 1, gemm_split_k.glsl) for grids that leave
// most of a GPU idle: at ResNet-50's batch 1 the 3×3 convolution of 512 channels at 7×7 is 8
// tiles of 64×64 with 288 K slices each.
// The epilogue stages one micro-row of the tile at a time in shared memory and stores it in a
// rolled loop, so the includer's (possibly long: GELU, erf) store code is instantiated once
// rather than TM·TN times; that keeps pipeline creation on lavapipe near a second. It needs
// (BM/TM)·BN <= BK·(BM+BN+2) floats, which the host's tile table satisfies.
//
// The including shader supplies the operands, which is how matmul, implicit-GEMM convolution
// and transposed convolution share this loop. Before the #include it defines:
//   GEMM_M, GEMM_N, GEMM_K            uint expressions (the problem size)
//   A_K_CONTIGUOUS, B_N_CONTIGUOUS    bool expressions, uniform over the dispatch: is A(m,k+1)
//                                     next to A(m,k), is B(k,n+1) next to B(k,n) in memory (picks
//                                     the coalesced thread order of the tile loads)
//   float gemm_load_a(uint bz, uint m, uint k)      called only for m < M, k < K
//   float gemm_load_b(uint bz, uint k, uint n)      called only for k < K, n < N
//   void gemm_store(uint bz, uint m, uint n, float acc)   called only for m < M, n < N
// Specialisation constants 0..6 belong to this core; includers number theirs from 8. Compiled with
// GEMM_SPLIT_K=1 (the _split variants) it splits over K and uses bindings 5 and 6; the plain
// variants leave them undeclared, so that the dummies bound there are not taken for written ones.
#ifndef GEMM_SPLIT_K
#define GEMM_SPLIT_K 0
#endif
#extension GL_EXT_control_flow_attributes : require

layout(constant_id = 0) const uint WG_SIZE = 256;
layout(constant_id = 1) const uint BM = 64;
layout(constant_id = 2) const uint BN = 64;
layout(constant_id = 3) const uint BK = 16;
layout(constant_id = 4) const uint TM = 4;
layout(constant_id = 5) const uint TN = 4;
layout(local_size_x_id = 0) in;
#if GEMM_SPLIT_K
layout(constant_id = 6) const uint KSPLITS = 2;
#include "gemm_split_k.glsl"
#else
const uint KSPLITS = 1;
#endif

const uint GEMM_THREADS_M = BM / TM;
const uint GEMM_THREADS_N = BN / TN;
// One word of padding per shared row keeps the transposing tile stores free of bank conflicts.
const uint GEMM_SA_STRIDE = BM + 1;
const uint GEMM_SB_STRIDE = BN + 1;
const uint GEMM_A_PER_THREAD = (BM * BK + WG_SIZE - 1) / WG_SIZE;
const uint GEMM_B_PER_THREAD = (BN * BK + WG_SIZE - 1) / WG_SIZE;

// A slice [k][m] at 0, B slice [k][n] at GEMM_SB_BASE; the epilogue reuses the whole array.
const uint GEMM_SB_BASE = BK * GEMM_SA_STRIDE;
shared float gemm_smem[BK * (GEMM_SA_STRIDE + GEMM_SB_STRIDE)];

// Tile-local coordinates of the i-th element an invocation moves, in coalesced order.
void gemm_a_coord(uint idx, out uint mm, out uint kk) {
  if (A_K_CONTIGUOUS) {
    kk = idx % BK;
    mm = idx / BK;
  } else {
    mm = idx % BM;
    kk = idx / BM;
  }
}
void gemm_b_coord(uint idx, out uint kk, out uint nn) {
  if (B_N_CONTIGUOUS) {
    nn = idx % BN;
    kk = idx / BN;
  } else {
    kk = idx % BK;
    nn = idx / BK;
  }
}

void main() {
  const uint tid = gl_LocalInvocationIndex;
  const uint tx = tid % GEMM_THREADS_N;
  const uint ty = tid / GEMM_THREADS_N;
  const uint bz = gl_WorkGroupID.z / KSPLITS, split = gl_WorkGroupID.z % KSPLITS;
  const uint m0 = gl_WorkGroupID.x * BM;
  const uint n0 = gl_WorkGroupID.y * BN;
  const uint M = GEMM_M, N = GEMM_N, K = GEMM_K;

  float acc[TM * TN];
  [[unroll]] for (uint i = 0; i < TM * TN; ++i) acc[i] = 0.0f;
  float ra[GEMM_A_PER_THREAD];
  float rb[GEMM_B_PER_THREAD];

  // This workgroup's K slices: [kt0, kt0 + nk) of all (K + BK − 1) / BK.
  const uint nk_all = (K + BK - 1) / BK, per_split = (nk_all + KSPLITS - 1) / KSPLITS;
  const uint kt0 = min(split * per_split, nk_all);
  const uint nk = min(kt0 + per_split, nk_all) - kt0;
  // Prefetch slice 0.
  [[unroll]] for (uint i = 0; i < GEMM_A_PER_THREAD; ++i) {
    uint idx = i * WG_SIZE + tid, mm, kk;
    gemm_a_coord(idx, mm, kk);
    ra[i] = 0.0f;
    if (idx < BM * BK && m0 + mm < M && kt0 * BK + kk < K) ra[i] = gemm_load_a(bz, m0 + mm, kt0 * BK + kk);
  }
  [[unroll]] for (uint i = 0; i < GEMM_B_PER_THREAD; ++i) {
    uint idx = i * WG_SIZE + tid, kk, nn;
    gemm_b_coord(idx, kk, nn);
    rb[i] = 0.0f;
    if (idx < BN * BK && kt0 * BK + kk < K && n0 + nn < N) rb[i] = gemm_load_b(bz, kt0 * BK + kk, n0 + nn);
  }

  for (uint kt = 0; kt < nk; ++kt) {
    barrier();  // everyone is done reading the previous slice
    [[unroll]] for (uint i = 0; i < GEMM_A_PER_THREAD; ++i) {
      uint idx = i * WG_SIZE + tid, mm, kk;
      gemm_a_coord(idx, mm, kk);
      if (idx < BM * BK) gemm_smem[kk * GEMM_SA_STRIDE + mm] = ra[i];
    }
    [[unroll]] for (uint i = 0; i < GEMM_B_PER_THREAD; ++i) {
      uint idx = i * WG_SIZE + tid, kk, nn;
      gemm_b_coord(idx, kk, nn);
      if (idx < BN * BK) gemm_smem[GEMM_SB_BASE + kk * GEMM_SB_STRIDE + nn] = rb[i];
    }
    barrier();

    // Fetch the next slice while this one is multiplied.
    if (kt + 1 < nk) {
      const uint k0 = (kt0 + kt + 1) * BK;
      [[unroll]] for (uint i = 0; i < GEMM_A_PER_THREAD; ++i) {
        uint idx = i * WG_SIZE + tid, mm, kk;
        gemm_a_coord(idx, mm, kk);
        ra[i] = 0.0f;
        if (idx < BM * BK && m0 + mm < M && k0 + kk < K) ra[i] = gemm_load_a(bz, m0 + mm, k0 + kk);
      }
      [[unroll]] for (uint i = 0; i < GEMM_B_PER_THREAD; ++i) {
        uint idx = i * WG_SIZE + tid, kk, nn;
        gemm_b_coord(idx, kk, nn);
        rb[i] = 0.0f;
        if (idx < BN * BK && k0 + kk < K && n0 + nn < N) rb[i] = gemm_load_b(bz, k0 + kk, n0 + nn);
      }
    }

    [[unroll]] for (uint kk = 0; kk < BK; ++kk) {
      float av[TM];
      float bv[TN];
      [[unroll]] for (uint i = 0; i < TM; ++i) av[i] = gemm_smem[kk * GEMM_SA_STRIDE + ty + i * GEMM_THREADS_M];
      [[unroll]] for (uint j = 0; j < TN; ++j) bv[j] = gemm_smem[GEMM_SB_BASE + kk * GEMM_SB_STRIDE + tx + j * GEMM_THREADS_N];
      [[unroll]] for (uint i = 0; i < TM; ++i) {
        [[unroll]] for (uint j = 0; j < TN; ++j) acc[i * TN + j] = fma(av[i], bv[j], acc[i * TN + j]);
      }
    }
  }

#if GEMM_SPLIT_K
  {
    // Element (ty + i·THREADS_M, tx + j·THREADS_N) of the tile at that offset of each share's
    // partial tile; the last share to arrive adds them all in share order (its own read back), so
    // that runs repeat to the bit whichever arrived last.
    const uint tile = gemm_split_tile(bz), tile_base = tile * KSPLITS * BM * BN;
    [[unroll]] for (uint i = 0; i < TM; ++i) {
      [[unroll]] for (uint j = 0; j < TN; ++j) {
        gemm_partials[tile_base + split * BM * BN + (ty + i * GEMM_THREADS_M) * BN + tx + j * GEMM_THREADS_N] =
            acc[i * TN + j];
      }
    }
    if (!gemm_split_arrive(tile)) return;
    [[unroll]] for (uint i = 0; i < TM * TN; ++i) acc[i] = 0.0f;
    for (uint s = 0; s < KSPLITS; ++s) {
      [[unroll]] for (uint i = 0; i < TM; ++i) {
        [[unroll]] for (uint j = 0; j < TN; ++j) {
          acc[i * TN + j] +=
              gemm_partials[tile_base + s * BM * BN + (ty + i * GEMM_THREADS_M) * BN + tx + j * GEMM_THREADS_N];
        }
      }
    }
  }
#endif

  // Epilogue, one micro-row i at a time: stage rows m0 + i·THREADS_M + [0, THREADS_M) × BN.
  [[dont_unroll]] for (uint i = 0; i < TM; ++i) {
    barrier();  // the last slice's reads (or the previous row's stores) are done
    [[unroll]] for (uint ii = 0; ii < TM; ++ii) {
      if (ii == i) {  // static indices keep acc[] in registers
        [[unroll]] for (uint j = 0; j < TN; ++j) gemm_smem[ty * BN + tx + j * GEMM_THREADS_N] = acc[ii * TN + j];
      }
    }
    barrier();
    [[dont_unroll]] for (uint e = tid; e < GEMM_THREADS_M * BN; e += WG_SIZE) {
      const uint m = m0 + i * GEMM_THREADS_M + e / BN, n = n0 + e % BN;
      if (m < M && n < N) gemm_store(bz, m, n, gemm_smem[e]);
    }
  }
}
