"""The demo network: the project's PyTorch MASt3R reference (tests/reference/mast3r_ref.py) at a small
size, so its state dict has the official names and recon loads the trained file unchanged.

Two changes for training speed and precision that keep the function the same: attention runs through
torch's fused scaled_dot_product_attention (the reference spells softmax(q k^T * scale) v out), and the
heads' output activations (exp, normalisation) run in float32 under autocast. Nothing here changes
the reference module for other users unless train_mode() is called.
"""

import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import mast3r_config  # noqa: E402
import mast3r_ref  # noqa: E402
import safetensors_io  # noqa: E402

# The C++ tool's "small" size (tools/demo/recon_make_demo_model.cpp): ViT encoder 192-d x 4 (6 heads),
# decoders 128-d x 4 (4 heads), thin DPT and local-feature heads. 6.0 M parameters, 23 MB in fp32.
DEMO_CONFIG = dict(
    img_size=(512, 512),
    enc_embed_dim=192, enc_depth=4, enc_num_heads=6,
    dec_embed_dim=128, dec_depth=4, dec_num_heads=4,
    mlp_ratio=2,
    dpt_layer_dims=(24, 48, 96, 128), dpt_feature_dim=32, dpt_last_dim=16,
    local_mlp_ratio=0.5,
)
# For the CPU smoke test of the training loop.
TINY_CONFIG = dict(
    img_size=(512, 512),
    enc_embed_dim=32, enc_depth=2, enc_num_heads=2,
    dec_embed_dim=24, dec_depth=4, dec_num_heads=2,
    mlp_ratio=2,
    dpt_layer_dims=(8, 12, 16, 24), dpt_feature_dim=8, dpt_last_dim=8,
    local_mlp_ratio=0.08,
)

DESCRIPTION = ("recon demo model: the MASt3R architecture at a small size, trained on recon's procedural "
               "scenes (tools/scenes), not for real photographs. See docs/DEMO_MODEL.md.")

_original_postprocess = mast3r_ref.postprocess


def _sdpa(q, k, v, scale):
    return F.scaled_dot_product_attention(q, k, v, scale=scale)


def _postprocess_fp32(raw, cfg):
    with torch.autocast(device_type=raw.device.type, enabled=False):
        return _original_postprocess(raw.float(), cfg)


def train_mode():
    """Fused attention and fp32 output activations (the same function as the reference)."""
    if hasattr(F, "scaled_dot_product_attention"):  # torch >= 2.1 (Debian 12's 1.13 keeps the reference's)
        mast3r_ref.attend = _sdpa
    mast3r_ref.postprocess = _postprocess_fp32


def build(config=None, device="cpu"):
    return mast3r_ref.AsymmetricMASt3R(dict(DEMO_CONFIG if config is None else config), device=device)


def save_safetensors(model, path, metadata):
    """Official names, float32, the config in 'mast3r.config' (how recon reads it), plus metadata."""
    tensors = {k: v.detach().float().cpu().contiguous().numpy() for k, v in mast3r_ref.canonical_state_dict(model).items()}
    meta = {mast3r_config.METADATA_KEY: mast3r_config.config_to_json(model.config), "format": "pt"}
    meta.update({k: str(v) for k, v in metadata.items()})
    safetensors_io.save_file(tensors, path, meta)


def load_weights_file(model, path):
    """Copies the weights of a file written by save_safetensors into model; returns the file's metadata."""
    tensors, meta = safetensors_io.load_file(path)
    mast3r_ref.load_weights(model, tensors)
    return meta


def load_safetensors(path, device="cpu"):
    """(model, metadata) from a file written by save_safetensors (or any recon MASt3R file)."""
    tensors, meta = safetensors_io.load_file(path)
    cfg = mast3r_config.config_from_json(meta[mast3r_config.METADATA_KEY])
    model = mast3r_ref.AsymmetricMASt3R(cfg, device=device)
    mast3r_ref.load_weights(model, tensors)
    return model.eval(), meta
