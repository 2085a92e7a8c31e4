#version 450
// Nearest neighbour by dot product on NVIDIA tensor cores: match_nn.comp's contract at K = 1 (the
// same bindings, push constants, persistent job loop over query blocks × database slices and
// partial lists), with the scores computed as 16×16 cooperative-matrix tiles instead of one FMA
// chain per (query, pixel).
//
// Operands (fp16 rows in shared memory, each segment D16 = D rounded up to 16 halves, zero-padded):
//   SPLIT = 1: each fp32 value is split into an fp16 hi and a scaled fp16 lo part (fp16_split.glsl,
//     GEMM_SPLIT's scheme); a row is [hi | lo] and the score Σ q_hi·d_hi + 2⁻¹¹·Σ (q_hi·d_lo + q_lo·d_hi),
//     in two fp32 accumulators: ~2⁻²¹ of |q|·|d| per product, near an fp32 sum's error. The values
//     must be within fp16's range.
//   SPLIT = 0: the rows are the hi parts alone: descriptors cut to fp16's mantissa (≤ 2⁻¹⁰ relative),
//     the precision of fp16 products (what PyTorch's autocast matcher multiplies).
// Scores then differ from match_nn.comp's fp32 FMA chain in rounding only; where two pixels score
// within that rounding of each other the chosen one may differ.
//
// A workgroup of WARPS subgroups owns BR = 16·RPW·WARPS queries; each subgroup keeps the A
// fragments of its RPW 16-row blocks in registers. Per chunk of BC database pixels (fp32 loaded
// into registers one chunk ahead, split, written to shared memory): S = A·Bᵀ per 16-pixel tile,
// and a running element-wise maximum over tiles with the winning tile's number beside it (both
// fp32 accumulator matrices of the same layout, so element i is the same (row, column) in each;
// a strictly greater score displaces, so equal scores keep the earlier tile). At the end of a job
// the two matrices go through shared memory and each row's 16 columns reduce to one (score, pixel):
// equal scores keep the lower pixel, as in match_nn.comp.
// DIM (the descriptor length, a multiple of 4: the maps are read as vec4s) is compiled in, one
// variant per length (shaders/variants_match.cmake). Host-checked: subgroup size 32.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require

#include "fp16_split.glsl"

layout(constant_id = 0) const uint WG = 128;     // = WARPS · 32
layout(constant_id = 1) const uint WARPS = 4;
layout(constant_id = 2) const uint RPW = 2;      // 16-row query blocks per subgroup
layout(constant_id = 3) const uint BC = 128;     // database pixels per chunk, a multiple of 16, ≤ WG
layout(constant_id = 4) const uint INDIRECT = 1; // 1: query pixel = xy[list[e]]; 0: list[e]
layout(constant_id = 5) const uint SPLIT = 1;
layout(local_size_x_id = 0) in;

const uint D = DIM;
const uint D4 = D / 4;
const uint D16 = (D + 15) / 16 * 16;
const uint KT = D16 / 16;              // 16-deep MMA steps per segment
const uint SEG = D16 / 8;              // uvec4 (8 halves) per segment
const uint BR = 16 * RPW * WARPS;      // queries per workgroup (≤ WG: one staged row per invocation)
const uint KS = (SPLIT == 1 ? 2 : 1) * SEG + 1;  // row stride in uvec4 (16 bytes of skew)
const uint ROWS = BR > BC ? BR : BC;
const float LO_SCALE = 2048.0;  // fp16_split.glsl's scale of lo

layout(binding = 0) readonly buffer QMap { vec4 qmap[]; };   // [n_query, D]
layout(binding = 1) readonly buffer DbMap { vec4 dbmap[]; }; // [n_db, D]
layout(binding = 2) readonly buffer List { int list[]; };
layout(binding = 3) readonly buffer Xy { int xy[]; };
layout(binding = 4) buffer State { uint state[]; };
layout(binding = 5) writeonly buffer Part { uvec2 part[]; };  // [slice][entry] (score bits, index)

// Mirrors NnPush in gpu/models/match/match_kernels.cpp (the same as match_nn.comp's).
layout(push_constant) uniform Push {
  uint count_index, grid, n_db, dim, n_chunks;
  uint count_fixed, q_begin, meta_index, n_query;
} p;

const uint kNone = 0xffffffffu;
#define NEG_INF uintBitsToFloat(0xff800000u)
#define ACC fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
#define HALF fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>

shared uvec4 rows_s[ROWS * KS];        // the query block, then each database chunk
shared uvec4 spill_s[WARPS * RPW * 2 * 64];  // per subgroup and row block: best scores, then tiles
shared float index_s[256];             // r·16 + c: reveals which column a lane's element i is

// One row of operand halves from the descriptor in v_regs: [hi | lo], each zero-padded to D16.
vec4 v_regs[D4];
void put_row(uint row) {
  uvec2 hi[D16 / 4], lo[D16 / 4];
  [[unroll]] for (uint j = 0; j < D16 / 4; ++j) {
    hi[j] = lo[j] = uvec2(0);
    if (j < D4) fp16_split4(v_regs[j], hi[j], lo[j]);
  }
  [[unroll]] for (uint v = 0; v < SEG; ++v) {
    rows_s[row * KS + v] = uvec4(hi[2 * v], hi[2 * v + 1]);
    if (SPLIT == 1) rows_s[row * KS + SEG + v] = uvec4(lo[2 * v], lo[2 * v + 1]);
  }
}

void fetch_db(uint e) {  // database pixel e (zeros past n_db) into v_regs
  [[unroll]] for (uint j = 0; j < D4; ++j) v_regs[j] = e < p.n_db ? dbmap[e * D4 + j] : vec4(0.0);
}

// Does (v, i) rank before (bv, bi)?
bool better(float v, uint i, float bv, uint bi) {
  return i != kNone && (bi == kNone || v > bv || (v == bv && i < bi));
}

void main() {
  const uint lid = gl_LocalInvocationID.x;
  const uint warp = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  const uint count = p.count_index == kNone ? p.count_fixed : state[p.count_index];
  if (count == 0) return;  // uniform

  const uint nqb = (count + BR - 1) / BR;
  uint slices = clamp(p.grid / nqb, 1u, p.n_chunks);
  const uint cps = (p.n_chunks + slices - 1) / slices;
  slices = (p.n_chunks + cps - 1) / cps;
  if (gl_WorkGroupID.x == 0 && lid == 0 && p.meta_index != kNone) state[64 + p.meta_index] = slices;

  for (uint idx = lid; idx < 256; idx += WG) index_s[idx] = float(idx);
  barrier();
  uint col_bits = 0;  // the column of each of this lane's accumulator elements, 4 bits each
  {
    ACC probe;
    coopMatLoadNV(probe, index_s, 0, 16, false);
    for (int i = 0; i < probe.length(); ++i) col_bits |= (uint(probe[i]) & 15u) << (4 * i);
  }

  const uint jobs = nqb * slices;
  for (uint job = gl_WorkGroupID.x; job < jobs; job += p.grid) {
    const uint qblk = job / slices;
    const uint slice = job - qblk * slices;

    barrier();  // the previous job is done with rows_s and spill_s
    if (lid < BR) {
      const uint e = qblk * BR + lid;
      uint pix = 0;
      if (e < count) {
        const int l = list[p.q_begin + e];
        const int px = INDIRECT == 1 ? xy[l] : l;
        pix = uint(clamp(px, 0, int(p.n_query) - 1));
      }
      [[unroll]] for (uint j = 0; j < D4; ++j) v_regs[j] = e < count ? qmap[pix * D4 + j] : vec4(0.0);
      put_row(lid);
    }
    barrier();
    HALF qh[RPW][KT], ql[RPW][KT];
    [[unroll]] for (uint r = 0; r < RPW; ++r) {
      [[unroll]] for (uint kk = 0; kk < KT; ++kk) {
        const uint at = ((warp * RPW + r) * 16) * KS + kk * 2;
        coopMatLoadNV(qh[r][kk], rows_s, at, KS, false);
        if (SPLIT == 1) coopMatLoadNV(ql[r][kk], rows_s, at + SEG, KS, false);
      }
    }
    ACC best[RPW], tile[RPW];
    [[unroll]] for (uint r = 0; r < RPW; ++r) {
      best[r] = ACC(NEG_INF);
      tile[r] = ACC(0.0);
    }

    const uint c_begin = slice * cps;
    const uint c_end = min(c_begin + cps, p.n_chunks);
    if (lid < BC) fetch_db(c_begin * BC + lid);
    for (uint c = c_begin; c < c_end; ++c) {
      barrier();  // every subgroup is done with the previous chunk (and the query rows)
      if (lid < BC) put_row(lid);
      barrier();
      if (c + 1 < c_end && lid < BC) fetch_db((c + 1) * BC + lid);  // overlaps the MMAs below

      const uint e0 = c * BC;
      [[unroll]] for (uint j = 0; j < BC / 16; ++j) {
        ACC s[RPW], s_lo[RPW];  // Σ hi·hi; Σ hi·lo + lo·hi (scaled by 2¹¹)
        [[unroll]] for (uint r = 0; r < RPW; ++r) {
          s[r] = ACC(0.0);
          s_lo[r] = ACC(0.0);
        }
        [[unroll]] for (uint kk = 0; kk < KT; ++kk) {
          // B(k, n) = rows_s[n][k]: a column-major view of the chunk's rows.
          const uint at = (j * 16) * KS + kk * 2;
          HALF bh;
          coopMatLoadNV(bh, rows_s, at, KS, true);
          [[unroll]] for (uint r = 0; r < RPW; ++r) s[r] = coopMatMulAddNV(qh[r][kk], bh, s[r]);
          if (SPLIT == 1) {
            HALF bl;
            coopMatLoadNV(bl, rows_s, at + SEG, KS, true);
            [[unroll]] for (uint r = 0; r < RPW; ++r) {
              s_lo[r] = coopMatMulAddNV(ql[r][kk], bh, s_lo[r]);
              s_lo[r] = coopMatMulAddNV(qh[r][kk], bl, s_lo[r]);
            }
          }
        }
        const float t = float(e0 / 16 + j);
        const bool partial = e0 + j * 16 + 16 > p.n_db;  // uniform
        [[unroll]] for (uint r = 0; r < RPW; ++r) {
          for (int i = 0; i < s[r].length(); ++i) {
            float v = SPLIT == 1 ? fma(s_lo[r][i], 1.0 / LO_SCALE, s[r][i]) : s[r][i];
            if (partial && e0 + j * 16 + ((col_bits >> (4 * i)) & 15u) >= p.n_db) v = NEG_INF;
            if (v > best[r][i]) {
              best[r][i] = v;
              tile[r][i] = t;
            }
          }
        }
      }
    }

    // Each row's best over its 16 columns: lanes l and l + 16 take 8 columns of row l % 16 each.
    [[unroll]] for (uint r = 0; r < RPW; ++r) {
      const uint at = ((warp * RPW + r) * 2) * 64;
      coopMatStoreNV(best[r], spill_s, at, 4u, false);
      coopMatStoreNV(tile[r], spill_s, at + 64, 4u, false);
    }
    barrier();
    const uint row = lane % 16, half_ = lane / 16;
    [[unroll]] for (uint r = 0; r < RPW; ++r) {
      const uint at = ((warp * RPW + r) * 2) * 64;
      float bs = NEG_INF;
      uint bi = kNone;
      [[unroll]] for (uint cc = 0; cc < 8; ++cc) {
        const uint col = half_ * 8 + cc, w = row * 16 + col;
        const float v = uintBitsToFloat(spill_s[at + w / 4][w % 4]);
        const uint id = uint(uintBitsToFloat(spill_s[at + 64 + w / 4][w % 4])) * 16 + col;
        if (id < p.n_db && better(v, id, bs, bi)) {
          bs = v;
          bi = id;
        }
      }
      const float os = subgroupShuffleXor(bs, 16);
      const uint oi = subgroupShuffleXor(bi, 16);
      if (better(os, oi, bs, bi)) {
        bs = os;
        bi = oi;
      }
      const uint e = qblk * BR + (warp * RPW + r) * 16 + row;
      // NaN inputs leave no candidate: pixel 0, as match_nn.comp's in-range promise allows.
      if (half_ == 0 && e < count) part[slice * count + e] = uvec2(floatBitsToUint(bs), bi == kNone ? 0u : bi);
    }
  }
}
