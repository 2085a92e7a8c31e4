# Layout copies (gpu/ops/layout.cpp, also used by pixel_shuffle): one variant per element width.
# b32 moves f32/i32 words, b16 f16, b8 u8 (needs 8-bit storage).
foreach(bits 32 16 8)
  recon_shader(layout_strided_b${bits} layout_strided.comp DEFINES ELEM_BITS=${bits})
  recon_shader(permute_tiled_b${bits} permute_tiled.comp DEFINES ELEM_BITS=${bits})
  recon_shader(concat_b${bits} concat.comp DEFINES ELEM_BITS=${bits})
endforeach()
# Pad, Tile and device Expand (gpu/ops/pad): f32/i32 words and f16.
recon_shader(pad_b32 pad.comp DEFINES ELEM_BITS=32)
recon_shader(pad_b16 pad.comp DEFINES ELEM_BITS=16)
# Trilu (gpu/ops/trilu): f32/i32 words and f16.
recon_shader(trilu_b32 trilu.comp DEFINES ELEM_BITS=32)
recon_shader(trilu_b16 trilu.comp DEFINES ELEM_BITS=16)
# GatherElements (gpu/ops/gather_elements): f32/i32 words and f16.
recon_shader(gather_elements_b32 gather_elements.comp DEFINES ELEM_BITS=32)
recon_shader(gather_elements_b16 gather_elements.comp DEFINES ELEM_BITS=16)
# GatherND (gpu/ops/gather_elements): f32/i32 words and f16.
recon_shader(gather_nd_b32 gather_nd.comp DEFINES ELEM_BITS=32)
recon_shader(gather_nd_b16 gather_nd.comp DEFINES ELEM_BITS=16)
# ScatterElements and ScatterND (gpu/ops/scatter): their reductions compute, so one variant per
# type: f32 and f16 storage with fp32 arithmetic, i32 with integer arithmetic.
recon_shader(scatter_f32 scatter.comp DEFINES DTYPE_F16=0 ELEM_INT=0)
recon_shader(scatter_f16 scatter.comp DEFINES DTYPE_F16=1 ELEM_INT=0)
recon_shader(scatter_i32 scatter.comp DEFINES DTYPE_F16=0 ELEM_INT=1)
