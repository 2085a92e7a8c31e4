"""Resumable training state in shards of at most SHARD_BYTES, so a checkpoint can travel in files of a
limited size: the model in float32, AdamW's moments in bfloat16 (their precision barely matters; half
the bytes), the step, the schedule and the loss log.

  save(dir, model, optimizer, state)  -> writes dir/ckpt-N.pt shards and dir/ckpt.json (the index)
  load(dir, model, optimizer)         -> the state dict saved with it (or None when there is none)
"""

import glob
import json
import os

import torch

SHARD_BYTES = 14 * 1024 * 1024


def _shards(named):
    """Split name -> tensor into lists whose byte sizes stay under SHARD_BYTES."""
    out, cur, size = [], {}, 0
    for k, v in named.items():
        b = v.numel() * v.element_size()
        if cur and size + b > SHARD_BYTES:
            out.append(cur)
            cur, size = {}, 0
        cur[k] = v
        size += b
    if cur:
        out.append(cur)
    return out


def save(directory, model, optimizer, state):
    os.makedirs(directory, exist_ok=True)
    named = {f"model/{k}": v.detach().float().cpu() for k, v in model.state_dict().items()
             if ".layer_rn." not in k}  # the DPT aliases share storage with layerN_rn
    opt = optimizer.state_dict()
    for pid, st in opt["state"].items():
        for k, v in st.items():
            if torch.is_tensor(v) and v.numel() > 1:
                named[f"opt/{pid}/{k}"] = v.detach().to(torch.bfloat16).cpu()
            elif torch.is_tensor(v):
                named[f"opt/{pid}/{k}"] = v.detach().float().cpu()
    for old in glob.glob(os.path.join(directory, "ckpt-*.pt")):
        os.remove(old)
    shards = _shards(named)
    for i, shard in enumerate(shards):
        torch.save(shard, os.path.join(directory, f"ckpt-{i}.pt"))
    index = dict(state, shards=len(shards), param_groups=opt["param_groups"])
    with open(os.path.join(directory, "ckpt.json"), "w") as f:
        json.dump(index, f)


def load(directory, model, optimizer=None, device="cpu"):
    path = os.path.join(directory, "ckpt.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        index = json.load(f)
    named = {}
    for i in range(index["shards"]):
        named.update(torch.load(os.path.join(directory, f"ckpt-{i}.pt"), map_location="cpu"))
    sd = {k[len("model/"):]: v for k, v in named.items() if k.startswith("model/")}
    missing, unexpected = model.load_state_dict(sd, strict=False)
    missing = [k for k in missing if ".layer_rn." not in k]
    if missing or unexpected:
        raise RuntimeError(f"checkpoint does not fit the model: missing {missing}, unexpected {unexpected}")
    if optimizer is not None:
        state = {}
        for k, v in named.items():
            if k.startswith("opt/"):
                _, pid, name = k.split("/", 2)
                dev = "cpu" if name == "step" else device  # AdamW keeps its step count on the CPU
                state.setdefault(int(pid), {})[name] = v.to(device=dev, dtype=torch.float32)
        optimizer.load_state_dict({"state": state, "param_groups": index["param_groups"]})
    return index
