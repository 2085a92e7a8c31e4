#version 450
// Batched 2-D transpose through a shared-memory tile, the fast path of permute:
// dst[dst_base + (b·cols + c)·rows + r] = src[base + b·batch_stride + r·row_stride + c], i.e. dst is
// [batch, cols, rows].
// Reads run along c and writes along r, both coalesced. Batch is gl_WorkGroupID.z.
#include "layout_common.glsl"
layout(constant_id = 0) const uint TILE = 32;        // tile edge
layout(constant_id = 1) const uint ROWS_PER_PASS = 8;  // local_size_y; each invocation moves TILE/ROWS_PER_PASS elements
layout(local_size_x_id = 0, local_size_y_id = 1) in;
layout(binding = 0) readonly buffer Src { ELEM_T src[]; };
layout(binding = 1) writeonly buffer Dst { ELEM_T dst[]; };
// Mirrored by TiledPush in gpu/ops/layout.cpp.
layout(push_constant) uniform Push { uint rows, cols, base, row_stride, batch_stride, dst_base; } p;
shared ELEM_T tile[TILE][TILE + 1];  // +1 column: no bank conflicts on the transposed read
void main() {
  const uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y;
  const uint b = gl_WorkGroupID.z;
  const uint c0 = gl_WorkGroupID.x * TILE, r0 = gl_WorkGroupID.y * TILE;
  const uint src_base = p.base + b * p.batch_stride;
  for (uint j = ly; j < TILE; j += ROWS_PER_PASS) {
    uint r = r0 + j, c = c0 + lx;
    if (r < p.rows && c < p.cols) tile[j][lx] = src[src_base + r * p.row_stride + c];
  }
  barrier();
  const uint dst_base = p.dst_base + b * p.rows * p.cols;
  for (uint j = ly; j < TILE; j += ROWS_PER_PASS) {
    uint c = c0 + j, r = r0 + lx;
    if (c < p.cols && r < p.rows) dst[dst_base + c * p.rows + r] = tile[lx][j];
  }
}
