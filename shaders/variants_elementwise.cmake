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
# Integer arithmetic, comparisons and logic of i32 tensors (ONNX integers and bools on the device).
recon_shader(binary_i32 binary.comp DEFINES DTYPE_F16=0 INT_OPERANDS=1)
# Comparisons of float operands into i32 0/1 (ONNX's bool on the device); integer comparisons and
# logic take binary_i32.
recon_shader(binary_cmp_f32 binary.comp DEFINES DTYPE_F16=0 BOOL_OUT=1)
recon_shader(binary_cmp_f16 binary.comp DEFINES DTYPE_F16=1 BOOL_OUT=1)
# Where (a select of three broadcast operands): f32/i32 words and f16.
recon_shader(where_b32 where.comp DEFINES ELEM_BITS=32)
recon_shader(where_b16 where.comp DEFINES ELEM_BITS=16)
# CumSum (gpu/ops/cumsum): f32 and f16 storage with an fp32 sum, i32 with an integer sum.
recon_shader(cumsum_f32 cumsum.comp DEFINES DTYPE_F16=0 ELEM_INT=0)
recon_shader(cumsum_f16 cumsum.comp DEFINES DTYPE_F16=1 ELEM_INT=0)
recon_shader(cumsum_i32 cumsum.comp DEFINES DTYPE_F16=0 ELEM_INT=1)
# One time step of ONNX's RNN, GRU and LSTM (gpu/ops/rnn_cell): f32 and f16 storage, fp32 arithmetic.
recon_shader(rnn_cell_f32 rnn_cell.comp DEFINES DTYPE_F16=0)
recon_shader(rnn_cell_f16 rnn_cell.comp DEFINES DTYPE_F16=1)
