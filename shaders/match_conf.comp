#version 450
// Confidences of the first `count` matches: conf_a = ca[idx_a], conf_b = cb[idx_b] and the pair's
// conf = sqrt(conf_a · conf_b) (MASt3R-SfM's extract_correspondences).
layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer Count { int count[]; };
layout(binding = 1) readonly buffer IdxA { int idx_a[]; };
layout(binding = 2) readonly buffer IdxB { int idx_b[]; };
layout(binding = 3) readonly buffer MapA { float map_a[]; };
layout(binding = 4) readonly buffer MapB { float map_b[]; };
layout(binding = 5) writeonly buffer ConfA { float conf_a[]; };
layout(binding = 6) writeonly buffer ConfB { float conf_b[]; };
layout(binding = 7) writeonly buffer Conf { float conf[]; };

// Mirrored by CountPush in gpu/models/match/match_kernels.cpp.
layout(push_constant) uniform Push { uint capacity; } p;

void main() {
  const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256;
  if (i >= p.capacity || int(i) >= count[0]) return;
  const float ca = map_a[idx_a[i]], cb = map_b[idx_b[i]];
  conf_a[i] = ca;
  conf_b[i] = cb;
  conf[i] = sqrt(ca * cb);
}
