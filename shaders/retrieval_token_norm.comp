#version 450
// Retrieval attention (gpu/models/retrieval/retrieval_model.cpp): norm[r] = ‖x[r, :]‖₂ per token,
// the official featweights='l2norm'. One workgroup per row; fp32 sum of squares, subgroupAdd then
// one shared slot per subgroup.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

layout(constant_id = 0) const uint WG = 128;
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) writeonly buffer Norm { float norm[]; };

// Mirrored by TokenNormPush in gpu/models/retrieval/retrieval_kernels.cpp.
layout(push_constant) uniform Push { uint rows, cols; } p;

shared float partial[WG];

void main() {
  const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (row >= p.rows) return;
  const uint base = row * p.cols;
  float ss = 0.0;
  for (uint i = gl_LocalInvocationID.x; i < p.cols; i += WG) {
    const float v = x[base + i];
    ss += v * v;
  }
  ss = subgroupAdd(ss);
  if (subgroupElect()) partial[gl_SubgroupID] = ss;
  barrier();
  if (gl_LocalInvocationID.x == 0) {
    float total = 0.0;
    for (uint i = 0; i < gl_NumSubgroups; ++i) total += partial[i];
    norm[row] = sqrt(total);
  }
}
