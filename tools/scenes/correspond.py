"""Ground-truth correspondences between two rendered views, and their overlap.

A pixel of view a corresponds to the point where its surface point projects in view b, if that point
is in view b's image, in front of it, and not hidden there: view b's depth at the nearest pixel agrees
with the projected depth within a relative tolerance (surfaces are smooth at the pixel scale except at
occlusion edges, which the tolerance rejects).
"""

import torch

DEPTH_TOL = 0.03  # relative


def project(pts_cam, K):
    """Camera-frame points (..., 3) -> image coordinates (..., 2) and depth (...); K (..., 3, 3) broadcast."""
    z = pts_cam[..., 2]
    zs = torch.where(z > 1e-6, z, torch.ones_like(z))
    x = K[..., 0, 0] * pts_cam[..., 0] / zs + K[..., 0, 2]
    y = K[..., 1, 1] * pts_cam[..., 1] / zs + K[..., 1, 2]
    return torch.stack([x, y], -1), z


def correspondences(views, a=0, b=1):
    """For every pixel of view a: its subpixel position in view b (B, H, W, 2) as (x, y) and whether
    it is covisible (B, H, W). `views` is render.render's output."""
    depth_b, valid_a, valid_b = views["depth"][:, b], views["valid"][:, a], views["valid"][:, b]
    B, H, W = depth_b.shape
    pose = views["cam_to_world"]
    rel = torch.linalg.inv(pose[:, b]) @ pose[:, a]  # camera a -> camera b, float64
    rel = rel.to(views["pts_cam"].dtype)
    pts = views["pts_cam"][:, a]
    pts_b = torch.einsum("bij,bhwj->bhwi", rel[:, :3, :3], pts) + rel[:, None, None, :3, 3]
    Kb = views["K"][:, b].to(pts.dtype)[:, None, None]
    xy, z = project(pts_b, Kb)
    xi, yi = torch.round(xy[..., 0]), torch.round(xy[..., 1])
    inside = (xi >= 0) & (xi <= W - 1) & (yi >= 0) & (yi <= H - 1) & (z > 1e-3)
    flat = (yi.clamp(0, H - 1) * W + xi.clamp(0, W - 1)).to(torch.int64).reshape(B, -1)
    seen_depth = torch.gather(depth_b.reshape(B, -1), 1, flat).reshape(B, H, W)
    seen_valid = torch.gather(valid_b.reshape(B, -1), 1, flat).reshape(B, H, W)
    covisible = valid_a & inside & seen_valid & (torch.abs(seen_depth - z) <= DEPTH_TOL * z)
    return xy, covisible


def overlap(views, a=0, b=1):
    """Share of view a's valid pixels that view b sees (B,)."""
    _, cov = correspondences(views, a, b)
    va = views["valid"][:, a].flatten(1).sum(1).clamp(min=1)
    return cov.flatten(1).sum(1) / va
