"""Training pairs from the procedural scenes: rendered on the training device, packed as the network and
the losses want them.

A pair is views 1 and 2 of one scene (seed). Images are quantised to uint8 (what a PNG holds) and
normalised as the official loader does, (v/255 - 0.5)/0.5. Ground truth: both views' pointmaps in
view 1's camera frame, validity, and for every pixel of view 1 its pixel in view 2 (covisible only).
"""

import torch

from scenes import correspond, render, sampler


def normalise(rgb_u8):
    """(..., H, W, 3) uint8 -> (..., 3, H, W) float32, the official ImgNorm."""
    x = rgb_u8.to(torch.float32) / 255.0
    return ((x - 0.5) / 0.5).movedim(-1, -3).contiguous()


def make_pairs(seeds, width, height, device, ss=2, jitter=None):
    """A batch of pairs: dict of tensors on `device`.

    jitter: optional torch.Generator; per-view brightness/contrast/colour changes (as photographs of
    one scene differ), applied before quantisation."""
    scene = sampler.sample_batch(seeds, n_views=2)
    views = render.render(scene, width, height, ss=ss, device=device)
    rgb = views["rgb"]
    if jitter is not None:
        B = rgb.shape[0]
        gain = 1 + 0.15 * (torch.rand(B, 2, 1, 1, 1, generator=jitter) * 2 - 1)
        tint = 1 + 0.05 * (torch.rand(B, 2, 1, 1, 3, generator=jitter) * 2 - 1)
        bias = 0.04 * (torch.rand(B, 2, 1, 1, 1, generator=jitter) * 2 - 1)
        rgb = torch.clamp(rgb * (gain * tint).to(device) + bias.to(device), 0, 1)
    u8 = render.to_uint8(rgb)
    xy, cov = correspond.correspondences(views, 0, 1)
    return {
        "img1": normalise(u8[:, 0]), "img2": normalise(u8[:, 1]), "rgb_u8": u8,
        "pts1": views["pts_v1"][:, 0], "pts2": views["pts_v1"][:, 1],
        "valid1": views["valid"][:, 0], "valid2": views["valid"][:, 1],
        "corr_xy": xy, "covisible": cov,
        "depth1": views["depth"][:, 0], "depth2": views["depth"][:, 1],
        "K": views["K"], "cam_to_world": views["cam_to_world"],
    }
