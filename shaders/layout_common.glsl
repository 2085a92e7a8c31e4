// Shared by the layout shaders (copies that move bits, never compute): ELEM_T is the storage type
// of one element, chosen by ELEM_BITS = 32 (f32, i32 as raw words), 16 (f16) or 8 (u8).
// Include this first: it declares the extensions the element type needs.
#if ELEM_BITS == 8
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#endif
#define DTYPE_F16 0
#include "common.glsl"

#if ELEM_BITS == 32
#define ELEM_T uint
#elif ELEM_BITS == 16
#define ELEM_T float16_t
#elif ELEM_BITS == 8
#define ELEM_T uint8_t
#else
#error "ELEM_BITS must be 32, 16 or 8"
#endif
