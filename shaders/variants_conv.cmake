# Convolution variants (gpu/ops/conv2d.cpp, gpu/ops/conv_transpose2d.cpp). The scalar path runs
# everywhere; the _coopmat variants need VK_NV_cooperative_matrix (fp32 storage runs split into two
# fp16 parts: shaders/gemm_io.glsl).
# conv_pointwise_few: 1×1 convolutions with few output channels (memory-bound).
recon_shader(conv2d_f32 conv2d.comp DEFINES DTYPE_F16=0)
recon_shader(conv2d_f16 conv2d.comp DEFINES DTYPE_F16=1)
recon_shader(conv2d_split_f32 conv2d.comp DEFINES DTYPE_F16=0 GEMM_SPLIT_K=1)
recon_shader(conv2d_split_f16 conv2d.comp DEFINES DTYPE_F16=1 GEMM_SPLIT_K=1)
recon_shader(conv2d_coopmat_f16 conv2d_coopmat.comp DEFINES DTYPE_F16=1)
recon_shader(conv2d_coopmat_f32 conv2d_coopmat.comp DEFINES DTYPE_F16=0)
# conv2d_nhwc: channels-last maps (the ONNX compiler's layout for tensor-core convolutions).
recon_shader(conv2d_nhwc_f32 conv2d_nhwc.comp DEFINES DTYPE_F16=0)
recon_shader(conv2d_nhwc_f16 conv2d_nhwc.comp DEFINES DTYPE_F16=1)
recon_shader(conv2d_nhwc_split_f32 conv2d_nhwc.comp DEFINES DTYPE_F16=0 GEMM_SPLIT_K=1)
recon_shader(conv2d_nhwc_split_f16 conv2d_nhwc.comp DEFINES DTYPE_F16=1 GEMM_SPLIT_K=1)
recon_shader(conv2d_nhwc_coopmat_f16 conv2d_nhwc_coopmat.comp DEFINES DTYPE_F16=1)
recon_shader(conv2d_nhwc_coopmat_f32 conv2d_nhwc_coopmat.comp DEFINES DTYPE_F16=0)
recon_shader(conv_transpose2d_f32 conv_transpose2d.comp DEFINES DTYPE_F16=0)
recon_shader(conv_transpose2d_f16 conv_transpose2d.comp DEFINES DTYPE_F16=1)
recon_shader(conv_transpose2d_coopmat_f16 conv_transpose2d_coopmat.comp DEFINES DTYPE_F16=1)
recon_shader(conv_transpose2d_coopmat_f32 conv_transpose2d_coopmat.comp DEFINES DTYPE_F16=0)
recon_shader(conv_pointwise_few_f32 conv_pointwise_few.comp DEFINES DTYPE_F16=0)
recon_shader(conv_pointwise_few_f16 conv_pointwise_few.comp DEFINES DTYPE_F16=1)
# conv2d_grouped: the direct form for groups, dilation and asymmetric padding.
recon_shader(conv2d_grouped_f32 conv2d_grouped.comp DEFINES DTYPE_F16=0)
recon_shader(conv2d_grouped_f16 conv2d_grouped.comp DEFINES DTYPE_F16=1)
