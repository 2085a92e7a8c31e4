#!/usr/bin/python3
"""Renders the two demo views in samples/ (view_a.png, view_b.png) and their ground truth (view_gt.npz).

The scene is one seed of recon's procedural scene generator (tools/scenes, splits.SAMPLE_SEED), held
out of training: a room with boxes, spheres and cylinders in procedural materials, sun and sky light
with shadows, seen by two hand-held cameras. The images are 512x384 (what the official loader gives
for the released 512 model), shaded at 2x2 points per pixel. The ground truth is rendered at the demo
model's resolution, 256x192 (the official loader's size 256 of these images): per view depth,
validity, intrinsics and poses, and view 1 -> view 2 correspondences (tools/eval/ground_truth.py);
scripts/demo prints the reconstruction's error against it (tools/eval/sample_error.py).

  /usr/bin/python3 samples/make_samples.py            # rewrites samples/view_a.png, view_b.png, view_gt.npz
  /usr/bin/python3 samples/make_samples.py --out DIR

Deterministic (numpy's seeded generator, no other random state): re-running reproduces the files.
This script must not write anywhere except its --out directory.
"""

import argparse
import os
import sys

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tools"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tools", "eval"))

import ground_truth  # noqa: E402
from scenes import render, sampler, splits  # noqa: E402

WIDTH, HEIGHT, SUPERSAMPLE = 512, 384, 2
GT_WIDTH, GT_HEIGHT = 256, 192


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--seed", type=int, default=splits.SAMPLE_SEED)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    scene = sampler.sample_batch([args.seed], n_views=2)
    views = render.render(scene, WIDTH, HEIGHT, ss=SUPERSAMPLE)
    rgb = render.to_uint8(views["rgb"]).numpy()
    for v, name in enumerate(("view_a.png", "view_b.png")):
        path = os.path.join(args.out, name)
        Image.fromarray(rgb[0, v]).save(path, optimize=True)
        print(f"{path}: {os.path.getsize(path) // 1024} KiB")
    small = render.render(scene, GT_WIDTH, GT_HEIGHT, ss=1)
    gt = ground_truth.pair_ground_truth(small, 0)
    gt["seed"] = np.int64(args.seed)
    # float32 is plenty for depth and pixel positions, and halves the file
    gt = {k: (v.astype(np.float32) if v.dtype == np.float64 and v.ndim >= 2 and v.shape[0] > 4 else v) for k, v in gt.items()}
    path = os.path.join(args.out, "view_gt.npz")
    np.savez_compressed(path, **gt)
    print(f"{path}: {os.path.getsize(path) // 1024} KiB (seed {args.seed}, {GT_WIDTH}x{GT_HEIGHT}, "
          f"overlap {float(gt['overlap']):.2f})")


if __name__ == "__main__":
    main()
