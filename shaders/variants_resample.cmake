# Resampling family (gpu/ops/upsample, pool2d): fp32 and fp16 storage, fp32 arithmetic. Modes
# (align_corners, max/avg, …) are specialisation constants. pixel_shuffle uses the layout
# variants (it is a permutation).
foreach(dt f32 f16)
  if(dt STREQUAL "f16")
    set(f16 1)
  else()
    set(f16 0)
  endif()
  recon_shader(upsample_${dt} upsample.comp DEFINES DTYPE_F16=${f16})
  recon_shader(pool_${dt} pool.comp DEFINES DTYPE_F16=${f16} INDICES=0)
  recon_shader(pool_indices_${dt} pool.comp DEFINES DTYPE_F16=${f16} INDICES=1)
endforeach()
# Max pooling of i32 elements (ONNX MaxPool of int8 and uint8).
recon_shader(pool_i32 pool.comp DEFINES DTYPE_F16=0 INDICES=0 INT_VALUES=1)
recon_shader(pool_indices_i32 pool.comp DEFINES DTYPE_F16=0 INDICES=1 INT_VALUES=1)
# resize (gpu/ops/resize): ONNX Resize by tap tables.
recon_shader(resize_f32 resize.comp DEFINES DTYPE_F16=0)
recon_shader(resize_f16 resize.comp DEFINES DTYPE_F16=1)
# grid_sample (gpu/ops/grid_sample): mode, padding and align_corners are specialisation constants.
recon_shader(grid_sample_f32 grid_sample.comp DEFINES DTYPE_F16=0)
recon_shader(grid_sample_f16 grid_sample.comp DEFINES DTYPE_F16=1)

# roi_align (gpu/ops/roi_align): f32 and f16 storage.
recon_shader(roi_align_f32 roi_align.comp DEFINES DTYPE_F16=0)
recon_shader(roi_align_f16 roi_align.comp DEFINES DTYPE_F16=1)
