# Matmul / linear variants (gpu/ops/matmul.cpp, gpu/ops/linear.cpp). The scalar path runs
# everywhere; the _coopmat variants need VK_NV_cooperative_matrix (fp32 storage runs split into two
# fp16 parts: shaders/gemm_io.glsl).
recon_shader(matmul_f32 matmul.comp DEFINES DTYPE_F16=0)
recon_shader(matmul_f16 matmul.comp DEFINES DTYPE_F16=1)
# Split over K (shaders/gemm_split_k.glsl): only these declare its workspace bindings.
recon_shader(matmul_split_f32 matmul.comp DEFINES DTYPE_F16=0 GEMM_SPLIT_K=1)
recon_shader(matmul_split_f16 matmul.comp DEFINES DTYPE_F16=1 GEMM_SPLIT_K=1)
recon_shader(matmul_coopmat_f16 matmul_coopmat.comp DEFINES DTYPE_F16=1)
recon_shader(matmul_coopmat_f32 matmul_coopmat.comp DEFINES DTYPE_F16=0)
