#!/usr/bin/env python3
"""Times the PyTorch reference of the sparse global alignment (tests/reference/sparse_ga_ref.py) on a case
of make_alignment_case.py: the baseline of recon_bench_alignment, stage by stage.

Stages, as recon_bench_alignment times them: canonical views (every own-frame prediction, already on the
device, into canonical_view + anchor depths), align (kinematic tree + the two Adam stages), dense points
(get_dense_pts3d + clean_pointcloud). Defaults: float32 on CUDA, the official's dtype and device; the
reference itself is float64 on the CPU, so this script rebinds its dtype constant and tensor helper and
sets torch's default device (torch >= 2.0 for CUDA). One warm-up run (--warmup-niter iterations a stage)
first, then the median of --repeat timed runs, with torch.cuda.synchronize() around each stage.

The reference is a proxy for the official code: same algorithm and operations, but it evaluates each
pair's points separately (the official gathers them per image), so on a GPU, where these small ops are
launch-bound, it can be slower than the official.

Prints one JSON line (the fields of recon_bench_alignment): impl, device, dtype, images, pairs, matches,
predictions, threads, niter1, niter2, canonical_s, align_s, dense_s, ms_per_iteration, coarse_loss,
fine_loss (final values), reprojection_px (conf-weighted mean pixel error, both directions, final state).

  python3 bench/reconstruct/alignment_torch.py --case align20.safetensors [--device cpu --dtype float64]
"""

import argparse
import json
import os
import statistics
import sys
import time
import warnings

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
import safetensors_io as st  # noqa: E402
import sparse_ga_ref as ref  # noqa: E402


def configure(device, dtype):
    """Point the reference's float64 constant and its tensor helper at `dtype` on `device`."""
    ref.F64 = dtype

    def _t(x, dtype=None):
        dtype = ref.F64 if dtype is None else dtype
        if isinstance(x, torch.Tensor):
            return x.detach().to(device=device, dtype=dtype)
        return torch.as_tensor(np.asarray(x), dtype=dtype, device=device)

    ref._t = _t
    if device.type != "cpu":
        if not hasattr(torch, "set_default_device"):
            sys.exit("alignment_torch.py: --device cuda needs torch >= 2.0 (torch.set_default_device)")
        torch.set_default_device(device)  # the reference's torch.tensor / eye / as_tensor calls


def load_case(path, device):
    t, meta = st.load_file(path)
    hw = t["image_hw"].astype(np.int64)
    own = []
    for i in range(len(hw)):
        preds, k = [], 0
        while f"own.{i}.{k}.pts3d" in t:
            # on the device before the clock starts, as the network's outputs would be
            preds.append((torch.as_tensor(t[f"own.{i}.{k}.pts3d"], device=device),
                          torch.as_tensor(t[f"own.{i}.{k}.conf"], device=device)))
            k += 1
        own.append(preds)
    pairs = [tuple(int(v) for v in p) for p in t["pairs"]]
    matches = [(t[f"match.{p}.xy_a"], t[f"match.{p}.xy_b"], torch.as_tensor(t[f"match.{p}.conf"], device=device))
               for p in range(len(pairs))]
    return dict(image_hw=hw, own=own, pairs=pairs, matches=matches, subsample=int(meta.get("subsample", "8")))


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def reprojection_px(case, canon2s, focal0, final, subsample):
    """Conf-weighted mean of |x_a - pi_a(P_b)| and |x_b - pi_b(P_a)| over every match (align_scene's
    fine_reprojection_px), at the reference's final state."""
    prs = ref._prepare_pairs(case["pairs"], case["matches"], canon2s, subsample, 0.0)
    K, cam2w, depthmaps = final["K"], final["cam2w"], final["depthmaps"]
    bf = torch.tensor([float(f) for f in focal0], dtype=ref.F64)
    proj = K @ ref.rigid_inverse(cam2w)[:, :3]
    err, weight = 0.0, 0.0
    with torch.no_grad():
        for p in prs:
            xa = ref.make_pts3d(p.pix_a, p.idx_a, p.off_a, p.a, K, cam2w, depthmaps, bf)
            xb = ref.make_pts3d(p.pix_b, p.idx_b, p.off_b, p.b, K, cam2w, depthmaps, bf)
            err += float(p.conf @ (p.pix_a - ref.reproj2d(proj[p.a], xb)).norm(dim=-1))
            err += float(p.conf @ (p.pix_b - ref.reproj2d(proj[p.b], xa)).norm(dim=-1))
            weight += 2 * float(p.conf.sum())
    return err / weight


def run_once(case, niter1, niter2, device, want_error=False):
    s = case["subsample"]
    hw = case["image_hw"]
    times = {}
    sync(device)
    start = time.perf_counter()
    canon = [ref.canonical_view(p, s) for p in case["own"]]
    core = [ref.anchor_depths(c[0], s) for c in canon]
    sync(device)
    times["canonical_s"] = time.perf_counter() - start

    canon2s, cconfs, focal0 = [c[1] for c in canon], [c[2] for c in canon], [c[3] for c in canon]
    start = time.perf_counter()
    n = len(hw)
    n_matches = np.zeros((n, n))
    for (a, b), (_, _, conf) in zip(case["pairs"], case["matches"]):
        n_matches[a, b] = n_matches[b, a] = len(conf)
    mst = ref.kinematic_tree(n_matches, hw, s, "hclust-ward")
    res = ref.sparse_scene_optimizer(hw, canon2s, core, focal0, case["pairs"], case["matches"], mst, subsample=s,
                                     niter1=niter1, niter2=niter2)
    sync(device)
    times["align_s"] = time.perf_counter() - start

    final = res["fine"] or res["coarse"]
    start = time.perf_counter()
    ref.dense_points(final["K"], final["cam2w"], final["depthmaps"], canon2s, cconfs, focal0, s)
    sync(device)
    times["dense_s"] = time.perf_counter() - start

    out = dict(times, coarse_loss=res["coarse"]["loss"][-1], fine_loss=res["fine"]["loss"][-1] if res["fine"] else None)
    if want_error:
        out["reprojection_px"] = reprojection_px(case, canon2s, focal0, final, s)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    ap.add_argument("--niter1", type=int, default=300)
    ap.add_argument("--niter2", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=1, help="timed runs; the median is reported")
    ap.add_argument("--warmup-niter", type=int, default=2, help="iterations a stage in the warm-up run (0: none)")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    args = ap.parse_args(argv)

    # the reference's float(loss) after backward(): harmless, but torch 2.x says so on every run
    warnings.filterwarnings("ignore", message="Converting a tensor with requires_grad=True to a scalar")
    device = torch.device(args.device)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    configure(device, getattr(torch, args.dtype))
    case = load_case(args.case, device)
    if args.warmup_niter > 0:
        run_once(case, args.warmup_niter, args.warmup_niter, device)
    runs = [run_once(case, args.niter1, args.niter2, device, want_error=(r == 0)) for r in range(args.repeat)]

    first = runs[0]
    row = dict(
        impl="torch", device=torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu", dtype=args.dtype,
        images=len(case["image_hw"]), pairs=len(case["pairs"]), matches=int(sum(len(m[2]) for m in case["matches"])),
        predictions=sum(len(p) for p in case["own"]), threads=torch.get_num_threads(), niter1=args.niter1,
        niter2=args.niter2, repeat=args.repeat,
    )
    for k in ("canonical_s", "align_s", "dense_s"):
        row[k] = statistics.median(r[k] for r in runs)
    row["ms_per_iteration"] = 1e3 * row["align_s"] / max(1, args.niter1 + args.niter2)
    row.update(coarse_loss=first["coarse_loss"], fine_loss=first["fine_loss"], reprojection_px=first["reprojection_px"])
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
