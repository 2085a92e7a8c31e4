"""Renders the views of a batch of scenes: RGB, depth, pointmaps (own camera frame and the first view's
frame) and a validity mask, with the intrinsics and poses that produced them.

Conventions: pixel (row i, column j) has its centre at image coordinates (x, y) = (j, i); the
intrinsics K map a camera-frame point to those coordinates (cx = (W - 1) / 2). cam_to_world is
[R | t] with OpenCV camera axes. Depth is the camera-frame z of the surface at the pixel centre.
The RGB image is shaded at ss x ss points per pixel and box-filtered (no aliasing: the network sees
images like resized photographs); the geometry is that of the pixel centre.

The scene parameters are made on the CPU in float64 (sampler.py) and moved to the device, so the CPU
and CUDA paths compute the same function; they agree to rounding (tests/scenes).
"""

import math

import numpy as np
import torch

from . import textures
from .raycast import intersect

MAX_DEPTH = 40.0  # rays that run further (towards the horizon of an open room) count as invalid
SKY_ID = -1


def to_torch(scene, device, dtype=torch.float32):
    return {k: torch.as_tensor(np.asarray(v), dtype=dtype, device=device) for k, v in scene.items()}


def intrinsics(fov_x, width, height):
    """K (3x3, numpy float64) of a camera with the horizontal field of view fov_x (radians)."""
    f = 0.5 * width / math.tan(0.5 * fov_x)
    return np.array([[f, 0.0, (width - 1) / 2.0], [0.0, f, (height - 1) / 2.0], [0.0, 0.0, 1.0]])


def camera_matrices(scene_np, width, height):
    """Per scene and view: K (B, V, 3, 3) and cam_to_world (B, V, 4, 4), numpy float64."""
    cams = scene_np["cameras"]
    B, V = cams.shape[:2]
    K = np.zeros((B, V, 3, 3))
    pose = np.tile(np.eye(4), (B, V, 1, 1))
    for b in range(B):
        for v in range(V):
            K[b, v] = intrinsics(cams[b, v, 12], width, height)
            pose[b, v, :3, :3] = cams[b, v, 3:12].reshape(3, 3)
            pose[b, v, :3, 3] = cams[b, v, 0:3]
    return K, pose


def _rays(K, pose, width, height, ss, device, dtype):
    """World rays (B*V, H*W*ss*ss, 3) with z_cam = 1 (t = depth); subpixel order (i, j, a, b)."""
    BV = K.shape[0]
    offs = (np.arange(ss) + 0.5) / ss - 0.5
    ys = (np.arange(height)[:, None] + offs[None, :]).reshape(-1)  # (H*ss)
    xs = (np.arange(width)[:, None] + offs[None, :]).reshape(-1)
    Kt = torch.as_tensor(K, dtype=torch.float64)
    ys_t = torch.as_tensor(ys, dtype=torch.float64)
    xs_t = torch.as_tensor(xs, dtype=torch.float64)
    dx = (xs_t[None, :] - Kt[:, 0, 2, None]) / Kt[:, 0, 0, None]  # (BV, W*ss)
    dy = (ys_t[None, :] - Kt[:, 1, 2, None]) / Kt[:, 1, 1, None]  # (BV, H*ss)
    d_cam = torch.stack(torch.broadcast_tensors(dx[:, None, :], dy[:, :, None], torch.ones(1, 1, 1, dtype=torch.float64)), -1)
    Rw = torch.as_tensor(pose[:, :3, :3], dtype=torch.float64)
    d_world = torch.einsum("bij,bhwj->bhwi", Rw, d_cam)
    # (BV, H*ss, W*ss, 3) -> (BV, H, ss, W, ss, 3) -> (BV, H, W, ss, ss, 3)
    d_world = d_world.reshape(BV, height, ss, width, ss, 3).permute(0, 1, 3, 2, 4, 5).reshape(BV, -1, 3)
    origin = torch.as_tensor(pose[:, :3, 3], dtype=torch.float64)[:, None, :].expand_as(d_world)
    return origin.to(device=device, dtype=dtype).contiguous(), d_world.to(device=device, dtype=dtype).contiguous()


def _repeat_views(scene_t, V):
    """Scene tensors repeated per view: batch axis B -> B*V (view-major inside a scene)."""
    return {k: v.repeat_interleave(V, dim=0) for k, v in scene_t.items()}


def _shade(scene_v, origin, direction):
    hits = intersect(scene_v, origin, direction)
    valid = hits.ids >= 0
    t = torch.where(valid, hits.t, torch.zeros_like(hits.t))
    p = origin + direction * t[..., None]
    mats = scene_v["materials"]  # (BV, N_OBJ, P)
    idx = hits.ids.clamp(min=0)
    params = torch.gather(mats, 1, idx[..., None].expand(-1, -1, mats.shape[-1]))
    alb = textures.albedo(hits.uv[..., 0], hits.uv[..., 1], params)
    light = scene_v["light"]
    sun = light[:, None, 0:3]
    n = hits.normal / hits.normal.norm(dim=-1, keepdim=True).clamp(min=1e-12)
    shadow = intersect(scene_v, p + n * 2e-3, sun.expand_as(p).contiguous(), with_planes=False, shading=False)
    in_sun = (shadow.ids < 0).to(p.dtype)
    lambert = (n * sun).sum(-1).clamp(min=0)
    sky_col = light[:, None, 5:8]
    ambient = light[:, None, 4:5] * (0.8 + 0.2 * n[..., 1:2])
    col = alb * (light[:, None, 3:4] * (lambert * in_sun)[..., None] + ambient * (sky_col / sky_col.mean(-1, keepdim=True)))
    dn = direction / direction.norm(dim=-1, keepdim=True)
    sky = sky_col * (0.8 + 0.4 * dn[..., 1:2].clamp(min=0)) + 0.25
    col = torch.where(valid[..., None], col, sky.expand_as(col))
    return torch.clamp(col, 0.0, 1.0) ** (1.0 / 1.15)


def render(scene_np, width, height, ss=2, device="cpu", dtype=torch.float32, views=None):
    """Renders every view (or the listed ones) of every scene of a batch (sampler.stack layout).

    Returns a dict of torch tensors on `device`, with axes (B, V, ...):
      rgb (H, W, 3) in [0, 1]; depth (H, W); valid (H, W) bool; pts_cam (H, W, 3) in the view's camera
      frame; pts_v1 (H, W, 3) in the first view's camera frame; ids (H, W) object ids (-1 sky);
      K (3, 3); cam_to_world (4, 4) — both float64."""
    cams = scene_np["cameras"]
    if views is not None:
        scene_np = dict(scene_np, cameras=cams[:, views])
    B, V = scene_np["cameras"].shape[:2]
    K, pose = camera_matrices(scene_np, width, height)
    Kf, posef = K.reshape(B * V, 3, 3), pose.reshape(B * V, 4, 4)
    scene_v = _repeat_views(to_torch(scene_np, device, dtype), V)

    o, d = _rays(Kf, posef, width, height, ss, device, dtype)
    rgb = _shade(scene_v, o, d).reshape(B, V, height, width, ss * ss, 3).mean(4)
    o, d = _rays(Kf, posef, width, height, 1, device, dtype)
    hits = intersect(scene_v, o, d, shading=False)
    depth = hits.t.reshape(B, V, height, width)
    ids = hits.ids.reshape(B, V, height, width)
    valid = (ids >= 0) & (depth < MAX_DEPTH)
    depth = torch.where(valid, depth, torch.zeros_like(depth))

    Kt = torch.as_tensor(K, dtype=dtype, device=device)
    jj = torch.arange(width, dtype=dtype, device=device)[None, None, None, :]
    ii = torch.arange(height, dtype=dtype, device=device)[None, None, :, None]
    x = (jj - Kt[..., 0, 2, None, None]) / Kt[..., 0, 0, None, None] * depth
    y = (ii - Kt[..., 1, 2, None, None]) / Kt[..., 1, 1, None, None] * depth
    pts_cam = torch.stack([x, y, depth], -1)
    # view v -> view 1: X1 = R1^T (R_v X_v + t_v - t_1), composed in float64 on the CPU
    rel = np.linalg.inv(pose[:, :1]) @ pose  # (B, V, 4, 4): camera v -> camera 1
    relt = torch.as_tensor(rel, dtype=dtype, device=device)
    pts_v1 = torch.einsum("bvij,bvhwj->bvhwi", relt[..., :3, :3], pts_cam) + relt[..., None, None, :3, 3]
    pts_v1 = torch.where(valid[..., None], pts_v1, torch.zeros_like(pts_v1))
    return {"rgb": rgb, "depth": depth, "valid": valid, "pts_cam": pts_cam, "pts_v1": pts_v1, "ids": ids,
            "K": torch.as_tensor(K, device=device), "cam_to_world": torch.as_tensor(pose, device=device)}


def to_uint8(rgb):
    """[0, 1] float -> uint8, rounding like the sample renderer (what a PNG stores)."""
    return torch.clamp(torch.round(rgb * 255.0), 0, 255).to(torch.uint8)
