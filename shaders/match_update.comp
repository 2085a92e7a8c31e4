#version 450
// One step of the fast reciprocal NN loop (gpu/models/match/fast_matcher.cpp), after match_nn:
// for each active seed, reduce the per-slice partial nearest neighbours to the NN, compare it with
// the seed's current pixel on that side (step a: xy2, step b: xy1), store it, and either mark the
// seed converged (the pixel did not move: the official 'notyet &= old != new') or append it to the
// active list of the next step. One workgroup per seed (persistent loop over the active count).
//
// DEDUP = 1: match_nn searched each distinct query pixel once (the step's query list), and the
// seed finds its pixel's entry in the per-pixel table of its side. A seed that moves on claims its
// new pixel for the next step: the first claimer (atomicMax of the step's tag returns an older tag)
// appends the pixel to the next query list and records its entry; later claimers only share it.
// Tags only grow (step + 1 for the step a pixel is searched in), so the tables need no clearing.
//
// Atomics are relaxed at queue-family scope: device scope needs the vulkanMemoryModelDeviceScope
// feature, which the context does not enable. Entries and lists are read by later dispatches only.
// Relaxed atomics order nothing, so they name no storage class (gl_StorageSemanticsNone): SPIR-V
// forbids storage bits on relaxed semantics (VUID-StandaloneSpirv-MemorySemantics-10871).
#pragma use_vulkan_memory_model
#extension GL_KHR_memory_scope_semantics : require
layout(local_size_x = 64) in;
layout(constant_id = 0) const uint DEDUP = 1;

layout(binding = 0) readonly buffer Part { uvec2 part[]; };  // [slice][entry] (score bits, index)
layout(binding = 1) buffer State { uint state[]; };          // see kStateWords in match_kernels.h
layout(binding = 2) buffer Lists { int lists[]; };           // seed lists and query lists, at offsets
layout(binding = 3) readonly buffer QueryXy { int query_xy[]; };  // this step's query pixel per seed
layout(binding = 4) buffer Target { int target[]; };         // xy2 (step a) or xy1 (step b), per seed
layout(binding = 5) writeonly buffer Score { float score[]; };  // per seed: <A[xy1], B[xy2]>
layout(binding = 6) buffer Notyet { uint notyet[]; };
layout(binding = 7) buffer Tables { int tables[]; };  // per pixel: claim tag, query entry (DEDUP)

// Mirrored by UpdatePush in gpu/models/match/match_kernels.cpp.
layout(push_constant) uniform Push {
  uint step, grid;
  uint list_in, list_out;  // offsets in lists of this step's and the next step's seed lists
  uint query_out;          // offset in lists of the next step's query list (DEDUP)
  uint entry_here;         // offset in tables of the entries of this step's side (DEDUP)
  uint tag_next, entry_next;  // offsets in tables of the other side's tags and entries (DEDUP)
} p;

const uint kNone = 0xffffffffu;
const uint kQueries = 128;  // state[kQueries + step]: distinct query pixels of a step (DEDUP)
shared float s_v[64];
shared uint s_i[64];

bool better(float v, uint i, float bv, uint bi) {
  return i != kNone && (bi == kNone || v > bv || (v == bv && i < bi));
}

void main() {
  const uint lid = gl_LocalInvocationID.x;
  const uint count = state[p.step];
  const uint slices = state[64 + p.step];
  const uint entries = DEDUP == 1 ? state[kQueries + p.step] : count;  // rows of part per slice
  for (uint e = gl_WorkGroupID.x; e < count; e += p.grid) {
    const int seed = lists[p.list_in + e];
    const uint row = DEDUP == 1 ? uint(tables[p.entry_here + query_xy[seed]]) : e;
    float bv = 0.0;
    uint bi = kNone;
    for (uint s = lid; s < slices; s += 64) {
      const uvec2 c = part[s * entries + row];
      const float v = uintBitsToFloat(c.x);
      if (better(v, c.y, bv, bi)) {
        bv = v;
        bi = c.y;
      }
    }
    s_v[lid] = bv;
    s_i[lid] = bi;
    barrier();
    for (uint h = 32; h > 0; h >>= 1) {
      if (lid < h && better(s_v[lid + h], s_i[lid + h], s_v[lid], s_i[lid])) {
        s_v[lid] = s_v[lid + h];
        s_i[lid] = s_i[lid + h];
      }
      barrier();
    }
    if (lid == 0) {
      const int nn = s_i[0] == kNone ? 0 : int(s_i[0]);  // kNone only with NaN/inf data
      if (nn == target[seed]) {
        notyet[seed] = 0u;
      } else {
        const uint at =
            atomicAdd(state[p.step + 1], 1u, gl_ScopeQueueFamily, gl_StorageSemanticsNone, gl_SemanticsRelaxed);
        lists[p.list_out + at] = seed;
        if (DEDUP == 1) {
          const int tag = int(p.step) + 2;  // the next step's
          if (atomicMax(tables[p.tag_next + nn], tag, gl_ScopeQueueFamily, gl_StorageSemanticsNone,
                        gl_SemanticsRelaxed) < tag) {
            const uint q = atomicAdd(state[kQueries + p.step + 1], 1u, gl_ScopeQueueFamily, gl_StorageSemanticsNone,
                                     gl_SemanticsRelaxed);
            lists[p.query_out + q] = nn;
            tables[p.entry_next + nn] = int(q);
          }
        }
      }
      target[seed] = nn;
      score[seed] = s_v[0];
    }
    barrier();  // s_v / s_i are reused by the next seed
  }
}
