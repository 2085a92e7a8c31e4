"""DUNE-MASt3R checkpoints -> one recon state dict and config (tools/convert-checkpoint --dune-encoder).

Two official files make one model:
  - the DUNE-MASt3R checkpoint (naver/mast3r load_dune_mast3r_model: dunemast3r_cvpr25_vit{small,base}.pth):
    {'model': state_dict, 'dune_backbone_name': torch.hub entry point, 'mast3r_model_str': 'AsymmetricMASt3R(...)'}.
    Its state_dict holds `mast3r.*` (an AsymmetricMASt3R built from the string plus patch_size=14, whose own
    CroCo encoder is never run), the wrapper's `norm.*`, maybe the `imagenet_mean/std` buffers, and no DUNE
    weights: upstream fetches those with torch.hub.
  - the DUNE checkpoint that entry point downloads (naver/dune hubconf.py, e.g. dune_vitsmall14_448.pth):
    {'model': state_dict of the whole DUNE student, 'args': Namespace(image_size, enc_args, ...)}; the
    encoder is vision_transformer.<arch> built from model/options.py EncoderOptions updated with enc_args,
    its weights the state_dict entries containing "encoder." with that prefix (and `module.`,
    `_orig_mod.`) removed (model/dune.py load_student_encoder_from_checkpoint).

The result uses recon's names: `dune_backbone.*` for the DUNE ViT (blocks as `blocks.0.{i}`, the single chunk
of block_chunks=1), `norm.*`, and the MASt3R decoder and heads without the `mast3r.` prefix. What inference
never reads is dropped: the unused CroCo encoder, the ViT's final norm and mask token, the projectors.

This module must not import the naver code.
"""

import re

from mast3r_config import ConfigError, config_from_model_string

# model/options.py EncoderOptions, then the DinoVisionTransformer defaults for what it does not set.
ENCODER_OPTION_DEFAULTS = {
    "arch": "vit_base", "patch_size": 14, "num_register_tokens": 4, "layerscale_init": 0.0001,
    "qkv_bias": True, "ln_affine": True,
    "ffn_bias": True, "proj_bias": True, "ffn_layer": "mlp", "block_chunks": 1, "interpolate_antialias": False,
    "interpolate_offset": 0.1, "qk_norm": False, "ln_eps": 1e-6, "last_ln_affine": True, "mlp_ratio": None,
}
# vision_transformer.vit_* : (embed_dim, depth, num_heads, mlp_ratio); vit_giant2 is SwiGLU (not supported).
ARCHS = {"vit_tiny": (192, 12, 3, 4), "vit_small": (384, 12, 6, 4), "vit_base": (768, 12, 12, 4),
         "vit_large": (1024, 24, 16, 4)}
# Training-only or irrelevant encoder arguments.
IGNORED_OPTIONS = {"drop_path_rate", "drop_path_uniform", "in_chans", "image_size", "last_ln_affine"}
IMAGENET = {"imagenet_mean": (0.485, 0.456, 0.406), "imagenet_std": (0.229, 0.224, 0.225)}
MAST3R_ENCODER_PREFIXES = ("patch_embed.", "enc_blocks.", "enc_norm.", "mask_token")


class DuneCheckpointError(ValueError):
    pass


def _get(obj, key, default=None):
    if obj is None:
        return default
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)


def encoder_options(dune_ckpt):
    """The DUNE encoder's options (EncoderOptions + enc_args) and its image_size."""
    args = _get(dune_ckpt, "args")
    if args is None:
        raise DuneCheckpointError("the DUNE checkpoint has no 'args' (image_size, enc_args)")
    enc_args = _get(args, "enc_args", {}) or {}
    if not isinstance(enc_args, dict):
        enc_args = vars(enc_args)
    image_size = _get(args, "image_size")
    if not isinstance(image_size, int):
        raise DuneCheckpointError(f"the DUNE checkpoint's args.image_size must be an integer, got {image_size!r}")
    opts = dict(ENCODER_OPTION_DEFAULTS)
    unknown = sorted(set(enc_args) - set(opts) - IGNORED_OPTIONS)
    if unknown:
        raise DuneCheckpointError("the DUNE encoder has arguments this converter does not know (they may change "
                                  f"the architecture): {', '.join(unknown)}")
    opts.update({k: v for k, v in enc_args.items() if k in opts})
    return opts, image_size


def dune_config(mast3r_model_str, opts, image_size, backbone_name):
    """The recon config: the MASt3R string as AsymmetricMASt3RWithDUNEBackbone completes it, with the
    encoder fields describing the DUNE ViT."""
    if opts["arch"] not in ARCHS:
        raise DuneCheckpointError(f"DUNE arch {opts['arch']!r} is not supported ({', '.join(sorted(ARCHS))})")
    dim, depth, heads, mlp_ratio = ARCHS[opts["arch"]]
    refused = [(k, v) for k, v in (("qkv_bias", True), ("proj_bias", True), ("ffn_bias", True), ("ln_affine", True),
                                   ("qk_norm", False), ("ffn_layer", "mlp"), ("block_chunks", 1))
               if opts[k] != v]
    if refused:
        raise DuneCheckpointError("unsupported DUNE encoder settings: " +
                                  ", ".join(f"{k}={opts[k]!r} (needs {v!r})" for k, v in refused))
    patch = opts["patch_size"]
    if "patch_size" in mast3r_model_str or not mast3r_model_str.rstrip().endswith(")"):
        raise DuneCheckpointError("mast3r_model_str must be a call without patch_size (the wrapper appends it)")
    text = mast3r_model_str.rstrip()[:-1] + f", patch_size={patch})"
    try:
        cfg, dropped = config_from_model_string(text)
    except ConfigError as e:
        raise DuneCheckpointError(f"mast3r_model_str: {e}") from None
    if cfg["enc_embed_dim"] != dim:
        raise DuneCheckpointError(f"mast3r_model_str has enc_embed_dim={cfg['enc_embed_dim']}, but the DUNE "
                                  f"{opts['arch']} encoder is {dim} wide: its decoder_embed cannot take the tokens")
    if cfg["mlp_ratio"] != mlp_ratio:
        raise DuneCheckpointError(f"the decoder's mlp_ratio {cfg['mlp_ratio']} differs from the DUNE ViT's "
                                  f"{mlp_ratio}; recon's config has one mlp_ratio for both")
    if image_size % patch:
        raise DuneCheckpointError(f"DUNE image_size {image_size} is not a multiple of its patch size {patch}")
    ls = opts["layerscale_init"]
    cfg.update(
        encoder="dune", enc_depth=depth, enc_num_heads=heads,
        dune_backbone=str(backbone_name or ""),
        dune_num_register_tokens=int(opts["num_register_tokens"]),
        dune_pos_embed_grid=image_size // patch,
        dune_interpolate_offset=float(opts["interpolate_offset"] or 0.0),
        dune_interpolate_antialias=bool(opts["interpolate_antialias"]),
        dune_layerscale=ls is not None and ls > 0,
        dune_ffn_layer="mlp",
        dune_ln_eps=float(opts["ln_eps"]),
        dune_norm_eps=1e-5,  # nn.LayerNorm(num_features) in the wrapper: PyTorch's default
    )
    return cfg


_BLOCK = re.compile(r"^blocks\.(\d+)\.(\d+)\.(.*)$")


def dune_encoder_state(dune_state):
    """The DUNE ViT's tensors under `dune_backbone.`: `encoder.` entries with module./_orig_mod. stripped
    (as load_student_encoder_from_checkpoint), blocks.{chunk}.{i} -> blocks.0.{i}, the final norm and
    mask_token dropped."""
    out = {}
    for k, v in dune_state.items():
        if "encoder." not in k:
            continue
        name = k.replace("module.", "").replace("_orig_mod.", "").replace("encoder.", "")
        if name.startswith("norm.") or name == "mask_token":
            continue  # DUNE-MASt3R reads the last block's tokens before the ViT's own norm
        m = _BLOCK.match(name)
        if m:
            name = f"blocks.0.{m.group(2)}.{m.group(3)}"
        elif name.startswith("blocks."):
            name = "blocks.0." + name[len("blocks."):]  # block_chunks=0 names blocks.{i}
        out["dune_backbone." + name] = v
    if not out:
        raise DuneCheckpointError("the DUNE checkpoint's state_dict has no 'encoder.' entries")
    return out


def mast3r_state(model_state, torch):
    """The wrapper's `norm` and the MASt3R decoder and heads, unprefixed; the unused CroCo encoder and
    the ImageNet buffers (checked against the constants the runtime uses) dropped."""
    out, other = {}, []
    for k, v in model_state.items():
        if k in IMAGENET:
            want = torch.tensor(IMAGENET[k], dtype=torch.float32).view(1, 3, 1, 1)
            if tuple(v.shape) != (1, 3, 1, 1) or not torch.equal(v.float(), want):
                raise DuneCheckpointError(f"{k} is not the ImageNet constant {IMAGENET[k]} the runtime uses")
            continue
        if k.startswith("norm."):
            out[k] = v
        elif k.startswith("mast3r."):
            name = k[len("mast3r."):]
            if not name.startswith(MAST3R_ENCODER_PREFIXES):
                out[name] = v
        elif k.startswith("dune_backbone."):
            other.append(k + " (DUNE weights come from --dune-encoder)")
        else:
            other.append(k)
    if other:
        raise DuneCheckpointError("unexpected entries in the DUNE-MASt3R state_dict: " + ", ".join(sorted(other)))
    return out


def convert(mast3r_ckpt, dune_ckpt, torch):
    """(config, state dict with recon names) from the two loaded checkpoints; DuneCheckpointError if
    they are not what the official loaders take."""
    if not isinstance(mast3r_ckpt, dict) or not isinstance(mast3r_ckpt.get("model"), dict):
        raise DuneCheckpointError("the DUNE-MASt3R checkpoint is not a dict with a 'model' state_dict")
    model_str = mast3r_ckpt.get("mast3r_model_str")
    if not isinstance(model_str, str):
        raise DuneCheckpointError("the DUNE-MASt3R checkpoint has no 'mast3r_model_str' "
                                  "(is it a plain MASt3R checkpoint? then drop --dune-encoder)")
    dune_state = _get(dune_ckpt, "model")
    if not isinstance(dune_state, dict):
        raise DuneCheckpointError("the DUNE checkpoint is not a dict with a 'model' state_dict")
    opts, image_size = encoder_options(dune_ckpt)
    cfg = dune_config(model_str, opts, image_size, mast3r_ckpt.get("dune_backbone_name"))
    state = mast3r_state(mast3r_ckpt["model"], torch)
    state.update(dune_encoder_state(dune_state))
    for k, v in state.items():
        if not isinstance(v, torch.Tensor):
            raise DuneCheckpointError(f"{k} is not a tensor")
        if v.is_floating_point() and not torch.isfinite(v).all():
            raise DuneCheckpointError(f"{k} holds non-finite values")
    return cfg, state


def backbone_mismatch(cfg):
    """A warning when the hub name the checkpoint recorded does not look like the encoder given."""
    name = cfg["dune_backbone"]
    size = {384: "small", 768: "base"}.get(cfg["enc_embed_dim"])
    if name and size and f"vit{size}" not in name:
        return f"dune_backbone_name {name!r} does not name a ViT-{size.capitalize()}, the encoder given"
    grid = f"_{cfg['dune_pos_embed_grid'] * cfg['patch_size']}"
    if name and grid not in name:
        return f"dune_backbone_name {name!r} does not name image size {grid[1:]}, the encoder given"
    return None


# MASt3R constructor arguments a DUNE-MASt3R string carries (no patch_size or landscape_only: the
# wrapper appends and asserts them).
MODEL_STRING_KEYS = ["enc_depth", "dec_depth", "enc_embed_dim", "dec_embed_dim", "enc_num_heads", "dec_num_heads",
                     "mlp_ratio", "pos_embed", "patch_embed_cls", "img_size", "head_type", "output_mode",
                     "depth_mode", "conf_mode", "two_confs", "desc_conf_mode"]


def to_official(cfg, state, arch, image_size, extra_model_keys=()):
    """The two official files' dicts for a DUNE config and a recon-named state dict (tests, benchmarks):
    (DUNE-MASt3R checkpoint, DUNE encoder checkpoint), laid out as dune_checkpoint reads them."""
    import argparse

    from mast3r_config import CONSTRUCTOR_DEFAULTS, model_string_from_config

    keys = list(MODEL_STRING_KEYS) + [k for k in extra_model_keys if k not in MODEL_STRING_KEYS]
    mast3r_cfg = {k: cfg[k] for k in cfg if k in CONSTRUCTOR_DEFAULTS or k in extra_model_keys}
    model_str = model_string_from_config(mast3r_cfg, keys)
    mast3r = {("mast3r." + k if not k.startswith("norm.") else k): v for k, v in state.items()
              if not k.startswith("dune_backbone.")}
    student = {"encoder." + k[len("dune_backbone."):]: v for k, v in state.items() if k.startswith("dune_backbone.")}
    enc_args = {"arch": arch, "patch_size": cfg["patch_size"], "num_register_tokens": cfg["dune_num_register_tokens"],
                "layerscale_init": 1e-4 if cfg["dune_layerscale"] else None,
                "interpolate_offset": cfg["dune_interpolate_offset"],
                "interpolate_antialias": cfg["dune_interpolate_antialias"], "ln_eps": cfg["dune_ln_eps"]}
    return ({"model": mast3r, "dune_backbone_name": cfg["dune_backbone"], "mast3r_model_str": model_str},
            {"model": student, "args": argparse.Namespace(image_size=image_size, enc_args=enc_args)})
