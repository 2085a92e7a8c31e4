#version 450
// Exhaustive matcher (gpu/models/match/exhaustive_matcher.cpp), after match_nn with K > 1 or 1:
// merges each query's per-slice partial lists into its K best, best first (ties: lower index).
// MODE 0 writes them (topk_idx / topk_score [query, K]); MODE 1 is the reciprocity check, where
// the queries are the candidates of a forward pass (query row = candidate / K_fwd): it writes
// keep[candidate] = 1 when the row's A pixel is among the candidate's K best in A.
layout(constant_id = 0) const uint K = 1;
layout(constant_id = 1) const uint MODE = 0;
layout(local_size_x = 64) in;

layout(binding = 0) readonly buffer Part { uvec2 part[]; };  // [slice][entry][K]
layout(binding = 1) readonly buffer State { uint state[]; };
layout(binding = 2) writeonly buffer TopIdx { int top_idx[]; };
layout(binding = 3) writeonly buffer TopScore { float top_score[]; };
layout(binding = 4) readonly buffer QPix { int qpix[]; };
layout(binding = 5) writeonly buffer Keep { int keep[]; };

// Mirrored by TopkPush in gpu/models/match/match_kernels.cpp.
layout(push_constant) uniform Push { uint count, q_begin, meta_index, k_fwd; } p;

const uint kNone = 0xffffffffu;

bool better(float v, uint i, float bv, uint bi) {
  return i != kNone && (bi == kNone || v > bv || (v == bv && i < bi));
}

void main() {
  const uint e = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64;
  if (e >= p.count) return;
  const uint slices = state[64 + p.meta_index];
  float bs[K];
  uint bi[K];
  for (uint k = 0; k < K; ++k) {
    bs[k] = 0.0;
    bi[k] = kNone;
  }
  for (uint s = 0; s < slices; ++s) {
    for (uint k2 = 0; k2 < K; ++k2) {
      const uvec2 c = part[(s * p.count + e) * K + k2];
      float cs = uintBitsToFloat(c.x);
      uint ci = c.y;
      if (!better(cs, ci, bs[K - 1], bi[K - 1])) break;  // the slice's list is sorted
      for (uint k = 0; k < K; ++k) {
        if (better(cs, ci, bs[k], bi[k])) {
          const float ts = bs[k];
          const uint ti = bi[k];
          bs[k] = cs;
          bi[k] = ci;
          cs = ts;
          ci = ti;
        }
      }
    }
  }
  const uint g = p.q_begin + e;
  if (MODE == 0) {
    for (uint k = 0; k < K; ++k) {
      top_idx[g * K + k] = bi[k] == kNone ? -1 : int(bi[k]);
      top_score[g * K + k] = bs[k];
    }
  } else {
    const uint a = uint(qpix[g / p.k_fwd]);
    int found = 0;
    for (uint k = 0; k < K; ++k) found |= bi[k] == a ? 1 : 0;
    keep[g] = found;
  }
}
