"""Ground truth of procedural pairs as the evaluation reads it: one .npz per pair (numpy, float64).

Keys: width, height, seed, generator, depth1, depth2, valid1, valid2 (H, W); K1, K2 (3, 3);
cam2_to_cam1 (4, 4); corr_xy (H, W, 2) view 1 -> view 2 pixel; covisible (H, W); overlap.
Rendered at the resolution the network sees (pixel centres), so no resampling enters the metrics.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tools/
from scenes import GENERATOR_VERSION, correspond, render, sampler  # noqa: E402


def pair_ground_truth(views, b=0, corr=None):
    """The npz dict of pair b of render.render's output (views 0 and 1); corr: correspondences() of
    the whole batch when the caller has it."""
    xy, cov = corr if corr is not None else correspond.correspondences(views, 0, 1)
    pose = views["cam_to_world"][b].cpu().numpy()
    H, W = views["depth"].shape[2:]
    valid1 = views["valid"][b, 0].cpu().numpy()
    return {
        "width": np.int64(W), "height": np.int64(H), "generator": np.array(GENERATOR_VERSION),
        "depth1": views["depth"][b, 0].cpu().double().numpy(), "depth2": views["depth"][b, 1].cpu().double().numpy(),
        "valid1": valid1, "valid2": views["valid"][b, 1].cpu().numpy(),
        "K1": views["K"][b, 0].cpu().numpy(), "K2": views["K"][b, 1].cpu().numpy(),
        "cam2_to_cam1": np.linalg.inv(pose[0]) @ pose[1],
        "corr_xy": xy[b].cpu().double().numpy(), "covisible": cov[b].cpu().numpy(),
        "overlap": np.float64(cov[b].cpu().numpy().sum() / max(1, valid1.sum())),
    }


def render_pairs(seeds, width, height, device="cpu", ss=2, chunk=32):
    """Yields (seed, rgb1 uint8, rgb2 uint8, ground-truth dict) for each seed's views 0 and 1."""
    for i in range(0, len(seeds), chunk):
        part = [int(s) for s in seeds[i:i + chunk]]
        scene = sampler.sample_batch(part, n_views=2)
        views = render.render(scene, width, height, ss=ss, device=device)
        u8 = render.to_uint8(views["rgb"]).cpu().numpy()
        corr = correspond.correspondences(views, 0, 1)
        for b, seed in enumerate(part):
            gt = pair_ground_truth(views, b, corr)
            gt["seed"] = np.int64(seed)
            yield seed, u8[b, 0], u8[b, 1], gt


def load(path):
    with np.load(path) as z:
        return {k: z[k] for k in z.files}
