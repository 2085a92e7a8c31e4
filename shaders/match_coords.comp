#version 450
// Pixel coordinates (x, y) of the first `count` matches from their pixel indices: x = i % W,
// y = i / W, for both images. Entries past the count are left as they are.
layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer Count { int count[]; };
layout(binding = 1) readonly buffer IdxA { int idx_a[]; };
layout(binding = 2) readonly buffer IdxB { int idx_b[]; };
layout(binding = 3) writeonly buffer XyA { ivec2 xy_a[]; };
layout(binding = 4) writeonly buffer XyB { ivec2 xy_b[]; };

// Mirrored by CoordsPush in gpu/models/match/match_kernels.cpp.
layout(push_constant) uniform Push { uint capacity, w_a, w_b; } p;

void main() {
  const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256;
  if (i >= p.capacity || int(i) >= count[0]) return;
  const int a = idx_a[i], b = idx_b[i];
  xy_a[i] = ivec2(a % int(p.w_a), a / int(p.w_a));
  xy_b[i] = ivec2(b % int(p.w_b), b / int(p.w_b));
}
