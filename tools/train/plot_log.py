#!/usr/bin/python3
"""Draws train.py's loss log (log.csv) as a PNG with PIL alone (no matplotlib on the project's
machines): the pointmap regression error, the matching loss and the matching accuracy against the
step, each smoothed over 50 steps, in three stacked panels.

  plot_log.py .train/run/log.csv docs/images/loss_curve.png
  plot_log.py .train/run/log.csv .train/ft/log.csv docs/images/loss_curve.png

With several logs, each is a run that continued the one before (train.py --init-weights): its steps
count on from the previous log's last step, and a grey line marks where it starts.
"""

import csv
import sys

import numpy as np
from PIL import Image, ImageDraw

PANELS = [("reg_err", "pointmap error (normalised, both views)"), ("loss_match", "InfoNCE matching loss"),
          ("match_acc", "matching accuracy (of 1024 candidates)")]
W, PH, PAD = 760, 190, 48


def smooth(v, k=50):
    if len(v) < k:
        return v
    c = np.cumsum(np.insert(v, 0, 0.0))
    out = (c[k:] - c[:-k]) / k
    return np.concatenate([v[:k - 1] * 0 + out[0], out])


def read_logs(paths):
    """The rows of the logs one after the other, each log's steps offset by the steps before it; and
    the steps where the second and later logs begin."""
    rows, starts, offset = [], [], 0
    for path in paths:
        part = list(csv.DictReader(open(path)))
        for r in part:
            r["step"] = str(int(r["step"]) + offset)
        if rows:
            starts.append(offset)
        rows += part
        offset = int(part[-1]["step"])
    return rows, starts


def main():
    if len(sys.argv) < 3:
        raise SystemExit("usage: plot_log.py LOG.csv [LOG.csv ...] OUT.png")
    rows, starts = read_logs(sys.argv[1:-1])
    steps = np.array([int(r["step"]) for r in rows], dtype=np.float64)
    img = Image.new("RGB", (W, PH * len(PANELS) + 20), "white")
    d = ImageDraw.Draw(img)
    for p, (key, title) in enumerate(PANELS):
        v = smooth(np.array([float(r[key]) for r in rows]))
        top = p * PH + 10
        x0, x1, y0, y1 = PAD + 20, W - 20, top + 22, top + PH - 28
        lo, hi = float(v.min()), float(v.max())
        d.rectangle([x0, y0, x1, y1], outline=(120, 120, 120))
        for s in starts:
            x = x0 + (s - steps[0]) / max(1.0, steps[-1] - steps[0]) * (x1 - x0)
            d.line([(x, y0), (x, y1)], fill=(190, 190, 190))
        d.text((x0, top + 6), f"{title}  (last {v[-1]:.3f})", fill=(0, 0, 0))
        for frac in (0.0, 0.5, 1.0):
            y = y1 - frac * (y1 - y0)
            d.text((4, y - 5), f"{lo + frac * (hi - lo):.3g}", fill=(80, 80, 80))
        xs = x0 + (steps - steps[0]) / max(1.0, steps[-1] - steps[0]) * (x1 - x0)
        ys = y1 - (v - lo) / max(hi - lo, 1e-12) * (y1 - y0)
        d.line(list(zip(xs.tolist(), ys.tolist())), fill=(30, 90, 200), width=2)
        for s in np.linspace(steps[0], steps[-1], 5):
            x = x0 + (s - steps[0]) / max(1.0, steps[-1] - steps[0]) * (x1 - x0)
            d.text((x - 12, y1 + 4), f"{int(s)}", fill=(80, 80, 80))
    d.text((W // 2 - 20, PH * len(PANELS) + 4), "step", fill=(0, 0, 0))
    img.save(sys.argv[-1])


if __name__ == "__main__":
    main()
