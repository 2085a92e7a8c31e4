#version 450
// Exhaustive matcher: the filters on each query row's K candidates. A candidate (a, b) stays when
// it passed the reciprocity check (if asked) and sqrt(conf_a[a] · conf_b[b]) >= threshold (if
// confidence maps were given). The kept ones are written sorted by b, then -1 up to K, so that
// compaction in candidate order gives matches sorted by a then b.
layout(local_size_x = 64) in;

const uint kMaxK = 8;

layout(binding = 0) readonly buffer QPix { int qpix[]; };
layout(binding = 1) readonly buffer TopIdx { int top_idx[]; };
layout(binding = 2) readonly buffer TopScore { float top_score[]; };
layout(binding = 3) readonly buffer Keep { int keep[]; };
layout(binding = 4) readonly buffer ConfA { float conf_a[]; };
layout(binding = 5) readonly buffer ConfB { float conf_b[]; };
layout(binding = 6) writeonly buffer CandB { int cand_b[]; };
layout(binding = 7) writeonly buffer CandS { float cand_s[]; };

// Mirrored by MutualPush in gpu/models/match/match_kernels.cpp.
layout(push_constant) uniform Push { uint rows, k, reciprocal, use_conf; float threshold; } p;

void main() {
  const uint r = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64;
  if (r >= p.rows) return;
  const int a = qpix[r];
  int kb[kMaxK];
  float ks[kMaxK];
  uint n = 0;
  for (uint j = 0; j < p.k; ++j) {
    const uint c = r * p.k + j;
    const int b = top_idx[c];
    bool ok = b >= 0;
    if (ok && p.reciprocal != 0u) ok = keep[c] != 0;
    if (ok && p.use_conf != 0u) ok = sqrt(conf_a[a] * conf_b[b]) >= p.threshold;
    if (ok) {
      uint at = n++;
      while (at > 0 && kb[at - 1] > b) {  // insertion sort by b
        kb[at] = kb[at - 1];
        ks[at] = ks[at - 1];
        --at;
      }
      kb[at] = b;
      ks[at] = top_score[c];
    }
  }
  for (uint j = 0; j < p.k; ++j) {
    cand_b[r * p.k + j] = j < n ? kb[j] : -1;
    cand_s[r * p.k + j] = j < n ? ks[j] : 0.0;
  }
}
