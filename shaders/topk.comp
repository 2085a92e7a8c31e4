#version 450
// Top-k along the last axis of a [rows, n] view, one workgroup per row: the k best (largest, or
// smallest when LARGEST = 0) values in order, with their int32 indices; equal values rank by the
// lower index. Each invocation keeps a sorted list of its own k best (a strided scan visits its
// indices in increasing order, so ties keep the earlier element); then k rounds of a shared-memory
// arg-max over the invocations' list heads pick the results in order.
#include "common.glsl"
layout(constant_id = 0) const uint WG = 128;   // power of two
layout(constant_id = 1) const uint KMAX = 64;  // list capacity per invocation; the host keeps k ≤ KMAX
layout(constant_id = 2) const uint LARGEST = 1;
layout(local_size_x_id = 0) in;
layout(binding = 0) readonly buffer In { STORE_T src[]; };
layout(binding = 1) writeonly buffer Values { STORE_T out_val[]; };
layout(binding = 2) writeonly buffer Indices { int out_idx[]; };
// Mirrored by TopkPush in gpu/ops/topk.cpp. base_* are element offsets into the bound windows.
layout(push_constant) uniform Push { uint rows, n, k, base_in, base_val, base_idx; } p;

shared float s_val[WG];
shared uint s_idx[WG];
shared uint s_lane[WG];

const uint kNone = 0xffffffffu;

void main() {
  const uint lid = gl_LocalInvocationID.x;
  const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (row >= p.rows) return;  // uniform across the workgroup
  const uint k = p.k;

  // Phase 1: this invocation's k best, sorted best first (values negated for LARGEST = 0).
  float lv[KMAX];
  uint li[KMAX];
  uint count = 0;
  const uint base = p.base_in + row * p.n;
  for (uint j = lid; j < p.n; j += WG) {
    float v = float(src[base + j]);
    if (LARGEST == 0) v = -v;
    if (count == k && !(v > lv[k - 1])) continue;  // an equal value loses to the earlier index
    uint pos = count < k ? count : k - 1;
    if (count < k) ++count;
    while (pos > 0 && lv[pos - 1] < v) {
      lv[pos] = lv[pos - 1];
      li[pos] = li[pos - 1];
      --pos;
    }
    lv[pos] = v;
    li[pos] = j;
  }

  // Phase 2: k rounds; each picks the best list head and pops it from its owner's list.
  uint head = 0;
  const uint out_row = row * k;
  for (uint pick = 0; pick < k; ++pick) {
    const bool has = head < count;
    s_val[lid] = has ? lv[head] : 0.0;
    s_idx[lid] = has ? li[head] : kNone;
    s_lane[lid] = lid;
    barrier();
    for (uint s = WG / 2; s > 0; s >>= 1) {
      if (lid < s) {
        const float ov = s_val[lid + s];
        const uint oi = s_idx[lid + s];
        const uint mi = s_idx[lid];
        if (oi != kNone && (mi == kNone || ov > s_val[lid] || (ov == s_val[lid] && oi < mi))) {
          s_val[lid] = ov;
          s_idx[lid] = oi;
          s_lane[lid] = s_lane[lid + s];
        }
      }
      barrier();
    }
    if (lid == 0) {
      const float v = s_val[0];
      out_val[p.base_val + out_row + pick] = STORE_T(LARGEST == 0 ? -v : v);
      out_idx[p.base_idx + out_row + pick] = int(s_idx[0]);
    }
    if (lid == s_lane[0]) ++head;
    barrier();
  }
}
