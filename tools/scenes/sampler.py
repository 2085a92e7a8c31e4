"""Scene and camera parameters from a seed: numpy's PCG64 on the CPU, so a seed gives the same scene on
every device. The renderer (render.py) only reads these arrays.

World frame: metres, y up, the floor at y = 0; the room spans x in [-hw, hw], z in [0, depth]. Cameras
stand in the front part of the room (z < 1.6 m) and look into it; objects stand behind z = 2 m, so no
camera is ever inside an object. Camera frames are OpenCV's (x right, y down, z forward);
cam_to_world holds the camera axes as columns.

Fixed slot counts (unused slots disabled) keep a batch of scenes one set of dense tensors:
6 room planes, N_BOX boxes (slabs are thin boxes), N_SPHERE spheres, N_CYL vertical cylinders. Object
ids: planes 0..5, then boxes, spheres, cylinders; -1 is the sky.
"""

import numpy as np

N_PLANE, N_BOX, N_SPHERE, N_CYL = 6, 7, 4, 3
N_OBJ = N_PLANE + N_BOX + N_SPHERE + N_CYL
BOX0, SPHERE0, CYL0 = N_PLANE, N_PLANE + N_BOX, N_PLANE + N_BOX + N_SPHERE
N_MATERIAL_PARAMS = 10  # kind, colour a (3), colour b (3), scale, angle, pattern seed
MATERIALS = ("plain", "checker", "brick", "planks", "marble", "noise", "stripes")


def _colour(rng, light=None):
    """A random albedo, kept off pure black and white (the textures multiply it)."""
    h = rng.uniform(0, 1)
    s = rng.uniform(0.15, 0.8)
    v = rng.uniform(0.35, 0.95) if light is None else light
    # hsv -> rgb
    k = (np.array([5.0, 3.0, 1.0]) + h * 6.0) % 6.0
    return v - v * s * np.clip(np.minimum(k, 4.0 - k), 0.0, 1.0)


def _material(rng, kinds=None, prob=None):
    kind = rng.choice(len(MATERIALS), p=prob) if kinds is None else rng.choice(kinds)
    a, b = _colour(rng), _colour(rng)
    scale = {"plain": 1.0, "checker": rng.uniform(0.08, 0.35), "brick": rng.uniform(0.06, 0.12),
             "planks": rng.uniform(0.12, 0.3), "marble": rng.uniform(0.3, 1.0), "noise": rng.uniform(0.05, 0.3),
             "stripes": rng.uniform(0.03, 0.2)}[MATERIALS[kind]]
    return np.concatenate([[kind], a, b, [scale, rng.uniform(0, np.pi), rng.integers(0, 1 << 20)]])


def _look_at(eye, target, roll):
    fwd = target - eye
    fwd /= np.linalg.norm(fwd)
    right = np.cross(fwd, np.array([0.0, 1.0, 0.0]))  # x right when y is up and z looks forward
    right /= np.linalg.norm(right)
    down = np.cross(fwd, right)
    c, s = np.cos(roll), np.sin(roll)
    right, down = c * right + s * down, -s * right + c * down
    return np.stack([right, down, fwd], axis=1)  # columns: camera x, y, z in the world


def sample_scene(seed, n_views=2):
    """One scene: a dict of float64 arrays without a batch axis (stack() batches them)."""
    rng = np.random.default_rng(seed)
    hw, depth, height = rng.uniform(2.0, 3.8), rng.uniform(5.0, 8.5), rng.uniform(2.4, 3.4)
    has_ceiling = rng.uniform() < 0.35
    planes = np.zeros((N_PLANE, 5))  # normal (3), offset d (n.p = d), enabled
    planes[0] = [0, 1, 0, 0.0, 1]                       # floor, always
    planes[1] = [0, -1, 0, -height, has_ceiling]        # ceiling
    planes[2] = [1, 0, 0, -hw, rng.uniform() < 0.85]    # left wall x = -hw
    planes[3] = [-1, 0, 0, -hw, rng.uniform() < 0.85]   # right wall x = hw
    planes[4] = [0, 0, -1, -depth, rng.uniform() < 0.9]  # back wall z = depth
    planes[5] = [0, 0, 1, 0.0, 1]                       # wall behind the cameras
    materials = np.zeros((N_OBJ, N_MATERIAL_PARAMS))
    floor_kinds = [1, 2, 3, 3, 3, 4, 5]
    wall_kinds = [0, 1, 2, 2, 4, 5, 6]
    materials[0] = _material(rng, floor_kinds)
    materials[1] = _material(rng, [0, 5])
    wall = _material(rng, wall_kinds)
    for k in (2, 3, 4, 5):  # walls share a material, or one wall differs (an accent wall)
        materials[k] = wall if rng.uniform() < 0.6 else _material(rng, wall_kinds)

    obj_prob = np.array([0.06, 0.2, 0.14, 0.14, 0.16, 0.16, 0.14])
    zmin = 2.0
    boxes = np.zeros((N_BOX, 8))  # centre (3), half size (3), yaw, enabled
    n_box = rng.integers(2, N_BOX + 1)
    for k in range(n_box):
        if rng.uniform() < 0.25:  # a slab: a thin board, lying or standing, maybe raised
            half = np.array([rng.uniform(0.3, 0.9), rng.uniform(0.02, 0.05), rng.uniform(0.2, 0.6)])
            if rng.uniform() < 0.4:
                half = half[[0, 2, 1]]
            y = half[1] + (rng.uniform(0.0, 1.2) if rng.uniform() < 0.6 else 0.0)
        else:
            half = rng.uniform([0.15, 0.12, 0.15], [0.7, 0.8, 0.7])
            y = half[1] + (rng.uniform(0.0, 0.6) if rng.uniform() < 0.15 else 0.0)
        r = np.hypot(half[0], half[2])
        x = rng.uniform(-hw + r * 0.8, hw - r * 0.8)
        z = rng.uniform(zmin + r, depth - r * 0.8)
        boxes[k] = [x, y, z, *half, rng.uniform(0, np.pi), 1]
        materials[BOX0 + k] = _material(rng, prob=obj_prob)
    spheres = np.zeros((N_SPHERE, 5))  # centre (3), radius, enabled
    for k in range(rng.integers(1, N_SPHERE + 1)):
        r = rng.uniform(0.12, 0.6)
        y = r + (rng.uniform(0.0, 1.0) if rng.uniform() < 0.3 else 0.0)
        spheres[k] = [rng.uniform(-hw + r, hw - r), y, rng.uniform(zmin + r, depth - r), r, 1]
        materials[SPHERE0 + k] = _material(rng, prob=obj_prob)
    cylinders = np.zeros((N_CYL, 6))  # centre x, z, radius, y0, y1, enabled
    for k in range(rng.integers(0, N_CYL + 1)):
        r = rng.uniform(0.08, 0.45)
        y1 = rng.uniform(0.3, min(2.2, height - 0.05))
        cylinders[k] = [rng.uniform(-hw + r, hw - r), rng.uniform(zmin + r, depth - r), r, 0.0, y1, 1]
        materials[CYL0 + k] = _material(rng, prob=obj_prob)

    elev, azim = rng.uniform(np.radians(25), np.radians(70)), rng.uniform(0, 2 * np.pi)
    sun = np.array([np.cos(elev) * np.cos(azim), np.sin(elev), np.cos(elev) * np.sin(azim)])
    light = np.concatenate([sun, [rng.uniform(0.6, 1.0), rng.uniform(0.3, 0.5)],
                            _colour(rng, light=rng.uniform(0.8, 0.95)) * 0.3 + np.array([0.45, 0.55, 0.7])])

    # Cameras: a hand-held pair (or sequence): the first in the front of the room looking at a point
    # among the objects; each next one moved sideways/forwards by 0.3-1.4 m, looking near the same
    # point, a few degrees of roll. Overlap of consecutive views is mostly 30-90 % (correspond.py).
    eye0 = np.array([rng.uniform(-hw * 0.55, hw * 0.55), rng.uniform(0.9, 1.9), rng.uniform(0.3, 1.4)])
    target = np.array([rng.uniform(-hw * 0.6, hw * 0.6), rng.uniform(0.2, 1.1),
                       rng.uniform(zmin + 0.5, depth - 0.8)])
    step = rng.normal(size=3) * np.array([1.0, 0.25, 0.5])
    step *= rng.uniform(0.3, 1.4) / max(np.linalg.norm(step), 1e-6)
    fov = rng.uniform(np.radians(50), np.radians(72))
    cams = np.zeros((n_views, 13))  # eye (3), cam_to_world rotation (9, row-major), horizontal fov
    for v in range(n_views):
        eye = eye0 + step * v + (rng.normal(size=3) * 0.05 if v else 0.0)
        eye[0] = np.clip(eye[0], -hw + 0.3, hw - 0.3)
        eye[1] = np.clip(eye[1], 0.4, height - 0.2)
        eye[2] = np.clip(eye[2], 0.2, zmin - 0.3)
        tgt = target + (rng.normal(size=3) * np.array([0.6, 0.2, 0.5]) if v else 0.0)
        rot = _look_at(eye, tgt, rng.normal() * np.radians(3.0))
        cams[v] = [*eye, *rot.reshape(-1), fov]
    return {"planes": planes, "boxes": boxes, "spheres": spheres, "cylinders": cylinders,
            "materials": materials, "light": light, "cameras": cams, "seed": np.array(float(seed))}


def stack(scenes):
    """A batch of scenes: every array gains a leading batch axis."""
    return {k: np.stack([s[k] for s in scenes]) for k in scenes[0]}


def sample_batch(seeds, n_views=2):
    return stack([sample_scene(int(s), n_views) for s in seeds])
