#version 450
// out = a ∘ b over operands of one shape, in 16-byte words (wide_io.glsl), ∘ ∈ {+, −, ×, ÷, max, min, pow} chosen
// by OP (ops::BinaryOp order). A fixed grid loops over the words (gpu/ops/wide_access.h,
// kGridStrideGroups): with one word per workgroup invocation and one invocation per word, the
// flat kernel (binary.comp) paid for a workgroup launch every 256 elements and reached 1.2–2.7
// TB/s on an H200 where a looping copy reaches 3.7. Same fp32 arithmetic and rounding as binary.comp.
#include "common.glsl"
#include "wide_io.glsl"
layout(constant_id = 0) const uint OP = 0;
#include "binary_apply.glsl"
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer A { uvec4 a[]; };
layout(binding = 1) readonly buffer B { uvec4 b[]; };
layout(binding = 2) writeonly buffer Out { uvec4 out_data[]; };
// Mirrored by BinaryWordsPush in gpu/ops/elementwise.cpp; counts and offsets in words.
layout(push_constant) uniform Push { uint words, base_a, base_b, base_out; } p;

void main() {
  const uint step = gl_NumWorkGroups.x * 256;
  for (uint w = gl_GlobalInvocationID.x; w < p.words; w += step) {
    float x[VW], y[VW], r[VW];
    unpack_word(a[p.base_a + w], x);
    unpack_word(b[p.base_b + w], y);
    for (uint i = 0; i < VW; ++i) r[i] = binary_apply(x[i], y[i]);
    out_data[p.base_out + w] = pack_word(r);
  }
}
