# Normalisation ops (gpu/ops/{layer_norm,rms_norm,batch_norm,l2_normalize}.cpp): fp32 and fp16 storage.
foreach(dt f32 f16)
  if(dt STREQUAL "f16")
    set(f16 1)
  else()
    set(f16 0)
  endif()
  recon_shader(layer_norm_${dt} layer_norm.comp DEFINES DTYPE_F16=${f16})
  recon_shader(rms_norm_${dt} rms_norm.comp DEFINES DTYPE_F16=${f16})
  recon_shader(batch_norm_${dt} batch_norm.comp DEFINES DTYPE_F16=${f16})
  recon_shader(l2_normalize_${dt} l2_normalize.comp DEFINES DTYPE_F16=${f16})
endforeach()
# lrn (gpu/ops/lrn): local response normalisation across channels.
recon_shader(lrn_f32 lrn.comp DEFINES DTYPE_F16=0)
recon_shader(lrn_f16 lrn.comp DEFINES DTYPE_F16=1)
# det (gpu/ops/det): determinants of square matrices.
recon_shader(det_f32 det.comp DEFINES DTYPE_F16=0)
recon_shader(det_f16 det.comp DEFINES DTYPE_F16=1)
