"""Nearest hits of rays against a batch of scenes (torch; any device and float dtype).

Rays are (B, R, 3) origins and directions, directions need not be unit length (t is measured in units
of the direction, so camera rays with z_cam = 1 give depth directly). Scene tensors carry the same
batch axis B (see sampler.py for the layout). Loops run over object slots, vectorised over every ray
of every scene, so memory stays O(B * R).
"""

import torch

from .sampler import BOX0, CYL0, N_BOX, N_CYL, N_PLANE, N_SPHERE, SPHERE0

T_MIN = 1e-4


def _rot_y(v, c, s):
    """Rotate (..., 3) vectors about y by the angle with cosine c, sine s (each (...))."""
    x, y, z = v[..., 0], v[..., 1], v[..., 2]
    return torch.stack([c * x + s * z, y, -s * x + c * z], dim=-1)


class Hits:
    """t (B, R), object id (B, R; -1 none), world normal (B, R, 3), surface coordinates uv (B, R, 2)."""

    def __init__(self, t, ids, normal, uv):
        self.t, self.ids, self.normal, self.uv = t, ids, normal, uv


def intersect(scene, origin, direction, with_planes=True, shading=True):
    """Nearest hit per ray. shading=False skips normals and uv (shadow rays need only t and ids)."""
    B, R, _ = origin.shape
    dt = origin.dtype
    inf = torch.tensor(float("inf"), dtype=dt, device=origin.device)
    t_best = torch.full((B, R), float("inf"), dtype=dt, device=origin.device)
    ids = torch.full((B, R), -1, dtype=torch.int64, device=origin.device)
    normal = torch.zeros((B, R, 3), dtype=dt, device=origin.device) if shading else None
    uv = torch.zeros((B, R, 2), dtype=dt, device=origin.device) if shading else None

    def take(t, obj, n=None, tex=None):
        better = (t > T_MIN) & (t < t_best)
        t_best.copy_(torch.where(better, t, t_best))
        ids.copy_(torch.where(better, torch.full_like(ids, obj), ids))
        if shading:
            normal.copy_(torch.where(better[..., None], n, normal))
            uv.copy_(torch.where(better[..., None], tex, uv))

    if with_planes:
        planes = scene["planes"]
        for k in range(N_PLANE):
            n = planes[:, k, None, 0:3]  # (B, 1, 3)
            d, on = planes[:, k, None, 3], planes[:, k, None, 4] > 0.5
            den = (direction * n).sum(-1)
            t = (d - (origin * n).sum(-1)) / torch.where(den < 0, den, -torch.ones_like(den))
            t = torch.where((den < -1e-9) & on, t, inf)
            tex = None
            if shading:
                p = origin + direction * t.clamp(max=1e4)[..., None]
                # in-plane axes: floor/ceiling (x, z), side walls (z, y), end walls (x, y)
                ax = torch.abs(n)
                u = ax[..., 1] * p[..., 0] + ax[..., 0] * p[..., 2] + ax[..., 2] * p[..., 0]
                v = ax[..., 1] * p[..., 2] + ax[..., 0] * p[..., 1] + ax[..., 2] * p[..., 1]
                tex = torch.stack([u, v], -1)
            take(t, k, n.expand(B, R, 3), tex)

    boxes = scene["boxes"]
    for k in range(N_BOX):
        c, half = boxes[:, k, None, 0:3], boxes[:, k, None, 3:6]
        cy, sy = torch.cos(boxes[:, k, None, 6]), torch.sin(boxes[:, k, None, 6])
        on = boxes[:, k, None, 7] > 0.5
        o = _rot_y(origin - c, cy, -sy)  # into the box frame
        d = _rot_y(direction, cy, -sy)
        safe = torch.where(torch.abs(d) < 1e-12, torch.full_like(d, 1e-12), d)
        t0, t1 = (-half - o) / safe, (half - o) / safe
        tmin, tmax = torch.minimum(t0, t1), torch.maximum(t0, t1)
        t_near, axis = tmin.max(-1)
        t_far = tmax.min(-1).values
        hit = on & (t_near <= t_far) & (t_near > T_MIN)
        t = torch.where(hit, t_near, inf)
        n = tex = None
        if shading:
            onehot = torch.nn.functional.one_hot(axis, 3).to(dt)
            n = _rot_y(-torch.sign(d) * onehot, cy, sy)
            q = o + d * t.clamp(max=1e4)[..., None] + half  # face coordinates from the box corner
            u = torch.where(axis == 0, q[..., 2], q[..., 0])
            v = torch.where(axis == 1, q[..., 2], q[..., 1])
            tex = torch.stack([u, v], -1)
        take(t, BOX0 + k, n, tex)

    sph = scene["spheres"]
    for k in range(N_SPHERE):
        c, r, on = sph[:, k, None, 0:3], sph[:, k, None, 3], sph[:, k, None, 4] > 0.5
        oc = origin - c
        a = (direction * direction).sum(-1)
        b = (oc * direction).sum(-1)
        disc = b * b - a * ((oc * oc).sum(-1) - r * r)
        t = (-b - torch.sqrt(disc.clamp(min=0))) / a
        t = torch.where(on & (disc > 0), t, inf)
        n = tex = None
        if shading:
            q = (oc + direction * t.clamp(max=1e4)[..., None]) / r[..., None]
            n = q
            u = torch.atan2(q[..., 2], q[..., 0]) * r
            tex = torch.stack([u, q[..., 1] * r], -1)
        take(t, SPHERE0 + k, n, tex)

    cyl = scene["cylinders"]
    for k in range(N_CYL):
        cx, cz, r = cyl[:, k, None, 0], cyl[:, k, None, 1], cyl[:, k, None, 2]
        y0, y1, on = cyl[:, k, None, 3], cyl[:, k, None, 4], cyl[:, k, None, 5] > 0.5
        ox, oz = origin[..., 0] - cx, origin[..., 2] - cz
        dx, dz = direction[..., 0], direction[..., 2]
        a = (dx * dx + dz * dz).clamp(min=1e-12)
        b = ox * dx + oz * dz
        disc = b * b - a * (ox * ox + oz * oz - r * r)
        ts = (-b - torch.sqrt(disc.clamp(min=0))) / a
        ys = origin[..., 1] + direction[..., 1] * ts
        ts = torch.where(on & (disc > 0) & (ys >= y0) & (ys <= y1), ts, inf)
        dy = torch.where(torch.abs(direction[..., 1]) < 1e-12, torch.full_like(dx, 1e-12), direction[..., 1])
        tc = (y1 - origin[..., 1]) / dy  # the top cap, seen from above
        px, pz = ox + dx * tc, oz + dz * tc
        tc = torch.where(on & (direction[..., 1] < 0) & (px * px + pz * pz <= r * r), tc, inf)
        side = ts <= tc
        t = torch.minimum(ts, tc)
        n = tex = None
        if shading:
            tt = t.clamp(max=1e4)
            px, pz = ox + dx * tt, oz + dz * tt
            py = origin[..., 1] + direction[..., 1] * tt
            zero = torch.zeros_like(px)
            n = torch.where(side[..., None], torch.stack([px / r, zero, pz / r], -1),
                            torch.stack([zero, zero + 1, zero], -1))
            u = torch.where(side, torch.atan2(pz, px) * r, px)
            v = torch.where(side, py, pz)
            tex = torch.stack([u, v], -1)
        take(t, CYL0 + k, n, tex)
    return Hits(t_best, ids, normal, uv)
