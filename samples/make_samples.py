#!/usr/bin/python3
"""Renders the two demo views in samples/ (view_a.png, view_b.png) with a tiny CPU ray caster.

One scene, two cameras: a room corner (plank floor, brick back wall, plaster side wall) with a
checkered crate, a marble-ish sphere and a small glossy ball, lit by a sun with hard shadows and
sky ambient. The second camera stands 0.6 m to the right of the first and looks at the same
point, as a person would take two photos for a stereo reconstruction. Everything is procedural
and deterministic (numpy only, no random state), so re-running reproduces the files.

  /usr/bin/python3 samples/make_samples.py            # writes samples/view_a.png, samples/view_b.png
  /usr/bin/python3 samples/make_samples.py --out DIR

Sizes: 512x384 (what the official loader gives for the released 512 model), supersampled 2x2.
This script must not write anywhere except its --out directory.
"""

import argparse
import os

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
WIDTH, HEIGHT, SUPERSAMPLE = 512, 384, 2
INF = np.float64(1e30)


# ------------------------------------------------------------------------------------- textures


def smooth_noise(u, v, freq, seed):
    """Cheap deterministic value-noise-like field in [-1, 1] from a few sines (no random state)."""
    out = np.zeros_like(u)
    for k in range(4):
        a = 1.7 * k + seed
        fu, fv = freq * (1.9 ** k) * np.cos(a), freq * (1.9 ** k) * np.sin(a)
        out += np.sin(2 * np.pi * (fu * u + fv * v) + 3.1 * seed + k) / (1.8 ** k)
    return out / 2.0


def planks(u, v):
    """Wooden floor: planks 0.25 m wide along x, staggered joints, grain along the plank."""
    row = np.floor(v / 0.25)
    offset = (row * 0.37) % 1.0
    along = u / 1.2 + offset
    joint = np.minimum(np.abs(along - np.round(along)) * 1.2, np.abs(v / 0.25 - np.round(v / 0.25)) * 0.25)
    tone = 0.85 + 0.15 * np.sin(row * 12.9898) ** 2
    grain = 0.5 + 0.5 * np.sin(2 * np.pi * (v * 14.0 + 0.8 * smooth_noise(u, v, 0.6, 1.0)))
    base = np.stack([0.62 + 0.10 * grain, 0.42 + 0.07 * grain, 0.24 + 0.04 * grain], -1) * tone[..., None]
    dark = np.clip(joint / 0.006, 0.0, 1.0)[..., None]
    return base * (0.55 + 0.45 * dark)


def bricks(u, v):
    """Brick wall: 0.24 x 0.08 m bricks in running bond, mortar lines, per-brick colour."""
    bh, bw = 0.08, 0.24
    row = np.floor(v / bh)
    uu = u / bw + 0.5 * (row % 2)
    col = np.floor(uu)
    fu, fv = uu - col, v / bh - row
    mortar = np.minimum(np.minimum(fu, 1 - fu) * bw, np.minimum(fv, 1 - fv) * bh)
    h = np.sin(row * 91.7 + col * 47.3) * 43758.5453
    h = h - np.floor(h)
    brick = np.stack([0.58 + 0.14 * h, 0.25 + 0.06 * h, 0.18 + 0.04 * h], -1)
    brick *= (0.92 + 0.08 * smooth_noise(u, v, 2.0, 2.0))[..., None]
    mortar_col = np.array([0.72, 0.70, 0.66])
    m = np.clip((mortar - 0.006) / 0.004, 0.0, 1.0)[..., None]
    return brick * m + mortar_col * (1 - m)


def plaster(u, v):
    """Pale plaster with a faint mottling and a darker skirting board at the bottom."""
    base = np.array([0.80, 0.78, 0.72]) * (0.95 + 0.05 * smooth_noise(u, v, 1.5, 3.0))[..., None]
    skirting = (v < 0.12)[..., None]
    return np.where(skirting, np.array([0.35, 0.30, 0.26]), base)


def checker_crate(u, v):
    """A crate: teal and cream checks 0.1 m, with a dark border."""
    cu, cv = np.floor(u / 0.1), np.floor(v / 0.1)
    chk = ((cu + cv) % 2)[..., None]
    col = chk * np.array([0.15, 0.45, 0.50]) + (1 - chk) * np.array([0.88, 0.84, 0.70])
    return col


def marble(p):
    """Sphere texture from the 3D point: veined white-grey marble."""
    t = p[..., 0] * 3.0 + p[..., 1] * 2.0 + 1.5 * smooth_noise(p[..., 1] * 2, p[..., 2] * 2, 0.8, 4.0)
    vein = np.abs(np.sin(np.pi * t)) ** 0.3
    return np.stack([0.55 + 0.4 * vein, 0.55 + 0.38 * vein, 0.60 + 0.35 * vein], -1)


# ------------------------------------------------------------------------------------ geometry

# Scene in metres: y up, the floor at y = 0, the back wall at z = 4, the left wall at x = -2.
SUN = np.array([0.5, 1.0, -0.6])
SUN = SUN / np.linalg.norm(SUN)
BOX_MIN, BOX_MAX = np.array([-1.1, 0.0, 2.2]), np.array([-0.3, 0.6, 3.0])
SPHERES = [  # centre, radius, kind
    (np.array([0.55, 0.45, 2.5]), 0.45, "marble"),
    (np.array([0.05, 0.18, 1.75]), 0.18, "red"),
]


def intersect(origin, direction):
    """Nearest hit of each ray: (t, object id, normal). Ids: 0 floor, 1 back wall, 2 left wall,
    3 crate, 4.. spheres; -1 none."""
    n = direction.shape[0]
    t_best = np.full(n, INF)
    ids = np.full(n, -1)
    normal = np.zeros((n, 3))

    def take(t, obj, nrm):
        better = (t > 1e-6) & (t < t_best)
        t_best[better] = t[better]
        ids[better] = obj
        normal[better] = nrm[better] if nrm.ndim == 2 else nrm

    with np.errstate(divide="ignore", invalid="ignore"):
        take(np.where(direction[:, 1] < 0, -origin[:, 1] / direction[:, 1], INF), 0, np.array([0.0, 1.0, 0.0]))
        take(np.where(direction[:, 2] > 0, (4.0 - origin[:, 2]) / direction[:, 2], INF), 1, np.array([0.0, 0.0, -1.0]))
        take(np.where(direction[:, 0] < 0, (-2.0 - origin[:, 0]) / direction[:, 0], INF), 2, np.array([1.0, 0.0, 0.0]))
        # slab test for the crate
        inv = 1.0 / direction
        t0 = (BOX_MIN - origin) * inv
        t1 = (BOX_MAX - origin) * inv
        tmin, tmax = np.minimum(t0, t1), np.maximum(t0, t1)
        t_near = tmin.max(axis=1)
        t_far = tmax.min(axis=1)
        hit = (t_near <= t_far) & (t_far > 1e-6)
        axis = tmin.argmax(axis=1)
        box_n = np.zeros((n, 3))
        box_n[np.arange(n), axis] = -np.sign(direction[np.arange(n), axis])
        take(np.where(hit, t_near, INF), 3, box_n)
        for k, (c, r, _) in enumerate(SPHERES):
            oc = origin - c
            b = (oc * direction).sum(1)
            disc = b * b - ((oc * oc).sum(1) - r * r)
            t = np.where(disc > 0, -b - np.sqrt(np.maximum(disc, 0)), INF)
            p = origin + direction * t[:, None]
            take(t, 4 + k, (p - c) / r)
    return t_best, ids, normal


def shade(origin, direction):
    t, ids, normal = intersect(origin, direction)
    p = origin + direction * np.minimum(t, 100.0)[:, None]
    albedo = np.zeros_like(p)
    sky = np.array([0.70, 0.80, 0.92])
    albedo[ids == -1] = sky
    m = ids == 0
    albedo[m] = planks(p[m, 0], p[m, 2])
    m = ids == 1
    albedo[m] = bricks(p[m, 0], p[m, 1])
    m = ids == 2
    albedo[m] = plaster(p[m, 2], p[m, 1])
    m = ids == 3
    # pick the two in-face coordinates of the crate by its normal
    face = np.abs(normal[m]).argmax(1)
    q = p[m] - BOX_MIN
    u = np.where(face == 0, q[:, 2], q[:, 0])
    v = np.where(face == 1, q[:, 2], q[:, 1])
    albedo[m] = checker_crate(u, v)
    m = ids == 4
    albedo[m] = marble(p[m])
    m = ids == 5
    albedo[m] = np.array([0.75, 0.12, 0.10])

    # sun with hard shadows + hemispherical sky light + a gentle distance falloff
    lit = ids >= 0
    shadow_origin = p[lit] + normal[lit] * 1e-4
    st, sid, _ = intersect(shadow_origin, np.broadcast_to(SUN, shadow_origin.shape).copy())
    in_sun = sid == -1
    diffuse = np.clip((normal[lit] * SUN).sum(1), 0, None) * in_sun
    skyl = 0.35 + 0.15 * normal[lit, 1]
    light = 0.85 * diffuse + skyl
    col = albedo.copy()
    col[lit] = albedo[lit] * light[:, None]
    # a specular glint on the small ball
    m = ids[lit] == 5
    refl = direction[lit][m] - 2 * (direction[lit][m] * normal[lit][m]).sum(1, keepdims=True) * normal[lit][m]
    spec = np.clip((refl * SUN).sum(1), 0, None) ** 40 * in_sun[m]
    sub = col[lit]
    sub[m] += spec[:, None] * 0.9
    col[lit] = sub
    return np.clip(col, 0, 1)


def camera_rays(eye, target, width, height, fov_deg=60.0):
    forward = target - eye
    forward = forward / np.linalg.norm(forward)
    right = np.cross(np.array([0.0, 1.0, 0.0]), forward)
    right = right / np.linalg.norm(right)
    up = np.cross(forward, right)
    f = 0.5 * width / np.tan(np.radians(fov_deg) / 2)
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float64)
    d = (xs - width / 2 + 0.5)[..., None] * right - (ys - height / 2 + 0.5)[..., None] * up + f * forward
    d = d.reshape(-1, 3)
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    return np.broadcast_to(eye, d.shape).copy(), d


def render(eye, target):
    w, h = WIDTH * SUPERSAMPLE, HEIGHT * SUPERSAMPLE
    origin, direction = camera_rays(eye, target, w, h)
    col = shade(origin, direction).reshape(h, w, 3)
    col = col ** (1 / 1.15)  # mild tone curve
    img = Image.fromarray(np.round(col * 255).astype(np.uint8), "RGB")
    return img.resize((WIDTH, HEIGHT), Image.BOX)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=HERE)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    target = np.array([-0.1, 0.35, 2.6])
    views = {"view_a.png": np.array([-0.5, 1.35, -0.2]), "view_b.png": np.array([0.1, 1.30, -0.15])}
    for name, eye in views.items():
        path = os.path.join(args.out, name)
        render(eye, target).save(path, optimize=True)
        print(f"{path}: {os.path.getsize(path) // 1024} KiB")


if __name__ == "__main__":
    main()
