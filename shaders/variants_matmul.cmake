# Matmul / linear variants (gpu/ops/matmul.cpp, gpu/ops/linear.cpp). The scalar path runs
# everywhere; the _coopmat variant needs VK_NV_cooperative_matrix and fp16 storage.
recon_shader(matmul_f32 matmul.comp DEFINES DTYPE_F16=0)
recon_shader(matmul_f16 matmul.comp DEFINES DTYPE_F16=1)
recon_shader(matmul_coopmat_f16 matmul_coopmat.comp DEFINES DTYPE_F16=1)
