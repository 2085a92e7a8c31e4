# MASt3R-specific kernels (gpu/models/mast3r) and the dtype cast.
recon_shader(mast3r_postprocess_f32 mast3r_postprocess.comp DEFINES DTYPE_F16=0)
recon_shader(mast3r_postprocess_f16 mast3r_postprocess.comp DEFINES DTYPE_F16=1)
recon_shader(mast3r_preprocess mast3r_preprocess.comp)
recon_shader(dune_preprocess dune_preprocess.comp)
recon_shader(cast_f32_f16 cast.comp DEFINES SRC_F16=0 DST_F16=1)
recon_shader(cast_f16_f32 cast.comp DEFINES SRC_F16=1 DST_F16=0)
recon_shader(cast_words_f32_f16 cast_words.comp DEFINES SRC_F16=0)
recon_shader(cast_words_f16_f32 cast_words.comp DEFINES SRC_F16=1)
