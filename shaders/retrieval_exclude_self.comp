#version 450
// Pair selection (gpu/models/retrieval/retrieval_pairs.cpp): a copy of the B×B similarity with
// the diagonal set to −inf, so that top-k never returns an image as its own candidate.
layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer Sim { float sim[]; };
layout(binding = 1) writeonly buffer Masked { float masked[]; };

// Mirrored by ExcludeSelfPush in gpu/models/retrieval/retrieval_kernels.cpp.
layout(push_constant) uniform Push { uint images; } p;

void main() {
  const uint e = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256;
  if (e >= p.images * p.images) return;
  const uint row = e / p.images, col = e - row * p.images;
  masked[e] = row == col ? uintBitsToFloat(0xff800000u) : sim[e];
}
