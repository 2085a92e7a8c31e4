# Retrieval head and pair selection (gpu/models/retrieval/): fp32 only. Workgroup sizes travel as
# specialisation constants where the C++ side picks them.
recon_shader(retrieval_token_norm retrieval_token_norm.comp)
recon_shader(retrieval_select retrieval_select.comp)
recon_shader(retrieval_gather retrieval_gather.comp)
recon_shader(retrieval_exclude_self retrieval_exclude_self.comp)
