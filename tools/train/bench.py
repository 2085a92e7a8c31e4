#!/usr/bin/python3
"""Measures what plans a training run: render time per pair and training-step time per batch size
(forward, both losses, backward, AdamW) on the training device, eager and optionally compiled.

  bench.py [--width 256 --height 192] [--batches 16,32,64] [--compile]
"""

import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tools/
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import data  # noqa: E402
import losses  # noqa: E402
import model as demo_model  # noqa: E402


def sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--height", type=int, default=192)
    ap.add_argument("--batches", default="16,32,64")
    ap.add_argument("--compile", action="store_true")
    args = ap.parse_args()
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name() if dev.type == 'cuda' else 'cpu'}")
    for n, ss in ((32, 2), (128, 2), (128, 1)):
        data.make_pairs(list(range(1_000_000, 1_000_000 + n)), args.width, args.height, dev, ss=ss)
        sync()
        t = time.time()
        b = data.make_pairs(list(range(2_000_000, 2_000_000 + n)), args.width, args.height, dev, ss=ss)
        sync()
        dt = time.time() - t
        print(f"render {n} pairs ss{ss}: {dt * 1e3:.0f} ms ({dt / n * 1e3:.2f} ms/pair), "
              f"overlap mean {b['covisible'].float().flatten(1).sum(1).div(b['valid1'].float().flatten(1).sum(1)).mean():.2f}")
    demo_model.train_mode()
    for compiled in ([False, True] if args.compile else [False]):
        for bs in [int(x) for x in args.batches.split(",")]:
            net = demo_model.build(device=dev).train()
            fwd = torch.compile(net) if compiled else net
            opt = torch.optim.AdamW(net.parameters(), lr=1e-4)
            batch = data.make_pairs(list(range(3_000_000, 3_000_000 + bs)), args.width, args.height, dev)
            times = []
            for i in range(12):
                sync()
                t = time.time()
                with torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=dev.type == "cuda"):
                    out = fwd(batch["img1"], batch["img2"])
                loss = losses.pointmap_loss(out, batch)[0] + losses.matching_loss(out, batch)[0]
                opt.zero_grad()
                loss.backward()
                opt.step()
                sync()
                times.append(time.time() - t)
            med = sorted(times[4:])[len(times[4:]) // 2]
            mem = torch.cuda.max_memory_allocated() / 2**30 if dev.type == "cuda" else 0
            print(f"step batch {bs} {'compiled' if compiled else 'eager'}: first {times[0]:.1f} s, "
                  f"median {med * 1e3:.1f} ms ({bs / med:.0f} pairs/s), peak {mem:.1f} GiB")


if __name__ == "__main__":
    main()
