// The tensor-core GEMM core (VK_NV_cooperative_matrix, fp16 A/B, fp32 accumulation; fp32 A/B as
// two fp16 parts each with GEMM_SPLIT, gemm_io.glsl):
// C[bz] (M×N) = Σ_k A(m,k)·B(k,n). One workgroup computes a BM×BN tile with WM×WN subgroups,
// each owning (BM/WM)×(BN/WN) = FM×FN fragments of 16×16 fp32 accumulators. A and B slices of
// depth BK are staged through shared memory in their storage orientation (row- or column-major,
// one 16-byte pad per row against bank conflicts), double-buffered: the next slice's 16-byte
// global loads are issued before the current slice's MMAs and stored into the other buffer
// after them, so one barrier per slice suffices. With PREFETCH = 2 a second register set keeps
// the loads of two slices in flight: on an H200 the loop is bound by the global-load round trip of
// each slice, not by the MMAs (time ≈ waves × slices × ~0.9 µs on the MASt3R shapes). Subgroups load 16×16×16 fp16 fragments from
// shared memory (coopMatLoadNV) and multiply-accumulate. The epilogue spills each accumulator
// fragment through a per-subgroup scratch in shared memory and applies the includer's store
// element-wise, with bounds checks (any M, N, K).
// Workgroup grid: x = M tiles, y = N tiles, z = batch·KSPLITS (M fastest, so that concurrent
// workgroups share B panels, typically the weights). WG_SIZE must equal WM·WN·subgroup size.
// Split-K (KSPLITS > 1, for grids too small to fill the device; gemm_split_k.glsl): workgroup
// z % KSPLITS takes its share of the K slices and stores its fp32 accumulators to gemm_partials;
// the last workgroup of a tile to arrive adds the shares, in share order whichever arrived last,
// in the epilogue, element by element (adding cooperative matrices crashes the optimiser of
// Debian's glslc), so the includer's stores are unchanged. Bindings 5 and 6 belong to this core.
// Shared memory: 2·16·(A_ROWS·(A_COLS/8+1) + B_ROWS·(B_COLS/8+1)) bytes; 40 KiB at
// BM = BN = 128, BK = 32 (the host checks it against maxComputeSharedMemorySize), the A part at least
// the epilogue's 1 KiB per subgroup (GEMM_SCRATCH). GEMM_SPLIT stages
// the lo parts beside the hi parts (twice that: 41 KiB at 128×128, BK = 16, B row-major) and keeps two
// more sets of accumulators: each slice's hi·hi products, added to the first with rounding adds, and
// the hi·lo + lo·hi products, added, scaled by 2⁻¹¹, before the epilogue.
//
// The includer includes gemm_io.glsl and defines before the #include:
//   GEMM_M, GEMM_N, GEMM_K            uint expressions
//   A_COLMAJOR, B_COLMAJOR            bool constant expressions: A stored [K][M] (else [M][K]),
//                                     B stored [N][K] (else [K][N])
//   GemmLoad8 gemm_load_a8(uint bz, uint row, uint col)  8 values A[row][col..col+7] in
//       storage orientation (row = m, col = k when row-major; row = k, col = m when column-major),
//       zero outside the matrix; col is a multiple of 8
//   GemmLoad8 gemm_load_b8(uint bz, uint row, uint col)  likewise for B (row = k, col = n when
//       row-major; row = n, col = k when column-major)
//   void gemm_store(uint bz, uint m, uint n, float acc)   called only for m < M, n < N
//   void gemm_store_row8(uint bz, uint m, uint n, float acc[8])   columns n..min(n + 8, N) − 1 of
//       row m < M (n < N, a multiple of 8): every load it needs (C, bias, residual) issued before
//       its first store, in 16-byte words where C allows them
// and may define
//   GEMM_STORE8                       bool constant expression: C and the epilogue operands allow
//                                     16-byte words (the host checks their alignment), so the
//                                     epilogue hands every row of 8 to gemm_store_row8 (split-K
//                                     epilogues always do)
// and, to load an epilogue operand (the residual) of every fragment before the first store, for
// 16-byte rows of unsplit tiles:
//   GEMM_ROW8_PREFETCH                bool constant expression: whether to, with
//   GemmLoad8 gemm_row8_prefetch(uint bz, uint m, uint n)   the operand's 8 values at row m,
//       columns n..n + 7 (zeros without the operand, or unless m < M and n + 8 ≤ N)
//   void gemm_store8_prefetched(uint bz, uint m, uint n, float acc[8], GemmLoad8 pre)   as
//       gemm_store_row8 for a whole row of 8 (m < M, n + 8 ≤ N) with the prefetched operand
// and, for an epilogue that needs columns 16 apart together (RoPE at head_dim 64):
//   GEMM_PAIR_STORE                   bool constant expression: the epilogue spills the two
//                                     fragments of each fragment row at once (needs GEMM_FN == 2,
//                                     KSPLITS == 1 and 64 uvec4 per subgroup in each staging
//                                     buffer; the host checks) and calls, instead of the above,
//   void gemm_store_pair(uint bz, uint m, uint n, float lo[8], float hi[8])   columns n..n+7 and
//       n+16..n+23 of row m < M (n a multiple of 8)
// Specialisation constants 0..7 belong to this core; includers number theirs from 8.
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require

#ifndef GEMM_SPLIT
#error "include gemm_io.glsl before gemm_coopmat.glsl"
#endif

layout(constant_id = 0) const uint WG_SIZE = 256;
layout(constant_id = 1) const uint BM = 128;
layout(constant_id = 2) const uint BN = 128;
layout(constant_id = 3) const uint BK = 32;
layout(constant_id = 4) const uint WM = 4;  // subgroups along M
layout(constant_id = 5) const uint WN = 2;  // subgroups along N
layout(constant_id = 6) const uint KSPLITS = 1;
#if GEMM_SPLIT
// Constant 7 of the split path: 1 rounds each K slice's hi·hi sum into the total (below), 0 leaves
// the whole sum to the tensor cores' accumulation. One slice of loads in flight.
layout(constant_id = 7) const uint ROUND_SLICES = 1;
const uint PREFETCH = 1;
#else
layout(constant_id = 7) const uint PREFETCH = 1;  // slices of global loads in flight (1 or 2)
#endif
layout(local_size_x_id = 0) in;

#include "gemm_split_k.glsl"
layout(binding = 5) coherent buffer GemmPartials4 { vec4 gemm_partials4[]; };

const uint GEMM_FM = BM / (WM * 16);
const uint GEMM_FN = BN / (WN * 16);
const uint GEMM_A_ROWS = A_COLMAJOR ? BK : BM;
const uint GEMM_A_COLS = A_COLMAJOR ? BM : BK;
const uint GEMM_B_ROWS = B_COLMAJOR ? BN : BK;
const uint GEMM_B_COLS = B_COLMAJOR ? BK : BN;
const uint GEMM_A_STRIDE = GEMM_A_COLS / 8 + 1;  // row stride in uvec4 (8 fp16 each)
const uint GEMM_B_STRIDE = GEMM_B_COLS / 8 + 1;
const uint GEMM_A_TILE = GEMM_A_ROWS * GEMM_A_STRIDE;
const uint GEMM_B_TILE = GEMM_B_ROWS * GEMM_B_STRIDE;
const uint GEMM_A_VECS = GEMM_A_ROWS * GEMM_A_COLS / 8;
const uint GEMM_B_VECS = GEMM_B_ROWS * GEMM_B_COLS / 8;
const uint GEMM_A_PER_THREAD = (GEMM_A_VECS + WG_SIZE - 1) / WG_SIZE;
const uint GEMM_B_PER_THREAD = (GEMM_B_VECS + WG_SIZE - 1) / WG_SIZE;

// The epilogue spills each subgroup's fragments through its own 16×16 fp32 (64 uvec4) of gemm_sa,
// which a 64-row tile's slices at BK = 16 (2·64·3 uvec4 for 8 subgroups' 512) would not hold.
const uint GEMM_SCRATCH = WM * WN * 64;
shared uvec4 gemm_sa[2 * GEMM_A_TILE > GEMM_SCRATCH ? 2 * GEMM_A_TILE : GEMM_SCRATCH];
shared uvec4 gemm_sb[2 * GEMM_B_TILE];
#if GEMM_SPLIT
#include "fp16_split.glsl"
shared uvec4 gemm_sa_lo[2 * GEMM_A_TILE];
shared uvec4 gemm_sb_lo[2 * GEMM_B_TILE];

// A load's 8 fp32 values as hi and lo parts.
void gemm_split8(GemmLoad8 x, out uvec4 hi, out uvec4 lo) {
  uvec2 h0, l0, h1, l1;
  fp16_split4(x.lo, h0, l0);
  fp16_split4(x.hi, h1, l1);
  hi = uvec4(h0, h1);
  lo = uvec4(l0, l1);
}
#endif

// The 8 fp32 values of two spilled uvec4 (an accumulator fragment stored into gemm_sa/gemm_sb).
void gemm_unpack8(uvec4 lo, uvec4 hi, out float v[8]) {
  [[unroll]] for (uint i = 0; i < 4u; ++i) {
    v[i] = uintBitsToFloat(lo[i]);
    v[4u + i] = uintBitsToFloat(hi[i]);
  }
}

// Offset (in uvec4) of the 16×16 fragment at tile coordinates (r, c) in storage orientation.
uint gemm_frag_a(uint buf, uint m, uint k) {
  return buf * GEMM_A_TILE + (A_COLMAJOR ? k * GEMM_A_STRIDE + m / 8 : m * GEMM_A_STRIDE + k / 8);
}
uint gemm_frag_b(uint buf, uint k, uint n) {
  return buf * GEMM_B_TILE + (B_COLMAJOR ? n * GEMM_B_STRIDE + k / 8 : k * GEMM_B_STRIDE + n / 8);
}

void main() {
  const uint tid = gl_LocalInvocationIndex;
  const uint bz = gl_WorkGroupID.z / KSPLITS, split = gl_WorkGroupID.z % KSPLITS;
  const uint m0 = gl_WorkGroupID.x * BM;
  const uint n0 = gl_WorkGroupID.y * BN;
  const uint M = GEMM_M, N = GEMM_N, K = GEMM_K;
  const uint sg = gl_SubgroupID;
  const uint sg_m = (sg / WN) * GEMM_FM * 16;  // subgroup's first row inside the tile
  const uint sg_n = (sg % WN) * GEMM_FN * 16;

  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[GEMM_FM * GEMM_FN];
  [[unroll]] for (uint i = 0; i < GEMM_FM * GEMM_FN; ++i) acc[i] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0f);
#if GEMM_SPLIT
  // The tensor cores' fp32 accumulation truncates (Ootomo & Yokota, "Recovering single precision
  // accuracy from Tensor Cores", 2022): accumulated over K in the thousands, the hi·hi sums lose
  // ~1e-4 relative. So with ROUND_SLICES each slice's hi·hi products start from zero in acc_hh and
  // are added into acc with the shader's rounding fp32 adds (the end of GEMM_MMA). The hi·lo + lo·hi
  // terms, 2¹¹ smaller, stay on the tensor cores' accumulation in acc_lo. Measured on an H200
  // (MASt3R fp32, batch 1, against a float64 run of the reference): 1.07e-4 → 2.2e-5 for 90.9 →
  // 92.2 ms; in the fp16 mode's fp32 heads, whose error is the fp16 trunk's, it cost 4 % of batch 8.
  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc_hh[GEMM_FM * GEMM_FN];  // this slice's Σ hi·hi
  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc_lo[GEMM_FM * GEMM_FN];  // Σ hi·lo + lo·hi
  [[unroll]] for (uint i = 0; i < GEMM_FM * GEMM_FN; ++i) acc_lo[i] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0f);
#endif

  // This workgroup's K slices: [kt0, kt0 + nk) of all (K + BK − 1) / BK.
  const uint nk_all = (K + BK - 1) / BK, per_split = (nk_all + KSPLITS - 1) / KSPLITS;
  const uint kt0 = min(split * per_split, nk_all);
  const uint nk = min(kt0 + per_split, nk_all) - kt0;

  // Global → registers `ra`/`rb` for the slice starting at k0 (storage orientation: rows × cols/8
  // vectors).
#define GEMM_FETCH(ra, rb, k0)                                                           \
  [[unroll]] for (uint i = 0; i < GEMM_A_PER_THREAD; ++i) {                              \
    const uint v = i * WG_SIZE + tid;                                                    \
    const uint row = v / (GEMM_A_COLS / 8), col = (v % (GEMM_A_COLS / 8)) * 8;           \
    ra[i] = gemm_zero_load8();                                                           \
    if (v < GEMM_A_VECS) {                                                               \
      ra[i] = A_COLMAJOR ? gemm_load_a8(bz, (k0) + row, m0 + col)                        \
                         : gemm_load_a8(bz, m0 + row, (k0) + col);                       \
    }                                                                                    \
  }                                                                                      \
  [[unroll]] for (uint i = 0; i < GEMM_B_PER_THREAD; ++i) {                              \
    const uint v = i * WG_SIZE + tid;                                                    \
    const uint row = v / (GEMM_B_COLS / 8), col = (v % (GEMM_B_COLS / 8)) * 8;           \
    rb[i] = gemm_zero_load8();                                                           \
    if (v < GEMM_B_VECS) {                                                               \
      rb[i] = B_COLMAJOR ? gemm_load_b8(bz, n0 + row, (k0) + col)                        \
                         : gemm_load_b8(bz, (k0) + row, n0 + col);                       \
    }                                                                                    \
  }

  // Registers → shared buffer `buf` (with GEMM_SPLIT, as hi and lo parts).
#if GEMM_SPLIT
#define GEMM_STASH_ONE(sh, sh_lo, at, r) gemm_split8(r, sh[at], sh_lo[at])
#else
#define GEMM_STASH_ONE(sh, sh_lo, at, r) sh[at] = r
#endif
#define GEMM_STASH(ra, rb, buf)                                                          \
  [[unroll]] for (uint i = 0; i < GEMM_A_PER_THREAD; ++i) {                              \
    const uint v = i * WG_SIZE + tid;                                                    \
    const uint row = v / (GEMM_A_COLS / 8), col8 = v % (GEMM_A_COLS / 8);                \
    if (v < GEMM_A_VECS) {                                                               \
      GEMM_STASH_ONE(gemm_sa, gemm_sa_lo, (buf) * GEMM_A_TILE + row * GEMM_A_STRIDE + col8, ra[i]); \
    }                                                                                    \
  }                                                                                      \
  [[unroll]] for (uint i = 0; i < GEMM_B_PER_THREAD; ++i) {                              \
    const uint v = i * WG_SIZE + tid;                                                    \
    const uint row = v / (GEMM_B_COLS / 8), col8 = v % (GEMM_B_COLS / 8);                \
    if (v < GEMM_B_VECS) {                                                               \
      GEMM_STASH_ONE(gemm_sb, gemm_sb_lo, (buf) * GEMM_B_TILE + row * GEMM_B_STRIDE + col8, rb[i]); \
    }                                                                                    \
  }

  // The MMAs of the slice in shared buffer `buf`.
#if GEMM_SPLIT
#define GEMM_MMA(buf)                                                                     \
  if (ROUND_SLICES != 0) {                                                                \
    [[unroll]] for (uint i = 0; i < GEMM_FM * GEMM_FN; ++i) {                             \
      acc_hh[i] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0f);                         \
    }                                                                                     \
  }                                                                                       \
  [[unroll]] for (uint ks = 0; ks < BK; ks += 16) {                                       \
    fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fa[GEMM_FM], fa_lo[GEMM_FM];                 \
    [[unroll]] for (uint i = 0; i < GEMM_FM; ++i) {                                       \
      coopMatLoadNV(fa[i], gemm_sa, gemm_frag_a(buf, sg_m + i * 16, ks), GEMM_A_STRIDE, A_COLMAJOR); \
      coopMatLoadNV(fa_lo[i], gemm_sa_lo, gemm_frag_a(buf, sg_m + i * 16, ks), GEMM_A_STRIDE, A_COLMAJOR); \
    }                                                                                     \
    [[unroll]] for (uint j = 0; j < GEMM_FN; ++j) {                                       \
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fb, fb_lo;                                 \
      coopMatLoadNV(fb, gemm_sb, gemm_frag_b(buf, ks, sg_n + j * 16), GEMM_B_STRIDE, B_COLMAJOR); \
      coopMatLoadNV(fb_lo, gemm_sb_lo, gemm_frag_b(buf, ks, sg_n + j * 16), GEMM_B_STRIDE, B_COLMAJOR); \
      [[unroll]] for (uint i = 0; i < GEMM_FM; ++i) {                                     \
        if (ROUND_SLICES != 0) {                                                          \
          acc_hh[i * GEMM_FN + j] = coopMatMulAddNV(fa[i], fb, acc_hh[i * GEMM_FN + j]);  \
        } else {                                                                          \
          acc[i * GEMM_FN + j] = coopMatMulAddNV(fa[i], fb, acc[i * GEMM_FN + j]);        \
        }                                                                                 \
        acc_lo[i * GEMM_FN + j] = coopMatMulAddNV(fa[i], fb_lo, acc_lo[i * GEMM_FN + j]); \
        acc_lo[i * GEMM_FN + j] = coopMatMulAddNV(fa_lo[i], fb, acc_lo[i * GEMM_FN + j]); \
      }                                                                                   \
    }                                                                                     \
  }                                                                                       \
  /* Element by element (see split-K above): one type, so elements e are the same entries. */ \
  if (ROUND_SLICES != 0) {                                                                \
    [[unroll]] for (uint f = 0; f < GEMM_FM * GEMM_FN; ++f) {                             \
      [[unroll]] for (int e = 0; e < acc[f].length(); ++e) acc[f][e] += acc_hh[f][e];     \
    }                                                                                     \
  }
#else
#define GEMM_MMA(buf)                                                                     \
  [[unroll]] for (uint ks = 0; ks < BK; ks += 16) {                                       \
    fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fa[GEMM_FM];                                 \
    [[unroll]] for (uint i = 0; i < GEMM_FM; ++i) {                                       \
      coopMatLoadNV(fa[i], gemm_sa, gemm_frag_a(buf, sg_m + i * 16, ks), GEMM_A_STRIDE, A_COLMAJOR); \
    }                                                                                     \
    [[unroll]] for (uint j = 0; j < GEMM_FN; ++j) {                                       \
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fb;                                        \
      coopMatLoadNV(fb, gemm_sb, gemm_frag_b(buf, ks, sg_n + j * 16), GEMM_B_STRIDE, B_COLMAJOR); \
      [[unroll]] for (uint i = 0; i < GEMM_FM; ++i) {                                     \
        acc[i * GEMM_FN + j] = coopMatMulAddNV(fa[i], fb, acc[i * GEMM_FN + j]);          \
      }                                                                                   \
    }                                                                                     \
  }
#endif

  GemmLoad8 ra0[GEMM_A_PER_THREAD], rb0[GEMM_B_PER_THREAD];
  if (nk > 0) {
    GEMM_FETCH(ra0, rb0, kt0 * BK)
    GEMM_STASH(ra0, rb0, 0u)
  }
  if (PREFETCH == 2) {
    // Two register sets: the loads of slice kt + 2 are issued while slice kt is multiplied and
    // stored to shared memory one iteration later, so each load has two slices of MMAs to land
    // in. The loop is unrolled by two so that every register array index is static.
    GemmLoad8 ra1[GEMM_A_PER_THREAD], rb1[GEMM_B_PER_THREAD];
    if (nk > 1) {
      GEMM_FETCH(ra1, rb1, (kt0 + 1) * BK)
    }
    barrier();
    for (uint kt = 0; kt < nk; kt += 2) {
      // Shared buffer 0 holds slice kt, ra1/rb1 slice kt + 1; ra0/rb0 are free.
      if (kt + 2 < nk) {
        GEMM_FETCH(ra0, rb0, (kt0 + kt + 2) * BK)
      }
      GEMM_MMA(0u)
      if (kt + 1 < nk) {
        GEMM_STASH(ra1, rb1, 1u)
      }
      barrier();
      if (kt + 1 >= nk) break;
      // Shared buffer 1 holds slice kt + 1, ra0/rb0 slice kt + 2; ra1/rb1 are free.
      if (kt + 3 < nk) {
        GEMM_FETCH(ra1, rb1, (kt0 + kt + 3) * BK)
      }
      GEMM_MMA(1u)
      if (kt + 2 < nk) {
        GEMM_STASH(ra0, rb0, 0u)
      }
      barrier();
    }
  } else {
    barrier();
    for (uint kt = 0; kt < nk; ++kt) {
      const uint buf = kt & 1u;
      const bool more = kt + 1 < nk;
      if (more) {
        GEMM_FETCH(ra0, rb0, (kt0 + kt + 1) * BK)
      }
      GEMM_MMA(buf)
      if (more) {
        GEMM_STASH(ra0, rb0, buf ^ 1u)
      }
      barrier();
    }
  }
#undef GEMM_FETCH
#undef GEMM_STASH
#undef GEMM_STASH_ONE
#undef GEMM_MMA
#if GEMM_SPLIT
  // The hi·lo + lo·hi products carry the lo parts' 2¹¹ scale. Element by element: both matrices
  // have one type, so an invocation's elements i are the same matrix entries.
  [[unroll]] for (uint f = 0; f < GEMM_FM * GEMM_FN; ++f) {
    [[unroll]] for (int e = 0; e < acc[f].length(); ++e) acc[f][e] = fma(acc_lo[f][e], 1.0f / 2048.0f, acc[f][e]);
  }
#endif

  const uint tile = gemm_split_tile(bz);
  const uint tile_base = tile * KSPLITS * BM * BN;  // split-K: this tile's partials
  if (KSPLITS > 1) {
    [[unroll]] for (uint i = 0; i < GEMM_FM; ++i) {
      [[unroll]] for (uint j = 0; j < GEMM_FN; ++j) {
        coopMatStoreNV(acc[i * GEMM_FN + j], gemm_partials,
                       tile_base + split * BM * BN + (sg_m + i * 16) * BN + sg_n + j * 16, BN, false);
      }
    }
    if (!gemm_split_arrive(tile)) return;
  }
  // Epilogue: each subgroup spills one fragment at a time into its own 1 KiB of gemm_sa (free
  // after the final barrier above) and its invocations store the elements through the includer.
  // With GEMM_STORE8 (and split-K) an invocation takes 8 consecutive columns of a fragment row,
  // so that the includer loads and stores 16-byte vectors: the loads of a fragment are then one
  // round trip, where element by element they were eight (a bias + GELU + residual epilogue
  // doubled the time of the encoder's GEMMs on an H200). The fragment loop is rolled (with a
  // static select of acc[]) so the store code is inlined once.
  const uint scratch = sg * 64;  // 16×16 fp32 = 64 uvec4 (GEMM_SCRATCH)
#ifdef GEMM_PAIR_STORE
  if (GEMM_PAIR_STORE) {
    // Fragment (i, 0) goes to gemm_sa, (i, 1) to gemm_sb; an invocation takes 8 columns of a row
    // of the first and the same 8 of the second, 16 columns further.
    [[dont_unroll]] for (uint i = 0; i < GEMM_FM; ++i) {
      [[unroll]] for (uint ii = 0; ii < GEMM_FM; ++ii) {
        if (ii == i) {
          coopMatStoreNV(acc[ii * GEMM_FN], gemm_sa, scratch, 4u, false);
          coopMatStoreNV(acc[ii * GEMM_FN + 1u], gemm_sb, scratch, 4u, false);
        }
      }
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      const uint mf = m0 + sg_m + i * 16u, nf = n0 + sg_n;
      for (uint chunk = gl_SubgroupInvocationID; chunk < 32u; chunk += gl_SubgroupSize) {
        const uint r = chunk / 2u, c = (chunk % 2u) * 8u;
        if (mf + r >= M) continue;
        const uint at = scratch + r * 4u + c / 4u;
        float lo[8], hi[8];
        gemm_unpack8(gemm_sa[at], gemm_sa[at + 1u], lo);
        gemm_unpack8(gemm_sb[at], gemm_sb[at + 1u], hi);
        gemm_store_pair(bz, mf + r, nf + c, lo, hi);
      }
      subgroupMemoryBarrierShared();
      subgroupBarrier();
    }
    return;
  }
#endif
#ifdef GEMM_STORE8
  const bool vec_store = GEMM_STORE8;
#else
  const bool vec_store = false;
#endif
#ifdef GEMM_ROW8_PREFETCH
  // Each invocation's 8 columns of every fragment's operand (the residual), loaded together: one
  // round trip for the tile, where loads after each fragment's stores waited for them fragment by
  // fragment (a 1×1 convolution of 64 into 256 channels with a residual, two K slices, spent most
  // of its time there). With 32 invocations a subgroup, chunk = the invocation in the loop below.
  const bool prefetched = GEMM_ROW8_PREFETCH && vec_store && KSPLITS == 1 && gl_SubgroupSize == 32u;
  GemmLoad8 pre[GEMM_FM * GEMM_FN];
  [[unroll]] for (uint f = 0; f < GEMM_FM * GEMM_FN; ++f) {
    pre[f] = gemm_zero_load8();
    if (prefetched) {
      const uint r = gl_SubgroupInvocationID / 2u, c = (gl_SubgroupInvocationID % 2u) * 8u;
      pre[f] = gemm_row8_prefetch(bz, m0 + sg_m + (f / GEMM_FN) * 16 + r, n0 + sg_n + (f % GEMM_FN) * 16 + c);
    }
  }
#else
  const bool prefetched = false;
#endif
  [[dont_unroll]] for (uint f = 0; f < GEMM_FM * GEMM_FN; ++f) {
    [[unroll]] for (uint ff = 0; ff < GEMM_FM * GEMM_FN; ++ff) {
      if (ff == f) coopMatStoreNV(acc[ff], gemm_sa, scratch, 4u, false);
    }
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    const uint mf = m0 + sg_m + (f / GEMM_FN) * 16, nf = n0 + sg_n + (f % GEMM_FN) * 16;
    if (vec_store || KSPLITS > 1) {
      // 8 columns of a row an invocation: the other split-K shares come in 16-byte loads, and
      // gemm_store_row8 issues all its loads before its stores (16-byte words where C allows).
      // Split-K took this path whatever C's alignment: element by element every load after a
      // store waited for it (the buffers may alias), a round trip an element, and a split
      // convolution at ResNet-50's batch 1 spent most of its time there (H200: 3×3, 256 channels
      // at 14×14 in 9 shares, 79 → 38 µs).
      for (uint chunk = gl_SubgroupInvocationID; chunk < 32u; chunk += gl_SubgroupSize) {
        const uint r = chunk / 2u, c = (chunk % 2u) * 8u;  // row and first column in the fragment
        const uint m = mf + r, n = nf + c;
        float v[8];
        gemm_unpack8(gemm_sa[scratch + r * 4u + c / 4u], gemm_sa[scratch + r * 4u + c / 4u + 1u], v);
        if (KSPLITS > 1) {  // the shares in order (this one's from v), so that runs repeat to the bit
          float own[8];
          [[unroll]] for (uint e = 0; e < 8u; ++e) own[e] = v[e], v[e] = 0.0;
          for (uint s = 0; s < KSPLITS; ++s) {
            vec4 p0 = vec4(own[0], own[1], own[2], own[3]), p1 = vec4(own[4], own[5], own[6], own[7]);
            if (s != split) {
              const uint at = (tile_base + s * BM * BN + (m - m0) * BN + (n - n0)) / 4u;
              p0 = gemm_partials4[at], p1 = gemm_partials4[at + 1u];
            }
            v[0] += p0.x, v[1] += p0.y, v[2] += p0.z, v[3] += p0.w;
            v[4] += p1.x, v[5] += p1.y, v[6] += p1.z, v[7] += p1.w;
          }
        }
#ifdef GEMM_ROW8_PREFETCH
        if (prefetched) {
          GemmLoad8 mine = gemm_zero_load8();
          [[unroll]] for (uint ff = 0; ff < GEMM_FM * GEMM_FN; ++ff) {
            if (ff == f) mine = pre[ff];
          }
          if (m < M && n + 8u <= N) {
            gemm_store8_prefetched(bz, m, n, v, mine);
            continue;
          }
        }
#endif
        if (m < M && n < N) gemm_store_row8(bz, m, n, v);
      }
    } else {
      // Element by element, two 16-column row segments a store instruction. (Rows of 8 columns an
      // invocation, as above, made each store instruction touch 16 rows: ResNet-50's batch 32 in
      // fp16 6.3 → 6.8 ms on an H200.)
      for (uint e = gl_SubgroupInvocationID; e < 256u; e += gl_SubgroupSize) {
        const uint m = mf + e / 16u, n = nf + e % 16u;
        if (m >= M || n >= N) continue;
        gemm_store(bz, m, n, uintBitsToFloat(gemm_sa[scratch + e / 4u][e % 4u]));
      }
    }
    subgroupMemoryBarrierShared();
    subgroupBarrier();
  }
}
