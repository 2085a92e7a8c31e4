#version 450
// Inference BatchNorm on [N, C, spatial...]: y = (x − mean[c]) · rsqrt(var[c] + eps) · weight[c] + bias[c],
// elementwise, c = (i / spatial) mod C. Parameters share x's dtype; arithmetic in fp32.
#include "common.glsl"

layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer X { STORE_T x[]; };
layout(binding = 1) readonly buffer Mean { STORE_T mean[]; };
layout(binding = 2) readonly buffer Var { STORE_T var[]; };
layout(binding = 3) readonly buffer Wt { STORE_T weight[]; };  // x again when unused
layout(binding = 4) readonly buffer Bs { STORE_T bias[]; };    // x again when unused
layout(binding = 5) writeonly buffer Y { STORE_T y[]; };

const uint kHasWeight = 1u, kHasBias = 2u;
layout(push_constant) uniform Push {
  uint n;        // elements in this dispatch
  uint channels;
  uint spatial;  // product of the axes after C (1 for [N, C])
  uint flags;
  float eps;
} p;

void main() {
  const uint i = linear_invocation(256);
  if (i >= p.n) return;
  const uint c = (i / p.spatial) % p.channels;
  float v = (float(x[i]) - float(mean[c])) * inversesqrt(float(var[c]) + p.eps);
  if ((p.flags & kHasWeight) != 0u) v *= float(weight[c]);
  if ((p.flags & kHasBias) != 0u) v += float(bias[c]);
  y[i] = STORE_T(v);
}
