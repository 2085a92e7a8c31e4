// The scalar GEMM core (no tensor cores): C[bz] (M×N) = Σ_k A(m,k)·B(k,n) with fp32 accumulation,
// for every device. One workgroup computes a BM×BN tile; each of its WG_SIZE = (BM/TM)·(BN/TN)
// invocations holds a TM×TN register micro-tile. Where TM (TN) is a multiple of 4 its rows
// (columns) come in runs of 4 adjacent ones, one run every BM·4/TM rows, so that each step of the
// inner loop reads them from shared memory as 16-byte words (one read of 4 where there were 4);
// otherwise they are strided by BM/TM (BN/TN). Either way a subgroup's reads are conflict-free
// and its stores to C coalesced. A and B go through shared memory in BK slices, [k][m] and [k][n]
// (one 16-byte pad per row), double-buffered: the next slice is fetched into registers while the
// current one is multiplied and stored to the other buffer after it, one barrier per slice. On an
// H200 ResNet-50's channels-last convolutions in fp32 at batch 32 ran at 9–15 TFLOP/s when the
// micro-tiles read a float at a time, with two barriers a slice and one element a load; they run
// at 15–25 now (Conv2dNhwcSweepTest.ResNet50Batch32ScalarTileSweep).
// Workgroup grid: x = M tiles, y = N tiles, z = batch·KSPLITS (M fastest: the workgroups that run
// together share one panel of B, typically the weights, and stream it from memory once). Ragged
// edges read zeros and skip stores. Split-K (KSPLITS > 1, gemm_split_k.glsl) for grids that leave
// most of a GPU idle: at ResNet-50's batch 1 the 3×3 convolution of 512 channels at 7×7 is 8
// tiles of 64×64 with 288 K slices each.
// The epilogue stores from registers, in a rolled loop over the micro-tile's runs, so that the
// includer's (possibly long: GELU, erf) store code is instantiated once or twice rather than
// TM·TN times; that keeps pipeline creation on lavapipe near a second.
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
// and may define, to move 4 adjacent elements at a time (in one 16-byte or 8-byte access where
// the host sets the operand's bit of constant 7, VEC, after checking that the elements' extent
// along the contiguous direction, their row starts and offsets are multiples of 4):
//   GEMM_LOAD_A4 with vec4 gemm_load_a4(uint bz, uint m, uint k)   A(m, k..k+3) where A is
//       K-contiguous, else A(m..m+3, k); called for m < M, k < K (the other three then in range)
//   GEMM_LOAD_B4 with vec4 gemm_load_b4(uint bz, uint k, uint n)   B(k, n..n+3) where B is
//       N-contiguous, else B(k..k+3, n); likewise
//   GEMM_STORE4 with vec4 gemm_load_epilogue4(uint bz, uint m, uint n)   the epilogue operand
//       (the residual) at columns n..n+3 of row m, zeros without one, and
//       void gemm_store4(uint bz, uint m, uint n, vec4 acc, vec4 operand)   columns n..n+3 of row
//       m (m < M, n + 3 < N); the core loads the operands of 4 rows before it stores any (a load
//       after a store must wait for it: the buffers may alias)
// Specialisation constants 0..7 belong to this core; includers number theirs from 8. Compiled with
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
// Bits of VEC (mirrored by kGemmVecA/B/C in gpu/ops/matmul.h).
#define GEMM_VEC_A 1u
#define GEMM_VEC_B 2u
#define GEMM_VEC_C 4u
layout(constant_id = 7) const uint VEC = 0;

#ifdef GEMM_LOAD_A4
const bool GEMM_A4 = (VEC & GEMM_VEC_A) != 0u;
#else
const bool GEMM_A4 = false;
vec4 gemm_load_a4(uint bz, uint m, uint k) { return vec4(0.0); }
#endif
#ifdef GEMM_LOAD_B4
const bool GEMM_B4 = (VEC & GEMM_VEC_B) != 0u;
#else
const bool GEMM_B4 = false;
vec4 gemm_load_b4(uint bz, uint k, uint n) { return vec4(0.0); }
#endif

const uint GEMM_THREADS_M = BM / TM;
const uint GEMM_THREADS_N = BN / TN;
// Run lengths of the micro-tile (4 or 1) and the distance between a thread's runs.
const uint GEMM_VA = TM % 4u == 0u ? 4u : 1u;
const uint GEMM_VB = TN % 4u == 0u ? 4u : 1u;
const uint GEMM_RUN_M = GEMM_THREADS_M * GEMM_VA;
const uint GEMM_RUN_N = GEMM_THREADS_N * GEMM_VB;
const uint GEMM_RUNS_N = TN / GEMM_VB;  // column runs per micro-row
#ifdef GEMM_STORE4
const bool GEMM_C4 = (VEC & GEMM_VEC_C) != 0u && GEMM_VB == 4u;
#else
const bool GEMM_C4 = false;
vec4 gemm_load_epilogue4(uint bz, uint m, uint n) { return vec4(0.0); }
void gemm_store4(uint bz, uint m, uint n, vec4 acc, vec4 operand) {}
#endif

// Shared slices in 16-byte words: A [buf][k][m], B [buf][k][n], rows padded by one word.
const uint GEMM_SA = BM / 4u + 1u;
const uint GEMM_SB = BN / 4u + 1u;
shared vec4 gemm_sa[2 * BK * GEMM_SA];
shared vec4 gemm_sb[2 * BK * GEMM_SB];

// Elements an invocation moves per slice, one at a time or 4 at a time.
const uint GEMM_A_PER_THREAD = (BM * BK + WG_SIZE - 1) / WG_SIZE;
const uint GEMM_B_PER_THREAD = (BN * BK + WG_SIZE - 1) / WG_SIZE;
const uint GEMM_A4_PER_THREAD = (BM * BK / 4u + WG_SIZE - 1) / WG_SIZE;
const uint GEMM_B4_PER_THREAD = (BN * BK / 4u + WG_SIZE - 1) / WG_SIZE;

// Tile-local coordinates of the i-th element (or first of 4) an invocation moves, in coalesced
// order: consecutive invocations along the operand's contiguous direction.
void gemm_a_coord(uint idx, uint run, out uint mm, out uint kk) {
  if (A_K_CONTIGUOUS) {
    kk = (idx % (BK / run)) * run;
    mm = idx / (BK / run);
  } else {
    mm = (idx % (BM / run)) * run;
    kk = idx / (BM / run);
  }
}
void gemm_b_coord(uint idx, uint run, out uint kk, out uint nn) {
  if (B_N_CONTIGUOUS) {
    nn = (idx % (BN / run)) * run;
    kk = idx / (BN / run);
  } else {
    kk = (idx % (BK / run)) * run;
    nn = idx / (BK / run);
  }
}

// Row and column (tile-local) of micro-tile entry i, j of invocation (tx, ty).
uint gemm_row(uint ty, uint i) { return (i / GEMM_VA) * GEMM_RUN_M + ty * GEMM_VA + i % GEMM_VA; }
uint gemm_col(uint tx, uint j) { return (j / GEMM_VB) * GEMM_RUN_N + tx * GEMM_VB + j % GEMM_VB; }

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
  float ra[GEMM_A_PER_THREAD], rb[GEMM_B_PER_THREAD];
  vec4 ra4[GEMM_A4_PER_THREAD], rb4[GEMM_B4_PER_THREAD];

  // This workgroup's K slices: [kt0, kt0 + nk) of all (K + BK − 1) / BK.
  const uint nk_all = (K + BK - 1) / BK, per_split = (nk_all + KSPLITS - 1) / KSPLITS;
  const uint kt0 = min(split * per_split, nk_all);
  const uint nk = min(kt0 + per_split, nk_all) - kt0;

  // Global → registers for the slice starting at k0.
#define GEMM_FETCH(k0)                                                                             \
  if (GEMM_A4) {                                                                                   \
    [[unroll]] for (uint i = 0; i < GEMM_A4_PER_THREAD; ++i) {                                     \
      uint idx = i * WG_SIZE + tid, mm, kk;                                                        \
      gemm_a_coord(idx, 4u, mm, kk);                                                               \
      ra4[i] = vec4(0.0);                                                                          \
      if (idx < BM * BK / 4u && m0 + mm < M && (k0) + kk < K) ra4[i] = gemm_load_a4(bz, m0 + mm, (k0) + kk); \
    }                                                                                              \
  } else {                                                                                         \
    [[unroll]] for (uint i = 0; i < GEMM_A_PER_THREAD; ++i) {                                      \
      uint idx = i * WG_SIZE + tid, mm, kk;                                                        \
      gemm_a_coord(idx, 1u, mm, kk);                                                               \
      ra[i] = 0.0f;                                                                                \
      if (idx < BM * BK && m0 + mm < M && (k0) + kk < K) ra[i] = gemm_load_a(bz, m0 + mm, (k0) + kk); \
    }                                                                                              \
  }                                                                                                \
  if (GEMM_B4) {                                                                                   \
    [[unroll]] for (uint i = 0; i < GEMM_B4_PER_THREAD; ++i) {                                     \
      uint idx = i * WG_SIZE + tid, kk, nn;                                                        \
      gemm_b_coord(idx, 4u, kk, nn);                                                               \
      rb4[i] = vec4(0.0);                                                                          \
      if (idx < BN * BK / 4u && (k0) + kk < K && n0 + nn < N) rb4[i] = gemm_load_b4(bz, (k0) + kk, n0 + nn); \
    }                                                                                              \
  } else {                                                                                         \
    [[unroll]] for (uint i = 0; i < GEMM_B_PER_THREAD; ++i) {                                      \
      uint idx = i * WG_SIZE + tid, kk, nn;                                                        \
      gemm_b_coord(idx, 1u, kk, nn);                                                               \
      rb[i] = 0.0f;                                                                                \
      if (idx < BN * BK && (k0) + kk < K && n0 + nn < N) rb[i] = gemm_load_b(bz, (k0) + kk, n0 + nn); \
    }                                                                                              \
  }

  // Registers → shared buffer `buf`: 4 loaded along the slice's rows go in as one word, 4 along
  // K as four floats of four rows.
#define GEMM_STASH(buf)                                                                            \
  if (GEMM_A4) {                                                                                   \
    [[unroll]] for (uint i = 0; i < GEMM_A4_PER_THREAD; ++i) {                                     \
      uint idx = i * WG_SIZE + tid, mm, kk;                                                        \
      gemm_a_coord(idx, 4u, mm, kk);                                                               \
      if (idx < BM * BK / 4u) {                                                                    \
        const uint row = (buf) * BK + kk;                                                          \
        if (A_K_CONTIGUOUS) {                                                                      \
          [[unroll]] for (uint e = 0; e < 4u; ++e) gemm_sa[(row + e) * GEMM_SA + mm / 4u][mm % 4u] = ra4[i][e]; \
        } else {                                                                                   \
          gemm_sa[row * GEMM_SA + mm / 4u] = ra4[i];                                               \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  } else {                                                                                         \
    [[unroll]] for (uint i = 0; i < GEMM_A_PER_THREAD; ++i) {                                      \
      uint idx = i * WG_SIZE + tid, mm, kk;                                                        \
      gemm_a_coord(idx, 1u, mm, kk);                                                               \
      if (idx < BM * BK) gemm_sa[((buf) * BK + kk) * GEMM_SA + mm / 4u][mm % 4u] = ra[i];         \
    }                                                                                              \
  }                                                                                                \
  if (GEMM_B4) {                                                                                   \
    [[unroll]] for (uint i = 0; i < GEMM_B4_PER_THREAD; ++i) {                                     \
      uint idx = i * WG_SIZE + tid, kk, nn;                                                        \
      gemm_b_coord(idx, 4u, kk, nn);                                                               \
      if (idx < BN * BK / 4u) {                                                                    \
        const uint row = (buf) * BK + kk;                                                          \
        if (B_N_CONTIGUOUS) {                                                                      \
          gemm_sb[row * GEMM_SB + nn / 4u] = rb4[i];                                               \
        } else {                                                                                   \
          [[unroll]] for (uint e = 0; e < 4u; ++e) gemm_sb[(row + e) * GEMM_SB + nn / 4u][nn % 4u] = rb4[i][e]; \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  } else {                                                                                         \
    [[unroll]] for (uint i = 0; i < GEMM_B_PER_THREAD; ++i) {                                      \
      uint idx = i * WG_SIZE + tid, kk, nn;                                                        \
      gemm_b_coord(idx, 1u, kk, nn);                                                               \
      if (idx < BN * BK) gemm_sb[((buf) * BK + kk) * GEMM_SB + nn / 4u][nn % 4u] = rb[i];         \
    }                                                                                              \
  }

  if (nk > 0) {
    GEMM_FETCH(kt0 * BK)
    GEMM_STASH(0u)
  }
  barrier();
  for (uint kt = 0; kt < nk; ++kt) {
    const uint buf = kt & 1u;
    const bool more = kt + 1 < nk;
    if (more) {
      GEMM_FETCH((kt0 + kt + 1) * BK)
    }
    [[unroll]] for (uint kk = 0; kk < BK; ++kk) {
      float av[TM], bv[TN];
      const uint row = buf * BK + kk;
      [[unroll]] for (uint g = 0; g < TM / GEMM_VA; ++g) {
        const uint at = g * GEMM_RUN_M + ty * GEMM_VA;  // a multiple of 4 in runs of 4
        if (GEMM_VA == 4u) {
          const vec4 x = gemm_sa[row * GEMM_SA + at / 4u];
          av[g * 4u] = x.x, av[g * 4u + 1u] = x.y, av[g * 4u + 2u] = x.z, av[g * 4u + 3u] = x.w;
        } else {
          av[g] = gemm_sa[row * GEMM_SA + at / 4u][at % 4u];
        }
      }
      [[unroll]] for (uint g = 0; g < TN / GEMM_VB; ++g) {
        const uint at = g * GEMM_RUN_N + tx * GEMM_VB;
        if (GEMM_VB == 4u) {
          const vec4 x = gemm_sb[row * GEMM_SB + at / 4u];
          bv[g * 4u] = x.x, bv[g * 4u + 1u] = x.y, bv[g * 4u + 2u] = x.z, bv[g * 4u + 3u] = x.w;
        } else {
          bv[g] = gemm_sb[row * GEMM_SB + at / 4u][at % 4u];
        }
      }
      [[unroll]] for (uint i = 0; i < TM; ++i) {
        [[unroll]] for (uint j = 0; j < TN; ++j) acc[i * TN + j] = fma(av[i], bv[j], acc[i * TN + j]);
      }
    }
    if (more) {
      GEMM_STASH(buf ^ 1u)
    }
    barrier();
  }
#undef GEMM_FETCH
#undef GEMM_STASH

#if GEMM_SPLIT_K
  {
    // Entry (i, j) of the micro-tile at its tile position in each share's partial tile; the last
    // share to arrive adds them all in share order (its own read back), so that runs repeat to the
    // bit whichever arrived last.
    const uint tile = gemm_split_tile(bz), tile_base = tile * KSPLITS * BM * BN;
    [[unroll]] for (uint i = 0; i < TM; ++i) {
      [[unroll]] for (uint j = 0; j < TN; ++j) {
        gemm_partials[tile_base + split * BM * BN + gemm_row(ty, i) * BN + gemm_col(tx, j)] = acc[i * TN + j];
      }
    }
    if (!gemm_split_arrive(tile)) return;
    [[unroll]] for (uint i = 0; i < TM * TN; ++i) acc[i] = 0.0f;
    for (uint s = 0; s < KSPLITS; ++s) {
      [[unroll]] for (uint i = 0; i < TM; ++i) {
        [[unroll]] for (uint j = 0; j < TN; ++j) {
          acc[i * TN + j] += gemm_partials[tile_base + s * BM * BN + gemm_row(ty, i) * BN + gemm_col(tx, j)];
        }
      }
    }
  }
#endif

  // Epilogue, one run of rows (GEMM_VA of them) at a time: the epilogue operands of the run's
  // micro-rows first (GEMM_C4), then the stores, each micro-row's columns in runs of GEMM_VB.
  [[dont_unroll]] for (uint g = 0; g < TM / GEMM_VA; ++g) {
    vec4 operand[GEMM_VA * GEMM_RUNS_N];
    [[unroll]] for (uint q = 0; q < GEMM_VA * GEMM_RUNS_N; ++q) {
      const uint m = m0 + gemm_row(ty, g * GEMM_VA + q / GEMM_RUNS_N), n = n0 + gemm_col(tx, (q % GEMM_RUNS_N) * GEMM_VB);
      operand[q] = vec4(0.0);
      if (GEMM_C4 && m < M && n < N) operand[q] = gemm_load_epilogue4(bz, m, n);
    }
    [[dont_unroll]] for (uint q = 0; q < GEMM_VA * GEMM_RUNS_N; ++q) {
      const uint i = g * GEMM_VA + q / GEMM_RUNS_N, jr = q % GEMM_RUNS_N;
      // The run's values by static indices, which keep acc[] in registers.
      vec4 v = vec4(0.0), op = vec4(0.0);
      [[unroll]] for (uint ii = 0; ii < TM; ++ii) {
        [[unroll]] for (uint rr = 0; rr < GEMM_RUNS_N; ++rr) {
          if (ii == i && rr == jr) {
            [[unroll]] for (uint e = 0; e < GEMM_VB; ++e) v[e] = acc[ii * TN + rr * GEMM_VB + e];
          }
        }
      }
      [[unroll]] for (uint qq = 0; qq < GEMM_VA * GEMM_RUNS_N; ++qq) {
        if (qq == q) op = operand[qq];
      }
      const uint m = m0 + gemm_row(ty, i), n = n0 + gemm_col(tx, jr * GEMM_VB);
      if (m >= M || n >= N) continue;
      if (GEMM_C4) {
        gemm_store4(bz, m, n, v, op);
      } else {
        for (uint e = 0; e < GEMM_VB && n + e < N; ++e) gemm_store(bz, m, n + e, v[e]);
      }
    }
  }
}
