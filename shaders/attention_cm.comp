#version 450
// Fused scaled-dot-product attention on NVIDIA tensor cores (GL_NV_cooperative_matrix: subgroup
// scope, 16×16×16 fp16 A/B, fp32 accumulators). Same contract as attention.comp, fp16 storage only.
//
// A workgroup of WARPS subgroups owns BR = 16·WARPS query rows of one (batch, head); subgroup w owns
// rows [16w, 16w+16) and keeps its q fragments in registers. Per key tile of BC rows:
//   1. the workgroup copies the K and V tiles (fp16, 16-byte vectors, prefetched into registers one
//      tile ahead) into shared memory;
//   2. each subgroup computes S = q·kᵀ (16×BC, fp32) with coopMatMulAddNV and stores it to its scratch;
//   3. LPR = SG/16 lanes per query row read their row's scores, update the online softmax (running
//      max and sum, exp2 domain) and write P (fp16) to shared memory; the row's lanes combine through
//      subgroup shuffles;
//   4. the subgroup computes P·V (16×D, fp32) with coopMatMulAddNV, stores it to the scratch, and
//      each lane adds its part to its fp32 output registers after rescaling them by exp(m_old − m_new)
//      (v1 cooperative matrices cannot be scaled per row, so the running output lives in registers).
// Requirements (checked on the host): D % 16 == 0, BC % 16 == 0, BR ≤ BC, SG ∈ {16, 32, 64},
// (BC/8) and (D/8) divisible by LPR, strides and column offsets multiples of 8 elements.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_control_flow_attributes : require

layout(constant_id = 0) const uint D = 64;     // head dim
layout(constant_id = 1) const uint WARPS = 4;  // subgroups per workgroup
layout(constant_id = 2) const uint BC = 64;    // keys per tile
layout(constant_id = 3) const uint SG = 32;    // the device's subgroup size
layout(constant_id = 4) const uint WG = 128;   // = WARPS · SG
layout(local_size_x_id = 4) in;

// uvec4 views: 8 fp16 values per element. Rows of q/k/v/out are 16-byte aligned (host-checked).
layout(binding = 0) readonly buffer Q { uvec4 q[]; };
layout(binding = 1) readonly buffer K { uvec4 k[]; };
layout(binding = 2) readonly buffer V { uvec4 v[]; };
layout(binding = 3) writeonly buffer O { uvec4 o[]; };

#ifdef DEBUG_DUMP
layout(binding = 4) buffer Dbg { float dbg[]; };  // [stage][nq][64]
#endif
layout(push_constant) uniform Push {
  uint nq, nk;
  uint q_stride, q_col;  // in fp16 elements, multiples of 8
  uint k_stride, k_col;
  uint v_stride, v_col;
  uint o_stride;
  float scale_log2e;
} p;

const uint BR = 16 * WARPS;
const uint LPR = SG / 16;            // lanes per query row
const uint DV = D / 8;               // uvec4 per head row
const uint KS = DV + 1;              // k_s/v_s row stride in uvec4 (16 bytes of skew)
const uint PS = BC / 8 + 1;          // p_s row stride in uvec4
const uint SW = (BC > D ? BC : D) + 4;  // scratch row stride in floats
const uint TILE_VECS = BC * DV;      // uvec4 per K (or V) tile
const uint VPT = (TILE_VECS + WG - 1) / WG;  // per invocation
const uint SCH = BC / 8 / LPR;       // 8-score chunks per lane
const uint OCH = DV / LPR;           // 8-column output chunks per lane
#define NEG_INF uintBitsToFloat(0xff800000u)

shared uvec4 k_s[BC * KS];  // K tile; before the key loop, the q tile (needs BR ≤ BC)
shared uvec4 v_s[BC * KS];
#ifndef P_TYPED
#define P_TYPED 0
#endif
#if P_TYPED
shared float16_t p_s[WARPS * 16 * PS * 8];
#else
shared uvec4 p_s[WARPS * 16 * PS];
#endif
// fp32, typed like the matrices stored into it: the driver must see the lanes' reads alias the
// cooperative-matrix stores (with a uint view it hoisted the reads above the stores).
shared float scratch[WARPS * 16 * SW];

#ifndef SYNC_MODE
#define SYNC_MODE 1
#endif
// Makes one subgroup's shared-memory writes (cooperative-matrix stores included) visible to its
// own lanes.
void subgroup_sync() {
#if SYNC_MODE == 0
  subgroupMemoryBarrierShared();
  subgroupBarrier();
#elif SYNC_MODE == 1
  controlBarrier(gl_ScopeSubgroup, gl_ScopeWorkgroup, gl_StorageSemanticsShared, gl_SemanticsAcquireRelease);
#else
  barrier();
#endif
}

uvec4 k_regs[VPT];
uvec4 v_regs[VPT];

void fetch_tile(uint k0, uint k_base, uint v_base) {
  [[unroll]] for (uint u = 0; u < VPT; ++u) {
    const uint idx = gl_LocalInvocationID.x + u * WG;
    const uint c = idx / DV, cv = idx % DV;
    const bool valid = idx < TILE_VECS && k0 + c < p.nk;
    k_regs[u] = valid ? k[k_base + (k0 + c) * (p.k_stride / 8) + cv] : uvec4(0);
    v_regs[u] = valid ? v[v_base + (k0 + c) * (p.v_stride / 8) + cv] : uvec4(0);
  }
}

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint warp = gl_SubgroupID;
  const uint lane = gl_SubgroupInvocationID;
  const uint row = lane / LPR, part = lane % LPR;  // this lane's query row inside the subgroup
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
    coopMatLoadNV(qa[kk], k_s, warp * 16 * KS + kk * 2, KS, false);
  }

  float m = NEG_INF, l = 0.0;
  float acc[OCH * 8];
  [[unroll]] for (uint i = 0; i < OCH * 8; ++i) acc[i] = 0.0;

  const uint scratch_row = (warp * 16 + row) * SW;
  const uint p_row = (warp * 16 + row) * PS;

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

    // 2. S = q·kᵀ: B(d, c) = k_s[c][d], a column-major view of the K tile.
    [[unroll]] for (uint j = 0; j < BC / 16; ++j) {
      fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> s = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
      [[unroll]] for (uint kk = 0; kk < D / 16; ++kk) {
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> kb;
        coopMatLoadNV(kb, k_s, j * 16 * KS + kk * 2, KS, true);
        s = coopMatMulAddNV(qa[kk], kb, s);
      }
      coopMatStoreNV(s, scratch, warp * 16 * SW + j * 16, SW, false);
    }
    subgroup_sync();

    // 3. Online softmax on this lane's chunks of its row.
    float sv[SCH * 8];
    float tile_max = NEG_INF;
    [[unroll]] for (uint i = 0; i < SCH; ++i) {
      const uint ch = part + i * LPR;
      const uint at = scratch_row + ch * 8;
      const vec4 lo = vec4(scratch[at], scratch[at + 1], scratch[at + 2], scratch[at + 3]);
      const vec4 hi = vec4(scratch[at + 4], scratch[at + 5], scratch[at + 6], scratch[at + 7]);
      [[unroll]] for (uint e = 0; e < 8; ++e) {
        const float raw = e < 4 ? lo[e] : hi[e - 4];
        const float sc = k0 + ch * 8 + e < p.nk ? raw * p.scale_log2e : NEG_INF;
        sv[i * 8 + e] = sc;
        tile_max = max(tile_max, sc);
      }
    }
#ifdef DEBUG_DUMP
    if (k0 == 0 && q0 + row < p.nq) {
      for (uint i = 0; i < SCH; ++i)
        for (uint e = 0; e < 8; ++e) dbg[(0 * p.nq + q0 + row) * 64 + (part + i * LPR) * 8 + e] = sv[i * 8 + e] / p.scale_log2e;
    }
#endif
    [[unroll]] for (uint off = 1; off < LPR; off <<= 1) tile_max = max(tile_max, subgroupShuffleXor(tile_max, off));
    const float m_new = max(m, tile_max);
    const float alpha = exp2(m - m_new);
    float row_sum = 0.0;
    [[unroll]] for (uint i = 0; i < SCH; ++i) {
      float pe[8];
      [[unroll]] for (uint e = 0; e < 8; ++e) {
        pe[e] = exp2(sv[i * 8 + e] - m_new);
        row_sum += pe[e];
      }
#if P_TYPED
      [[unroll]] for (uint e = 0; e < 8; ++e) p_s[(p_row + part + i * LPR) * 8 + e] = float16_t(pe[e]);
#else
      p_s[p_row + part + i * LPR] = uvec4(packHalf2x16(vec2(pe[0], pe[1])), packHalf2x16(vec2(pe[2], pe[3])),
                                          packHalf2x16(vec2(pe[4], pe[5])), packHalf2x16(vec2(pe[6], pe[7])));
#endif
#ifdef DEBUG_DUMP
      if (k0 == 0 && q0 + row < p.nq) {
        for (uint e = 0; e < 8; ++e) dbg[(1 * p.nq + q0 + row) * 64 + (part + i * LPR) * 8 + e] = pe[e];
      }
#endif
    }
    [[unroll]] for (uint off = 1; off < LPR; off <<= 1) row_sum += subgroupShuffleXor(row_sum, off);
    l = l * alpha + row_sum;
    m = m_new;
    [[unroll]] for (uint i = 0; i < OCH * 8; ++i) acc[i] *= alpha;
    subgroup_sync();  // P is complete and every lane has read its scores

    // 4. P·V into the scratch, then into the lanes' registers.
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> pv[D / 16];
    [[unroll]] for (uint dj = 0; dj < D / 16; ++dj) pv[dj] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
    [[unroll]] for (uint kc = 0; kc < BC / 16; ++kc) {
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> pa;
#if P_TYPED
      coopMatLoadNV(pa, p_s, (warp * 16 * PS + kc * 2) * 8, PS * 8, false);
#else
      coopMatLoadNV(pa, p_s, warp * 16 * PS + kc * 2, PS, false);
#endif
      [[unroll]] for (uint dj = 0; dj < D / 16; ++dj) {
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> vb;
        coopMatLoadNV(vb, v_s, kc * 16 * KS + dj * 2, KS, false);
        pv[dj] = coopMatMulAddNV(pa, vb, pv[dj]);
      }
    }
    [[unroll]] for (uint dj = 0; dj < D / 16; ++dj) coopMatStoreNV(pv[dj], scratch, warp * 16 * SW + dj * 16, SW, false);
    subgroup_sync();
    [[unroll]] for (uint i = 0; i < OCH; ++i) {
      const uint ch = part + i * LPR;
      const uint at = scratch_row + ch * 8;
      const vec4 lo = vec4(scratch[at], scratch[at + 1], scratch[at + 2], scratch[at + 3]);
      const vec4 hi = vec4(scratch[at + 4], scratch[at + 5], scratch[at + 6], scratch[at + 7]);
#ifdef DEBUG_DUMP
      if (k0 == 0 && q0 + row < p.nq) {
        for (uint e = 0; e < 4; ++e) {
          dbg[(2 * p.nq + q0 + row) * 64 + ch * 8 + e] = lo[e];
          dbg[(2 * p.nq + q0 + row) * 64 + ch * 8 + 4 + e] = hi[e];
        }
      }
#endif
      [[unroll]] for (uint e = 0; e < 4; ++e) {
        acc[i * 8 + e] += lo[e];
        acc[i * 8 + 4 + e] += hi[e];
      }
    }
  }

#ifdef DEBUG_DUMP
  if (q0 + row < p.nq) {
    dbg[(3 * p.nq + q0 + row) * 64 + part * 2] = m;
    dbg[(3 * p.nq + q0 + row) * 64 + part * 2 + 1] = l;
  }
#endif
  if (q0 + row < p.nq) {
    const float inv_l = 1.0 / l;
    const uint o_base = ((b * p.nq + q0 + row) * p.o_stride + head * D) / 8;
    [[unroll]] for (uint i = 0; i < OCH; ++i) {
      const uint ch = part + i * LPR;
      uvec4 packed;
      [[unroll]] for (uint e = 0; e < 4; ++e) {
        packed[e] = packHalf2x16(vec2(acc[i * 8 + 2 * e], acc[i * 8 + 2 * e + 1]) * inv_l);
      }
      o[o_base + ch] = packed;
    }
  }
}
