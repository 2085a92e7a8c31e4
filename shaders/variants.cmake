# Every shader variant recon embeds: one line per (variant name, source, defines).
# Kernels pick a variant by name at run time from the device's capability set.
recon_shader(fill_f32 fill.comp DEFINES DTYPE_F16=0)
recon_shader(fill_f16 fill.comp DEFINES DTYPE_F16=1)
recon_shader(copy_u32 copy.comp)
recon_shader(copy_grid copy_grid.comp)
recon_shader(add_f32 add.comp DEFINES DTYPE_F16=0)
recon_shader(add_f16 add.comp DEFINES DTYPE_F16=1)
recon_shader(matmul_tiled_f32 matmul_tiled.comp DEFINES DTYPE_F16=0)
recon_shader(matmul_tiled_f16 matmul_tiled.comp DEFINES DTYPE_F16=1)
recon_shader(coopmat_layout_probe coopmat_layout_probe.comp)

# The op library adds its variants in one file per op family (variants_<family>.cmake).
file(GLOB RECON_VARIANT_FILES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/variants_*.cmake)
foreach(f ${RECON_VARIANT_FILES})
  include(${f})
endforeach()
