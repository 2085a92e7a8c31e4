#version 450
// Gathers per-pixel rows of a map (e.g. pts3d, C = 3) for the first `count` matches:
// out[i, c] = map[idx[i], c]. Entries past the count are left as they are.
layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer Count { int count[]; };
layout(binding = 1) readonly buffer Idx { int idx[]; };
layout(binding = 2) readonly buffer Map { float map_[]; };
layout(binding = 3) writeonly buffer Out { float out_[]; };

// Mirrored by GatherPush in gpu/models/match/match_kernels.cpp.
layout(push_constant) uniform Push { uint capacity, channels; } p;

void main() {
  const uint t = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256;
  const uint i = t / p.channels, c = t - i * p.channels;
  if (i >= p.capacity || int(i) >= count[0]) return;
  out_[t] = map_[uint(idx[i]) * p.channels + c];
}
