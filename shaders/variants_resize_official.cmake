# The official MASt3R image preparation (gpu/ops/resize_official): Pillow's integer resampler,
# one variant per pass direction.
recon_shader(resize_official_h resize_official.comp DEFINES HORIZONTAL=1)
recon_shader(resize_official_v resize_official.comp DEFINES HORIZONTAL=0)
