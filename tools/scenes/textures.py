"""Procedural materials: albedo from surface coordinates (u, v in metres) and a material's parameters.

Randomness comes from an integer hash of lattice coordinates (no sin-based hashing: that amplifies the
last-bit differences between CPU and GPU sin into visible ones), so the CPU and CUDA paths agree to
rounding. Every function takes and returns torch tensors of any leading shape; params is (..., 10)
as sampler.py lays them out: kind, colour a, colour b, scale, angle, pattern seed.
"""

import torch

_MASK = 0xFFFFFFFF


def _hash32(x):
    """A 32-bit integer mix (int64 tensors holding values < 2^32; the products stay below 2^63)."""
    x = x & _MASK
    x = (((x >> 16) ^ x) * 0x45D9F3B) & _MASK
    x = (((x >> 16) ^ x) * 0x45D9F3B) & _MASK
    return (x >> 16) ^ x


def lattice_hash(i, j, seed):
    """Uniform [0, 1) from integer lattice coordinates (int64 tensors, any sign) and a seed."""
    h = _hash32((i + (1 << 20)) * 73856093 ^ (j + (1 << 20)) * 19349663 ^ seed * 83492791)
    return (h & 0xFFFFFF).to(torch.float32) / float(1 << 24)


def value_noise(u, v, seed):
    """Smooth value noise in [0, 1] with unit lattice spacing."""
    fu, fv = torch.floor(u), torch.floor(v)
    i, j = fu.to(torch.int64), fv.to(torch.int64)
    tu, tv = u - fu, v - fv
    tu, tv = tu * tu * (3 - 2 * tu), tv * tv * (3 - 2 * tv)
    h00, h10 = lattice_hash(i, j, seed).to(u.dtype), lattice_hash(i + 1, j, seed).to(u.dtype)
    h01, h11 = lattice_hash(i, j + 1, seed).to(u.dtype), lattice_hash(i + 1, j + 1, seed).to(u.dtype)
    return (h00 * (1 - tu) + h10 * tu) * (1 - tv) + (h01 * (1 - tu) + h11 * tu) * tv


def fbm(u, v, seed, octaves=4):
    """Fractal noise in about [0, 1]: octaves of value noise at doubling frequency, halving weight."""
    out, amp, total = torch.zeros_like(u), 1.0, 0.0
    for k in range(octaves):
        f = float(1 << k)
        out = out + amp * value_noise(u * f + 17.0 * k, v * f - 31.0 * k, seed + k)
        total += amp
        amp *= 0.5
    return out / total


def _mix(a, b, t):
    return a * (1 - t[..., None]) + b * t[..., None]


def albedo(u, v, params):
    """Albedo (..., 3) in [0, 1] of every material kind, chosen per element by params[..., 0]."""
    kind = params[..., 0].round().to(torch.int64)
    ca, cb = params[..., 1:4], params[..., 4:7]
    scale, angle, seed = params[..., 7], params[..., 8], params[..., 9].round().to(torch.int64)
    c, s = torch.cos(angle), torch.sin(angle)
    ru, rv = (c * u - s * v) / scale, (s * u + c * v) / scale  # pattern axes, in units of its scale
    grain = fbm(u * 6.0, v * 6.0, seed)  # fine mottling every material gets

    out = ca * (0.85 + 0.3 * grain)[..., None]  # 0 plain

    cu, cv = torch.floor(ru), torch.floor(rv)  # 1 checker
    chk = torch.remainder(cu + cv, 2.0)
    checker = _mix(ca, cb, chk) * (0.9 + 0.2 * grain)[..., None]
    out = torch.where((kind == 1)[..., None], checker, out)

    row = torch.floor(rv)  # 2 brick: scale = brick height, bricks 2.8 high-units long, running bond
    bu = ru / 2.8 + 0.5 * torch.remainder(row, 2.0)
    col = torch.floor(bu)
    fu, fv = bu - col, rv - row
    mortar = torch.minimum(torch.minimum(fu, 1 - fu) * 2.8, torch.minimum(fv, 1 - fv))
    tone = lattice_hash(col.to(torch.int64), row.to(torch.int64), seed).to(u.dtype)
    brick = ca * (0.75 + 0.4 * tone)[..., None] * (0.9 + 0.2 * grain)[..., None]
    mortar_col = 0.55 + 0.4 * cb.mean(-1, keepdim=True).expand_as(cb)
    brick = _mix(mortar_col, brick, torch.clamp((mortar - 0.07) / 0.05, 0.0, 1.0))
    out = torch.where((kind == 2)[..., None], brick, out)

    prow = torch.floor(rv)  # 3 planks: scale = plank width, staggered joints along the plank
    along = ru / 5.0 + lattice_hash(prow.to(torch.int64), prow.to(torch.int64) * 0 + 7, seed).to(u.dtype)
    pcol = torch.floor(along)
    joint = torch.minimum(torch.minimum(along - pcol, 1 - (along - pcol)) * 5.0,
                          torch.minimum(rv - prow, 1 - (rv - prow)))
    ptone = lattice_hash(pcol.to(torch.int64), prow.to(torch.int64), seed + 3).to(u.dtype)
    wood = fbm(ru * 0.5, rv * 8.0, seed + 5, octaves=3)
    plank = _mix(ca, cb, 0.35 * ptone + 0.4 * wood) * (0.8 + 0.3 * ptone)[..., None]
    plank = plank * (0.45 + 0.55 * torch.clamp(joint / 0.04, 0.0, 1.0))[..., None]
    out = torch.where((kind == 3)[..., None], plank, out)

    warp = fbm(ru * 2.0, rv * 2.0, seed + 11)  # 4 marble: veins along a warped direction
    vein = torch.abs(torch.sin(3.14159265 * (ru * 2.0 + 4.0 * warp))) ** 0.35
    out = torch.where((kind == 4)[..., None], _mix(cb * 0.6, ca * 0.5 + 0.5, vein), out)

    blot = fbm(ru, rv, seed + 13)  # 5 noise: two colours through fractal noise
    out = torch.where((kind == 5)[..., None], _mix(ca, cb, torch.clamp(blot * 2.2 - 0.6, 0.0, 1.0)), out)

    band = 0.5 + 0.5 * torch.sin(3.14159265 * ru)  # 6 stripes, soft-edged
    out = torch.where((kind == 6)[..., None], _mix(ca, cb, torch.clamp((band - 0.5) * 6 + 0.5, 0.0, 1.0)), out)
    return torch.clamp(out, 0.0, 1.0)
