#version 450
// Start of the fast reciprocal NN loop (gpu/models/match/fast_matcher.cpp): seeds on the grid
// S/2 + i·S (row-major, hence sorted and unique) into xy1, xy2 = -1, every seed 'notyet' and
// active in step 0; step counters cleared; the per-pixel merge table of A emptied (-1).
// With the query de-duplication (n_tables > 0): step 0's query list is the seed pixels (distinct),
// each seed pixel's entry in A's table is its seed index, and every claim tag is cleared.
layout(local_size_x = 256) in;

layout(binding = 0) writeonly buffer Xy1 { int xy1[]; };
layout(binding = 1) writeonly buffer Xy2 { int xy2[]; };
layout(binding = 2) writeonly buffer Notyet { uint notyet[]; };
layout(binding = 3) writeonly buffer Lists { int lists[]; };  // seed list 0 at 0, query list 0 at query0
layout(binding = 4) writeonly buffer State { uint state[]; };
layout(binding = 5) writeonly buffer Mark { int mark_b[]; };
layout(binding = 6) writeonly buffer Tables { int tables[]; };  // tags at tag_a / tag_b, entries of A at entry_a

// Mirrored by InitPush in gpu/models/match/match_kernels.cpp.
layout(push_constant) uniform Push {
  uint n_seeds, seeds_x, subsample, width_a, n_mark, n_state;
  uint query0;             // offset of step 0's query list in lists
  uint n_tables;           // 0: no de-duplication
  uint tag_a, n_a, entry_a, tag_b, n_b;
} p;

const uint kQueries = 128;  // state[kQueries + step]: distinct query pixels of a step

void main() {
  const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256;
  if (i < p.n_seeds) {
    const uint sy = i / p.seeds_x, sx = i - sy * p.seeds_x;
    const uint half_ = p.subsample / 2;
    const int pixel = int((half_ + sy * p.subsample) * p.width_a + half_ + sx * p.subsample);
    xy1[i] = pixel;
    xy2[i] = -1;
    notyet[i] = 1u;
    lists[i] = int(i);
    if (p.n_tables > 0) {
      lists[p.query0 + i] = pixel;
      tables[p.entry_a + pixel] = int(i);
    }
  }
  if (i < p.n_mark) mark_b[i] = -1;
  if (i < p.n_state) state[i] = i == 0 || (i == kQueries && p.n_tables > 0) ? p.n_seeds : 0u;
  if (p.n_tables > 0) {
    if (i < p.n_a) tables[p.tag_a + i] = 0;
    if (i < p.n_b) tables[p.tag_b + i] = 0;
  }
}
