"""The official retrieval checkpoint (`…_retrieval_trainingfree.pth`) → the engine's safetensors.

The .pth is {'model': state_dict, 'args': Namespace(pretrained, freeze_backbone, prewhiten, hdims,
residual, postwhiten, featweights, nfeat, nclusters, imsize, ...)} as read by the official
mast3r/retrieval/processor.py. The head's arguments become the JSON metadata "retrieval.config"
(docs/RETRIEVAL.md); the rest of `args` is kept verbatim, for provenance only, under
"retrieval.source_args". Tensors keep their official names. Whitener tensors (prewhiten.*,
postwhiten.*) stay float64, as the official model holds them; projector tensors are written as
`dtype` (f32 or f16). Backbone tensors (backbone.*, present only if the backbone was not frozen) are
not part of the head and are dropped with a warning.
"""

import json
import sys

import torch

from retrieval_ref import METADATA_KEY, RetrievalHead


class RetrievalCheckpointError(ValueError):
    pass


def _arg(args, name, default=None):
    if isinstance(args, dict):
        return args.get(name, default)
    return getattr(args, name, default)


def head_config(args, state):
    """The retrieval.config dict from the checkpoint's args (validated against its state_dict)."""
    if args is None:
        raise RetrievalCheckpointError("the checkpoint has no 'args' (hdims, prewhiten, nfeat, ...)")
    featweights = _arg(args, "featweights", "l2norm")
    if featweights != "l2norm":
        raise RetrievalCheckpointError(f"featweights={featweights!r}: only 'l2norm' exists in the official model")
    hdims = _arg(args, "hdims", "")
    if isinstance(hdims, str):
        try:
            hdims = [int(h) for h in hdims.split("_")] if hdims else []
        except ValueError:
            raise RetrievalCheckpointError(f"hdims={hdims!r} is not '_'-separated integers") from None
    if "prewhiten.m" in state:
        dim = state["prewhiten.m"].shape[-1]
    elif "projector.0.weight" in state:
        dim = state["projector.0.weight"].shape[1]
    else:
        raise RetrievalCheckpointError("no prewhiten.m and no projector.0.weight: not a retrieval checkpoint")
    nfeat = _arg(args, "nfeat", 300)
    return {"dim": int(dim), "prewhiten": _arg(args, "prewhiten") is not None, "hdims": [int(h) for h in hdims],
            "residual": bool(_arg(args, "residual", False)), "postwhiten": _arg(args, "postwhiten") is not None,
            "featweights": "l2norm", "nfeat": float(nfeat), "layer_norm_eps": 1e-5}


def convert(ckpt, dtype=torch.float32):
    """(tensors, metadata) for safetensors_io.save_file, or RetrievalCheckpointError naming the problem."""
    if not isinstance(ckpt, dict) or not isinstance(ckpt.get("model"), dict):
        raise RetrievalCheckpointError("the checkpoint is not a dict with a 'model' state_dict")
    state = ckpt["model"]
    backbone = [k for k in state if k.startswith("backbone.")]
    if backbone:
        print(f"convert-checkpoint: dropping {len(backbone)} backbone.* tensors (the retrieval head does not use "
              "them; convert the MASt3R checkpoint for the encoder)", file=sys.stderr)
        state = {k: v for k, v in state.items() if not k.startswith("backbone.")}
    bad = sorted(k for k, v in state.items() if not isinstance(v, torch.Tensor))
    if bad:
        raise RetrievalCheckpointError("non-tensor entries in the state_dict: " + ", ".join(bad))
    args = ckpt.get("args")
    cfg = head_config(args, state)
    try:
        head = RetrievalHead(cfg["dim"], cfg["prewhiten"], cfg["hdims"], cfg["residual"], cfg["postwhiten"],
                             cfg["nfeat"])
    except AssertionError:
        raise RetrievalCheckpointError(f"inconsistent head arguments: {cfg}") from None
    want = {k: tuple(v.shape) for k, v in head.state_dict().items()}
    got = {k: tuple(v.shape) for k, v in state.items()}
    problems = []
    missing = sorted(set(want) - set(got))
    unexpected = sorted(set(got) - set(want))
    mismatched = sorted(f"{k} is {list(got[k])}, expected {list(want[k])}" for k in want
                        if k in got and got[k] != want[k])
    if missing:
        problems.append("missing tensor(s): " + ", ".join(missing))
    if unexpected:
        problems.append("unexpected tensor(s): " + ", ".join(unexpected))
    if mismatched:
        problems.append("shape mismatch: " + "; ".join(mismatched))
    if problems:
        raise RetrievalCheckpointError("the state_dict does not match the head of its args:\n  "
                                       + "\n  ".join(problems))
    tensors = {}
    for k in sorted(want):
        t = state[k].detach()
        whitener = k.startswith(("prewhiten.", "postwhiten."))
        t = t.to(torch.float64 if whitener else dtype)
        if not torch.isfinite(t).all():
            raise RetrievalCheckpointError(f"tensor {k} has non-finite values in {t.dtype}")
        tensors[k] = t.contiguous()
    source = {} if args is None else (dict(args) if isinstance(args, dict) else dict(vars(args)))
    meta = {METADATA_KEY: json.dumps(cfg, separators=(",", ":")),
            "retrieval.source_args": json.dumps(source, default=repr, sort_keys=True), "format": "pt"}
    return tensors, meta
