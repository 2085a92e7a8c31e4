#!/usr/bin/python3
"""Renders the multi-view demo scene in samples/scene/ (view_00.png ... view_07.png) and its ground
truth (scene_gt.npz), the input and the reference of `reconctl reconstruct`.

The scene is one seed of recon's procedural scene generator (tools/scenes), SCENE_SEED, held out of
training like the pair of make_samples.py: a room with boxes, slabs, spheres and cylinders in
procedural materials, sun and sky light with shadows. The generator's own cameras (a hand-held pair
at the front of the room) are replaced by a walk (walk_cameras): eight photographs taken by one
person going round the objects in the middle of the room, from the front left along the left wall,
past the back wall and up the right wall, each aimed at the objects: STEP (28 degrees) round the
middle from one view to the next, where a person can stand. For the seed here, consecutive views
turn by 20-52 degrees and share 50-75 % of what they see, the first and the last are 136 degrees
apart in direction and share about 30 % (the middle of the room). Hand-held: eye height about 1.6 m
with one shot from a crouch (1.15 m), a few degrees of roll, the aim point jittered. One camera for
all views (the same intrinsics, 62 degrees across).

The images are 512x384, shaded at 2x2 points per pixel, as make_samples.py renders its pair.
scene_gt.npz (ground truth, float64 unless said otherwise):

  images            (8,) the image names, view_00.png ...
  width, height     512, 384: the images' size, to which `intrinsics` refer
  cam_to_world      (8, 4, 4) OpenCV camera axes (x right, y down, z forward), world in metres, y up
  intrinsics        (8, 3, 3) at 512x384, COLMAP's pixel convention (the centre of the top-left
                    pixel at (0.5, 0.5): cx = 256, cy = 192)
  depth             (8, DH, DW) float32 z-depth, 0 where invalid (the sky of an open room)
  valid             (8, DH, DW) bool
  overlap           (8, 8) the share of view i's valid pixels that view j sees too (from the depth)
  depth_width, depth_height, depth_intrinsics
                    DW, DH and the intrinsics at that size (COLMAP's convention): the depth maps are
                    at 256x192, the pixel centres of the half-size image (the npz stays < 3 MB)
  surface_points    (K, 3) float32, K = 50000: the scene surface for a Chamfer distance: every
                    view's valid pixels at 512x384 lifted to the world, thinned to one per 1 cm voxel,
                    then a seeded random subset
  seed, generator   the scene seed and tools/scenes' GENERATOR_VERSION

tools/eval/evaluate_reconstruction.py scores `reconctl reconstruct`'s output against it.

  /usr/bin/python3 samples/make_scene_samples.py            # rewrites samples/scene/
  /usr/bin/python3 samples/make_scene_samples.py --out DIR

Deterministic (numpy's seeded generators, no other random state; the npz is written with fixed zip
timestamps): re-running reproduces the files byte for byte. This script writes only under --out.
"""

import argparse
import io
import math
import os
import sys
import time
import zipfile

import numpy as np
import torch
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tools"))

from scenes import GENERATOR_VERSION, render, sampler, splits  # noqa: E402

# A held-out seed: far below splits.TRAIN_FIRST (training never renders it), below
# splits.TEST_FIRST (not one of the test pairs evaluate.py scores), not the pair's SAMPLE_SEED, not a
# seed the tests render. Chosen among seeds < 1000 for a large room (7.1 x 8.4 m, no ceiling) with
# all four walls textured, eight objects gathered in the middle (a person can walk round them) and
# a walk of good views (walk_cameras).
SCENE_SEED = 683
N_VIEWS = 8
WIDTH, HEIGHT, SUPERSAMPLE = 512, 384, 2
DEPTH_WIDTH, DEPTH_HEIGHT = 256, 192
FOV_X = math.radians(62.0)  # one camera for every view: fx = fy = 426 px at 512x384
N_SURFACE = 50_000
SURFACE_VOXEL = 0.01  # metres
CLEARANCE = 0.45  # metres between an eye and any object or wall
BODY_CLEARANCE = 0.3  # metres between a body and any object
STEP = math.radians(28.0)  # round the middle of the room, between consecutive views
TARGET_HEIGHT = 0.8  # metres: the views aim at the middle of the room at this height
NEAREST, FLOOR_SHARE, OBJECT_SHARE = 1.0, 0.6, 0.3  # what a good view is (good_view)


def _box_distance(p, box):
    c, half, yaw = box[0:3], box[3:6], box[6]
    d = p - c
    cy, sy = math.cos(yaw), math.sin(yaw)
    q = np.array([cy * d[0] - sy * d[2], d[1], sy * d[0] + cy * d[2]])  # into the box frame (raycast.py)
    e = np.abs(q) - half
    return float(np.linalg.norm(np.maximum(e, 0.0)) + min(e.max(), 0.0))


def clearance(scene, p, planes=True):
    """Distance from the point p to the nearest object (and room plane) of one scene, negative inside."""
    out = [float(pl[0:3] @ p - pl[3]) for pl in scene["planes"] if planes and pl[4] > 0.5]  # normals face in
    out += [_box_distance(p, b) for b in scene["boxes"] if b[7] > 0.5]
    out += [float(np.linalg.norm(p - s[0:3]) - s[3]) for s in scene["spheres"] if s[4] > 0.5]
    for cx, cz, r, y0, y1, on in scene["cylinders"]:
        if on > 0.5:
            dr, dy = math.hypot(p[0] - cx, p[2] - cz) - r, max(y0 - p[1], p[1] - y1)
            out.append(math.hypot(max(dr, 0.0), max(dy, 0.0)) + min(max(dr, dy), 0.0))
    return min(out)


def free_spot(scene, eye):
    """Whether a person can stand there: the eye CLEARANCE from every wall and object, the body (the
    vertical line below the eye) BODY_CLEARANCE from every object."""
    body = min(clearance(scene, np.array([eye[0], y, eye[2]]), planes=False) for y in (0.05, 0.4, 0.8, 1.2))
    return clearance(scene, eye) >= CLEARANCE and body >= BODY_CLEARANCE


def objects_centre(scene):
    """(x, z) of the middle of the objects: the mean of their centres."""
    xz = [b[[0, 2]] for b in scene["boxes"] if b[7] > 0.5]
    xz += [s[[0, 2]] for s in scene["spheres"] if s[4] > 0.5]
    xz += [c[[0, 1]] for c in scene["cylinders"] if c[5] > 0.5]
    return np.mean(xz, axis=0)


def good_view(scene, cam):
    """Whether the camera (13,) makes a photograph of the room rather than of one thing: nothing
    within NEAREST of the lens in the lower tenth of the depths, the floor at most FLOOR_SHARE of
    the picture, no single object more than OBJECT_SHARE (a 64x48 render of its depth and ids)."""
    views = render.render(sampler.stack([dict(scene, cameras=cam[None])]), 64, 48, ss=1)
    depth, ids = views["depth"][0, 0].numpy(), views["ids"][0, 0].numpy()
    objects = np.bincount(ids[ids >= sampler.N_PLANE], minlength=1)
    return (np.percentile(depth[depth > 0], 10) >= NEAREST and np.mean(ids == 0) <= FLOOR_SHARE
            and objects.max() <= OBJECT_SHARE * ids.size)


def walk_cameras(scene, seed, n=N_VIEWS):
    """The cameras (n, 13) in sampler.py's layout (eye, cam_to_world rotation row-major, fov) of a
    person walking round the middle of the room: near an ellipse about the objects' centre that
    keeps CLEARANCE from the walls, from the front left of the room along the left wall, past the
    back wall and up the right wall, STEP apart, each view aimed near the centre. A view goes to the
    first spot, from the ellipse inwards and a few degrees either way, where a person can stand and
    the picture is a good one (deterministic: a fixed order of candidates)."""
    rng = np.random.default_rng([seed, 0x5CE9E])
    hw, depth = -scene["planes"][2, 3], -scene["planes"][4, 3]
    ox, oz = objects_centre(scene)
    # the walk goes round the middle between the objects' centre and the middle of their part of
    # the room (objects stand behind z = 2 m): a cluster against a wall leaves room to walk round it
    cx = float(np.clip(0.5 * ox, -hw + 1.6, hw - 1.6))
    cz = float(np.clip(0.5 * oz + 0.25 * (2.0 + depth), 2.0, depth - 2.0))
    ax = min(hw - CLEARANCE - cx, hw - CLEARANCE + cx)
    az = min(cz - CLEARANCE, depth - CLEARANCE - cz)
    start = -0.5 * (n - 1) * STEP + math.pi  # the middle of the walk at the back of the room
    cams = np.zeros((n, 13))
    heights = 1.6 + rng.normal(size=n) * 0.08
    heights[rng.integers(2, n - 1)] = 1.15  # one shot from a crouch
    candidates = [(s, t) for s in np.arange(1.0, 0.3, -0.05) for t in (0.0, 0.1, -0.1, 0.2, -0.2)]
    for v in range(n):
        phi = start + v * STEP + rng.normal() * math.radians(2.0)
        target = np.array([ox, TARGET_HEIGHT, oz]) + rng.normal(size=3) * np.array([0.3, 0.1, 0.3])
        roll = float(np.clip(rng.normal() * math.radians(3.0), -math.radians(7), math.radians(7)))
        for shrink, turn in candidates:
            eye = np.array([cx - ax * shrink * math.sin(phi + turn), heights[v],
                            cz - az * shrink * math.cos(phi + turn)])
            cams[v] = [*eye, *sampler._look_at(eye, target, roll).reshape(-1), FOV_X]
            if free_spot(scene, eye) and good_view(scene, cams[v]):
                break
        else:
            raise SystemExit(f"seed {seed}: no free spot with a good view for view {v}; pick another seed")
    return cams


def colmap_intrinsics(K):
    """render.py's K (pixel centres at integers) -> COLMAP's (the top-left pixel's centre at 0.5)."""
    K = K.copy()
    K[..., 0, 2] += 0.5
    K[..., 1, 2] += 0.5
    return K


def surface_points(depth, valid, K, cam_to_world, seed):
    """The valid pixels of every view lifted to the world, one per SURFACE_VOXEL voxel, N_SURFACE of
    them at random (float32)."""
    V, H, W = depth.shape
    ys, xs = np.mgrid[0:H, 0:W].astype(np.float64)
    pts = []
    for v in range(V):
        z = depth[v][valid[v]].astype(np.float64)
        x = (xs[valid[v]] - K[v, 0, 2]) / K[v, 0, 0] * z
        y = (ys[valid[v]] - K[v, 1, 2]) / K[v, 1, 1] * z
        pts.append(np.stack([x, y, z], 1) @ cam_to_world[v, :3, :3].T + cam_to_world[v, :3, 3])
    pts = np.concatenate(pts)
    rng = np.random.default_rng([seed, 0x5EF])
    pts = pts[rng.permutation(len(pts))]
    _, first = np.unique(np.floor(pts / SURFACE_VOXEL).astype(np.int64), axis=0, return_index=True)
    pts = pts[np.sort(first)]
    if len(pts) > N_SURFACE:
        pts = pts[np.sort(rng.choice(len(pts), N_SURFACE, replace=False))]
    return pts.astype(np.float32)


def overlaps(depth, valid, K, cam_to_world, tolerance=0.02):
    """(V, V): the share of view i's valid pixels that view j sees too (the point lands inside view
    j at the depth view j has there, within `tolerance` relative; K in render.py's convention)."""
    V, H, W = depth.shape
    ys, xs = np.mgrid[0:H, 0:W].astype(np.float64)
    out = np.eye(V)
    for i in range(V):
        z = depth[i][valid[i]].astype(np.float64)
        cam = np.stack([(xs[valid[i]] - K[i, 0, 2]) / K[i, 0, 0] * z,
                        (ys[valid[i]] - K[i, 1, 2]) / K[i, 1, 1] * z, z], 1)
        world = cam @ cam_to_world[i, :3, :3].T + cam_to_world[i, :3, 3]
        for j in range(V):
            if j == i:
                continue
            pj = (world - cam_to_world[j, :3, 3]) @ cam_to_world[j, :3, :3]
            zj = np.where(pj[:, 2] > 1e-6, pj[:, 2], np.nan)
            u = np.round(K[j, 0, 0] * pj[:, 0] / zj + K[j, 0, 2])
            v = np.round(K[j, 1, 1] * pj[:, 1] / zj + K[j, 1, 2])
            inside = (u >= 0) & (u < W) & (v >= 0) & (v < H)
            ui, vi = u[inside].astype(np.int64), v[inside].astype(np.int64)
            seen = valid[j][vi, ui] & (np.abs(depth[j][vi, ui] - zj[inside]) <= tolerance * zj[inside])
            out[i, j] = seen.sum() / max(1, len(z))
    return out


def save_npz(path, arrays):
    """np.savez_compressed with a fixed timestamp on every member, so equal arrays give equal bytes."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for key, value in arrays.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.asanyarray(value), allow_pickle=False)
            info = zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, buf.getvalue(), compresslevel=9)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "scene"))
    ap.add_argument("--seed", type=int, default=SCENE_SEED)
    args = ap.parse_args()
    if splits.is_training_seed(args.seed):
        raise SystemExit(f"seed {args.seed} is a training seed (tools/scenes/splits.py)")
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    t0 = time.time()
    scene = sampler.sample_batch([args.seed], n_views=2)
    scene["cameras"] = walk_cameras({k: v[0] for k, v in scene.items()}, args.seed)[None]
    names = [f"view_{v:02d}.png" for v in range(N_VIEWS)]
    depth, valid, png_bytes = [], [], 0
    for v, name in enumerate(names):  # one view at a time: a 512x384 view at 2x2 needs ~0.7 GB
        views = render.render(scene, WIDTH, HEIGHT, ss=SUPERSAMPLE, views=[v])
        path = os.path.join(args.out, name)
        Image.fromarray(render.to_uint8(views["rgb"])[0, 0].numpy()).save(path, optimize=True)
        png_bytes += os.path.getsize(path)
        depth.append(views["depth"][0, 0].numpy())
        valid.append(views["valid"][0, 0].numpy())
        print(f"{path}: {os.path.getsize(path) // 1024} KiB ({time.time() - t0:.0f} s)")
    K, pose = render.camera_matrices(scene, WIDTH, HEIGHT)
    K, pose = K[0], pose[0]
    points = surface_points(np.stack(depth), np.stack(valid), K, pose, args.seed)
    small = render.render(scene, DEPTH_WIDTH, DEPTH_HEIGHT, ss=1)
    Ks, _ = render.camera_matrices(scene, DEPTH_WIDTH, DEPTH_HEIGHT)
    gt = {
        "images": np.array(names), "width": np.int64(WIDTH), "height": np.int64(HEIGHT),
        "cam_to_world": pose, "intrinsics": colmap_intrinsics(K),
        "depth": small["depth"][0].numpy().astype(np.float32), "valid": small["valid"][0].numpy(),
        "depth_width": np.int64(DEPTH_WIDTH), "depth_height": np.int64(DEPTH_HEIGHT),
        "depth_intrinsics": colmap_intrinsics(Ks[0]),
        "overlap": overlaps(small["depth"][0].numpy(), small["valid"][0].numpy(), Ks[0], pose),
        "surface_points": points, "seed": np.int64(args.seed), "generator": np.array(GENERATOR_VERSION),
    }
    path = os.path.join(args.out, "scene_gt.npz")
    save_npz(path, gt)
    centres = pose[:, :3, 3]
    print(f"{path}: {os.path.getsize(path) // 1024} KiB (seed {args.seed}, depth {DEPTH_WIDTH}x{DEPTH_HEIGHT}, "
          f"{len(points)} surface points)")
    ov = gt["overlap"]
    print("overlap of consecutive views " + " ".join(f"{ov[v, v + 1]:.2f}" for v in range(N_VIEWS - 1))
          + f", of the last and the first {ov[-1, 0]:.2f}")
    print(f"{N_VIEWS} views, PNGs {png_bytes / 2**20:.2f} MiB, camera centres span "
          f"{np.linalg.norm(centres.max(0) - centres.min(0)):.2f} m, {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
