#version 450
// Ordered compaction of match candidates with the border filter, in three passes (PASS define):
//   0 count: per block of 1024 candidates, how many are kept;
//   1 scan:  one workgroup turns the block counts into exclusive offsets and writes the total;
//   2 write: each block writes its kept candidates, in candidate order, at its offset.
// MODE 0 (fast matcher): candidate e is pixel e of A, matched to cand_b[e] (-1: none).
// MODE 1 (exhaustive): candidate e is slot e % k of query row e / k: A pixel qpix[e / k].
// Kept: cand_b >= 0 and both pixels inside the border (border <= x < W - border, same for y).
layout(constant_id = 0) const uint MODE = 0;
layout(local_size_x = 256) in;

const uint EPT = 4;  // candidates per invocation; a block is 256 * EPT

// Mirrored by CompactPush in gpu/models/match/match_kernels.cpp.
layout(push_constant) uniform Push {
  uint n, k, w_a, h_a, w_b, h_b, border, n_blocks;
} p;

#if PASS == 0 || PASS == 2
layout(binding = 0) readonly buffer CandB { int cand_b[]; };
layout(binding = 1) readonly buffer QPix { int qpix[]; };
#endif
#if PASS == 0
layout(binding = 2) writeonly buffer Blocks { uint blocks[]; };
#elif PASS == 1
layout(binding = 0) buffer Blocks { uint blocks[]; };
layout(binding = 1) writeonly buffer Count { int out_count[]; };
#else
layout(binding = 2) readonly buffer Blocks { uint blocks[]; };
layout(binding = 3) readonly buffer CandS { float cand_s[]; };
layout(binding = 4) writeonly buffer IdxA { int idx_a[]; };
layout(binding = 5) writeonly buffer IdxB { int idx_b[]; };
layout(binding = 6) writeonly buffer Score { float score[]; };
#endif

shared uint s_scan[256];

// Inclusive prefix sum of v over the workgroup (Hillis-Steele; all invocations must call it).
uint scan_inclusive(uint v) {
  const uint lid = gl_LocalInvocationID.x;
  s_scan[lid] = v;
  barrier();
  for (uint off = 1; off < 256; off <<= 1) {
    const uint add = lid >= off ? s_scan[lid - off] : 0u;
    barrier();
    s_scan[lid] += add;
    barrier();
  }
  const uint r = s_scan[lid];
  barrier();
  return r;
}

#if PASS != 1
bool inside(int pix, uint w, uint h) {
  const int x = pix % int(w), y = pix / int(w), b = int(p.border);
  return x >= b && x < int(w) - b && y >= b && y < int(h) - b;
}

// The A pixel of candidate e, or -1 when it is not kept.
int kept_a(uint e) {
  if (e >= p.n) return -1;
  const int b = cand_b[e];
  if (b < 0) return -1;
  const int a = MODE == 0 ? int(e) : qpix[e / p.k];
  return inside(a, p.w_a, p.h_a) && inside(b, p.w_b, p.h_b) ? a : -1;
}
#endif

void main() {
  const uint lid = gl_LocalInvocationID.x;
#if PASS == 1
  uint running = 0;
  for (uint base = 0; base < p.n_blocks; base += 256) {
    const uint i = base + lid;
    const uint v = i < p.n_blocks ? blocks[i] : 0u;
    const uint incl = scan_inclusive(v);
    if (i < p.n_blocks) blocks[i] = running + incl - v;
    running += s_scan[255];  // read after scan_inclusive's last barrier; rewritten only after the next one
    barrier();
  }
  if (lid == 0) out_count[0] = int(running);
#else
  const uint block = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (block >= p.n_blocks) return;  // uniform
  const uint first = (block * 256 + lid) * EPT;
  uint mine = 0;
  for (uint j = 0; j < EPT; ++j) mine += kept_a(first + j) >= 0 ? 1u : 0u;
#if PASS == 0
  const uint total = scan_inclusive(mine);
  if (lid == 255) blocks[block] = total;
#else
  uint at = blocks[block] + scan_inclusive(mine) - mine;
  for (uint j = 0; j < EPT; ++j) {
    const uint e = first + j;
    const int a = kept_a(e);
    if (a >= 0) {
      idx_a[at] = a;
      idx_b[at] = cand_b[e];
      score[at] = cand_s[e];
      ++at;
    }
  }
#endif
#endif
}
