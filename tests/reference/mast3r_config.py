"""MASt3R configuration: official constructor arguments, JSON (de)serialisation, model-string parsing.

The encoder is either the CroCo ViT of AsymmetricMASt3R ("encoder": "croco", the default) or a DUNE
ViT (naver/dune, DINOv2 architecture) as AsymmetricMASt3RWithDUNEBackbone wraps it ("encoder":
"dune"). For DUNE, enc_embed_dim / enc_depth / enc_num_heads describe the DUNE ViT, patch_size is its
14, and the dune_* keys (DUNE_DEFAULTS) carry what the DUNE checkpoint's encoder arguments decide.

A config is a flat dict keyed by the official `AsymmetricMASt3R` constructor argument names
(naver/mast3r -> dust3r AsymmetricCroCo3DStereo -> croco CroCoNet), plus a few NON-OFFICIAL keys
(NONOFFICIAL_DEFAULTS) that only exist so tiny test configurations can shrink the DPT head and the
local-feature MLP. The official checkpoint never sets them; their defaults reproduce the official widths.

JSON form (stored in safetensors metadata under METADATA_KEY): tuples become arrays and +/-infinity
becomes the strings "inf" / "-inf", e.g. "depth_mode": ["exp", "-inf", "inf"].

This module must not import torch: tools and tests that only need configs stay light.
"""

import ast
import json
import math

METADATA_KEY = "mast3r.config"
INF = float("inf")

# Defaults of the official constructors (AsymmetricMASt3R(**kw) with nothing given). `norm_layer` is
# not representable here: the reference always uses LayerNorm(eps=1e-6), the CroCoNet default.
CONSTRUCTOR_DEFAULTS = {
    # croco CroCoNet
    "img_size": 224,
    "patch_size": 16,
    "mask_ratio": 0.9,
    "enc_embed_dim": 768,
    "enc_depth": 12,
    "enc_num_heads": 12,
    "dec_embed_dim": 512,
    "dec_depth": 8,
    "dec_num_heads": 16,
    "mlp_ratio": 4,
    "norm_im2_in_dec": True,
    "pos_embed": "cosine",
    # dust3r AsymmetricCroCo3DStereo
    "output_mode": "pts3d",
    "head_type": "linear",
    "depth_mode": ("exp", -INF, INF),
    "conf_mode": ("exp", 1, INF),
    "freeze": "none",
    "landscape_only": True,
    "patch_embed_cls": "PatchEmbedDust3R",
    # mast3r AsymmetricMASt3R
    "desc_mode": "norm",
    "two_confs": False,
    "desc_conf_mode": None,
}

# NON-OFFICIAL keys (reference/engine extensions for small test models). Defaults = official values:
# the official head factory hard-codes layer_dims/feature_dim/last_dim and hidden_dim_factor=4
# (independent of mlp_ratio).
NONOFFICIAL_DEFAULTS = {
    "dpt_layer_dims": (96, 192, 384, 768),
    "dpt_feature_dim": 256,
    "dpt_last_dim": 128,
    "local_mlp_ratio": 4.0,
}

# Which encoder feeds the decoder; "croco" is AsymmetricMASt3R's own.
ENCODER_DEFAULTS = {"encoder": "croco"}
ENCODERS = ("croco", "dune")

# The DUNE encoder (naver/dune model/encoder/vision_transformer.py DinoVisionTransformer, built from
# model/options.py EncoderOptions updated with the checkpoint's enc_args) and the DUNE-MASt3R wrapper
# (naver/mast3r mast3r/model.py AsymmetricMASt3RWithDUNEBackbone). Only meaningful with encoder "dune";
# a croco config neither stores nor needs them.
DUNE_DEFAULTS = {
    "dune_backbone": "",                 # torch.hub entry point the checkpoint names (dune_backbone_name)
    "dune_num_register_tokens": 4,       # EncoderOptions.num_register_tokens
    "dune_pos_embed_grid": 32,           # pos_embed holds 1 + grid^2 rows: image_size // patch (448 // 14)
    "dune_interpolate_offset": 0.1,      # DinoVisionTransformer default
    "dune_interpolate_antialias": False,  # DinoVisionTransformer default
    "dune_layerscale": True,             # EncoderOptions.layerscale_init = 1e-4 > 0: ls1/ls2 present
    "dune_ffn_layer": "mlp",             # "mlp" only (SwiGLU variants are not implemented)
    "dune_ln_eps": 1e-6,                 # DinoVisionTransformer ln_eps, every block norm
    "dune_norm_eps": 1e-5,               # the wrapper's own nn.LayerNorm(num_features): PyTorch default
}
DUNE_KEYS = frozenset(DUNE_DEFAULTS) | frozenset(ENCODER_DEFAULTS)


def is_dune(cfg):
    return cfg.get("encoder", "croco") == "dune"


# The released MASt3R_ViTLarge_BaseDecoder_512_catmlpdpt_metric checkpoint, as instantiated for
# inference (load_model rewrites ManyAR_PatchEmbed -> PatchEmbedDust3R and forces landscape_only=False).
MAST3R_VITL_512 = dict(
    CONSTRUCTOR_DEFAULTS,
    enc_depth=24,
    dec_depth=12,
    enc_embed_dim=1024,
    dec_embed_dim=768,
    enc_num_heads=16,
    dec_num_heads=12,
    pos_embed="RoPE100",
    patch_embed_cls="PatchEmbedDust3R",
    img_size=(512, 512),
    head_type="catmlp+dpt",
    output_mode="pts3d+desc24",
    depth_mode=("exp", -INF, INF),
    conf_mode=("exp", 1, INF),
    landscape_only=False,
    two_confs=True,
    desc_conf_mode=("exp", 0, INF),
)
MAST3R_VITL_512.update(NONOFFICIAL_DEFAULTS)

OFFICIAL_KEYS = frozenset(CONSTRUCTOR_DEFAULTS)
NONOFFICIAL_KEYS = frozenset(NONOFFICIAL_DEFAULTS)
KNOWN_KEYS = OFFICIAL_KEYS | NONOFFICIAL_KEYS | DUNE_KEYS
# Names that may appear in a model string but are not representable; rejected with a message.
UNSUPPORTED_KEYS = frozenset({"norm_layer"})


class ConfigError(ValueError):
    pass


def _canon(value):
    """Canonical in-memory form: lists -> tuples (recursively)."""
    if isinstance(value, (list, tuple)):
        return tuple(_canon(v) for v in value)
    return value


def resolve_config(overrides=None, base=None):
    """Full config: `base` (default MAST3R_VITL_512) updated with `overrides`; rejects unknown keys.

    desc_conf_mode=None is resolved to conf_mode, exactly as AsymmetricMASt3R.set_downstream_head does.
    """
    cfg = dict(MAST3R_VITL_512 if base is None else base)
    for k, v in NONOFFICIAL_DEFAULTS.items():
        cfg.setdefault(k, v)
    for k, v in dict(ENCODER_DEFAULTS, **DUNE_DEFAULTS).items():
        cfg.setdefault(k, v)
    for k, v in CONSTRUCTOR_DEFAULTS.items():
        cfg.setdefault(k, v)
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - KNOWN_KEYS)
    if unknown:
        raise ConfigError(f"unknown MASt3R config keys: {', '.join(unknown)}")
    cfg.update(overrides)
    cfg = {k: _canon(v) for k, v in cfg.items()}
    if cfg["desc_conf_mode"] is None:
        cfg["desc_conf_mode"] = cfg["conf_mode"]
    validate_encoder(cfg)
    return cfg


def validate_encoder(cfg):
    """Refuses an unknown encoder and DUNE settings the reference and the engine do not implement."""
    if cfg["encoder"] not in ENCODERS:
        raise ConfigError(f"encoder {cfg['encoder']!r} is not one of {', '.join(ENCODERS)}")
    if not is_dune(cfg):
        return
    if cfg["patch_size"] != 14:
        # AsymmetricMASt3RWithDUNEBackbone scales the DPT's last upsampling by 14/16, a constant
        raise ConfigError(f"a DUNE encoder needs patch_size 14, got {cfg['patch_size']}")
    if cfg["dune_ffn_layer"] != "mlp":
        raise ConfigError(f"dune_ffn_layer {cfg['dune_ffn_layer']!r} is not supported (mlp)")
    if not isinstance(cfg["dune_num_register_tokens"], int) or not 0 <= cfg["dune_num_register_tokens"] <= 64:
        raise ConfigError("dune_num_register_tokens must be an integer in [0, 64]")
    if not isinstance(cfg["dune_pos_embed_grid"], int) or not 1 <= cfg["dune_pos_embed_grid"] <= 1024:
        raise ConfigError("dune_pos_embed_grid must be an integer in [1, 1024]")
    off = cfg["dune_interpolate_offset"]
    if isinstance(off, bool) or not isinstance(off, (int, float)) or not 0 <= off < 1:
        raise ConfigError("dune_interpolate_offset must be a number in [0, 1)")
    for k in ("dune_ln_eps", "dune_norm_eps"):
        if isinstance(cfg[k], bool) or not isinstance(cfg[k], (int, float)) or not 0 < cfg[k] < 1:
            raise ConfigError(f"{k} must be a number in (0, 1)")


def stored_items(cfg):
    """The (key, value) pairs a config is stored with: a CroCo config leaves out the DUNE keys, so
    files written before DUNE existed read and write unchanged."""
    return {k: v for k, v in cfg.items() if is_dune(cfg) or k not in DUNE_KEYS}


def local_feat_dim(cfg):
    om = cfg["output_mode"]
    if not om.startswith("pts3d+desc"):
        raise ConfigError(f"output_mode {om!r} is not 'pts3d+desc<N>'")
    return int(om[len("pts3d+desc"):])


def dpt_hooks(cfg):
    L = cfg["dec_depth"]
    return [0, L * 2 // 4, L * 3 // 4, L]


# ----------------------------------------------------------------------------------------------- JSON


def _to_jsonable(value):
    if isinstance(value, (list, tuple)):
        return [_to_jsonable(v) for v in value]
    if isinstance(value, float):
        if math.isnan(value):
            raise ConfigError("NaN is not allowed in a MASt3R config")
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
    if isinstance(value, str) and value in ("inf", "-inf"):
        raise ConfigError(f"the string {value!r} is reserved for infinities")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise ConfigError(f"cannot serialise config value {value!r}")


def _from_jsonable(value):
    if isinstance(value, list):
        return tuple(_from_jsonable(v) for v in value)
    if value == "inf":
        return INF
    if value == "-inf":
        return -INF
    return value


def config_to_json(cfg):
    """Deterministic JSON text (sorted keys) for a config dict."""
    items = stored_items(cfg)
    return json.dumps({k: _to_jsonable(v) for k, v in items.items()}, sort_keys=True, separators=(",", ":"))


def config_from_json(text, resolve=True):
    """Parse config JSON; with resolve=True, missing keys take their defaults and unknown keys are refused."""
    raw = json.loads(text)
    if not isinstance(raw, dict):
        raise ConfigError("config JSON must be an object")
    cfg = {k: _from_jsonable(v) for k, v in raw.items()}
    if not resolve:
        return cfg
    # A stored config is complete: fill anything missing from the *constructor* defaults.
    return resolve_config(cfg, base=dict(CONSTRUCTOR_DEFAULTS, **NONOFFICIAL_DEFAULTS))


# ------------------------------------------------------------------------------ model string (no eval)


def _literal(node, src):
    """Evaluate a restricted literal expression from a model string."""
    if isinstance(node, ast.Constant):
        if isinstance(node.value, (bool, int, float, str)) or node.value is None:
            return node.value
    elif isinstance(node, (ast.Tuple, ast.List)):
        return tuple(_literal(e, src) for e in node.elts)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _literal(node.operand, src)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v if isinstance(node.op, ast.USub) else v
    elif isinstance(node, ast.Name):
        names = {"inf": INF, "True": True, "False": False, "None": None}
        if node.id in names:
            return names[node.id]
    elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        # np.inf / math.inf / torch.inf
        if node.attr == "inf" and node.value.id in ("np", "numpy", "math", "torch"):
            return INF
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "float":
        if len(node.args) == 1 and not node.keywords:
            arg = _literal(node.args[0], src)
            if isinstance(arg, str) and arg.strip().lower() in ("inf", "+inf", "-inf", "infinity", "-infinity"):
                return float(arg)
            if isinstance(arg, (int, float)) and not isinstance(arg, bool):
                return float(arg)
    seg = ast.get_source_segment(src, node) or ast.dump(node)
    raise ConfigError(f"unsupported expression in model string: {seg}")


def parse_model_string(text):
    """Parse 'ClassName(key=value, ...)' safely (ast, no eval). Returns (class name, kwargs dict)."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise ConfigError(f"model string is not a valid call expression: {e}") from None
    call = tree.body
    if not isinstance(call, ast.Call) or not isinstance(call.func, (ast.Name, ast.Attribute)):
        raise ConfigError("model string must look like ClassName(arg=value, ...)")
    name = call.func.id if isinstance(call.func, ast.Name) else call.func.attr
    if call.args:
        raise ConfigError("model string has positional arguments; only keyword arguments are supported")
    kwargs = {}
    for kw in call.keywords:
        if kw.arg is None:
            raise ConfigError("model string uses **kwargs expansion, which is not supported")
        if kw.arg in UNSUPPORTED_KEYS:
            raise ConfigError(f"model string sets {kw.arg!r}, which the reference/engine does not support")
        kwargs[kw.arg] = _literal(kw.value, text)
    return name, kwargs


def config_from_model_string(text, allow_unknown=False):
    """Full inference config from a checkpoint's `args.model` constructor string.

    Applies the same rewrites as mast3r's load_model (ManyAR_PatchEmbed -> PatchEmbedDust3R,
    landscape_only=False). The NON-OFFICIAL keys are accepted too (tiny test checkpoints made from the
    reference). Unknown keys are refused unless allow_unknown, in which case they are dropped.
    Returns (config, dropped unknown keys).
    """
    name, kwargs = parse_model_string(text)
    if name != "AsymmetricMASt3R":
        raise ConfigError(f"expected an AsymmetricMASt3R model string, got {name!r}")
    unknown = sorted(set(kwargs) - KNOWN_KEYS)
    if unknown and not allow_unknown:
        raise ConfigError("model string has constructor arguments this converter does not know "
                          f"(they may change the architecture): {', '.join(unknown)}")
    kwargs = {k: v for k, v in kwargs.items() if k in KNOWN_KEYS}
    if kwargs.get("patch_embed_cls") == "ManyAR_PatchEmbed":
        kwargs["patch_embed_cls"] = "PatchEmbedDust3R"
    kwargs["landscape_only"] = False
    cfg = resolve_config(kwargs, base=dict(CONSTRUCTOR_DEFAULTS, **NONOFFICIAL_DEFAULTS))
    return cfg, unknown


def configs_equal(a, b):
    return config_to_json(a) == config_to_json(b)


def _py_literal(value):
    if isinstance(value, tuple):
        inner = ", ".join(_py_literal(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def model_string_from_config(cfg, keys=None):
    """'AsymmetricMASt3R(k=v, ...)' in the style of a checkpoint's args.model (inf written bare)."""
    keys = list(cfg) if keys is None else keys
    return "AsymmetricMASt3R(" + ", ".join(f"{k}={_py_literal(_canon(cfg[k]))}" for k in keys) + ")"
