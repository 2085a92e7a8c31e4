# Elementwise and reduction families (gpu/ops/elementwise, unary, reduce, topk, one_hot): fp32 and fp16
# storage, fp32 arithmetic. The op itself (add/sub/…, relu/gelu/…, sum/max/…) and the schedule
# are specialisation constants, not variants.
foreach(dt f32 f16)
  if(dt STREQUAL "f16")
    set(f16 1)
  else()
    set(f16 0)
  endif()
  recon_shader(binary_${dt} binary.comp DEFINES DTYPE_F16=${f16})
  recon_shader(binary_words_${dt} binary_words.comp DEFINES DTYPE_F16=${f16})
  recon_shader(unary_${dt} unary.comp DEFINES DTYPE_F16=${f16})
  recon_shader(reduce_${dt} reduce.comp DEFINES DTYPE_F16=${f16})
  recon_shader(argmax_${dt} argmax.comp DEFINES DTYPE_F16=${f16})
  recon_shader(topk_${dt} topk.comp DEFINES DTYPE_F16=${f16})
  recon_shader(one_hot_${dt} one_hot.comp DEFINES DTYPE_F16=${f16})
endforeach()
# Integer arithmetic of i32 tensors (ONNX's integer Add, Sub, Mul, Div, Max, Min on the device).
recon_shader(binary_i32 binary.comp DEFINES DTYPE_F16=0 INT_OPERANDS=1)
