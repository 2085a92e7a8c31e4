"""Reference of MASt3R-SfM's sparse global alignment (mast3r/cloud_opt/sparse_ga.py), from the spec.

Written from docs/SPARSE_GA_REFERENCE.md (§3-§8), which quotes naver/mast3r at f5209afc and dust3r at
3cc8c88c, and checked against those sources where the spec left a doubt. Every line is written here; no
naver or scipy code is imported. It is the oracle for the C++ port: it makes tests/golden/sparse_ga/ and
is checked by test_sparse_ga.py. torch (autograd, Adam) and numpy only; float64 throughout.

Pipeline (the official order):
  canonical_view      per image: weighted mean of its own-frame pointmaps (w = C - 0.999), the 'avg-angle'
                      relative depth map canon2 (== 1 at the anchors), cconf = Σw²/Σw, and the Weiszfeld
                      focal with pp = (W/2, H/2)                                      (SGA:855-893, PP:12-60)
  kinematic_tree      'hclust-ward': pws = clip(n_matches / (3·min(n_patches)), max=1), Ward linkage
                      (scipy's nn_chain + Lance-Williams, stable sort by distance, union-find relabel), the
                      representative-merge rule, the spanning tree of that tree, the BFS-rank root, BFS edges
                      with scipy's undirected neighbour order                         (SGA:150-180, 1022-1047)
  sparse_scene_optimizer
                      kinematic chain of relative poses on focal-plane points, 'add' depth mode, coarse stage
                      (loss_3d, ρ_1.5, lr1) then fine stage (loss_2d, ρ_0.5, lr2), fresh Adam(betas=(0.9,0.9))
                      per stage, cosine lr, quaternion renormalisation after each step; the returned state is
                      the one at the start of the last iteration                      (SGA:196-466, 513-539)
  dense_points        every pixel from its block's anchor depth and canon2, then clean_pointcloud
                                                                                      (SGA:71-94, BO:370-405)

Departures from the official code (the C++ port makes the same ones):
  * each unordered pair's matches are given once (xy_a in image a, xy_b in image b, conf). loss_3d is the
    same confidence-weighted mean; loss_2d counts both reprojection directions of every match, so both
    losses equal the official values computed on the symmetrised pair list.
  * no DUSt3R fallback loss: a pair whose max match conf is <= matching_conf_thr is dropped (the demo's
    threshold 0 keeps every pair with a match).
  * shared_intrinsics=True uses ONE focal and ONE pp parameter (listed once in Adam); the official lists the
    same nn.Parameter N times, which makes Adam's update implementation-dependent (spec §10.10).
  * float64 everywhere (the official runs float32 on the GPU, and computes pws in float32).

Conventions: pixels (x, y) are integer pixel centres; arrays are indexed [y, x]; anchors sit at
(s//2 + s·X, s//2 + s·Y); anchor index = (y//s)·(W/s) + x//s; camera frames are OpenCV (x right, y down,
z forward); depths are camera z; cam2w is camera-to-world; quaternions are XYZW (roma).

Details a port must copy to follow the trajectory (all are torch semantics the official relies on):
  * global_scaling = 1/min(sizes): torch's min() backward splits the gradient EVENLY among tied minima. At
    the first coarse iteration every size is 1, so each log_size gets 1/N of that term.
  * Adam (torch, single-tensor): m = 0.9 m + 0.1 g; v = 0.9 v + 0.1 g²; step = lr / (1 − 0.9^t);
    p −= step · m / (sqrt(v) / sqrt(1 − 0.9^t) + 1e-8). Parameters without a gradient (frozen) are skipped.
    lr = lr_base (1 + cos(π it/niter)) / 2, the same for every parameter.
  * The loss is invariant to the root's absolute pose (a global rigid motion), so the root's quat/trans
    gradients are rounding noise which Adam turns into steps of up to lr·|g|/1e-8: absolute poses carry a
    tiny implementation-dependent drift (~1e-8 here) that relative poses do not.
  * clean_pointcloud rounds with torch.round (half to even) and uses torch.linalg.inv(cam2w).
"""

import math

import numpy as np
import torch

F64 = torch.float64
F32_EPS = float(np.finfo(np.float32).eps)  # the official clip of the anchor depth (float32 run)


# ------------------------------------------------------------------------------------------------------
# small helpers


def _t(x, dtype=F64):
    if isinstance(x, torch.Tensor):
        return x.detach().to(dtype)
    return torch.as_tensor(np.asarray(x), dtype=dtype)


def gamma_loss(gamma):
    """ρ_γ(r) = (r + o)^γ − o^γ with o = (1/γ)^(1/(γ−1)), applied to a distance r (LOSS:19-28)."""
    offset = (1 / gamma) ** (1 / (gamma - 1))
    offset_pow = offset**gamma

    def rho(r):
        return (r + offset) ** gamma - offset_pow

    return rho


def cosine_schedule(alpha, lr_base, lr_end=0.0):
    return lr_end + (lr_base - lr_end) * (1 + math.cos(alpha * math.pi)) / 2


def quat_to_rotmat(q):
    """(..., 4) unit quaternions XYZW (roma convention) -> (..., 3, 3)."""
    x, y, z, w = q.unbind(-1)
    xx, yy, zz, ww = x * x, y * y, z * z, w * w
    xy, xz, yz, xw, yw, zw = x * y, x * z, y * z, x * w, y * w, z * w
    r = torch.stack(
        [
            xx - yy - zz + ww, 2 * (xy - zw), 2 * (xz + yw),
            2 * (xy + zw), -xx + yy - zz + ww, 2 * (yz - xw),
            2 * (xz - yw), 2 * (yz + xw), -xx - yy + zz + ww,
        ],
        dim=-1,
    )
    return r.reshape(*q.shape[:-1], 3, 3)


def rigid_inverse(T):
    """(..., 4, 4) rigid transforms -> their inverses [Rᵀ | −Rᵀt]."""
    R = T[..., :3, :3]
    t = T[..., :3, 3:4]
    Rt = R.transpose(-1, -2)
    top = torch.cat((Rt, -Rt @ t), dim=-1)
    bottom = torch.zeros_like(T[..., 3:4, :])
    bottom[..., 3] = 1
    return torch.cat((top, bottom), dim=-2)


# ------------------------------------------------------------------------------------------------------
# §3 canonical views


def estimate_focal_weiszfeld(pts3d, pp=None, min_focal=0.5, max_focal=3.5, niter=10):
    """Focal of an (H, W, 3) camera-frame pointmap, dust3r's 'weiszfeld' mode (PP:12-60).

    pp defaults to (W/2, H/2). All H·W pixels, unweighted; (X/Z, Y/Z) NaN/±inf -> 0; L2 closed form, then
    `niter` re-weighted steps with w = 1/max(||u − f·v||, 1e-8); clipped to [min, max]·max(H,W)/(2 tan 30°).
    """
    pts3d = _t(pts3d)
    H, W, _ = pts3d.shape
    if pp is None:
        pp = (W / 2, H / 2)
    ys, xs = torch.meshgrid(torch.arange(H, dtype=F64), torch.arange(W, dtype=F64), indexing="ij")
    pixels = torch.stack((xs - pp[0], ys - pp[1]), dim=-1).reshape(-1, 2)
    pts = pts3d.reshape(-1, 3)
    xy_over_z = (pts[:, :2] / pts[:, 2:3]).nan_to_num(posinf=0, neginf=0)
    dot_xy_px = (xy_over_z * pixels).sum(dim=-1)
    dot_xy_xy = xy_over_z.square().sum(dim=-1)
    focal = dot_xy_px.mean() / dot_xy_xy.mean()
    for _ in range(niter):
        dis = (pixels - focal * xy_over_z).norm(dim=-1)
        w = dis.clip(min=1e-8).reciprocal()
        focal = (w * dot_xy_px).mean() / (w * dot_xy_xy).mean()
    focal_base = max(H, W) / (2 * math.tan(math.radians(60) / 2))
    return float(focal.clip(min=min_focal * focal_base, max=max_focal * focal_base))


def _blocks(x, s):
    """(n, H, W, ...) -> (n, H/s, W/s, s(dy), s(dx), ...): the pixel_unshuffle blocks."""
    n, H, W = x.shape[:3]
    rest = x.shape[3:]
    x = x.reshape(n, H // s, s, W // s, s, *rest)
    return x.transpose(2, 3)


def _unblocks(x, s):
    """(H/s, W/s, s, s) -> (H, W): pixel_shuffle back."""
    hb, wb = x.shape[:2]
    return x.transpose(1, 2).reshape(hb * s, wb * s)


def canonical_view(preds, subsample=8):
    """One image's canonical view from its own-frame predictions (SGA:855-893, 739-742).

    preds: list of (pts3d (H,W,3), conf (H,W)) — every own-frame prediction of the image, in any order.
    Returns (canon (H,W,3), canon2 (H,W), cconf (H,W), focal float), float64:
      w = C − 0.999, canon = Σ w X / Σ w, cconf = Σ w² / Σ w,
      canon2 = 1 + dz / canon[anchor].z with dz = mean_p(r_p) · tan(Σ_p w_p atan((z_p − zc_p)/r_p) / Σ_p w_p)
      ('avg-angle'), and focal = the Weiszfeld estimate of canon with pp = (W/2, H/2).
    """
    s = int(subsample)
    X = torch.stack([_t(p) for p, _ in preds])  # (n, H, W, 3)
    C = torch.stack([_t(c) for _, c in preds])  # (n, H, W)
    n, H, W, _ = X.shape
    if H % s or W % s:
        raise ValueError(f"image {H}x{W} is not a multiple of subsample {s}")
    w = C - 0.999
    canon = (w[..., None] * X).sum(0) / w[..., None].sum(0)

    a = s // 2
    zb = _blocks(X[..., 2], s)  # (n, hb, wb, s, s)
    xyb = _blocks(X[..., :2], s)  # (n, hb, wb, s, s, 2)
    wb = _blocks(w, s)
    center_depth = zb[:, :, :, a, a].clip(min=F32_EPS)[..., None, None]
    radius = (xyb - xyb[:, :, :, a : a + 1, a : a + 1, :]).norm(dim=-1).clip(min=1e-8)
    angle = torch.atan((zb - center_depth) / radius)
    avg_angle = (wb * angle).sum(0) / wb.sum(0)
    dz = radius.mean(0) * torch.tan(avg_angle)  # (hb, wb, s, s)
    canon_anchor_z = canon[a::s, a::s, 2]  # (hb, wb)
    canon2 = _unblocks(1 + dz / canon_anchor_z[:, :, None, None], s)

    cconf = w.square().sum(0) / w.sum(0)
    focal = estimate_focal_weiszfeld(canon, (W / 2, H / 2), min_focal=0.5, max_focal=3.5)
    return canon, canon2, cconf, focal


def anchor_depths(canon, subsample=8):
    """Raw canonical z at the anchors, row-major (H/s·W/s,) (SGA:747)."""
    s = int(subsample)
    return _t(canon)[s // 2 :: s, s // 2 :: s, 2].reshape(-1)


def anchor_depth_offsets(canon2, xy, subsample=8):
    """Anchor index (block quantisation) and depth offset canon2[p]/canon2[anchor] of pixels xy (M,2) (x,y)."""
    s = int(subsample)
    canon2 = _t(canon2)
    H, W = canon2.shape
    xy = torch.as_tensor(np.asarray(xy), dtype=torch.long).reshape(-1, 2)
    px, py = xy[:, 0], xy[:, 1]
    wb = len(range(s // 2, W, s))
    core = canon2[s // 2 :: s, s // 2 :: s].reshape(-1)
    if not bool((core > 0).all()):
        raise ValueError("canon2 must be positive at the anchors")
    idx = (py // s) * wb + (px // s)
    off = canon2[py, px] / core[idx]
    return idx, off


# ------------------------------------------------------------------------------------------------------
# §4 kinematic tree


def ward_linkage(dist):
    """scipy.cluster.hierarchy.linkage(squareform(dist), 'ward') for a square (n,n) distance matrix.

    nn_chain: the chain starts at the lowest live cluster; a step looks for the nearest live cluster with a
    strict '<' scan in index order, starting from the previous chain element's distance (so ties prefer it);
    mutual neighbours x<y merge into slot y (slot x dies), and every live i != y gets the Lance-Williams
    update d(i, x∪y) = sqrt(((n_i+n_x) d_ix² + (n_i+n_y) d_iy² − n_i d_xy²) / (n_x+n_y+n_i)).
    The rows (x, y, d, size) are then stably sorted by d and relabelled with a union-find (new clusters
    n, n+1, ... in row order; each row holds (smaller root id, larger root id, d, size)).
    """
    D = np.array(dist, dtype=np.float64)
    n = D.shape[0]
    if D.shape != (n, n):
        raise ValueError("dist must be square")
    size = np.ones(n, dtype=np.int64)
    Z = np.empty((n - 1, 4), dtype=np.float64)
    chain = []
    for k in range(n - 1):
        if not chain:
            chain = [int(np.flatnonzero(size > 0)[0])]
        while True:
            x = chain[-1]
            if len(chain) > 1:
                y = chain[-2]
                current_min = D[x, y]
            else:
                y = -1
                current_min = math.inf
            for i in range(n):
                if size[i] == 0 or i == x:
                    continue
                if D[x, i] < current_min:
                    current_min = D[x, i]
                    y = i
            if len(chain) > 1 and y == chain[-2]:
                break
            chain.append(y)
        chain = chain[:-2]
        if x > y:
            x, y = y, x
        nx, ny = int(size[x]), int(size[y])
        Z[k] = (x, y, current_min, nx + ny)
        size[x] = 0
        size[y] = nx + ny
        for i in range(n):
            ni = int(size[i])
            if ni == 0 or i == y:
                continue
            t = 1.0 / (nx + ny + ni)
            d_xi, d_yi = D[i, x], D[i, y]
            d_xy = current_min
            new = math.sqrt((ni + nx) * t * d_xi * d_xi + (ni + ny) * t * d_yi * d_yi - ni * t * d_xy * d_xy)
            D[i, y] = D[y, i] = new
    Z = Z[np.argsort(Z[:, 2], kind="mergesort")]
    # union-find relabelling (scipy's LinkageUnionFind / label)
    parent = list(range(2 * n - 1))
    usize = [1] * (2 * n - 1)
    next_label = n

    def find(v):
        root = v
        while parent[root] != root:
            root = parent[root]
        while parent[v] != root:
            parent[v], v = root, parent[v]
        return root

    for i in range(n - 1):
        xr, yr = find(int(Z[i, 0])), find(int(Z[i, 1]))
        Z[i, 0], Z[i, 1] = (xr, yr) if xr < yr else (yr, xr)
        parent[xr] = parent[yr] = next_label
        usize[next_label] = usize[xr] + usize[yr]
        Z[i, 3] = usize[next_label]
        next_label += 1
    return Z


def hclust_tree(pws, Z):
    """The official representative-merge rule (SGA:168-176): (n,n) 0/1 tree adjacency with ones on the diagonal.

    For row i of Z, a and b are the representative images of its two clusters; edge (a,b) is added; the new
    cluster's representative is a if pws[a].sum() > pws[b].sum() else b (a tie goes to b), and only that
    row becomes max(pws[a], pws[b]).
    """
    pws = np.array(pws, dtype=np.float64)
    n = len(pws)
    tree = np.eye(n)
    rep = {i: i for i in range(n)}
    for i, (a, b) in enumerate(Z[:, :2].astype(int)):
        a = rep[int(a)]
        b = rep[int(b)]
        tree[a, b] = tree[b, a] = 1
        best = a if pws[a].sum() > pws[b].sum() else b
        rep[n + i] = best
        pws[best] = np.maximum(pws[a], pws[b])
    return tree


def min_spanning_tree_entries(weights):
    """scipy's minimum_spanning_tree on the dense matrix `weights` (zeros = no entry), as a list of kept
    (row, col) entries. Kruskal over the non-zero entries in CSR order (row-major), stably sorted by weight;
    an entry whose endpoints are already connected (self loops included) is dropped.

    scipy sorts with np.argsort's default kind, which is not guaranteed stable; the spec observed (scipy
    1.18) that the upper-triangle entry (a<b) of each tree edge is the one kept, which a stable sort gives
    (the hclust input has equal weights). A stable sort is assumed here for every size.
    """
    W = np.asarray(weights, dtype=np.float64)
    n = len(W)
    rows, cols = np.nonzero(W)
    data = W[rows, cols]
    order = np.argsort(data, kind="stable")
    comp = list(range(n))

    def head(v):
        while comp[v] != v:
            v = comp[v]
        return v

    kept = []
    for e in order:
        v1, v2 = head(int(rows[e])), head(int(cols[e]))
        if v1 != v2:
            comp[v2] = v1
            kept.append((int(rows[e]), int(cols[e])))
    return sorted(kept)


def bfs_undirected(entries, n, start):
    """scipy.sparse.csgraph.breadth_first_order(msp, start, directed=False) on the tree `entries`.

    For each dequeued node p: first the columns of row p of msp (ascending), then the columns of row p of
    msp.T (i.e. the rows r of entries (r, p), ascending). Returns (order, predecessors) (-9999 = none).
    """
    fwd = [[] for _ in range(n)]
    bwd = [[] for _ in range(n)]
    for r, c in entries:
        fwd[r].append(c)
        bwd[c].append(r)
    pred = [-9999] * n
    order = [start]
    i = 0
    while i < len(order):
        p = order[i]
        for c in sorted(fwd[p]) + sorted(bwd[p]):
            if c == start:
                continue
            if pred[c] == -9999:
                pred[c] = p
                order.append(c)
        i += 1
    return order, pred


def _bfs_ranks(entries, n, start):
    order, _ = bfs_undirected(entries, n, start)
    ranks = np.arange(len(order))
    out = np.zeros(n, dtype=np.int64)
    out[np.asarray(order)] = ranks
    return out


def root_and_edges(pws):
    """compute_min_spanning_tree (SGA:1029-1047): (root, [(parent, child), ...] in BFS order)."""
    pws = np.asarray(pws, dtype=np.float64)
    n = len(pws)
    entries = min_spanning_tree_entries(-pws)
    ranks1 = _bfs_ranks(entries, n, 0)
    ranks2 = _bfs_ranks(entries, n, int(ranks1.argmax()))
    ranks1 = _bfs_ranks(entries, n, int(ranks2.argmax()))
    root = int(np.minimum(ranks1, ranks2).argmax())
    order, pred = bfs_undirected(entries, n, root)
    edges = [(int(pred[i]), int(i)) for i in order[1:]]
    return root, edges


def pairwise_affinity(n_matches, image_hw, subsample=8):
    """pws = clip(n_matches / (3·min(n_patches_i, n_patches_j)), max=1) with diag 1 (SGA:155-159)."""
    s = int(subsample)
    hw = np.asarray(image_hw, dtype=np.int64).reshape(-1, 2)
    n_patches = (hw[:, 1] // s) * (hw[:, 0] // s)
    max_n = 3 * np.minimum(n_patches[:, None], n_patches[None, :])
    pws = np.minimum(np.asarray(n_matches, dtype=np.float64) / max_n, 1.0)
    np.fill_diagonal(pws, 1.0)
    return pws


def kinematic_tree(n_matches, image_sizes, subsample=8, mode="hclust-ward"):
    """(root, edges) of the kinematic chain (SGA:146-180).

    n_matches: (N,N) symmetric match counts (0 = pair not computed); image_sizes: (N,2) (H, W) per image.
    mode 'hclust-ward' (official default) or 'mst' (maximum spanning tree on the match counts).
    """
    n_matches = np.asarray(n_matches, dtype=np.float64)
    if mode == "mst":
        return root_and_edges(n_matches)
    if mode != "hclust-ward":
        raise ValueError(f"bad kinematic mode {mode!r}")
    pws = pairwise_affinity(n_matches, image_sizes, subsample)
    dist = np.where(pws != 0, 1 - pws, 2.0)
    Z = ward_linkage(dist)
    tree = hclust_tree(pws, Z)
    root, edges = root_and_edges(tree)
    if len(edges) != len(pws) - 1:
        raise ValueError("the kinematic tree does not span every image")
    return root, edges


# ------------------------------------------------------------------------------------------------------
# §4-§7 the optimiser


class _Pair:
    pass


def _prepare_pairs(pairs, matches, canon2s, subsample, matching_conf_thr):
    out = []
    for (a, b), (xy_a, xy_b, conf) in zip(pairs, matches):
        conf = _t(conf).reshape(-1)
        if len(conf) == 0:
            raise ValueError(f"pair {(a, b)} has no match (the official gating crashes on it)")
        if not float(conf.max()) > matching_conf_thr:
            continue  # would go to the DUSt3R fallback, which this reference does not implement
        p = _Pair()
        p.a, p.b = int(a), int(b)
        p.conf = conf
        p.pix_a = _t(np.asarray(xy_a).reshape(-1, 2))
        p.pix_b = _t(np.asarray(xy_b).reshape(-1, 2))
        p.idx_a, p.off_a = anchor_depth_offsets(canon2s[p.a], xy_a, subsample)
        p.idx_b, p.off_b = anchor_depth_offsets(canon2s[p.b], xy_b, subsample)
        out.append(p)
    return out


def rotmat_to_quat(R):
    """(3,3) rotation -> unit quaternion XYZW (w >= 0)."""
    R = np.asarray(R, dtype=np.float64)
    tr = np.trace(R)
    if tr > 0:
        S = math.sqrt(tr + 1.0) * 2
        w, x, y, z = 0.25 * S, (R[2, 1] - R[1, 2]) / S, (R[0, 2] - R[2, 0]) / S, (R[1, 0] - R[0, 1]) / S
    elif R[0, 0] > R[1, 1] and R[0, 0] > R[2, 2]:
        S = math.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2]) * 2
        w, x, y, z = (R[2, 1] - R[1, 2]) / S, 0.25 * S, (R[0, 1] + R[1, 0]) / S, (R[0, 2] + R[2, 0]) / S
    elif R[1, 1] > R[2, 2]:
        S = math.sqrt(1.0 + R[1, 1] - R[0, 0] - R[2, 2]) * 2
        w, x, y, z = (R[0, 2] - R[2, 0]) / S, (R[0, 1] + R[1, 0]) / S, 0.25 * S, (R[1, 2] + R[2, 1]) / S
    else:
        S = math.sqrt(1.0 + R[2, 2] - R[0, 0] - R[1, 1]) * 2
        w, x, y, z = (R[1, 0] - R[0, 1]) / S, (R[0, 2] + R[2, 0]) / S, (R[1, 2] + R[2, 1]) / S, 0.25 * S
    q = np.array([x, y, z, w])
    q = q if w >= 0 else -q
    return q / np.linalg.norm(q)


def _init_chain(cam2w, median_depths, root, edges, quats, trans):
    """Relative poses of the chain for cameras cam2w with sizes 1, focal f0 and centred pp (test hook)."""
    N = len(cam2w)
    T = cam2w.clone()
    for i in range(N):  # focal-plane point: centre + R (0, 0, med)
        T[i, :3, 3] = cam2w[i, :3, 3] + cam2w[i, :3, 2] * median_depths[i]
    rel = [None] * N
    rel[root] = T[root]
    for i, j in edges:
        rel[j] = rigid_inverse(T[i]) @ T[j]
    with torch.no_grad():
        for i in range(N):
            quats[i].data[:] = torch.as_tensor(rotmat_to_quat(rel[i][:3, :3].numpy()), dtype=F64)
            trans[i].data[:] = rel[i][:3, 3]


def make_pts3d(pix, idx, off, img, K, cam2w, depthmaps, base_focals, ret_depth=False):
    """World points of pixels `pix` (M,2) (x,y) of image `img` (SGA:513-539, proj3d SGA:507-510)."""
    f = K[img, 0, 0]
    cx, cy = K[img, 0, 2], K[img, 1, 2]
    off = 1 + (off - 1) * (base_focals[img] / f)
    z = depthmaps[img][idx] * off
    cam = torch.stack((z * ((pix[:, 0] - cx) / f), z * ((pix[:, 1] - cy) / f), z), dim=-1)
    world = cam @ cam2w[img, :3, :3].T + cam2w[img, :3, 3]
    if ret_depth:
        return world, z
    return world


def reproj2d(P, pts):
    """P (3,4) = K·w2cam[:3]; z clipped at 1e-3, uv clipped to [-1000, 2000] (SGA:1015-1019)."""
    res = pts @ P[:3, :3].T + P[:3, 3]
    uv = res[:, 0:2] / res[:, 2:3].clip(min=1e-3)
    return uv.clip(min=-1000, max=2000)


def sparse_scene_optimizer(
    image_hw,
    canon2s,
    core_depths,
    base_focals,
    pairs,
    matches,
    mst,
    subsample=8,
    lr1=0.07,
    niter1=300,
    lr2=0.01,
    niter2=300,
    gamma1=1.5,
    gamma2=0.5,
    opt_pp=True,
    opt_depth=True,
    shared_intrinsics=False,
    cconfs=None,
    matching_conf_thr=0.0,
    init_cam2w=None,
):
    """The two-stage optimisation (SGA:196-491).

    image_hw (N,2) (H,W); canon2s: N canon2 maps (H,W); core_depths: N raw anchor z (H/s·W/s,);
    base_focals: N Weiszfeld focals; pairs: P (a, b); matches: P (xy_a (M,2), xy_b (M,2), conf (M,));
    mst = (root, [(parent, child), ...]); cconfs (N maps) only for shared_intrinsics' init weights.
    init_cam2w (N,4,4): NOT OFFICIAL (the official asserts False on a cam2w prior), a test hook that starts
    the relative poses at these cameras (sizes 1, focals f0, pp centred) instead of the identity.

    Returns {'coarse': res, 'fine': res or None, 'median_depths': (N,)}, res = {'loss': [niter floats],
    'K' (N,3,3), 'cam2w' (N,4,4), 'depthmaps': N anchor z-depth tensors}, the state at the start of the
    last iteration (like the official).
    """
    hw = np.asarray(image_hw, dtype=np.int64).reshape(-1, 2)
    N = len(hw)
    imsizes = torch.tensor(hw[:, ::-1].copy(), dtype=F64)  # (W, H)
    base_focals = torch.tensor([float(f) for f in base_focals], dtype=F64)
    root, edges = int(mst[0]), [(int(i), int(j)) for i, j in mst[1]]
    if len(edges) != N - 1:
        raise ValueError("mst must have N-1 edges")
    prs = _prepare_pairs(pairs, matches, [_t(c) for c in canon2s], subsample, matching_conf_thr)

    # initialisation (SGA:208-261)
    vec0001 = torch.tensor((0, 0, 0, 1), dtype=F64)
    quats = [torch.nn.Parameter(vec0001.clone()) for _ in range(N)]
    trans = [torch.nn.Parameter(torch.zeros(3, dtype=F64)) for _ in range(N)]
    pps0 = torch.tensor([[w / 2, h / 2] for h, w in hw], dtype=F64) / imsizes  # (0.5, 0.5)
    core = [_t(d).reshape(-1).clone() for d in core_depths]
    median_depths = torch.stack([d.median() for d in core])  # lower median
    core = [torch.nn.Parameter(d / m) for d, m in zip(core, median_depths)]
    if shared_intrinsics:
        if cconfs is None:
            raise ValueError("shared_intrinsics needs cconfs")
        confs = torch.stack([_t(c).mean() for c in cconfs])
        weighting = confs / confs.sum()
        pp = torch.nn.Parameter(weighting @ pps0)
        log_focal = torch.nn.Parameter((weighting @ base_focals).view(1).log())
        pps = [pp] * N
        log_focals = [log_focal] * N
        intr_params = [pp, log_focal]
    else:
        pps = [torch.nn.Parameter(p.clone()) for p in pps0]
        log_focals = [torch.nn.Parameter(f.view(1).log()) for f in base_focals]
        intr_params = pps + log_focals
    log_sizes = [torch.nn.Parameter(torch.zeros(1, dtype=F64)) for _ in range(N)]
    if init_cam2w is not None:
        _init_chain(_t(init_cam2w), median_depths, root, edges, quats, trans)
    diags = imsizes.norm(dim=1)
    min_focals, max_focals = 0.25 * diags, 10 * diags
    ones = torch.ones((N, 1), dtype=F64)
    bottom = vec0001.view(1, 1, 4).expand(N, 1, 4)

    def make_K_cam_depth():
        focals = torch.cat(log_focals).exp().clip(min=min_focals, max=max_focals)
        pp = torch.stack(pps)
        K = torch.eye(3, dtype=F64)[None].expand(N, 3, 3).clone()
        K[:, 0, 0] = focals
        K[:, 1, 1] = focals
        K[:, 0:2, 2] = pp * imsizes
        sizes = torch.cat(log_sizes).exp()
        global_scaling = 1 / sizes.min()  # ties share the gradient evenly (torch's min() backward)
        z_cameras = sizes * median_depths * focals / base_focals
        rel = torch.eye(4, dtype=F64)[None].expand(N, 4, 4).clone()
        rel[:, :3, :3] = quat_to_rotmat(torch.nn.functional.normalize(torch.stack(quats), dim=1))
        rel[:, :3, 3] = torch.stack(trans)
        tmp = [None] * N
        tmp[root] = rel[root]
        for i, j in edges:
            tmp[j] = tmp[i] @ rel[j]
        tmp = torch.stack(tmp)
        trans_offset = z_cameras.unsqueeze(1) * torch.cat((imsizes / focals.unsqueeze(1) * (0.5 - pp), ones), dim=-1)
        new_trans = global_scaling * (tmp[:, :3, 3:4] - tmp[:, :3, :3] @ trans_offset.unsqueeze(-1))
        cam2w = torch.cat((torch.cat((tmp[:, :3, :3], new_trans), dim=2), bottom), dim=1)
        depthmaps = [global_scaling * (z_cameras[i] + (core[i] - 1) * (median_depths[i] * sizes[i])) for i in range(N)]
        return K, cam2w, depthmaps

    def all_points(K, cam2w, depthmaps):
        pa = [make_pts3d(p.pix_a, p.idx_a, p.off_a, p.a, K, cam2w, depthmaps, base_focals) for p in prs]
        pb = [make_pts3d(p.pix_b, p.idx_b, p.off_b, p.b, K, cam2w, depthmaps, base_focals) for p in prs]
        return pa, pb

    def loss_3d(K, cam2w, depthmaps, rho):
        if not prs:
            return torch.zeros((), dtype=F64)
        pa, pb = all_points(K, cam2w, depthmaps)
        confs = torch.cat([p.conf for p in prs])
        return confs @ rho((torch.cat(pa) - torch.cat(pb)).norm(dim=-1)) / confs.sum()

    def loss_2d(K, cam2w, depthmaps, rho):
        if not prs:
            return torch.zeros((), dtype=F64)
        pa, pb = all_points(K, cam2w, depthmaps)
        proj = K @ rigid_inverse(cam2w)[:, :3]
        loss = 0
        npix = 0
        for p, xa, xb in zip(prs, pa, pb):
            loss = loss + p.conf @ rho((p.pix_a - reproj2d(proj[p.a], xb)).norm(dim=-1))  # b's point in a
            loss = loss + p.conf @ rho((p.pix_b - reproj2d(proj[p.b], xa)).norm(dim=-1))  # a's point in b
            npix = npix + 2 * p.conf.sum()
        return loss / npix

    def optimize_loop(loss_func, lr_base, niter, rho):
        params = intr_params + quats + trans + log_sizes + core
        optimizer = torch.optim.Adam(params, lr=1, weight_decay=0, betas=(0.9, 0.9))
        losses = []
        for it in range(niter or 1):
            K, cam2w, depthmaps = make_K_cam_depth()
            if niter == 0:
                break
            lr = cosine_schedule(it / niter, lr_base, 0.0)
            for g in optimizer.param_groups:
                g["lr"] = lr
            optimizer.zero_grad(set_to_none=True)
            loss = loss_func(K, cam2w, depthmaps, rho)
            loss.backward()
            optimizer.step()
            with torch.no_grad():
                for q in quats:
                    q.data[:] /= q.data.norm()
            loss = float(loss)
            losses.append(loss)
            if loss != loss:
                break
        return dict(loss=losses, K=K.detach(), cam2w=cam2w.detach(), depthmaps=[d.detach() for d in depthmaps])

    # stage 1: poses and sizes only (SGA:468-477)
    for p in intr_params + core:
        p.requires_grad_(False)
    for p in quats + trans + log_sizes:
        p.requires_grad_(True)
    coarse = optimize_loop(loss_3d, lr1, niter1, gamma_loss(gamma1))

    fine = None
    if niter2:
        for p in (pps[:1] if shared_intrinsics else pps):
            p.requires_grad_(bool(opt_pp))
        for p in (log_focals[:1] if shared_intrinsics else log_focals):
            p.requires_grad_(True)
        for p in core:
            p.requires_grad_(bool(opt_depth))
        fine = optimize_loop(loss_2d, lr2, niter2, gamma_loss(gamma2))
    return dict(coarse=coarse, fine=fine, median_depths=median_depths)


# ------------------------------------------------------------------------------------------------------
# §8 dense points


def clean_pointcloud(confs, K, w2cam, depthmaps, pts3d, tol=0.001, bad_conf=0.0):
    """dust3r's clean_pointcloud (BO:370-405): lower the confidence of points seen in front of a more
    confident depth of another view. In place on copies, i then every j != i; later tests see the already
    lowered values. (u, v) = round(K_j p / z) with torch.round (half to even)."""
    res = [_t(c).clone() for c in confs]
    n = len(res)
    for i in range(n):
        H, W = res[i].shape
        pts = _t(pts3d[i]).reshape(H, W, 3)
        for j in range(n):
            if i == j:
                continue
            Hj, Wj = res[j].shape
            proj = pts @ w2cam[j, :3, :3].T + w2cam[j, :3, 3]
            proj_depth = proj[:, :, 2]
            uvw = proj @ K[j].T
            uv = uvw / uvw[..., -1:]
            u = uv[..., 0].round().long()
            v = uv[..., 1].round().long()
            msk = (proj_depth > 0) & (0 <= u) & (u < Wj) & (0 <= v) & (v < Hj)
            dj = _t(depthmaps[j]).reshape(Hj, Wj)
            vj, uj = v[msk], u[msk]
            bad = (proj_depth[msk] < (1 - tol) * dj[vj, uj]) & (res[i][msk] < res[j][vj, uj])
            bad_msk = msk.clone()
            bad_msk[msk] = bad
            res[i][bad_msk] = res[i][bad_msk].clip(max=bad_conf)
    return res


def dense_points(K, cam2w, depthmaps, canon2s, cconfs, base_focals, subsample=8, clean_depth=True):
    """get_dense_pts3d (SGA:71-94): per image (H,W,3) world points, (H,W) z-depth, (H,W) confidence."""
    K = _t(K)
    cam2w = _t(cam2w)
    s = int(subsample)
    pts_out, depth_out, conf_out = [], [], []
    bf = torch.tensor([float(f) for f in base_focals], dtype=F64)
    for i, canon2 in enumerate(canon2s):
        canon2 = _t(canon2)
        H, W = canon2.shape
        ys, xs = np.mgrid[:H, :W]
        xy = np.stack((xs.ravel(), ys.ravel()), axis=1)
        idx, off = anchor_depth_offsets(canon2, xy, s)
        pix = torch.as_tensor(xy, dtype=F64)
        pts, z = make_pts3d(pix, idx, off, i, K, cam2w, [_t(d).reshape(-1) for d in depthmaps], bf, ret_depth=True)
        pts_out.append(pts.reshape(H, W, 3))
        depth_out.append(z.reshape(H, W))
        conf_out.append(_t(cconfs[i]))
    if clean_depth:
        conf_out = clean_pointcloud(conf_out, K, torch.linalg.inv(cam2w), depth_out, pts_out)
    return pts_out, depth_out, conf_out


# ------------------------------------------------------------------------------------------------------
# the whole pipeline on already-computed network outputs and matches


def sparse_global_alignment(
    image_hw,
    own_preds,
    pairs,
    matches,
    subsample=8,
    lr1=0.07,
    niter1=300,
    lr2=0.01,
    niter2=300,
    kinematic_mode="hclust-ward",
    shared_intrinsics=False,
    matching_conf_thr=0.0,
    opt_pp=True,
    opt_depth=True,
):
    """own_preds[i]: list of (pts3d (H,W,3), conf (H,W)) of image i; pairs (P,2); matches: P tuples
    (xy_a (M,2) int (x,y), xy_b (M,2), conf (M,)). Returns a dict of every intermediate and output."""
    hw = np.asarray(image_hw, dtype=np.int64).reshape(-1, 2)
    N = len(hw)
    canon = [canonical_view(p, subsample) for p in own_preds]
    canon2s = [c[1] for c in canon]
    cconfs = [c[2] for c in canon]
    focal0 = [c[3] for c in canon]
    core = [anchor_depths(c[0], subsample) for c in canon]
    n_matches = np.zeros((N, N))
    for (a, b), (_, _, conf) in zip(pairs, matches):
        n_matches[a, b] = n_matches[b, a] = len(conf)
    root, edges = kinematic_tree(n_matches, hw, subsample, kinematic_mode)
    res = sparse_scene_optimizer(
        hw, canon2s, core, focal0, pairs, matches, (root, edges), subsample=subsample, lr1=lr1, niter1=niter1,
        lr2=lr2, niter2=niter2, shared_intrinsics=shared_intrinsics, cconfs=cconfs,
        matching_conf_thr=matching_conf_thr, opt_pp=opt_pp, opt_depth=opt_depth,
    )
    final = res["fine"] or res["coarse"]
    pts, depth, conf = dense_points(final["K"], final["cam2w"], final["depthmaps"], canon2s, cconfs, focal0, subsample)
    return dict(
        canon=[c[0] for c in canon], canon2=canon2s, cconf=cconfs, focal0=focal0, anchor_depth=core,
        n_matches=n_matches, root=root, edges=edges, coarse=res["coarse"], fine=res["fine"],
        median_depths=res["median_depths"], dense_pts3d=pts, dense_depth=depth, dense_conf=conf,
    )
