#!/usr/bin/python3
"""Generates the MASt3R golden data in tests/golden/<case>/ from the PyTorch reference (mast3r_ref.py).

Each case: model.safetensors (seeded fp32 weights + "mast3r.config" metadata) and io.safetensors
(inputs, the eight outputs and tap tensors). The forward pass runs in float64 on the stored float32
weights and inputs; results are stored as float32. Everything is deterministic (numpy RandomState,
one thread), so re-running reproduces the committed files.

  /usr/bin/python3 tests/reference/make_golden.py                  # all CI cases -> tests/golden/
  /usr/bin/python3 tests/reference/make_golden.py --case tiny_mixed --out /tmp/g
  /usr/bin/python3 tests/reference/make_golden.py --full-size --width 512 --height 384 --out /tmp/full

The full-size mode (official ViT-L/ViT-B config, ~689 M parameters) is never run in CI.
This script must not write anywhere except its --out directory.
"""

import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import safetensors_io as st  # noqa: E402
from mast3r_config import METADATA_KEY, config_from_json, config_to_json, is_dune, resolve_config  # noqa: E402
from mast3r_ref import AsymmetricMASt3R, canonical_state_dict, load_weights  # noqa: E402

DEFAULT_OUT = os.path.normpath(os.path.join(HERE, "..", "golden"))

# Tiny test configurations. dpt_* and local_mlp_ratio are NON-OFFICIAL keys (see mast3r_config.py);
# everything else is an official constructor argument. The official factory asserts dec_depth > 9;
# the reference relaxes that (hooks still follow [0, L*2//4, L*3//4, L]).
TINY_A = dict(
    enc_embed_dim=32, enc_depth=2, enc_num_heads=2,    # head dim 16
    dec_embed_dim=24, dec_depth=4, dec_num_heads=2,    # head dim 12, hooks [0, 2, 3, 4]
    mlp_ratio=2,
    dpt_layer_dims=(8, 12, 16, 24), dpt_feature_dim=8, dpt_last_dim=8,
    local_mlp_ratio=0.08,                              # hidden int(0.08 * 56) = 4
    img_size=(64, 64),
)
TINY_B = dict(
    enc_embed_dim=32, enc_depth=2, enc_num_heads=1,    # one head of dim 32
    dec_embed_dim=24, dec_depth=5, dec_num_heads=3,    # head dim 8, hooks [0, 2, 3, 5]
    mlp_ratio=2,
    dpt_layer_dims=(4, 8, 12, 16), dpt_feature_dim=8, dpt_last_dim=4,
    local_mlp_ratio=0.0625,                            # hidden int(0.0625 * 56) = 3
    output_mode="pts3d+desc16",
    img_size=(80, 80),
)

# DUNE-MASt3R (encoder "dune", patch 14): tiny widths, a 4x4 (A) and 5x5 (B) position table so the
# test images' grids make it interpolate up, down and not at all; A has layer scale, 2 register tokens
# and the default offset 0.1 without antialiasing; B none of those, and antialiasing with offset 0.
DUNE_A = dict(
    encoder="dune", patch_size=14, dune_backbone="tiny_a",
    enc_embed_dim=32, enc_depth=2, enc_num_heads=2,    # DUNE ViT, head dim 16
    dec_embed_dim=24, dec_depth=4, dec_num_heads=2,
    mlp_ratio=2,
    dpt_layer_dims=(8, 12, 16, 24), dpt_feature_dim=8, dpt_last_dim=8,
    local_mlp_ratio=0.08,
    img_size=(56, 56),
    dune_num_register_tokens=2, dune_pos_embed_grid=4, dune_interpolate_offset=0.1,
    dune_interpolate_antialias=False, dune_layerscale=True,
)
DUNE_B = dict(
    encoder="dune", patch_size=14, dune_backbone="tiny_b",
    enc_embed_dim=32, enc_depth=3, enc_num_heads=1,    # one head of dim 32
    dec_embed_dim=24, dec_depth=5, dec_num_heads=3,
    mlp_ratio=2,
    dpt_layer_dims=(4, 8, 12, 16), dpt_feature_dim=8, dpt_last_dim=4,
    local_mlp_ratio=0.0625,
    output_mode="pts3d+desc16",
    img_size=(70, 70),
    dune_num_register_tokens=0, dune_pos_embed_grid=5, dune_interpolate_offset=0.0,
    dune_interpolate_antialias=True, dune_layerscale=False,
)

TOKEN_TAPS = ("patch_embed", "enc_block*", "enc_out", "dec_embed", "dec[0-9]*")
DPT_TAPS = ("dpt_act*", "dpt_rn*", "dpt_refinenet*")
DUNE_TAPS = ("dune_input", "dune_tokens")  # DUNE models only; not committed (see CASES)
# Everything the reference can tap (used with --all-taps; too big to commit for every case).
ALL_TAPS = TOKEN_TAPS + DUNE_TAPS + DPT_TAPS + ("dpt_out", "local_mlp", "raw")

# name: config overrides, (W, H) of view 1 and view 2, batch, seeds, stored tap patterns (view suffix
# stripped). dpt_out, local_mlp and the raw 29-channel map are not committed: they are big, and the
# outputs determine them (pts3d/conf/desc_conf are invertible functions of the raw channels).
# tiny_batch2 reuses tiny_same's config and weight seed, so its model.safetensors is byte-identical
# (git stores the blob once).
CASES = {
    "tiny_same": dict(config=TINY_A, view1=(64, 48), view2=(64, 48), batch=1, weight_seed=1001,
                      image_seeds=(11, 12), taps=TOKEN_TAPS + DPT_TAPS),
    "tiny_mixed": dict(config=TINY_B, view1=(80, 32), view2=(32, 48), batch=1, weight_seed=2002,
                       image_seeds=(21, 22), taps=TOKEN_TAPS + DPT_TAPS),
    "tiny_batch2": dict(config=TINY_A, view1=(32, 32), view2=(32, 32), batch=2, weight_seed=1001,
                        image_seeds=(31, 32, 33, 34), taps=TOKEN_TAPS),
    # a 4x4 table: view 1 square on the table's own grid (used as it is), view 2 4x3 (bicubic,
    # offset 0.1, no antialiasing)
    "dune_same": dict(config=DUNE_A, view1=(56, 56), view2=(56, 42), batch=1, weight_seed=3003,
                      image_seeds=(41, 42), taps=TOKEN_TAPS + DPT_TAPS),
    # a 5x5 table to 5x2 and 3x3 grids: antialiased bicubic (down), no register tokens, no layer scale
    "dune_mixed": dict(config=DUNE_B, view1=(70, 28), view2=(42, 42), batch=1, weight_seed=4004,
                       image_seeds=(51, 52), taps=TOKEN_TAPS + DPT_TAPS),
    # two pairs of 2x2 grids (square images, but not the table's grid: interpolated); dune_same's weights
    "dune_batch2": dict(config=DUNE_A, view1=(28, 28), view2=(28, 28), batch=2, weight_seed=3003,
                        image_seeds=(61, 62, 63, 64), taps=TOKEN_TAPS),
}

LAYOUTS = {
    "img1/img2": "(B,3,H,W) float32, x = (v/255 - 0.5)/0.5 computed in float32",
    "img1_u8/img2_u8": "(H,W,3) uint8 RGB when B == 1, (B,H,W,3) when B > 1",
    "pts3d_*": "(B,H,W,3)", "conf_*/desc_conf_*": "(B,H,W)", "desc_*": "(B,H,W,desc_dim)",
    "tap.patch_embed_*/enc_block*_*/enc_out_*/dec_embed_*/dec{l}_*": "(B,N,C), token n = y*w + x",
    "tap.dec{L}_*": "last decoder entry, after dec_norm",
    "tap.local_mlp_*": "(B,N,(desc_dim+1)*p*p) before pixel_shuffle",
    "tap.dpt_act{i}_*/dpt_rn{i}_*/dpt_refinenet{n}_*/dpt_out_*": "(B,C,rows,cols) NCHW; refinenet4 after the crop",
    "tap.raw_*": "(B,H,W,4+D+1) NHWC: [0:3] pts raw, [3] conf raw, [4:4+D] desc raw, [4+D] desc_conf raw",
}
# DUNE cases: patch 14, and the encoder taps hold every token (CroCo files keep LAYOUTS as they were).
LAYOUTS_DUNE = dict(LAYOUTS, **{
    "tap.dune_input_*": "(B,3,H,W) the DUNE encoder's ImageNet-normalised input",
    "tap.dune_tokens_*/enc_block*_*": "(B,1+R+N,C): [cls, R register tokens, N patch tokens]",
    "tap.enc_out_*": "(B,N,C) the patch tokens after the wrapper's norm (the decoder's input)",
})


# ---------------------------------------------------------------------------------------- weights


def init_golden_weights(model, seed):
    """Seeded weights that keep activations O(1) and make varied outputs; values are fp32-representable.

    Linear/conv weights ~ N(0, 1/fan_in) (ReLU-fed convs sqrt(2) larger), biases ~ N(0, 0.1^2),
    LayerNorm weight 1 + N(0, 0.2^2) and bias N(0, 0.2^2). ConvTranspose (in,out,k,k) with stride=k
    has fan-in = in."""
    rs = np.random.RandomState(seed)

    def normal(shape, std):
        return torch.from_numpy((rs.standard_normal(size=shape) * std).astype(np.float32))

    done = _init_modules(model, normal)
    unset = [n for n, p in model.named_parameters() if id(p) not in done]
    if unset:  # the model may come from to_empty(): every tensor must be written
        raise RuntimeError("init_golden_weights left parameters unset: " + ", ".join(unset))


def _init_modules(model, normal):
    """Writes every parameter of `model`; returns the ids of the parameters it wrote."""
    done = set()
    with torch.no_grad():
        if hasattr(model, "mask_token"):
            model.mask_token.copy_(normal(tuple(model.mask_token.shape), 0.02))
            done.add(id(model.mask_token))
        for name, p in model.named_parameters():
            # DUNE: class/register tokens and the position table O(1) so they matter; layer scales
            # around 0.5 (trained ones are far from their 1e-4 init) and varied per channel
            if name.endswith(("cls_token", "register_tokens", "pos_embed")):
                p.copy_(normal(tuple(p.shape), 0.5))
            elif name.endswith((".ls1.gamma", ".ls2.gamma")):
                p.copy_(0.5 + normal(tuple(p.shape), 0.2))
            else:
                continue
            done.add(id(p))
        for name, m in model.named_modules():
            if isinstance(m, nn.Linear):
                m.weight.copy_(normal(tuple(m.weight.shape), 1.0 / np.sqrt(m.in_features)))
                m.bias.copy_(normal(tuple(m.bias.shape), 0.1))
            elif isinstance(m, nn.LayerNorm):
                m.weight.copy_(1.0 + normal(tuple(m.weight.shape), 0.2))
                m.bias.copy_(normal(tuple(m.bias.shape), 0.2))
            elif isinstance(m, nn.ConvTranspose2d):
                m.weight.copy_(normal(tuple(m.weight.shape), 1.0 / np.sqrt(m.in_channels)))
                m.bias.copy_(normal(tuple(m.bias.shape), 0.1))
            elif isinstance(m, nn.Conv2d):
                fan_in = m.in_channels * m.kernel_size[0] * m.kernel_size[1]
                gain = 1.0
                if ".resConfUnit" in name or name.endswith("dpt.head.4"):
                    gain = np.sqrt(2.0)  # inputs come out of a ReLU
                if name.endswith("dpt.head.4"):
                    gain *= 0.5  # raw pts norms of ~0.3..4, so expm1 stays readable
                if ".resConfUnit" in name:
                    gain *= 0.5  # keep the residual sums from growing over 7 fusion units
                m.weight.copy_(normal(tuple(m.weight.shape), gain / np.sqrt(fan_in)))
                if m.bias is not None:
                    m.bias.copy_(normal(tuple(m.bias.shape), 0.1))
            else:
                continue
            done.update(id(p) for p in m.parameters(recurse=False))
    return done


# ----------------------------------------------------------------------------------------- images


def make_image(seed, width, height):
    """Deterministic smooth RGB test picture (gradient, soft ellipses and a bar, faint waves), uint8 (H,W,3)."""
    rs = np.random.RandomState(seed)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float64)
    u, v = xx / max(width - 1, 1), yy / max(height - 1, 1)
    c0, c1, c2 = rs.uniform(0.0, 1.0, size=(3, 3))
    img = c0 * (1 - u)[..., None] + c1 * u[..., None]
    img = img * (1 - 0.5 * v)[..., None] + c2 * (0.5 * v)[..., None]
    for _ in range(3):
        cx, cy = rs.uniform(0, width), rs.uniform(0, height)
        rx, ry = rs.uniform(0.12, 0.35) * width, rs.uniform(0.12, 0.35) * height
        col = rs.uniform(0.0, 1.0, size=3)
        d = np.sqrt(((xx - cx) / rx) ** 2 + ((yy - cy) / ry) ** 2)
        alpha = np.clip((1.0 - d) * 4.0, 0.0, 1.0)[..., None]
        img = img * (1 - alpha) + col * alpha
    # a slanted bar
    ang = rs.uniform(0, np.pi)
    off = rs.uniform(-0.2, 0.2)
    dist = np.abs((u - 0.5) * np.cos(ang) + (v - 0.5) * np.sin(ang) - off)
    alpha = np.clip((0.06 - dist) * 40.0, 0.0, 1.0)[..., None]
    img = img * (1 - alpha) + rs.uniform(0.0, 1.0, size=3) * alpha
    fx, fy, ph = rs.uniform(2, 6), rs.uniform(2, 6), rs.uniform(0, 2 * np.pi)
    img = img + 0.04 * np.sin(2 * np.pi * (fx * u + fy * v) + ph)[..., None]
    return np.clip(np.round(img * 255.0), 0, 255).astype(np.uint8)


def normalise_u8(u8):
    """(..., H, W, 3) uint8 -> (..., 3, H, W) float32, the official ImgNorm: (v/255 - 0.5)/0.5 in fp32."""
    t = torch.from_numpy(np.ascontiguousarray(u8)).to(torch.float32) / 255.0
    t = (t - 0.5) / 0.5
    return t.movedim(-1, -3).contiguous()


# ------------------------------------------------------------------------------------------- runs


def _select_taps(taps, patterns):
    import fnmatch

    keep = {}
    for name, t in taps.items():
        base = name.rsplit("_", 1)[0]  # strip the view suffix
        if any(fnmatch.fnmatchcase(base, p) for p in patterns):
            keep[name] = t
    return keep


def _empty_model(cfg, dtype):
    """Uninitialised model (skips PyTorch's default init, slow at full size); every tensor is set later."""
    return AsymmetricMASt3R(cfg, device="meta", dtype=dtype).to_empty(device="cpu")


def run_reference(model_f32_state, cfg, img1, img2, dtype=torch.float64, taps_wanted=True):
    """Forward in `dtype` on the given fp32 weights; returns (outputs, taps) as float32 tensors."""
    model = _empty_model(cfg, dtype)
    load_weights(model, model_f32_state)
    model.eval()
    taps = {} if taps_wanted else None
    with torch.no_grad():
        out = model(img1.to(dtype), img2.to(dtype), taps=taps)
    out = {k: v.to(torch.float32).contiguous() for k, v in out.items()}
    taps = {k: v.to(torch.float32).contiguous() for k, v in (taps or {}).items()}
    return out, taps


def build_case(name, spec, all_taps=False):
    cfg = resolve_config(spec["config"])
    model = _empty_model(cfg, torch.float32)
    init_golden_weights(model, spec["weight_seed"])
    weights = {k: v.detach().clone() for k, v in canonical_state_dict(model).items()}
    B = spec["batch"]
    seeds = list(spec["image_seeds"])
    (w1, h1), (w2, h2) = spec["view1"], spec["view2"]
    u8_1 = np.stack([make_image(seeds[2 * b], w1, h1) for b in range(B)])
    u8_2 = np.stack([make_image(seeds[2 * b + 1], w2, h2) for b in range(B)])
    img1, img2 = normalise_u8(u8_1), normalise_u8(u8_2)
    out, taps = run_reference(weights, cfg, img1, img2)
    taps = _select_taps(taps, ALL_TAPS if all_taps else spec["taps"])
    io = {"img1": img1, "img2": img2,
          "img1_u8": u8_1[0] if B == 1 else u8_1, "img2_u8": u8_2[0] if B == 1 else u8_2}
    io.update(out)
    io.update({f"tap.{k}": v for k, v in taps.items()})
    return cfg, weights, io


def write_case(out_dir, name, cfg, weights, io, extra_meta=None):
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    cfg_json = config_to_json(cfg)
    st.save_file(weights, os.path.join(d, "model.safetensors"), metadata={METADATA_KEY: cfg_json})
    meta = {
        METADATA_KEY: cfg_json,
        "golden.case": name,
        "golden.note": "reference forward in float64 on these float32 weights and inputs, stored as float32",
        "golden.layouts": json.dumps(LAYOUTS_DUNE if is_dune(cfg) else LAYOUTS, sort_keys=True),
    }
    meta.update(extra_meta or {})
    st.save_file(io, os.path.join(d, "io.safetensors"), metadata=meta)
    return d


def _summary(io):
    lines = []
    for k in ("pts3d_1", "pts3d_2", "conf_1", "conf_2", "desc_conf_1", "desc_conf_2"):
        t = io[k]
        lines.append(f"    {k:12s} {tuple(t.shape)} min {t.min():.4g} max {t.max():.4g} mean {t.mean():.4g}")
    return "\n".join(lines)


def full_size(args):
    cfg = resolve_config(None)
    if args.weights:
        tensors, meta = st.load_file(args.weights)
        cfg = config_from_json(meta[METADATA_KEY])
        weights = {k: torch.from_numpy(v).to(torch.float32) for k, v in tensors.items()}
    else:
        print("building the official config with seeded weights (about 2.8 GB in fp32)...", flush=True)
        model = _empty_model(cfg, torch.float32)
        init_golden_weights(model, args.seed)
        weights = canonical_state_dict(model)
        del model
    u8_1 = make_image(args.seed + 1, args.width, args.height)[None]
    u8_2 = make_image(args.seed + 2, args.width2 or args.width, args.height2 or args.height)[None]
    img1, img2 = normalise_u8(u8_1), normalise_u8(u8_2)
    dtype = torch.float64 if args.dtype == "float64" else torch.float32
    t0 = time.time()
    out, taps = run_reference(weights, cfg, img1, img2, dtype=dtype)
    print(f"forward ({args.dtype}) took {time.time() - t0:.1f} s")
    taps = _select_taps(taps, ALL_TAPS if args.all_taps else TOKEN_TAPS + ("raw",))
    io = {"img1": img1, "img2": img2, "img1_u8": u8_1[0], "img2_u8": u8_2[0]}
    io.update(out)
    io.update({f"tap.{k}": v for k, v in taps.items()})
    os.makedirs(args.out, exist_ok=True)
    if not args.weights and not args.no_model:
        st.save_file(weights, os.path.join(args.out, "model.safetensors"), metadata={METADATA_KEY: config_to_json(cfg)})
    st.save_file(io, os.path.join(args.out, "io.safetensors"),
                 metadata={METADATA_KEY: config_to_json(cfg), "golden.case": "full_size",
                           "golden.note": f"reference forward in {args.dtype}, stored as float32",
                           "golden.layouts": json.dumps(LAYOUTS, sort_keys=True)})
    print(_summary(io))
    print(f"wrote {args.out}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=None, help=f"output directory (default {DEFAULT_OUT})")
    ap.add_argument("--case", action="append", choices=sorted(CASES), help="only this case (repeatable)")
    ap.add_argument("--all-taps", action="store_true", help="store every tap (debugging; not for committed data)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (1 keeps results bit-stable)")
    fs = ap.add_argument_group("full-size mode (not run in CI)")
    fs.add_argument("--full-size", action="store_true", help="official ViT-L/ViT-B config")
    fs.add_argument("--width", type=int, default=512)
    fs.add_argument("--height", type=int, default=384)
    fs.add_argument("--width2", type=int, default=None, help="view 2 width (default: --width)")
    fs.add_argument("--height2", type=int, default=None, help="view 2 height (default: --height)")
    fs.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    fs.add_argument("--seed", type=int, default=4242)
    fs.add_argument("--weights", default=None, help="use this converted .safetensors instead of seeded weights")
    fs.add_argument("--no-model", action="store_true", help="do not write the 2.8 GB model.safetensors")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.full_size:
        if not args.out:
            ap.error("--full-size needs --out")
        return full_size(args)
    out_dir = args.out or DEFAULT_OUT
    for name in args.case or list(CASES):
        t0 = time.time()
        cfg, weights, io = build_case(name, CASES[name], all_taps=args.all_taps)
        d = write_case(out_dir, name, cfg, weights, io)
        sizes = {f: os.path.getsize(os.path.join(d, f)) for f in ("model.safetensors", "io.safetensors")}
        print(f"{name}: {d} model {sizes['model.safetensors']} B, io {sizes['io.safetensors']} B "
              f"({time.time() - t0:.1f} s)")
        print(_summary(io))


if __name__ == "__main__":
    main()
