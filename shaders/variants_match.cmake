# Descriptor matching (gpu/models/match/): fast reciprocal nearest neighbours and the exhaustive
# matcher. fp32 descriptor maps; tile geometry and K travel as specialisation constants.
recon_shader(match_nn match_nn.comp)
recon_shader(match_init match_init.comp)
recon_shader(match_update match_update.comp)
recon_shader(match_scatter match_scatter.comp)
recon_shader(match_compact_count match_compact.comp DEFINES PASS=0)
recon_shader(match_compact_scan match_compact.comp DEFINES PASS=1)
recon_shader(match_compact_write match_compact.comp DEFINES PASS=2)
recon_shader(match_coords match_coords.comp)
recon_shader(match_gather match_gather.comp)
recon_shader(match_conf match_conf.comp)
recon_shader(match_topk match_topk.comp)
recon_shader(match_mutual match_mutual.comp)
