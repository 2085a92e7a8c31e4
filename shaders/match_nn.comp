#version 450
// Fused brute-force nearest neighbours by dot product: for each active query (a pixel of one
// descriptor map) the K database pixels (of the other map) with the largest <q, d>, without ever
// materialising the similarity matrix. Used by gpu/models/match/ (fast reciprocal NN and the
// exhaustive matcher); K = 1 is the fast path.
//
// Work split, decided at run time from the active query count (which a previous dispatch may have
// written on the device): a workgroup of WG invocations = qt query threads × dl database lanes
// (qt a power of two ≤ WG, as small as the count allows). Each query thread holds QPT query
// vectors in registers; the workgroup streams its slice of the database through shared memory
// in chunks of CH pixels, lane l scoring chunk pixels l, l + dl, ...; at the end the dl lanes'
// lists are merged in a shared-memory tree and one partial list per (slice, query) is written.
// Jobs = query blocks × database slices are spread over `grid` workgroups (a persistent loop), so
// the dispatch size is fixed at record time while the work shrinks with the count.
//
// Ties: candidates are compared by score, then by the lower pixel index (torch.max's first
// occurrence). Scores are fp32 sums of fma(q_i, d_i) in i order: symmetric in q and d.
// NaN inputs give unspecified but in-range results.
#extension GL_EXT_control_flow_attributes : enable

layout(constant_id = 0) const uint WG = 256;  // power of two
#ifdef FIXED_D4
// A variant with the register geometry fixed at compile time (glslc unrolls it), K = 1, for
// dim == 4 · D4 exactly: the maps are read as vec4s (16-byte loads, no per-component checks).
const uint QPT = FIXED_QPT;
const uint D4 = FIXED_D4;
const uint K = 1;
#else
layout(constant_id = 1) const uint QPT = 4;   // queries per invocation
layout(constant_id = 2) const uint D4 = 6;    // descriptor length in vec4s (zero-padded)
layout(constant_id = 4) const uint K = 1;     // neighbours kept per query
#endif
layout(constant_id = 3) const uint CH = 256;  // database pixels per shared-memory chunk
layout(constant_id = 5) const uint INDIRECT = 1;  // 1: query pixel = xy[list[e]]; 0: list[e]
layout(constant_id = 6) const uint PER_TURN = 1;  // database pixels scored per loop turn: 1, 2, 4, 8 (K = 1)
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer QMap { float qmap[]; };    // [n_query, dim]
layout(binding = 1) readonly buffer DbMap { float dbmap[]; };  // [n_db, dim]
layout(binding = 2) readonly buffer List { int list[]; };
layout(binding = 3) readonly buffer Xy { int xy[]; };
layout(binding = 4) buffer State { uint state[]; };  // counts, slices used at [64 + meta_index]
layout(binding = 5) writeonly buffer Part { uvec2 part[]; };  // [slice][entry][K] (score bits, index)
#ifdef FIXED_D4
// The same maps seen as vec4s (aliased bindings).
layout(binding = 0) readonly buffer QMap4 { vec4 qmap4[]; };
layout(binding = 1) readonly buffer DbMap4 { vec4 dbmap4[]; };
#endif

// Mirrored by NnPush in gpu/models/match/match_kernels.cpp.
// count_index and grid come first: the dispatch profile (gpu/dispatch_profile.h) keys on the first
// three words, so each step of the fast matcher gets its own row.
layout(push_constant) uniform Push {
  uint count_index;  // state[count_index] = active entries, or kNone: count_fixed
  uint grid, n_db, dim, n_chunks;
  uint count_fixed;
  uint q_begin;      // first list entry of this batch
  uint meta_index;   // state[64 + meta_index] receives the slice count, or kNone
  uint n_query;      // pixels in the query map (indices are clamped into it)
} p;

const uint kNone = 0xffffffffu;

shared vec4 s_db[CH * D4];
shared float s_bs[WG * QPT * K];
shared uint s_bi[WG * QPT * K];

// Does (v, i) rank before (bv, bi)? kNone marks an empty slot.
bool better(float v, uint i, float bv, uint bi) {
  return i != kNone && (bi == kNone || v > bv || (v == bv && i < bi));
}

void main() {
  const uint lid = gl_LocalInvocationID.x;
  const uint count = p.count_index == kNone ? p.count_fixed : state[p.count_index];
  if (count == 0) return;  // uniform

  // Geometry for this count (the same arithmetic in every workgroup).
  const uint need = (count + QPT - 1) / QPT;
  uint qt = 1;
  while (qt < need && qt < WG) qt <<= 1;
  const uint dl = WG / qt;
  const uint qb = qt * QPT;
  const uint nqb = (count + qb - 1) / qb;
  uint slices = clamp(p.grid / nqb, 1u, p.n_chunks);
  const uint cps = (p.n_chunks + slices - 1) / slices;
  slices = (p.n_chunks + cps - 1) / cps;
  if (gl_WorkGroupID.x == 0 && lid == 0 && p.meta_index != kNone) state[64 + p.meta_index] = slices;

  const uint q_thread = lid % qt;
  const uint lane = lid / qt;
  const uint jobs = nqb * slices;
  for (uint job = gl_WorkGroupID.x; job < jobs; job += p.grid) {
    const uint qblk = job / slices;
    const uint slice = job - qblk * slices;

    // This invocation's queries, zero-padded to D4 vec4s (zeros for entries past the count).
    vec4 q[QPT * D4];
    [[unroll]] for (uint a = 0; a < QPT; ++a) {
      const uint e = qblk * qb + q_thread * QPT + a;
      uint pix = 0;
      if (e < count) {
        const int l = list[p.q_begin + e];
        const int px = INDIRECT == 1 ? xy[l] : l;
        pix = uint(clamp(px, 0, int(p.n_query) - 1));
      }
      [[unroll]] for (uint j = 0; j < D4; ++j) {
        vec4 v = vec4(0.0);
        if (e < count) {
#ifdef FIXED_D4
          v = qmap4[pix * D4 + j];
#else
          const uint c = 4 * j, base = pix * p.dim + c;
          v.x = c < p.dim ? qmap[base] : 0.0;
          v.y = c + 1 < p.dim ? qmap[base + 1] : 0.0;
          v.z = c + 2 < p.dim ? qmap[base + 2] : 0.0;
          v.w = c + 3 < p.dim ? qmap[base + 3] : 0.0;
#endif
        }
        q[a * D4 + j] = v;
      }
    }

    float bs[QPT * K];
    uint bi[QPT * K];
    [[unroll]] for (uint t = 0; t < QPT * K; ++t) {
      bs[t] = uintBitsToFloat(0xff800000u);  // -inf
      bi[t] = kNone;
    }

    const uint c_begin = slice * cps;
    const uint c_end = min(c_begin + cps, p.n_chunks);
    for (uint c = c_begin; c < c_end; ++c) {
      const uint e0 = c * CH;
      const uint n_here = min(CH, p.n_db - e0);
      barrier();  // everyone is done with the previous chunk
      for (uint t = lid; t < n_here * D4; t += WG) {
#ifdef FIXED_D4
        s_db[t] = dbmap4[e0 * D4 + t];  // the chunk is contiguous
#else
        const uint el = t / D4, j = t - el * D4;
        const uint cc = 4 * j, base = (e0 + el) * p.dim + cc;
        vec4 v;
        v.x = cc < p.dim ? dbmap[base] : 0.0;
        v.y = cc + 1 < p.dim ? dbmap[base + 1] : 0.0;
        v.z = cc + 2 < p.dim ? dbmap[base + 2] : 0.0;
        v.w = cc + 3 < p.dim ? dbmap[base + 3] : 0.0;
        s_db[t] = v;
#endif
      }
      barrier();
      uint el = lane;
      if (PER_TURN > 1 && K == 1) {
        // PER_TURN database pixels per turn: more independent FMA chains, and each query
        // component is used PER_TURN times in a row. Pixels are offered in increasing index
        // order, so ties still keep the lowest.
        for (; el + (PER_TURN - 1) * dl < n_here; el += PER_TURN * dl) {
          float sc[PER_TURN * QPT];
          [[unroll]] for (uint t = 0; t < PER_TURN * QPT; ++t) sc[t] = 0.0;
          [[unroll]] for (uint j = 0; j < D4; ++j) {
            vec4 d[PER_TURN];
            [[unroll]] for (uint c = 0; c < PER_TURN; ++c) d[c] = s_db[(el + c * dl) * D4 + j];
            [[unroll]] for (uint a = 0; a < QPT; ++a) {
              const vec4 qv = q[a * D4 + j];
              [[unroll]] for (uint c = 0; c < PER_TURN; ++c) sc[c * QPT + a] = fma(qv.x, d[c].x, sc[c * QPT + a]);
              [[unroll]] for (uint c = 0; c < PER_TURN; ++c) sc[c * QPT + a] = fma(qv.y, d[c].y, sc[c * QPT + a]);
              [[unroll]] for (uint c = 0; c < PER_TURN; ++c) sc[c * QPT + a] = fma(qv.z, d[c].z, sc[c * QPT + a]);
              [[unroll]] for (uint c = 0; c < PER_TURN; ++c) sc[c * QPT + a] = fma(qv.w, d[c].w, sc[c * QPT + a]);
            }
          }
          [[unroll]] for (uint a = 0; a < QPT; ++a) {
            [[unroll]] for (uint c = 0; c < PER_TURN; ++c) {
              if (sc[c * QPT + a] > bs[a]) {
                bs[a] = sc[c * QPT + a];
                bi[a] = e0 + el + c * dl;
              }
            }
          }
        }
      }
      for (; el < n_here; el += dl) {
        float s[QPT];
        [[unroll]] for (uint a = 0; a < QPT; ++a) s[a] = 0.0;
        [[unroll]] for (uint j = 0; j < D4; ++j) {
          const vec4 d = s_db[el * D4 + j];
          [[unroll]] for (uint a = 0; a < QPT; ++a) {
            const vec4 qv = q[a * D4 + j];
            s[a] = fma(qv.x, d.x, s[a]);
            s[a] = fma(qv.y, d.y, s[a]);
            s[a] = fma(qv.z, d.z, s[a]);
            s[a] = fma(qv.w, d.w, s[a]);
          }
        }
        const uint id = e0 + el;
        // This invocation visits indices in increasing order, so a strictly better score is
        // what displaces an entry: equal scores keep the earlier (lower) index.
        [[unroll]] for (uint a = 0; a < QPT; ++a) {
          if (K == 1) {
            if (s[a] > bs[a]) {
              bs[a] = s[a];
              bi[a] = id;
            }
          } else if (s[a] > bs[a * K + K - 1]) {
            float cs = s[a];
            uint ci = id;
            [[unroll]] for (uint k = 0; k < K; ++k) {
              if (better(cs, ci, bs[a * K + k], bi[a * K + k])) {
                const float ts = bs[a * K + k];
                const uint ti = bi[a * K + k];
                bs[a * K + k] = cs;
                bi[a * K + k] = ci;
                cs = ts;
                ci = ti;
              }
            }
          }
        }
      }
    }

    // Merge the dl lanes' lists: a tree over lanes in shared memory.
    [[unroll]] for (uint t = 0; t < QPT * K; ++t) {
      s_bs[lid * QPT * K + t] = bs[t];
      s_bi[lid * QPT * K + t] = bi[t];
    }
    for (uint half_ = dl / 2; half_ > 0; half_ >>= 1) {
      barrier();
      if (lane < half_) {
        const uint other = (lid + half_ * qt) * QPT * K;
        [[unroll]] for (uint a = 0; a < QPT; ++a) {
          for (uint k2 = 0; k2 < K; ++k2) {
            float cs = s_bs[other + a * K + k2];
            uint ci = s_bi[other + a * K + k2];
            if (!better(cs, ci, bs[a * K + K - 1], bi[a * K + K - 1])) break;  // the rest rank lower
            [[unroll]] for (uint k = 0; k < K; ++k) {
              if (better(cs, ci, bs[a * K + k], bi[a * K + k])) {
                const float ts = bs[a * K + k];
                const uint ti = bi[a * K + k];
                bs[a * K + k] = cs;
                bi[a * K + k] = ci;
                cs = ts;
                ci = ti;
              }
            }
          }
        }
        [[unroll]] for (uint t = 0; t < QPT * K; ++t) {
          s_bs[lid * QPT * K + t] = bs[t];
          s_bi[lid * QPT * K + t] = bi[t];
        }
      }
    }
    if (lane == 0) {
      [[unroll]] for (uint a = 0; a < QPT; ++a) {
        const uint e = qblk * qb + q_thread * QPT + a;
        if (e < count) {
          [[unroll]] for (uint k = 0; k < K; ++k) {
            part[(slice * count + e) * K + k] = uvec2(floatBitsToUint(bs[a * K + k]), bi[a * K + k]);
          }
        }
      }
    }
    barrier();  // the next job's first chunk must not overwrite shared lists still being read
  }
}
