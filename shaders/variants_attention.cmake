# Attention ops (gpu/ops/{attention,rope2d,softmax}.cpp): fp32 and fp16 storage on the scalar path,
# plus the NV cooperative-matrix attention (fp16 only), chosen at run time from the capabilities.
foreach(dt f32 f16)
  if(dt STREQUAL "f16")
    set(f16 1)
  else()
    set(f16 0)
  endif()
  recon_shader(softmax_${dt} softmax.comp DEFINES DTYPE_F16=${f16})
  recon_shader(rope2d_${dt} rope2d.comp DEFINES DTYPE_F16=${f16})
  recon_shader(attention_${dt} attention.comp DEFINES DTYPE_F16=${f16})
endforeach()
recon_shader(attention_cm_f16 attention_cm.comp)
recon_shader(attention_cm_rows_f16 attention_cm_rows.comp)
