#version 450
// Start of the fast reciprocal NN loop (gpu/models/match/fast_matcher.cpp): seeds on the grid
// S/2 + i·S (row-major, hence sorted and unique) into xy1, xy2 = -1, every seed 'notyet' and
// active in step 0; step counters cleared; the per-pixel merge table of A emptied (-1).
layout(local_size_x = 256) in;

layout(binding = 0) writeonly buffer Xy1 { int xy1[]; };
layout(binding = 1) writeonly buffer Xy2 { int xy2[]; };
layout(binding = 2) writeonly buffer Notyet { uint notyet[]; };
layout(binding = 3) writeonly buffer List0 { int list0[]; };
layout(binding = 4) writeonly buffer State { uint state[]; };
layout(binding = 5) writeonly buffer Mark { int mark_b[]; };

// Mirrored by InitPush in gpu/models/match/match_kernels.cpp.
layout(push_constant) uniform Push { uint n_seeds, seeds_x, subsample, width_a, n_mark, n_state; } p;

void main() {
  const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256;
  if (i < p.n_seeds) {
    const uint sy = i / p.seeds_x, sx = i - sy * p.seeds_x;
    const uint half_ = p.subsample / 2;
    xy1[i] = int((half_ + sy * p.subsample) * p.width_a + half_ + sx * p.subsample);
    xy2[i] = -1;
    notyet[i] = 1u;
    list0[i] = int(i);
  }
  if (i < p.n_mark) mark_b[i] = -1;
  if (i < p.n_state) state[i] = i == 0 ? p.n_seeds : 0u;
}
