#!/usr/bin/python3
"""Pictures of a demo run for the README (docs/images/): what scripts/demo wrote, shown as a person
sees it.

  demo_figures.py OUT_DIR GT.npz IMAGES_DIR
    demo_depth.png    the two input views over recon's depth PNGs (reconctl infer)
    demo_matches.png  60 of recon's matches (reconctl match), green within 3 px of the ground truth,
                      red otherwise
    demo_cloud.png    scene.ply splatted with a z-buffer from a viewpoint beside and above camera 1

OUT_DIR is scripts/demo's --out (with matches/ inside); GT.npz samples/view_gt.npz.
"""

import os
import sys

import numpy as np
from PIL import Image, ImageDraw


def read_ply(path):
    with open(path, "rb") as f:
        n = 0
        while True:
            line = f.readline().decode("ascii").strip()
            if line.startswith("element vertex"):
                n = int(line.split()[-1])
            if line == "end_header":
                break
        rec = np.frombuffer(f.read(n * 15), dtype=[("p", "<f4", 3), ("c", "u1", 3)])
    return rec["p"].astype(np.float64), rec["c"]


def depth_figure(out, dst):
    ims = [Image.open(os.path.join(out, n)).convert("RGB") for n in ("input_1.png", "input_2.png", "depth_1.png", "depth_2.png")]
    w, h = ims[0].size
    grid = Image.new("RGB", (2 * w + 6, 2 * h + 6), "white")
    for i, im in enumerate(ims):
        grid.paste(im, ((i % 2) * (w + 6), (i // 2) * (h + 6)))
    grid.save(dst)


def matches_figure(out, gt, dst, count=60):
    a = Image.open(os.path.join(out, "input_1.png")).convert("RGB")
    b = Image.open(os.path.join(out, "input_2.png")).convert("RGB")
    w, h = a.size
    img = Image.new("RGB", (2 * w + 6, h), "white")
    img.paste(a, (0, 0))
    img.paste(b, (w + 6, 0))
    img = img.resize((img.width * 2, img.height * 2), Image.BICUBIC)
    d = ImageDraw.Draw(img)
    xy1 = np.load(os.path.join(out, "matches", "matches_1.npy")).reshape(-1, 2)
    xy2 = np.load(os.path.join(out, "matches", "matches_2.npy")).reshape(-1, 2)
    pick = np.linspace(0, len(xy1) - 1, min(count, len(xy1))).astype(int)
    for k in pick:
        (x1, y1), (x2, y2) = xy1[k], xy2[k]
        err = np.linalg.norm(gt["corr_xy"][y1, x1] - (x2, y2))
        good = bool(gt["covisible"][y1, x1]) and err <= 3
        col = (40, 200, 60) if good else (230, 40, 40)
        p, q = (2 * x1 + 1, 2 * y1 + 1), (2 * (x2 + w + 6) + 1, 2 * y2 + 1)
        d.line([p, q], fill=col, width=2)
        for c in (p, q):
            d.ellipse([c[0] - 3, c[1] - 3, c[0] + 3, c[1] + 3], outline=col, width=2)
    img.save(dst)


def cloud_figure(out, dst, size=(640, 480)):
    pts, col = read_ply(os.path.join(out, "scene.ply"))
    centre = np.median(pts, 0)
    # a camera 25 degrees to the side and 25 degrees above camera 1, further back,, looking at the cloud's centre
    yaw, pitch = np.radians(-25), np.radians(25)
    Ry = np.array([[np.cos(yaw), 0, np.sin(yaw)], [0, 1, 0], [-np.sin(yaw), 0, np.cos(yaw)]])
    Rx = np.array([[1, 0, 0], [0, np.cos(pitch), -np.sin(pitch)], [0, np.sin(pitch), np.cos(pitch)]])
    R = Rx @ Ry
    dist = np.linalg.norm(centre) * 1.7
    cam = (pts - centre) @ R.T + np.array([0, 0, dist])
    W, H = size
    f = 0.9 * W
    ok = cam[:, 2] > 1e-3
    cam, col = cam[ok], col[ok]
    u = np.round(f * cam[:, 0] / cam[:, 2] + W / 2).astype(int)
    v = np.round(f * cam[:, 1] / cam[:, 2] + H / 2).astype(int)
    img = np.full((H, W, 3), 255, np.uint8)
    zbuf = np.full((H, W), np.inf)
    order = np.argsort(-cam[:, 2])  # far to near: near points overwrite
    for du in (0, 1):
        for dv in (0, 1):
            uu, vv = u[order] + du, v[order] + dv
            inside = (uu >= 0) & (uu < W) & (vv >= 0) & (vv < H)
            img[vv[inside], uu[inside]] = col[order][inside]
            zbuf[vv[inside], uu[inside]] = np.minimum(zbuf[vv[inside], uu[inside]], cam[order][inside, 2])
    Image.fromarray(img).save(dst)


def main():
    out, gt_path, dst = sys.argv[1:4]
    os.makedirs(dst, exist_ok=True)
    with np.load(gt_path) as z:
        gt = {k: z[k] for k in z.files}
    depth_figure(out, os.path.join(dst, "demo_depth.png"))
    matches_figure(out, gt, os.path.join(dst, "demo_matches.png"))
    cloud_figure(out, os.path.join(dst, "demo_cloud.png"))


if __name__ == "__main__":
    main()
