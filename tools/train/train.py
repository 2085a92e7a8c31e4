#!/usr/bin/python3
"""Trains the demo model (model.py) on procedural pairs rendered on the fly (tools/scenes), in chunks
that resume: each call runs for at most --minutes, then writes the checkpoint (checkpoint.py) and
appends to the loss log (DIR/log.csv, one row per step). The learning-rate schedule (linear warm-up,
cosine decay to --total-steps) depends only on the step, so chunks of any length give one run.

  train.py --dir .train/run --minutes 9 --total-steps 20000      # starts, or resumes from .train/run
  train.py --dir /tmp/t --config tiny --width 64 --height 48 --batch 2 --steps 5 --device cpu
  train.py --dir .train/ft --init-weights samples/demo-model.safetensors --warmup 100 ...   # continues

--init-weights starts a new run (step 0, a fresh AdamW and schedule) from the weights of an exported
model; its scenes continue after the ones that model was trained on, and export.py counts its steps
and seconds on top of the model's.

Data: pairs come from a pool on the device; each step renders --fresh new pairs into it (replacing
the oldest) and draws the batch from the whole pool, so rendering costs a fraction of a step. The
seed of every rendered scene is TRAIN_FIRST + a counter saved in the checkpoint (scenes/splits.py):
training never sees the test seeds or the sample scene.
"""

import argparse
import csv
import math
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # tools/
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checkpoint  # noqa: E402
import data  # noqa: E402
import losses  # noqa: E402
import model as demo_model  # noqa: E402
from scenes import GENERATOR_VERSION, splits  # noqa: E402

LOG_FIELDS = ["step", "seconds", "lr", "loss", "loss_pts", "reg_err", "loss_match", "match_acc", "desc_sim", "render_ms", "step_ms"]


def lr_at(step, args):
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    p = min(1.0, (step - args.warmup) / max(1, args.total_steps - args.warmup))
    return args.lr_min + 0.5 * (args.lr - args.lr_min) * (1 + math.cos(math.pi * p))


def desc_similarity(out):
    """Mean cosine similarity of 256 random descriptors of view 1: near 1 means they collapsed."""
    d = out["desc_1"].detach().flatten(1, 2)[:, :: max(1, out["desc_1"].shape[1] * out["desc_1"].shape[2] // 256)]
    return (d.float() @ d.float().transpose(1, 2)).mean().item()


class Pool:
    """Rendered pairs kept on the device; refilled in place, sampled at random."""

    def __init__(self, args, counter, device):
        self.args, self.counter, self.device = args, counter, device
        self.jitter = torch.Generator().manual_seed(args.seed + counter)
        self.data, self.next_slot = None, 0
        while self.data is None or self.next_slot != 0:
            self.refill(min(args.pool, args.render_chunk))

    def refill(self, n):
        seeds = [splits.TRAIN_FIRST + self.counter + i for i in range(n)]
        self.counter += n
        fresh = data.make_pairs(seeds, self.args.width, self.args.height, self.device, ss=self.args.ss,
                                jitter=self.jitter)
        fresh = {k: v for k, v in fresh.items() if k not in ("rgb_u8", "K", "cam_to_world", "depth1", "depth2")}
        if self.data is None:
            self.data = {k: torch.empty((self.args.pool,) + v.shape[1:], dtype=v.dtype, device=self.device)
                         for k, v in fresh.items()}
        idx = (torch.arange(n, device=self.device) + self.next_slot) % self.args.pool
        for k, v in fresh.items():
            self.data[k][idx] = v
        self.next_slot = (self.next_slot + n) % self.args.pool

    def batch(self, generator):
        idx = torch.randint(0, self.args.pool, (self.args.batch,), generator=generator).to(self.device)
        return {k: v[idx] for k, v in self.data.items()}


def initialise(net, cfg, args):
    """The optional changes to the random initialisation (--shared-offset-init, --tie-init)."""
    if args.shared_offset_init:
        # Random per-offset readouts give the same scene point, seen at different offsets of its
        # patch in the two views, unrelated descriptors; one shared readout starts them equal at
        # the patch level, and training refines them per pixel.
        p = cfg.get("patch_size", 16)
        for head in (net.downstream_head1, net.downstream_head2):
            fc2 = head.head_local_features.fc2
            with torch.no_grad():
                w = fc2.weight.view(-1, p * p, fc2.weight.shape[1])
                w.copy_(w[:, :1].expand_as(w) + 0.1 * w)
                bias = fc2.bias.view(-1, p * p)
                bias.copy_(bias[:, :1].expand_as(bias) + 0.1 * bias)
    if args.tie_init:
        # Independent random heads put the two views' descriptors in unrelated subspaces, where
        # InfoNCE settles at its uniform value (every similarity ~0) and stays (seen in the first runs).
        net.dec_blocks2.load_state_dict(net.dec_blocks.state_dict())
        net.downstream_head2.load_state_dict(net.downstream_head1.state_dict())


def start_from_weights(net, path):
    """The state of a run that continues an exported model: its weights, step 0, and scene seeds after
    the ones it was trained on (so the new pairs are new scenes)."""
    meta = demo_model.load_weights_file(net, path)
    return {"step": 0, "scene_counter": int(meta.get("recon.train_pairs_rendered", 0)),
            "init": {"file": os.path.basename(path), "steps": int(meta.get("recon.train_steps", 0)),
                     "seconds": float(meta.get("recon.train_seconds", 0.0))}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True, help="checkpoint and log directory (resumed from when it has one)")
    ap.add_argument("--config", default="demo", choices=["demo", "tiny"])
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--height", type=int, default=192)
    ap.add_argument("--ss", type=int, default=2, help="supersampling of the rendered images")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--pool", type=int, default=1024)
    ap.add_argument("--fresh", type=int, default=8, help="pairs rendered into the pool per step")
    ap.add_argument("--render-chunk", type=int, default=128)
    ap.add_argument("--lr", type=float, default=4e-4)
    ap.add_argument("--lr-min", type=float, default=1e-6)
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--weight-decay", type=float, default=0.05)
    ap.add_argument("--total-steps", type=int, default=20000)
    ap.add_argument("--steps", type=int, default=0, help="stop after this many steps in this call (0: no limit)")
    ap.add_argument("--minutes", type=float, default=0, help="stop after this much wall time (0: no limit)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--tau", type=float, default=losses.TAU, help="InfoNCE temperature")
    ap.add_argument("--match-weight", type=float, default=1.0)
    ap.add_argument("--n-match", type=int, default=losses.N_MATCH, help="correspondences per pair in InfoNCE")
    ap.add_argument("--init-weights", metavar="FILE",
                    help="start from the weights of an exported model (export.py) instead of a random initialisation")
    ap.add_argument("--shared-offset-init", action="store_true",
                    help="start the local-feature MLP with one readout for all 16x16 pixel offsets of a patch")
    ap.add_argument("--tie-init", action="store_true",
                    help="start view 2's decoder and head as copies of view 1's (descriptors in one space)")
    ap.add_argument("--no-amp", action="store_true", help="float32 throughout (default: bfloat16 autocast on CUDA)")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args()
    t_start = time.time()
    device = torch.device(args.device)
    torch.manual_seed(args.seed)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True

    demo_model.train_mode()
    cfg = demo_model.DEMO_CONFIG if args.config == "demo" else demo_model.TINY_CONFIG
    net = demo_model.build(cfg, device=device).train()
    decay = [p for n, p in net.named_parameters() if p.ndim >= 2 and n != "mask_token"]
    no_decay = [p for n, p in net.named_parameters() if p.ndim < 2 or n == "mask_token"]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.95))
    state = checkpoint.load(args.dir, net, opt, device=device)
    if state is None and args.init_weights:
        state = start_from_weights(net, args.init_weights)
    elif state is None:
        state = {"step": 0, "scene_counter": 0}
        initialise(net, cfg, args)
    step0 = state["step"]
    fwd = torch.compile(net) if args.compile else net

    t0 = time.time()
    pool = Pool(args, state["scene_counter"], device)
    if device.type == "cuda":
        torch.cuda.synchronize()
    fill_s = time.time() - t0
    print(f"step {step0}: pool of {args.pool} pairs rendered in {fill_s:.1f} s "
          f"({args.width}x{args.height}, ss {args.ss}, {args.device})", flush=True)
    gen = torch.Generator().manual_seed(args.seed * 1000003 + step0)
    os.makedirs(args.dir, exist_ok=True)
    log_path = os.path.join(args.dir, "log.csv")
    new_log = not os.path.exists(log_path)
    logf = open(log_path, "a", newline="")
    log = csv.DictWriter(logf, LOG_FIELDS)
    if new_log:
        log.writeheader()
    amp = device.type == "cuda" and not args.no_amp
    losses.TAU = args.tau
    losses.N_MATCH = args.n_match
    step = step0
    elapsed_before = state.get("seconds", 0.0)
    while True:
        if args.steps and step - step0 >= args.steps:
            break
        if args.minutes and time.time() - t_start > args.minutes * 60:
            break
        if step >= args.total_steps:
            break
        ts = time.time()
        if args.fresh:
            pool.refill(args.fresh)
        if device.type == "cuda":
            torch.cuda.synchronize()
        tr = time.time()
        batch = pool.batch(gen)
        lr = lr_at(step, args)
        for g in opt.param_groups:
            g["lr"] = lr
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=amp):
            out = fwd(batch["img1"], batch["img2"])
        lp, reg = losses.pointmap_loss(out, batch)
        lm, acc = losses.matching_loss(out, batch, gen)
        loss = lp + args.match_weight * lm
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        step += 1
        row = {"step": step, "lr": f"{lr:.3e}", "loss": f"{loss.item():.5f}", "loss_pts": f"{lp.item():.5f}",
               "reg_err": f"{reg.item():.5f}", "loss_match": f"{lm.item():.5f}", "match_acc": f"{acc.item():.4f}",
               "desc_sim": f"{desc_similarity(out):.4f}",
               "render_ms": f"{(tr - ts) * 1e3:.1f}", "step_ms": f"{(time.time() - tr) * 1e3:.1f}",
               "seconds": f"{elapsed_before + time.time() - t_start:.1f}"}
        log.writerow(row)
        if not args.quiet and (step % 50 == 0 or step - step0 <= 3):
            print(" ".join(f"{k}={row[k]}" for k in LOG_FIELDS), flush=True)
    logf.close()
    state = {"step": step, "scene_counter": pool.counter, "seconds": elapsed_before + time.time() - t_start,
             "generator": GENERATOR_VERSION, "width": args.width, "height": args.height, "config": args.config,
             "batch": args.batch, "pool": args.pool, "fresh": args.fresh, "lr": args.lr,
             "total_steps": args.total_steps, "seed": args.seed, "init": state.get("init")}
    checkpoint.save(args.dir, net, opt, state)
    print(f"saved step {step} to {args.dir} ({time.time() - t_start:.0f} s in this call)", flush=True)


if __name__ == "__main__":
    main()
