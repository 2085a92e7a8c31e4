#version 450
// One step of the fast reciprocal NN loop (gpu/models/match/fast_matcher.cpp), after match_nn:
// for each active seed, reduce the per-slice partial nearest neighbours to the NN, compare it with
// the seed's current pixel on that side (step a: xy2, step b: xy1), store it, and either mark the
// seed converged (the pixel did not move: the official 'notyet &= old != new') or append it to the
// active list of the next step. One workgroup per seed (persistent loop over the active count).
// The append is a relaxed atomic at queue-family scope: device scope needs the
// vulkanMemoryModelDeviceScope feature, which the context does not enable.
#pragma use_vulkan_memory_model
#extension GL_KHR_memory_scope_semantics : require
layout(local_size_x = 64) in;

layout(binding = 0) readonly buffer Part { uvec2 part[]; };  // [slice][entry] (score bits, index)
layout(binding = 1) buffer State { uint state[]; };          // counts[0..64), slices used [64..128)
layout(binding = 2) readonly buffer ListIn { int list_in[]; };
layout(binding = 3) writeonly buffer ListOut { int list_out[]; };
layout(binding = 4) buffer Target { int target[]; };         // xy2 (step a) or xy1 (step b), per seed
layout(binding = 5) writeonly buffer Score { float score[]; };  // per seed: <A[xy1], B[xy2]>
layout(binding = 6) buffer Notyet { uint notyet[]; };

// Mirrored by UpdatePush in gpu/models/match/match_kernels.cpp.
layout(push_constant) uniform Push { uint step, grid; } p;

const uint kNone = 0xffffffffu;
shared float s_v[64];
shared uint s_i[64];

bool better(float v, uint i, float bv, uint bi) {
  return i != kNone && (bi == kNone || v > bv || (v == bv && i < bi));
}

void main() {
  const uint lid = gl_LocalInvocationID.x;
  const uint count = state[p.step];
  const uint slices = state[64 + p.step];
  for (uint e = gl_WorkGroupID.x; e < count; e += p.grid) {
    float bv = 0.0;
    uint bi = kNone;
    for (uint s = lid; s < slices; s += 64) {
      const uvec2 c = part[s * count + e];
      const float v = uintBitsToFloat(c.x);
      if (better(v, c.y, bv, bi)) {
        bv = v;
        bi = c.y;
      }
    }
    s_v[lid] = bv;
    s_i[lid] = bi;
    barrier();
    for (uint h = 32; h > 0; h >>= 1) {
      if (lid < h && better(s_v[lid + h], s_i[lid + h], s_v[lid], s_i[lid])) {
        s_v[lid] = s_v[lid + h];
        s_i[lid] = s_i[lid + h];
      }
      barrier();
    }
    if (lid == 0) {
      const int seed = list_in[e];
      const int nn = s_i[0] == kNone ? 0 : int(s_i[0]);  // kNone only with NaN/inf data
      if (nn == target[seed]) {
        notyet[seed] = 0u;
      } else {
        list_out[atomicAdd(state[p.step + 1], 1u, gl_ScopeQueueFamily, gl_StorageSemanticsBuffer, gl_SemanticsRelaxed)] =
            seed;
      }
      target[seed] = nn;
      score[seed] = s_v[0];
    }
    barrier();  // s_v / s_i are reused by the next seed
  }
}
