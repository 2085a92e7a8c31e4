#version 450
// End of the fast reciprocal NN loop: every converged seed writes its pair into the per-pixel
// table of A (mark_b[xy1] = xy2, mark_s[xy1] = score). Seeds that reached the same xy1 reached
// the same xy2 (it is NN_B(xy1)), so concurrent writes agree: this is the merge's de-duplication,
// and reading the table in pixel order gives the official sort by xy1.
layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer Notyet { uint notyet[]; };
layout(binding = 1) readonly buffer Xy1 { int xy1[]; };
layout(binding = 2) readonly buffer Xy2 { int xy2[]; };
layout(binding = 3) readonly buffer Score { float score[]; };
layout(binding = 4) writeonly buffer MarkB { int mark_b[]; };
layout(binding = 5) writeonly buffer MarkS { float mark_s[]; };

// Mirrored by CountPush in gpu/models/match/match_kernels.cpp.
layout(push_constant) uniform Push { uint n; } p;

void main() {
  const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256;
  if (i >= p.n || notyet[i] != 0u) return;
  const int a = xy1[i];
  mark_b[a] = xy2[i];
  mark_s[a] = score[i];
}
