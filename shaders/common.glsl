// Shared by every recon compute shader: storage types and index helpers.
// DTYPE_F16=1 selects fp16 storage; arithmetic is always fp32 (convert on load/store).
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require

#if DTYPE_F16
#define STORE_T float16_t
#define STORE4_T f16vec4  // 4 adjacent elements as one 8- or 16-byte access
#else
#define STORE_T float
#define STORE4_T vec4
#endif

// Dispatches larger than 65535 workgroups in x spill into y; this flattens both.
uint linear_invocation(uint local_size_x) {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * local_size_x;
}
