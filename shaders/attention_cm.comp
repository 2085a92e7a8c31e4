#version 450
// Fused scaled-dot-product attention on NVIDIA tensor cores (GL_NV_cooperative_matrix: subgroup
// scope, 16×16×16 fp16 A/B, fp32 accumulators). Same contract as attention.comp, fp16 storage only.
//
// A workgroup of WARPS subgroups owns BR = 16·WARPS/KSPLIT query rows of one (batch, head). Subgroup
// w works on row block w % (WARPS/KSPLIT) — whose q fragments it keeps in registers — and on key
// share w / (WARPS/KSPLIT) of every key tile (BCW = BC/KSPLIT keys): splitting the keys gives the SM
// more subgroups to hide latency with. Per key tile of BC rows:
//   1. the workgroup copies the K and V tiles (fp16, 16-byte vectors, prefetched into registers one
//      tile ahead) into shared memory;
//   2. each subgroup computes S = q·kᵀ (16×BCW, fp32) with coopMatMulAddNV and stores it to its scratch;
//   3. LPR = SG/16 lanes per query row read their row's scores, keep the row's running sum and its
//      reference max m_ref (exp2 domain), and write P = exp2(S·scale·log2e − m_ref) (fp16) to shared
//      memory; the row's lanes combine through subgroup shuffles;
//   4. the subgroup accumulates O += P·V in fp32 cooperative matrices that live across the tiles.
// Rescaling is lazy: v1 cooperative matrices cannot be scaled per row, so O is only rescaled (through
// the scratch) when some row's tile max exceeds its m_ref by more than kRescaleLog2 — in practice on
// the first tile and rarely after. Until then P may reach 2^kRescaleLog2, well inside fp16.
// With KSPLIT = 2 the two subgroups of a row block merge their (m_ref, l, O) at the end.
// The fp32 scratch of a subgroup holds 16 rows of max(BCW, OW) columns: S, or OW of the D output
// columns at a time (when O is rescaled and at the end).
// Requirements (checked on the host): D % 16 == 0, BCW % 16 == 0, OW % 16 == 0 dividing D, BR ≤ BC,
// SG ∈ {16, 32, 64}, (BCW/8) and (OW/8) divisible by LPR, WARPS % KSPLIT == 0, strides and column
// offsets multiples of 8 elements.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_control_flow_attributes : require

layout(constant_id = 0) const uint D = 64;      // head dim
layout(constant_id = 1) const uint WARPS = 4;   // subgroups per workgroup
layout(constant_id = 2) const uint BC = 64;     // keys per tile
layout(constant_id = 3) const uint SG = 32;     // the device's subgroup size
layout(constant_id = 4) const uint WG = 128;    // = WARPS · SG
layout(constant_id = 5) const uint KSPLIT = 1;  // subgroups sharing one row block (1 or 2)
layout(constant_id = 6) const uint OW = 64;     // output columns moved through the scratch at a time
layout(local_size_x_id = 4) in;

const uint RB = WARPS / KSPLIT;      // row blocks per workgroup
const uint BR = 16 * RB;             // query rows per workgroup
const uint BCW = BC / KSPLIT;        // keys per subgroup per tile
const uint LPR = SG / 16;            // lanes per query row
const uint DV = D / 8;               // uvec4 per head row
const uint KS = DV + 1;              // k_s/v_s row stride in uvec4 (16 bytes of skew)
const uint PS = BCW + 8;             // p_s row stride in fp16
const uint SW = (BCW > OW ? BCW : OW) + 4;  // scratch row stride in floats
const uint OPARTS = D / OW;          // the scratch holds OW of the D output columns at a time
const uint OCHP = OW / 8 / LPR;      // 8-column output chunks per lane and part
const uint TILE_VECS = BC * DV;      // uvec4 per K (or V) tile
const uint VPT = (TILE_VECS + WG - 1) / WG;  // per invocation
const uint SCH = BCW / 8 / LPR;      // 8-score chunks per lane
const float kRescaleLog2 = 8.0;      // P ≤ 2^8 between rescales
#define NEG_INF uintBitsToFloat(0xff800000u)

shared uvec4 k_s[BC * KS];  // K tile; before the key loop, the q tile (needs BR ≤ BC)
shared uvec4 v_s[BC * KS];
shared float16_t p_s[WARPS * 16 * PS];
// fp32, typed like the matrices stored into it, so that the driver sees the lanes' reads alias
// the cooperative-matrix stores.
shared float scratch[WARPS * 16 * SW];
shared vec2 row_stats[WARPS * 16];  // (m_ref, l) per row, for the KSPLIT merge

// Makes one subgroup's shared-memory writes (cooperative-matrix stores included) visible to its lanes.
void subgroup_sync() {
  controlBarrier(gl_ScopeSubgroup, gl_ScopeWorkgroup, gl_StorageSemanticsShared, gl_SemanticsAcquireRelease);
}

#include "attention_cm_io.glsl"

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint warp = gl_SubgroupID;
  const uint lane = gl_SubgroupInvocationID;
  const uint rb = warp % RB, share = warp / RB;   // row block, key share
  const uint row = lane / LPR, part = lane % LPR;  // this lane's row inside the block's 16
  const uint q0 = gl_WorkGroupID.x * BR;
  const uint head = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
  const uint q_base = (b * p.nq * p.q_stride + p.q_col + head * D) / 8;
  const uint k_base = (b * p.nk * p.k_stride + p.k_col + head * D) / 8;
  const uint v_base = (b * p.nk * p.v_stride + p.v_col + head * D) / 8;

  // Stage the q tile in k_s (rows past nq are zero), then keep it as A fragments.
  for (uint idx = tid; idx < BR * DV; idx += WG) {
    const uint r = idx / DV, cv = idx % DV;
    k_s[r * KS + cv] = q0 + r < p.nq ? q[q_base + (q0 + r) * (p.q_stride / 8) + cv] : uvec4(0);
  }
  barrier();
  fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> qa[D / 16];
  [[unroll]] for (uint kk = 0; kk < D / 16; ++kk) {
    coopMatLoadNV(qa[kk], k_s, rb * 16 * KS + kk * 2, KS, false);
  }

  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[D / 16];
  [[unroll]] for (uint dj = 0; dj < D / 16; ++dj) acc[dj] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
  float m_ref = NEG_INF, l = 0.0;  // this lane's row: reference max (exp2 domain) and Σ P

  const uint warp_scratch = warp * 16 * SW;
  const uint scratch_row = warp_scratch + row * SW;
  const uint p_row = (warp * 16 + row) * PS;
  const uint key_off = share * BCW;  // this subgroup's keys inside a tile

  fetch_tile(0, k_base, v_base);
  for (uint k0 = 0; k0 < p.nk; k0 += BC) {
    barrier();  // every subgroup is done with the previous tile (and with the q staging)
    [[unroll]] for (uint u = 0; u < VPT; ++u) {
      const uint idx = tid + u * WG;
      if (idx < TILE_VECS) {
        const uint c = idx / DV, cv = idx % DV;
        k_s[c * KS + cv] = k_regs[u];
        v_s[c * KS + cv] = v_regs[u];
      }
    }
    barrier();
    if (k0 + BC < p.nk) fetch_tile(k0 + BC, k_base, v_base);  // overlaps the math below

    // 2. S = q·kᵀ for this subgroup's keys: B(d, c) = k_s[c][d], a column-major view of the K tile.
    [[unroll]] for (uint j = 0; j < BCW / 16; ++j) {
      fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> s = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
      [[unroll]] for (uint kk = 0; kk < D / 16; ++kk) {
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> kb;
        coopMatLoadNV(kb, k_s, (key_off + j * 16) * KS + kk * 2, KS, true);
        s = coopMatMulAddNV(qa[kk], kb, s);
      }
      coopMatStoreNV(s, scratch, warp_scratch + j * 16, SW, false);
    }
    subgroup_sync();

    // 3. This lane's scores (exp2 domain; keys past nk are −inf) and the row's tile max.
    float sv[SCH * 8];  // raw q·k; the exp2-domain score is sv · scale_log2e (scale > 0)
    float raw_max = NEG_INF;
    [[unroll]] for (uint i = 0; i < SCH; ++i) {
      const uint ch = part + i * LPR;
      const uint key = k0 + key_off + ch * 8;
      [[unroll]] for (uint e = 0; e < 8; ++e) {
        const float sc = key + e < p.nk ? scratch[scratch_row + ch * 8 + e] : NEG_INF;
        sv[i * 8 + e] = sc;
        raw_max = max(raw_max, sc);
      }
    }
    [[unroll]] for (uint off = 1; off < LPR; off <<= 1) raw_max = max(raw_max, subgroupShuffleXor(raw_max, off));
    const float tile_max = raw_max * p.scale_log2e;

    // Lazy rescale: only when some row's max outgrew its reference by more than kRescaleLog2.
    if (subgroupAny(tile_max > m_ref + kRescaleLog2)) {
      const float new_ref = max(m_ref, tile_max);
      const float alpha = new_ref == NEG_INF ? 1.0 : exp2(m_ref - new_ref);  // 0 while m_ref = −inf
      l *= alpha;
      m_ref = new_ref;
      [[unroll]] for (uint op = 0; op < OPARTS; ++op) {
        subgroup_sync();  // every lane has read its scores (or the previous part): the scratch is free
        [[unroll]] for (uint dj = 0; dj < OW / 16; ++dj) {
          coopMatStoreNV(acc[op * (OW / 16) + dj], scratch, warp_scratch + dj * 16, SW, false);
        }
        subgroup_sync();
        [[unroll]] for (uint i = 0; i < OCHP; ++i) {
          const uint at = scratch_row + (part + i * LPR) * 8;
          [[unroll]] for (uint e = 0; e < 8; ++e) scratch[at + e] *= alpha;
        }
        subgroup_sync();
        [[unroll]] for (uint dj = 0; dj < OW / 16; ++dj) {
          coopMatLoadNV(acc[op * (OW / 16) + dj], scratch, warp_scratch + dj * 16, SW, false);
        }
      }
    }

    float row_sum = 0.0;
    [[unroll]] for (uint i = 0; i < SCH; ++i) {
      const uint at = p_row + (part + i * LPR) * 8;
      [[unroll]] for (uint e = 0; e < 8; ++e) {
        // A row that has seen no valid key yet keeps m_ref = −inf: its P is 0, not NaN.
        const float pe = sv[i * 8 + e] == NEG_INF ? 0.0 : exp2(fma(sv[i * 8 + e], p.scale_log2e, -m_ref));
        row_sum += pe;
        p_s[at + e] = float16_t(pe);
      }
    }
    [[unroll]] for (uint off = 1; off < LPR; off <<= 1) row_sum += subgroupShuffleXor(row_sum, off);
    l += row_sum;
    subgroup_sync();  // P is complete

    // 4. O += P·V for this subgroup's keys.
    [[unroll]] for (uint kc = 0; kc < BCW / 16; ++kc) {
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> pa;
      coopMatLoadNV(pa, p_s, warp * 16 * PS + kc * 16, PS, false);
      [[unroll]] for (uint dj = 0; dj < D / 16; ++dj) {
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> vb;
        coopMatLoadNV(vb, v_s, (key_off + kc * 16) * KS + dj * 2, KS, false);
        acc[dj] = coopMatMulAddNV(pa, vb, acc[dj]);
      }
    }
  }

  // Epilogue, OW output columns at a time: every subgroup stores its O part to its scratch; with
  // KSPLIT = 2 the share-0 subgroup merges its partner's (m_ref, l, O) into its own.
  if (part == 0) row_stats[warp * 16 + row] = vec2(m_ref, l);
  const uint q_row = q0 + rb * 16 + row;
  const uint other_scratch = (warp + RB) % WARPS * 16 * SW + row * SW;  // the partner's row (KSPLIT = 2)
  [[unroll]] for (uint op = 0; op < OPARTS; ++op) {
    barrier();  // scratch reads of the last tile (or of the previous part) are done; row_stats is written
    [[unroll]] for (uint dj = 0; dj < OW / 16; ++dj) {
      coopMatStoreNV(acc[op * (OW / 16) + dj], scratch, warp_scratch + dj * 16, SW, false);
    }
    barrier();
    if (share == 0 && q_row < p.nq) {
      float w_self = 1.0, w_other = 0.0, total = l;
      if (KSPLIT == 2) {
        const vec2 st = row_stats[(warp + RB) * 16 + row];
        const float mx = max(m_ref, st.x);  // finite: share 0 always sees key 0
        w_self = exp2(m_ref - mx);
        w_other = st.x == NEG_INF ? 0.0 : exp2(st.x - mx);
        total = l * w_self + st.y * w_other;
      }
      const float inv = 1.0 / total;
      const uint o_base = ((b * p.nq + q_row) * p.o_stride + head * D + op * OW) / 8;
      [[unroll]] for (uint i = 0; i < OCHP; ++i) {
        const uint ch = part + i * LPR;
        float r[8];
        [[unroll]] for (uint e = 0; e < 8; ++e) {
          float x = scratch[scratch_row + ch * 8 + e] * w_self;
          if (KSPLIT == 2) x += scratch[other_scratch + ch * 8 + e] * w_other;
          r[e] = x * inv;
        }
        o[o_base + ch] = uvec4(packHalf2x16(vec2(r[0], r[1])), packHalf2x16(vec2(r[2], r[3])),
                               packHalf2x16(vec2(r[4], r[5])), packHalf2x16(vec2(r[6], r[7])));
      }
    }
  }
}
