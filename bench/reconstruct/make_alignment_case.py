#!/usr/bin/python3
"""A synthetic sparse-alignment problem at the issue's size, in the golden format of
tests/reference/sparse_ga_make_golden.py (inputs only): N images (default 20) at 512x384, subsample 8,
the complete pair graph. For recon_bench_alignment and alignment_torch.py; never run in CI.

The scene is the golden's box room (its ray caster and matcher are imported, not copied); the cameras
are new: N of them on a sweep across the room, x from -0.55 to 0.55 m, yaw from -55 to +55 deg (a few
degrees of jitter, pitch and roll), focal 448-496 px, pp (W/2, H/2), depths 0.4-1.2 m. About 45 % of
the pairs see each other, like a real complete graph of a panning sweep: at seed 0, 86 of 190 pairs and
126,176 matches at 20 images; 575 of 1,225 pairs and 842,296 matches at 50.

  own preds  per image, one own-frame prediction per other image (N-1), capped at --max-preds (the
             neighbours that overlap most): scale_k (X_gt + 1 % of z N(0,1)^3), scale_k = exp(0.015 N(0,1)),
             conf uniform in [1.5, 6]; float32, as the network gives them. Each prediction is 3.1 MB, so
             the file is about 3.1 MB x N x min(N-1, max_preds): 1.2 GB at 20 images, 3.0 GB at 50 (there
             N-1 would make 7.7 GB). Writing takes about 25 s and 75 s.
  matches    pairs whose views overlap (>= MIN_OVERLAP of each image's grid pixels seen, unoccluded, by the
             other): the golden's grid matches both ways (0.5 px noise, rounded, de-duplicated), a random
             subset of about --matches (x exp(0.1 N(0,1))) where there are more, then --outliers (default
             10 %) outliers (random xy_b), conf uniform in [1, 10]. Other pairs: 8-32 random (spurious) matches, conf in [1, 2]:
             a real matcher returns a few on any pair, and the reference refuses a pair with none.

Tensors: image_hw i32 [N,2] (H,W); own.{i}.{k}.pts3d f32 [H,W,3]; own.{i}.{k}.conf f32 [H,W]; pairs i32
[P,2] (a<b, every pair); match.{p}.xy_a i32 [M,2] (x,y); match.{p}.xy_b i32 [M,2]; match.{p}.conf f32 [M];
gt.cam2w f64 [N,4,4]; gt.focal f64 [N]. Metadata: subsample, lr1, niter1, lr2, niter2 (the official 300 +
300), images, seed, max_preds, note. Deterministic for a given seed (numpy RandomState).

  /usr/bin/python3 bench/reconstruct/make_alignment_case.py --images 20 --out /tmp/align20.safetensors
"""

import argparse
import math
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
import safetensors_io as st  # noqa: E402
from sparse_ga_make_golden import View, directional_matches, gt_pointmap, overlap, rot_x, rot_y, rot_z  # noqa: E402

HEIGHT, WIDTH = 384, 512
SUBSAMPLE = 8  # the golden module's grid (grid_xy) uses its own SUBSAMPLE, also 8
OPTIONS = dict(subsample=8, lr1=0.07, niter1=300, lr2=0.01, niter2=300)
MIN_OVERLAP = 0.1
DEPTH_NOISE = 0.01
OUTLIERS = 0.1


def sweep_views(n, rng):
    """n cameras panning across the golden's room (see the module docstring)."""
    views = []
    for i in range(n):
        t = i / (n - 1) if n > 1 else 0.5
        T = np.eye(4)
        yaw = -55 + 110 * t + rng.uniform(-3, 3)
        T[:3, :3] = rot_y(yaw) @ rot_x(rng.uniform(-6, 6)) @ rot_z(rng.uniform(-3, 3))
        T[:3, 3] = (-0.55 + 1.1 * t + rng.uniform(-0.04, 0.04), rng.uniform(-0.08, 0.08), -0.2 + rng.uniform(-0.05, 0.05))
        views.append(View(T, 8 * rng.uniform(56, 62), HEIGHT, WIDTH))
    return views


def pair_matches(va, Xa, vb, Xb, rng, target, outliers=OUTLIERS):
    """Geometric matches of an overlapping pair, the golden's way, subsampled to about `target`."""
    xa1, xb1 = directional_matches(va, Xa, vb, Xb, rng, True)
    xb2, xa2 = directional_matches(vb, Xb, va, Xa, rng, True)
    xa, xb = np.concatenate((xa1, xa2)), np.concatenate((xb1, xb2))
    nb = vb.h * vb.w
    key = np.unique((xa[:, 1] * va.w + xa[:, 0]) * nb + (xb[:, 1] * vb.w + xb[:, 0]))
    keep = int(round(target * math.exp(0.1 * rng.normal())))
    if len(key) > keep:
        key = np.sort(rng.choice(key, size=keep, replace=False))
    ia, ib = key // nb, key % nb
    xa = np.stack((ia % va.w, ia // va.w), axis=1)
    xb = np.stack((ib % vb.w, ib // vb.w), axis=1)
    n_out = int(round(outliers * len(xa)))
    sel = rng.choice(len(xa), size=n_out, replace=False)
    xb[sel] = np.stack((rng.randint(0, vb.w, size=n_out), rng.randint(0, vb.h, size=n_out)), axis=1)
    return xa, xb, rng.uniform(1.0, 10.0, size=len(xa))


def spurious_matches(va, vb, rng):
    m = rng.randint(8, 33)
    xa = np.stack((rng.randint(0, va.w, size=m), rng.randint(0, va.h, size=m)), axis=1)
    xb = np.stack((rng.randint(0, vb.w, size=m), rng.randint(0, vb.h, size=m)), axis=1)
    return xa, xb, rng.uniform(1.0, 2.0, size=m)


def make_case(images=20, seed=0, matches=1500, max_preds=19, log=print, outliers=OUTLIERS):
    """The case's tensors (name -> array) and a short summary."""
    rng = np.random.RandomState(seed)
    views = sweep_views(images, rng)
    n = len(views)
    X_cam = [gt_pointmap(v) for v in views]
    X_world = [X @ v.T[:3, :3].T + v.T[:3, 3] for X, v in zip(X_cam, views)]
    ov = np.zeros((n, n))
    for a in range(n):
        for b in range(n):
            if a != b:
                ov[a, b] = overlap(views[a], X_world[a], views[b])
    ov = np.minimum(ov, ov.T)  # both ways
    pairs = [(a, b) for a in range(n) for b in range(a + 1, n)]

    t = {"image_hw": np.array([[v.h, v.w] for v in views], dtype=np.int32)}
    t["pairs"] = np.array(pairs, dtype=np.int32).reshape(-1, 2)
    overlapping, total = 0, 0
    for p, (a, b) in enumerate(pairs):
        xa = None
        if ov[a, b] >= MIN_OVERLAP:
            xa, xb, conf = pair_matches(views[a], X_world[a], views[b], X_world[b], rng, matches, outliers)
            overlapping += 1
        if xa is None or len(xa) < 8:
            xa, xb, conf = spurious_matches(views[a], views[b], rng)
        t[f"match.{p}.xy_a"] = xa.astype(np.int32)
        t[f"match.{p}.xy_b"] = xb.astype(np.int32)
        t[f"match.{p}.conf"] = conf.astype(np.float32)
        total += len(xa)

    preds = min(n - 1, max_preds)
    for i in range(n):
        others = [j for j in range(n) if j != i]
        chosen = sorted(sorted(others, key=lambda j: -ov[i, j])[:preds])  # ascending pair order
        X = X_cam[i]
        for k, _ in enumerate(chosen):
            scale = math.exp(0.015 * rng.normal())
            noise = rng.normal(size=X.shape) ** 3
            t[f"own.{i}.{k}.pts3d"] = (scale * (X + DEPTH_NOISE * X[..., 2:3] * noise)).astype(np.float32)
            t[f"own.{i}.{k}.conf"] = rng.uniform(1.5, 6.0, size=X.shape[:2]).astype(np.float32)
    t["gt.cam2w"] = np.stack([v.T for v in views]).astype(np.float64)
    t["gt.focal"] = np.array([v.f for v in views], dtype=np.float64)
    summary = dict(images=n, pairs=len(pairs), overlapping_pairs=overlapping, matches=total, preds_per_image=preds)
    return t, summary


def metadata(images, seed, max_preds, outliers=OUTLIERS):
    m = {k: repr(v) for k, v in OPTIONS.items()}
    m.update(
        images=str(images), seed=str(seed), max_preds=str(max_preds), outliers=repr(outliers),
        note="bench/reconstruct/make_alignment_case.py: the golden's box room, a panning sweep of cameras at "
             "512x384, the complete pair graph, 1 % depth noise, ~1,500 matches per overlapping pair with "
             f"{round(100 * outliers)} % outliers; see its docstring",
    )
    return m


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=int, default=20)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--matches", type=int, default=1500, help="about this many matches per overlapping pair")
    ap.add_argument("--max-preds", type=int, default=19,
                    help="own-frame predictions per image at most (default 19 = N-1 at 20 images)")
    ap.add_argument("--outliers", type=float, default=OUTLIERS,
                    help="fraction of each overlapping pair's matches replaced by random ones (default 0.1)")
    args = ap.parse_args(argv)
    if args.images < 2:
        ap.error("--images must be at least 2")
    if not 0 <= args.outliers <= 1:
        ap.error("--outliers must be in [0, 1]")
    start = time.time()
    tensors, summary = make_case(args.images, args.seed, args.matches, args.max_preds, outliers=args.outliers)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    st.save_file(tensors, args.out, metadata=metadata(args.images, args.seed, args.max_preds, args.outliers))
    size = os.path.getsize(args.out)
    print(f"wrote {args.out}: {size / 1e9:.2f} GB in {time.time() - start:.1f} s; " +
          ", ".join(f"{k} {v}" for k, v in summary.items()), flush=True)


if __name__ == "__main__":
    main()
