"""Reconstruction metrics of one pair against the procedural ground truth (numpy, float64).

  depth_metrics     view 1's depth (the z of its pointmap) after median scale alignment, as the
                    DUSt3R/MASt3R papers evaluate monocular depth: AbsRel and delta < 1.25
  relative_pose     camera 2's pose in camera 1's frame from view 2's pointmap (which is in view 1's
                    frame) and its pixels: PnP on the more confident half of the points, with the
                    intrinsics known: the direct linear transform, then Gauss-Newton on the
                    reprojection error with Huber weights; the pointmap's scale is free, so only the
                    rotation and the translation's direction are scored
  pose_errors       rotation angle and translation-direction angle against the ground truth
  match_precision   share of matches (x1, y1) -> (x2, y2) whose ground-truth position in view 2 is
                    within a radius in pixels (a match on a pixel that view 2 cannot see is wrong)

Inputs are at the network's resolution; the ground truth comes from tools/scenes at the same size.
"""

import numpy as np


def depth_metrics(pred_depth, gt_depth, valid):
    p = pred_depth[valid].astype(np.float64)
    g = gt_depth[valid].astype(np.float64)
    ok = p > 1e-8
    p, g = p[ok], g[ok]
    if p.size == 0:
        return {"abs_rel": float("nan"), "delta1": 0.0}
    p = p * (np.median(g) / np.median(p))
    ratio = np.maximum(p / g, g / p)
    return {"abs_rel": float(np.mean(np.abs(p - g) / g)), "delta1": float(np.mean(ratio < 1.25))}


def _skew(v):
    """(N, 3) -> (N, 3, 3) cross-product matrices."""
    z = np.zeros(len(v))
    return np.stack([np.stack([z, -v[:, 2], v[:, 1]], -1), np.stack([v[:, 2], z, -v[:, 0]], -1),
                     np.stack([-v[:, 1], v[:, 0], z], -1)], 1)


def _rotation(w):
    th = np.linalg.norm(w)
    K = _skew((w / max(th, 1e-12))[None])[0]
    return np.eye(3) + np.sin(th) * K + (1 - np.cos(th)) * K @ K


def _refine(X, xn, yn, R, t, iters=15):
    """Gauss-Newton on the normalised reprojection error, Huber weights (the pointmap's errors are
    not Gaussian: a few surfaces are far off). Left perturbation: X_cam = exp(w) R X + t + dt."""
    for _ in range(iters):
        Xc = X @ R.T + t
        z = np.where(Xc[:, 2] > 1e-6, Xc[:, 2], 1e-6)
        r = np.stack([Xc[:, 0] / z - xn, Xc[:, 1] / z - yn], 1)
        e = np.linalg.norm(r, axis=1)
        k = 1.5 * np.median(e) + 1e-12
        w = np.where(e < k, 1.0, k / np.maximum(e, 1e-12)) * (Xc[:, 2] > 1e-6)
        Ju = np.zeros((len(X), 2, 3))
        Ju[:, 0, 0], Ju[:, 0, 2] = 1 / z, -Xc[:, 0] / z ** 2
        Ju[:, 1, 1], Ju[:, 1, 2] = 1 / z, -Xc[:, 1] / z ** 2
        J = np.concatenate([Ju @ -_skew(X @ R.T), Ju], 2).reshape(-1, 6)
        ww = np.repeat(w, 2)
        step = -np.linalg.solve(J.T @ (J * ww[:, None]) + 1e-12 * np.eye(6), J.T @ (ww * r.reshape(-1)))
        R, t = _rotation(step[:3]) @ R, t + step[3:]
        if np.linalg.norm(step) < 1e-10:
            break
    return R, t


def relative_pose(pts2_in_1, K2, conf2=None, max_points=4000, refine=True):
    """cam2_to_cam1 (4x4) from view 2's pointmap in view 1's frame (H, W, 3) and view 2's intrinsics."""
    H, W, _ = pts2_in_1.shape
    ys, xs = np.mgrid[0:H, 0:W]
    X = pts2_in_1.reshape(-1, 3).astype(np.float64)
    uv = np.stack([xs.reshape(-1), ys.reshape(-1)], -1).astype(np.float64)
    keep = np.isfinite(X).all(1)
    if conf2 is not None:
        c = conf2.reshape(-1)
        keep &= c >= np.quantile(c[keep], 0.5)  # the better half
    idx = np.flatnonzero(keep)
    if idx.size > max_points:
        idx = idx[np.linspace(0, idx.size - 1, max_points).astype(np.int64)]
    X, uv = X[idx], uv[idx]
    xn = (uv[:, 0] - K2[0, 2]) / K2[0, 0]
    yn = (uv[:, 1] - K2[1, 2]) / K2[1, 1]
    # normalise the points for conditioning: X = s * Xc + m
    m = X.mean(0)
    s = np.sqrt(((X - m) ** 2).sum(1).mean()) + 1e-12
    Xc = (X - m) / s
    n = len(Xc)
    Xh = np.concatenate([Xc, np.ones((n, 1))], 1)
    A = np.zeros((2 * n, 12))
    A[0::2, 0:4] = -Xh
    A[0::2, 8:12] = xn[:, None] * Xh
    A[1::2, 4:8] = -Xh
    A[1::2, 8:12] = yn[:, None] * Xh
    _, _, vt = np.linalg.svd(A, full_matrices=False)
    P = vt[-1].reshape(3, 4)  # world(normalised) -> camera 2, up to scale
    U, S, Vt = np.linalg.svd(P[:, :3])
    R = U @ Vt
    scale = S.mean()
    t = P[:, 3] / scale
    if np.linalg.det(R) < 0:  # P is known up to its sign: take the one that makes R a rotation
        R, t = -R, -t
    # undo the normalisation: X_cam2 = R (X - m)/s + t  ->  R X + (s t - R m) in units of s
    t_full = s * t - R @ m
    if refine:
        R, t_full = _refine(X, xn, yn, R, t_full)
    cam1_to_cam2 = np.eye(4)
    cam1_to_cam2[:3, :3], cam1_to_cam2[:3, 3] = R, t_full
    return np.linalg.inv(cam1_to_cam2)


def pose_errors(pred_cam2_to_cam1, gt_cam2_to_cam1):
    """(rotation error in degrees, translation-direction error in degrees)."""
    Rp, Rg = pred_cam2_to_cam1[:3, :3], gt_cam2_to_cam1[:3, :3]
    cos = np.clip((np.trace(Rp.T @ Rg) - 1) / 2, -1, 1)
    tp, tg = pred_cam2_to_cam1[:3, 3], gt_cam2_to_cam1[:3, 3]
    ct = np.dot(tp, tg) / max(np.linalg.norm(tp) * np.linalg.norm(tg), 1e-12)
    return float(np.degrees(np.arccos(cos))), float(np.degrees(np.arccos(np.clip(ct, -1, 1))))


def match_precision(xy1, xy2, gt_xy, covisible, radius=3.0):
    """xy1, xy2 (N, 2) integer pixel coordinates; gt_xy (H, W, 2) view 1 -> view 2; covisible (H, W)."""
    if len(xy1) == 0:
        return 0.0
    x1, y1 = xy1[:, 0].astype(np.int64), xy1[:, 1].astype(np.int64)
    target = gt_xy[y1, x1]
    err = np.linalg.norm(target - xy2.astype(np.float64), axis=1)
    good = covisible[y1, x1] & (err <= radius)
    return float(good.mean())
