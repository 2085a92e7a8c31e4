#!/usr/bin/python3
"""Evaluates the demo model on held-out procedural pairs (tools/scenes/splits.py's test split).

Two sources of predictions, scored by the same code (metrics.py):

  evaluate.py reference --model M.safetensors [--pairs 200] [--device cuda]
      renders the test pairs and runs the PyTorch reference (tests/reference/mast3r_ref.py) on them;
      matches by the official fast reciprocal NN (tests/reference/fast_nn_ref.py, subsample 8)
  evaluate.py outputs --gt GT.npz DIR [--gt GT2.npz DIR2 ...]
      scores what recon wrote: `reconctl infer A B --out DIR` (pts3d_1.npy, pts3d_2.npy, conf_*.npy)
      and `reconctl match A B --out DIR/matches` (matches_1.npy, matches_2.npy); GT.npz from
      `make_eval_set.py` or samples/sample_gt.npz
  evaluate.py render-set --pairs N --out DIR [--size 256]
      writes N test pairs as PNGs with their ground truth, for the recond path above

Metrics per pair: depth AbsRel and delta<1.25 of view 1 (median scale alignment), rotation and
translation-direction error of camera 2 recovered from view 2's pointmap (PnP, metrics.py), and match
precision at 3 px. Prints means and medians; --json FILE writes them with the per-pair rows.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.dirname(HERE)
ROOT = os.path.dirname(TOOLS)
sys.path.insert(0, TOOLS)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))

import ground_truth  # noqa: E402
import metrics  # noqa: E402
from scenes import splits  # noqa: E402

MIN_OVERLAP, MAX_OVERLAP = 0.3, 0.9


def score_pair(gt, pts1, pts2, conf2, xy1, xy2):
    d = metrics.depth_metrics(pts1[..., 2], gt["depth1"], gt["valid1"].astype(bool))
    pose = metrics.relative_pose(pts2, gt["K2"], conf2)
    rot, trans = metrics.pose_errors(pose, gt["cam2_to_cam1"])
    prec = metrics.match_precision(xy1, xy2, gt["corr_xy"], gt["covisible"].astype(bool))
    return {"abs_rel": d["abs_rel"], "delta1": d["delta1"], "rot_deg": rot, "trans_deg": trans,
            "match_precision": prec, "matches": int(len(xy1))}


def summarise(rows):
    out = {"pairs": len(rows)}
    for k in ("abs_rel", "delta1", "rot_deg", "trans_deg", "match_precision", "matches"):
        v = np.array([r[k] for r in rows], dtype=np.float64)
        out[f"{k}_mean"], out[f"{k}_median"] = float(np.nanmean(v)), float(np.nanmedian(v))
    return out


def print_summary(s, title):
    if s["pairs"] == 1:
        print(f"{title}:")
        print(f"  depth AbsRel (view 1, median-scaled)  {s['abs_rel_mean']:.4f}   delta<1.25 {s['delta1_mean']:.3f}")
        print(f"  camera 2 from the pointmaps (PnP)      rotation error {s['rot_deg_mean']:.2f} deg, "
              f"translation direction {s['trans_deg_mean']:.1f} deg")
        print(f"  matches within 3 px of the truth       {s['match_precision_mean'] * 100:.1f} % "
              f"of {s['matches_mean']:.0f}")
        return
    print(f"{title}: {s['pairs']} pairs")
    print(f"  depth AbsRel        mean {s['abs_rel_mean']:.4f}  median {s['abs_rel_median']:.4f}")
    print(f"  depth delta<1.25    mean {s['delta1_mean']:.4f}  median {s['delta1_median']:.4f}")
    print(f"  rotation error      mean {s['rot_deg_mean']:.2f} deg  median {s['rot_deg_median']:.2f} deg")
    print(f"  translation dir.    mean {s['trans_deg_mean']:.2f} deg  median {s['trans_deg_median']:.2f} deg")
    print(f"  match precision 3px mean {s['match_precision_mean']:.4f}  median {s['match_precision_median']:.4f}"
          f"  ({s['matches_mean']:.0f} matches per pair)")


def test_pairs(n, width, height, device):
    """The first n test seeds whose pair overlap lies in [MIN_OVERLAP, MAX_OVERLAP]."""
    seeds, first = [], splits.TEST_FIRST
    while len(seeds) < n:
        batch = list(range(first, first + max(32, n)))
        first += len(batch)
        for seed, a, b, gt in ground_truth.render_pairs(batch, width, height, device=device):
            if MIN_OVERLAP <= gt["overlap"] <= MAX_OVERLAP and len(seeds) < n:
                seeds.append((seed, a, b, gt))
        if first - splits.TEST_FIRST >= splits.TEST_COUNT:
            break
    return seeds


def cmd_reference(args):
    import torch

    import fast_nn_ref
    sys.path.insert(0, os.path.join(TOOLS, "train"))
    import data
    import model as demo_model
    if args.device == "cuda":
        demo_model.train_mode()  # fused attention: the same function, faster
    net, meta = demo_model.load_safetensors(args.model, device=args.device)
    width = args.width or int(meta.get("recon.train_width", 256))
    height = args.height or int(meta.get("recon.train_height", 192))
    t0 = time.time()
    pairs = test_pairs(args.pairs, width, height, args.device)
    print(f"rendered {len(pairs)} test pairs at {width}x{height} in {time.time() - t0:.1f} s")
    rows = []
    for i in range(0, len(pairs), args.batch):
        part = pairs[i:i + args.batch]
        u8a = torch.as_tensor(np.stack([p[1] for p in part]))
        u8b = torch.as_tensor(np.stack([p[2] for p in part]))
        with torch.no_grad():
            out = net(data.normalise(u8a).to(args.device), data.normalise(u8b).to(args.device))
        out = {k: v.float().cpu().numpy() for k, v in out.items()}
        for j, (seed, _, _, gt) in enumerate(part):
            _, _, xy1, xy2 = fast_nn_ref.match_fast(out["desc_1"][j], out["desc_2"][j], subsample=8)
            row = score_pair(gt, out["pts3d_1"][j], out["pts3d_2"][j], out["conf_2"][j], xy1, xy2)
            row["seed"] = seed
            rows.append(row)
    s = summarise(rows)
    print_summary(s, f"PyTorch reference, {os.path.basename(args.model)}, {args.device}")
    return s, rows


def cmd_outputs(args):
    if len(args.gt) != len(args.dirs):
        raise SystemExit("give one --gt per output directory")
    rows = []
    for gt_path, d in zip(args.gt, args.dirs):
        gt = ground_truth.load(gt_path)
        pts1, pts2 = np.load(os.path.join(d, "pts3d_1.npy")), np.load(os.path.join(d, "pts3d_2.npy"))
        conf2 = np.load(os.path.join(d, "conf_2.npy"))
        mdir = os.path.join(d, "matches")
        xy1 = np.load(os.path.join(mdir, "matches_1.npy")).reshape(-1, 2)
        xy2 = np.load(os.path.join(mdir, "matches_2.npy")).reshape(-1, 2)
        if pts1.shape[:2] != gt["depth1"].shape:
            raise SystemExit(f"{d}: outputs are {pts1.shape[1]}x{pts1.shape[0]}, the ground truth "
                             f"{gt['depth1'].shape[1]}x{gt['depth1'].shape[0]}: run recon at the same size")
        row = score_pair(gt, pts1, pts2, conf2, xy1, xy2)
        row["dir"] = d
        rows.append(row)
    s = summarise(rows)
    print_summary(s, "recon outputs")
    return s, rows


def cmd_render_set(args):
    from PIL import Image
    os.makedirs(args.out, exist_ok=True)
    width, height = args.size, args.size * 3 // 4
    for seed, a, b, gt in test_pairs(args.pairs, width, height, "cpu"):
        Image.fromarray(a).save(os.path.join(args.out, f"{seed}_a.png"))
        Image.fromarray(b).save(os.path.join(args.out, f"{seed}_b.png"))
        np.savez_compressed(os.path.join(args.out, f"{seed}_gt.npz"), **gt)
        print(f"{seed}: overlap {float(gt['overlap']):.2f}")
    return None, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("reference")
    r.add_argument("--model", required=True)
    r.add_argument("--pairs", type=int, default=200)
    r.add_argument("--batch", type=int, default=16)
    r.add_argument("--width", type=int, default=0)
    r.add_argument("--height", type=int, default=0)
    r.add_argument("--device", default="cpu")
    o = sub.add_parser("outputs")
    o.add_argument("--gt", action="append", default=[])
    o.add_argument("dirs", nargs="+")
    s = sub.add_parser("render-set")
    s.add_argument("--pairs", type=int, default=4)
    s.add_argument("--size", type=int, default=256)
    s.add_argument("--out", required=True)
    for p in (r, o):
        p.add_argument("--json", help="write the summary and per-pair rows here")
    args = ap.parse_args()
    summary, rows = {"reference": cmd_reference, "outputs": cmd_outputs, "render-set": cmd_render_set}[args.cmd](args)
    if getattr(args, "json", None) and summary is not None:
        with open(args.json, "w") as f:
            json.dump({"summary": summary, "pairs": rows}, f, indent=1)


if __name__ == "__main__":
    main()
