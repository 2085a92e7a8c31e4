"""Reference for MASt3R's fast reciprocal nearest-neighbour matching (mast3r/fast_nn.py), from the spec.

Written from shared/notes/mast3r-spec.md §6.1 and §7 (no naver code). It is the oracle for the GPU
matcher in gpu/models/match/: it makes the golden data in tests/golden/match/ and is checked by
test_fast_nn_ref.py. numpy only; similarities are computed in float64 from the values as stored.

The algorithm (dist='dot', pixel_tol=0):
  seeds      pixels (x, y) with x in S//2, S//2+S, ... < W1 and y likewise, as y*W1+x, unique and sorted
  loop       while any seed is 'notyet' (at most max_iter times):
               a. for notyet seeds: xy2 <- NN_B(A[xy1]); clear notyet where xy2 == old_xy2
               b. for notyet seeds: xy1 <- NN_A(B[xy2]); clear notyet where xy1 == old_xy1
               niter += 1; stop at max_iter; else old_xy2 <- xy2, old_xy1 <- xy1
  keep       the seeds that are no longer notyet (each is a mutual nearest neighbour)
  merge      unique (xy1, xy2) pairs sorted by xy1 then xy2
  border     (the demo's filter) keep border <= x < W-border and border <= y < H-border in both images
NN_X(q) = argmax over every pixel of X of <q, x>; ties go to the lowest pixel index (torch.max).

Usage: /usr/bin/python3 tests/reference/fast_nn_ref.py --make-golden [OUT_DIR]
"""

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_GOLDEN = os.path.normpath(os.path.join(HERE, "..", "golden", "match"))


def seed_grid(h, w, subsample):
    """Seed pixel indices y*w + x on the grid starting at subsample//2 with step subsample (int32)."""
    s = int(subsample)
    ys, xs = np.mgrid[s // 2 : h : s, s // 2 : w : s].reshape(2, -1)
    return np.unique(xs + w * ys).astype(np.int32)


def nn_dot(queries, db, block=2048):
    """For each query row, the index of the database row with the largest dot product.

    Ties go to the lowest index (np.argmax returns the first maximum, as torch.max does).
    """
    queries = np.asarray(queries, dtype=np.float64)
    db = np.asarray(db, dtype=np.float64)
    out = np.empty(len(queries), dtype=np.int64)
    for i in range(0, len(queries), block):
        out[i : i + block] = np.argmax(queries[i : i + block] @ db.T, axis=1)
    return out


def merge_corres(idx1, idx2):
    """Unique (idx1, idx2) pairs sorted by idx1 then idx2 (the official packs idx1 in the high word)."""
    idx1 = np.asarray(idx1, dtype=np.int64)
    idx2 = np.asarray(idx2, dtype=np.int64)
    keys = np.unique((idx1 << 32) | idx2)
    return (keys >> 32).astype(np.int32), (keys & 0xFFFFFFFF).astype(np.int32)


def to_xy(idx, w):
    """Pixel indices -> (N, 2) int32 (x, y)."""
    idx = np.asarray(idx, dtype=np.int64)
    return np.stack([idx % w, idx // w], axis=1).astype(np.int32)


def border_mask(xy, h, w, border):
    x, y = xy[:, 0], xy[:, 1]
    return (x >= border) & (x < w - border) & (y >= border) & (y < h - border)


def fast_reciprocal_nns(desc1, desc2, subsample=8, max_iter=10, trace=None):
    """The official loop on (H1, W1, D) and (H2, W2, D) maps. Returns merged (idx1, idx2) int32.

    trace: optional dict, filled with
      'active'  int64 [2*max_iter + 1]: notyet seeds entering step a, b, a, b, ... and left at the end
                (zeros after the loop stopped early), the counts the GPU matcher reports;
      'searches' int64 [2*max_iter]: distinct query pixels of each step (seeds whose walks meet share
                one search: what the GPU matcher's de-duplication searches);
      'queried1', 'queried2': the A and B pixels whose NN was computed (for tie-margin checks).
    """
    h1, w1, d1 = desc1.shape
    h2, w2, d2 = desc2.shape
    if d1 != d2:
        raise ValueError(f"descriptor sizes differ: {d1} vs {d2}")
    pts1 = np.asarray(desc1, dtype=np.float64).reshape(-1, d1)
    pts2 = np.asarray(desc2, dtype=np.float64).reshape(-1, d2)

    xy1 = seed_grid(h1, w1, subsample).astype(np.int64)
    xy2 = np.full_like(xy1, -1)
    old_xy1 = xy1.copy()
    old_xy2 = xy2.copy()
    notyet = np.ones(len(xy1), dtype=bool)
    active = np.zeros(2 * max_iter + 1, dtype=np.int64)
    searches = np.zeros(2 * max_iter, dtype=np.int64)
    queried1, queried2 = set(), set()

    niter = 0
    while notyet.any():
        active[2 * niter] = notyet.sum()
        searches[2 * niter] = len(np.unique(xy1[notyet]))
        queried1.update(xy1[notyet].tolist())
        xy2[notyet] = nn_dot(pts1[xy1[notyet]], pts2)
        notyet &= old_xy2 != xy2  # converged: the B pixel did not move

        active[2 * niter + 1] = notyet.sum()
        searches[2 * niter + 1] = len(np.unique(xy2[notyet]))
        queried2.update(xy2[notyet].tolist())
        xy1[notyet] = nn_dot(pts2[xy2[notyet]], pts1)
        notyet &= old_xy1 != xy1  # converged: the cycle came back to the same A pixel

        niter += 1
        if niter >= max_iter:
            break
        old_xy2[:] = xy2
        old_xy1[:] = xy1
    active[2 * max_iter] = notyet.sum()

    converged = ~notyet
    idx1, idx2 = merge_corres(xy1[converged], xy2[converged])
    if trace is not None:
        trace["active"] = active
        trace["searches"] = searches
        trace["queried1"] = np.array(sorted(queried1), dtype=np.int64)
        trace["queried2"] = np.array(sorted(queried2), dtype=np.int64)
    return idx1, idx2


def match_fast(desc1, desc2, subsample=8, max_iter=10, border=3, trace=None):
    """fast_reciprocal_nns + the border filter: (idx1, idx2, xy1, xy2), sorted by idx1 then idx2."""
    h1, w1, _ = desc1.shape
    h2, w2, _ = desc2.shape
    idx1, idx2 = fast_reciprocal_nns(desc1, desc2, subsample, max_iter, trace)
    xy1, xy2 = to_xy(idx1, w1), to_xy(idx2, w2)
    keep = border_mask(xy1, h1, w1, border) & border_mask(xy2, h2, w2, border)
    return idx1[keep], idx2[keep], xy1[keep], xy2[keep]


def nn_margin(queries, db):
    """Smallest gap between the best and second-best similarity over the queries (float64)."""
    if len(queries) == 0 or len(db) < 2:
        return np.inf
    sim = np.asarray(queries, np.float64) @ np.asarray(db, np.float64).T
    top2 = np.partition(sim, -2, axis=1)[:, -2:]
    return float((top2[:, 1] - top2[:, 0]).min())


# ----------------------------------------------------------------------------------------------
# Golden data


def random_unit(rng, shape):
    v = rng.standard_normal(shape).astype(np.float64)
    v /= np.linalg.norm(v, axis=-1, keepdims=True)
    return v.astype(np.float32)


def smooth_unit(rng, h, w, d, passes=2):
    """Spatially correlated unit descriptors (box-blurred noise), closer to a real model's maps."""
    v = rng.standard_normal((h, w, d))
    for _ in range(passes):
        v = (v + np.roll(v, 1, 0) + np.roll(v, -1, 0) + np.roll(v, 1, 1) + np.roll(v, -1, 1)) / 5
    v /= np.linalg.norm(v, axis=-1, keepdims=True)
    return v.astype(np.float32)


def make_case_shifted(rng):
    # B sees A shifted by (dx, dy) = (3, 2), with strong noise: seeds converge over several
    # iterations, some in step a, some in step b, and a few reach the same pair.
    big = smooth_unit(rng, 36, 48, 24, passes=1)
    a = big[:32, :44]
    b = big[2:32, 3:43] + 2.0 * random_unit(rng, (30, 40, 24))
    b = (b / np.linalg.norm(b, axis=-1, keepdims=True)).astype(np.float32)
    return a, b


def make_case_random(rng):
    return random_unit(rng, (29, 35, 16)), random_unit(rng, (31, 27, 16))


def make_case_odd_dim(rng):
    return smooth_unit(rng, 17, 23, 13, passes=1), smooth_unit(rng, 19, 21, 13, passes=1)


# name -> (generator, subsample, max_iter, border)
CASES = {
    "shifted": (make_case_shifted, 8, 10, 3),  # the official defaults
    "shifted_s4": (make_case_shifted, 4, 10, 3),
    "random": (make_case_random, 4, 10, 2),
    "odd_dim": (make_case_odd_dim, 3, 2, 0),  # D=13, odd S, max_iter stops unconverged seeds
}
MIN_MARGIN = 2e-5  # fp32 dot products of unit vectors are good to ~1e-6; keep ties far away


def build_case(name, seed0=0):
    """Draw the case's maps (retrying seeds until no queried NN is within MIN_MARGIN of a tie)."""
    gen, subsample, max_iter, border = CASES[name]
    for seed in range(seed0, seed0 + 100):
        rng = np.random.default_rng([hash_name(name), seed])
        a, b = gen(rng)
        trace = {}
        idx1, idx2, xy1, xy2 = match_fast(a, b, subsample, max_iter, border, trace)
        pa = a.reshape(-1, a.shape[-1])
        pb = b.reshape(-1, b.shape[-1])
        margin = min(nn_margin(pa[trace["queried1"]], pb), nn_margin(pb[trace["queried2"]], pa))
        if margin >= MIN_MARGIN:
            return dict(a=a, b=b, idx1=idx1, idx2=idx2, xy1=xy1, xy2=xy2, active=trace["active"], seed=seed,
                        margin=margin, subsample=subsample, max_iter=max_iter, border=border)
    raise RuntimeError(f"case {name}: no seed without near-ties")


def hash_name(name):
    return sum((i + 1) * ord(c) for i, c in enumerate(name))


def save_case(case, path, name):
    from safetensors_io import save_file  # noqa: E402 (sibling module)

    tensors = {
        "desc_a": case["a"],
        "desc_b": case["b"],
        "idx_a": case["idx1"].astype(np.int32),
        "idx_b": case["idx2"].astype(np.int32),
        "xy_a": case["xy1"].astype(np.int32),
        "xy_b": case["xy2"].astype(np.int32),
        "active": case["active"].astype(np.int32),
    }
    metadata = {
        "match.case": name,
        "match.subsample": str(case["subsample"]),
        "match.max_iter": str(case["max_iter"]),
        "match.border": str(case["border"]),
        "match.seed": str(case["seed"]),
        "match.min_margin": f"{case['margin']:.3g}",
    }
    save_file(tensors, path, metadata)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--make-golden", nargs="?", const=DEFAULT_GOLDEN, metavar="OUT_DIR",
                    help=f"write <case>.safetensors for every case (default {DEFAULT_GOLDEN})")
    args = ap.parse_args(argv)
    if not args.make_golden:
        ap.print_help()
        return 2
    sys.path.insert(0, HERE)
    os.makedirs(args.make_golden, exist_ok=True)
    for name in CASES:
        case = build_case(name)
        save_case(case, os.path.join(args.make_golden, f"{name}.safetensors"), name)
        print(f"{name}: A {case['a'].shape} B {case['b'].shape} S={case['subsample']} max_iter={case['max_iter']} "
              f"border={case['border']}: {len(case['idx1'])} matches, active per step {case['active'].tolist()}, "
              f"seed {case['seed']}, min margin {case['margin']:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
