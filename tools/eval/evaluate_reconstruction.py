#!/usr/bin/python3
"""Scores a multi-view reconstruction (`reconctl reconstruct IMG... --out DIR`) against the ground truth
of its scene (samples/scene/scene_gt.npz, written by samples/make_scene_samples.py).

  evaluate_reconstruction.py OUT_DIR GT_NPZ [--json]

Reads OUT_DIR/cameras.json (and OUT_DIR/scene.ply when there is one). A camera is matched to the
ground truth by its image's file name (the stem when the extension differs); cameras of a component
other than 0, and ground-truth images cameras.json does not list, are reported as not placed.

The reconstruction's world frame and scale are free, so the estimated camera centres of the placed
cameras are aligned to the true ones by a similarity (Umeyama, with scale; with fewer than three
placed cameras, or centres on a line, the rotation comes from the cameras' orientations instead).
Then, per camera:

  rotation error    degrees, the angle of the relative rotation between the true orientation and
                    the aligned estimated one
  centre error      distance between the true and the aligned estimated centre, as a fraction of
                    the scene size: the diagonal of the true camera centres' bounding box
  focal error       relative, fx and fy each, after converting the estimate (in its image's pixels)
                    to the ground truth's pixel grid; and the principal point's error in those pixels
and with scene.ply, the Chamfer distance between its points (moved by the same similarity) and the
ground truth's surface points, both clouds subsampled to at most 50,000 points: estimated -> true
(accuracy) and true -> estimated (completeness), mean and median, as fractions of the scene size.

It measures, it does not judge: exit status 0 whatever the errors, 2 when an input cannot be read.
"""

import argparse
import json
import os
import sys

import numpy as np

MAX_POINTS = 50_000


class InputError(Exception):
    """An input that cannot be read or does not fit the ground truth (exit status 2)."""


# ---- inputs -----------------------------------------------------------------------------------------

def load_ground_truth(path):
    try:
        with np.load(path) as z:
            gt = {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError) as e:
        raise InputError(f"{path}: cannot read the ground truth: {e}")
    for key in ("images", "width", "height", "cam_to_world", "intrinsics"):
        if key not in gt:
            raise InputError(f"{path}: no '{key}' (not a scene ground truth of make_scene_samples.py)")
    n = len(gt["images"])
    if gt["cam_to_world"].shape != (n, 4, 4) or gt["intrinsics"].shape != (n, 3, 3):
        raise InputError(f"{path}: {n} images but cam_to_world {gt['cam_to_world'].shape}, "
                         f"intrinsics {gt['intrinsics'].shape}")
    return gt


def _number(cam, key, where):
    v = cam.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v):
        raise InputError(f"{where}: '{key}' is not a finite number")
    return float(v)


def load_cameras(path):
    """The cameras of cameras.json: a list of dicts with image, width, height, K (3x3, the image's
    pixels, COLMAP's convention), cam_to_world (4x4) and component."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: cannot read: {e}")
    if not isinstance(doc, dict) or not isinstance(doc.get("cameras"), list):
        raise InputError(f"{path}: no 'cameras' list")
    out = []
    for i, cam in enumerate(doc["cameras"]):
        where = f"{path}: camera {i}"
        if not isinstance(cam, dict) or not isinstance(cam.get("image"), str):
            raise InputError(f"{where}: no 'image' name")
        fx, fy, cx, cy = (_number(cam, k, where) for k in ("fx", "fy", "cx", "cy"))
        width, height = _number(cam, "width", where), _number(cam, "height", where)
        if fx <= 0 or fy <= 0 or width <= 0 or height <= 0:
            raise InputError(f"{where}: focal lengths and image size must be positive")
        try:
            pose = np.array(cam.get("cam_to_world"), dtype=np.float64)
        except (TypeError, ValueError):
            pose = np.zeros(0)
        if pose.shape != (4, 4) or not np.isfinite(pose).all():
            raise InputError(f"{where}: cam_to_world is not a 4x4 matrix of finite numbers")
        R = pose[:3, :3]
        if np.abs(R.T @ R - np.eye(3)).max() > 1e-3 or np.linalg.det(R) <= 0:
            raise InputError(f"{where}: cam_to_world's rotation is not a rotation")
        component = cam.get("component", 0)
        if isinstance(component, bool) or not isinstance(component, int):
            raise InputError(f"{where}: 'component' is not an integer")
        out.append({"image": cam["image"], "width": width, "height": height,
                    "K": np.array([[fx, 0, cx], [0, fy, cy], [0, 0, 1.0]]), "cam_to_world": pose,
                    "component": component})
    return out


_PLY_TYPES = {"char": "i1", "int8": "i1", "uchar": "u1", "uint8": "u1", "short": "i2", "int16": "i2",
              "ushort": "u2", "uint16": "u2", "int": "i4", "int32": "i4", "uint": "u4", "uint32": "u4",
              "float": "f4", "float32": "f4", "double": "f8", "float64": "f8"}


def load_ply_points(path):
    """The x, y, z of the vertices of a PLY file (binary either endianness, or ASCII), float64 (N, 3).
    Elements before the vertices must have fixed-size rows (no lists)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e}")
    end = data.find(b"end_header")
    if not data.startswith(b"ply") or end < 0:
        raise InputError(f"{path}: not a PLY file")
    body = data.index(b"\n", end) + 1
    fmt, elements = None, []  # [name, count, [(property, numpy type or None for a list)]]
    for line in data[:end].decode("ascii", "replace").splitlines()[1:]:
        words = line.split()
        if not words or words[0] in ("comment", "obj_info"):
            continue
        if words[0] == "format" and len(words) >= 2:
            fmt = words[1]
        elif words[0] == "element" and len(words) == 3:
            elements.append([words[1], int(words[2]), []])
        elif words[0] == "property" and elements:
            if words[1] == "list":
                elements[-1][2].append((words[-1], None))
            elif len(words) == 3 and words[1] in _PLY_TYPES:
                elements[-1][2].append((words[2], _PLY_TYPES[words[1]]))
            else:
                raise InputError(f"{path}: cannot read the header line '{line}'")
    if fmt not in ("binary_little_endian", "binary_big_endian", "ascii"):
        raise InputError(f"{path}: unknown PLY format {fmt}")
    offset, rows_before = body, 0
    for name, count, props in elements:
        if name == "vertex":
            names = [p for p, _ in props]
            if not all(a in names for a in "xyz") or any(t is None for _, t in props):
                raise InputError(f"{path}: the vertices have no x, y, z or have list properties")
            if fmt == "ascii":
                lines = data[body:].decode("ascii", "replace").splitlines()[rows_before:rows_before + count]
                try:
                    table = np.array([[float(w) for w in ln.split()[:len(props)]] for ln in lines], dtype=np.float64)
                except ValueError as e:
                    raise InputError(f"{path}: {e}")
                if table.shape != (count, len(props)):
                    raise InputError(f"{path}: {len(lines)} vertex lines, the header says {count}")
                return table[:, [names.index(a) for a in "xyz"]]
            order = "<" if fmt == "binary_little_endian" else ">"
            dtype = np.dtype([(p, order + t) for p, t in props])
            if len(data) < offset + count * dtype.itemsize:
                raise InputError(f"{path}: truncated ({count} vertices in the header)")
            table = np.frombuffer(data, dtype=dtype, count=count, offset=offset)
            return np.stack([table[a].astype(np.float64) for a in "xyz"], 1)
        if any(t is None for _, t in props):
            raise InputError(f"{path}: element '{name}' with lists before the vertices")
        offset += count * sum(np.dtype(t).itemsize for _, t in props)
        rows_before += count
    raise InputError(f"{path}: no vertex element")


# ---- geometry ---------------------------------------------------------------------------------------

def umeyama(src, dst):
    """(scale, R, t) minimising sum |dst - (scale R src + t)|^2 (Umeyama 1991); None when the source
    points are too few or on a line (the rotation about that line is free)."""
    if len(src) < 3:
        return None
    ms, md = src.mean(0), dst.mean(0)
    a, b = src - ms, dst - md
    sv = np.linalg.svd(a, compute_uv=False)
    if sv[1] <= 1e-6 * sv[0]:
        return None
    U, S, Vt = np.linalg.svd(b.T @ a / len(src))
    D = np.diag([1.0, 1.0, np.sign(np.linalg.det(U @ Vt))])
    R = U @ D @ Vt
    scale = float(np.trace(np.diag(S) @ D) / (a ** 2).sum(1).mean())
    return scale, R, md - scale * R @ ms


def align_by_orientations(R_est, R_gt, src, dst):
    """The similarity when the centres cannot fix it: the rotation is the chordal mean of the
    per-camera R_gt R_est^T, then scale and translation by least squares on the centres."""
    U, _, Vt = np.linalg.svd(sum(g @ e.T for e, g in zip(R_est, R_gt)))
    R = U @ np.diag([1.0, 1.0, np.sign(np.linalg.det(U @ Vt))]) @ Vt
    a, b = (src - src.mean(0)) @ R.T, dst - dst.mean(0)
    denom = (a ** 2).sum()
    scale = float((a * b).sum() / denom) if denom > 1e-18 else 1.0
    return scale, R, dst.mean(0) - scale * R @ src.mean(0)


def rotation_angle_deg(R):
    """The angle of a rotation matrix (atan2 of its sine and cosine: exact near 0, unlike arccos)."""
    sin = 0.5 * np.linalg.norm([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    return float(np.degrees(np.arctan2(sin, 0.5 * (np.trace(R) - 1))))


def subsample(points, n=MAX_POINTS, seed=0):
    if len(points) <= n:
        return points
    return points[np.sort(np.random.default_rng(seed).choice(len(points), n, replace=False))]


def nearest_distances(a, b, chunk=1024):
    """For every point of a its distance to the nearest point of b, and the other way round (float64,
    exact: torch.cdist finds the neighbour in float32, the distance is recomputed in float64)."""
    import torch
    centre = np.concatenate([a, b]).mean(0)
    at = torch.as_tensor(a - centre, dtype=torch.float32)
    bt = torch.as_tensor(b - centre, dtype=torch.float32)
    a_nn = np.empty(len(a), dtype=np.int64)
    b_best = torch.full((len(b),), float("inf"))
    b_nn = torch.zeros(len(b), dtype=torch.int64)
    for i in range(0, len(a), chunk):
        d = torch.cdist(at[i:i + chunk], bt)
        a_nn[i:i + chunk] = d.argmin(1).numpy()
        col, row = d.min(0)
        better = col < b_best
        b_best = torch.where(better, col, b_best)
        b_nn = torch.where(better, row + i, b_nn)
    return (np.linalg.norm(a - b[a_nn], axis=1), np.linalg.norm(b - a[b_nn.numpy()], axis=1))


# ---- evaluation -------------------------------------------------------------------------------------

def _match(cameras, gt_names, path):
    """gt index -> camera dict, by file name, else by stem."""
    names = [os.path.basename(str(n)) for n in gt_names]
    stems = [os.path.splitext(n)[0] for n in names]
    out = {}
    for cam in cameras:
        base = os.path.basename(cam["image"])
        idx = names.index(base) if base in names else (
            stems.index(os.path.splitext(base)[0]) if os.path.splitext(base)[0] in stems else None)
        if idx is None:
            continue
        if idx in out:
            raise InputError(f"{path}: two cameras of image {names[idx]}")
        out[idx] = cam
    if not out and cameras:
        raise InputError(f"{path}: no camera names an image of the ground truth ({names[0]} ...)")
    return out


def _stat(values):
    v = np.array([x for x in values if x is not None and np.isfinite(x)], dtype=np.float64)
    if v.size == 0:
        return None, None
    return float(np.median(v)), float(v.max())


def evaluate(out_dir, gt_path):
    gt = load_ground_truth(gt_path)
    cams_path = os.path.join(out_dir, "cameras.json")
    cameras = load_cameras(cams_path)
    matched = _match(cameras, gt["images"], cams_path)
    names = [os.path.basename(str(n)) for n in gt["images"]]
    gt_w, gt_h = float(gt["width"]), float(gt["height"])
    gt_pose, gt_K = gt["cam_to_world"].astype(np.float64), gt["intrinsics"].astype(np.float64)
    gt_centres = gt_pose[:, :3, 3]
    scene_size = float(np.linalg.norm(gt_centres.max(0) - gt_centres.min(0)))
    placed = [i for i in range(len(names)) if i in matched and matched[i]["component"] == 0]

    alignment = None
    if len(placed) >= 2:
        src = np.array([matched[i]["cam_to_world"][:3, 3] for i in placed])
        dst = gt_centres[placed]
        sim, method = umeyama(src, dst), "umeyama"
        if sim is None:
            sim = align_by_orientations([matched[i]["cam_to_world"][:3, :3] for i in placed],
                                        gt_pose[placed, :3, :3], src, dst)
            method = "orientations"
        scale, R, t = sim
        alignment = {"method": method, "scale": scale, "rotation": R.tolist(), "translation": t.tolist()}

    rows = []
    for i, name in enumerate(names):
        cam = matched.get(i)
        row = {"image": name, "placed": i in placed, "component": None if cam is None else cam["component"],
               "rot_err_deg": None, "centre_err": None, "fx_err": None, "fy_err": None, "pp_err_px": None}
        if cam is not None:
            sx, sy = gt_w / cam["width"], gt_h / cam["height"]  # the estimate's pixels -> the truth's
            K = cam["K"]
            row["fx_err"] = float(K[0, 0] * sx / gt_K[i, 0, 0] - 1)
            row["fy_err"] = float(K[1, 1] * sy / gt_K[i, 1, 1] - 1)
            row["pp_err_px"] = float(np.hypot(K[0, 2] * sx - gt_K[i, 0, 2], K[1, 2] * sy - gt_K[i, 1, 2]))
        if i in placed and alignment is not None:
            pose = cam["cam_to_world"]
            row["rot_err_deg"] = rotation_angle_deg(gt_pose[i, :3, :3].T @ R @ pose[:3, :3])
            centre = scale * R @ pose[:3, 3] + t
            row["centre_err"] = float(np.linalg.norm(centre - gt_centres[i]) / scene_size)
        rows.append(row)

    summary = {"cameras": len(names), "placed": len(placed), "scene_size": scene_size,
               "scene_size_from": "diagonal of the true camera centres' bounding box"}
    for key in ("rot_err_deg", "centre_err", "pp_err_px"):
        summary[f"{key}_median"], summary[f"{key}_max"] = _stat(r[key] for r in rows if r["placed"])
    focal = [max(abs(r["fx_err"]), abs(r["fy_err"])) for r in rows if r["placed"]]
    summary["focal_err_median"], summary["focal_err_max"] = _stat(focal)

    chamfer = None
    ply = os.path.join(out_dir, "scene.ply")
    if os.path.exists(ply):
        points = load_ply_points(ply)
        points = points[np.isfinite(points).all(1)]
        chamfer = {"points": int(len(points))}
        if alignment is None:
            chamfer["skipped"] = "fewer than two cameras placed: no alignment"
        elif "surface_points" not in gt:
            chamfer["skipped"] = "the ground truth has no surface_points"
        elif len(points) == 0:
            chamfer["skipped"] = "scene.ply has no points"
        else:
            est = subsample(points) @ (scale * R).T + t
            true = subsample(gt["surface_points"].astype(np.float64), seed=1)
            acc, comp = nearest_distances(est, true)
            chamfer.update({
                "points_used": int(len(est)), "true_points_used": int(len(true)),
                "accuracy_mean": float(acc.mean() / scene_size), "accuracy_median": float(np.median(acc) / scene_size),
                "completeness_mean": float(comp.mean() / scene_size),
                "completeness_median": float(np.median(comp) / scene_size),
                "chamfer_mean": float(0.5 * (acc.mean() + comp.mean()) / scene_size)})
    seed = int(gt["seed"]) if "seed" in gt else None
    return {"out_dir": out_dir, "ground_truth": gt_path, "seed": seed, "summary": summary,
            "alignment": alignment, "cameras": rows, "chamfer": chamfer}


# ---- output -----------------------------------------------------------------------------------------

def _fmt(v, spec, unit=""):
    return "-" if v is None else f"{v:{spec}}{unit}"


def print_report(res):
    s = res["summary"]
    seed = "" if res["seed"] is None else f", seed {res['seed']}"
    print(f"reconstruction {res['out_dir']} against {res['ground_truth']}{seed}:")
    print(f"  placed {s['placed']} of {s['cameras']} cameras (component 0); scene size {s['scene_size']:.2f} m "
          f"(the {s['scene_size_from']}); centre and Chamfer errors are fractions of it")
    al = res["alignment"]
    if al is None:
        print("  fewer than two cameras placed: no alignment, no pose errors")
    else:
        how = "the camera centres (Umeyama)" if al["method"] == "umeyama" else \
            "the camera orientations (the centres are too few or on a line)"
        print(f"  aligned to the truth by a similarity from {how}: scale {al['scale']:.4g}")
    print(f"  {'camera':<16}{'rotation':>12}{'centre':>10}{'fx':>9}{'fy':>9}{'pp':>9}")
    for r in res["cameras"]:
        if r["placed"]:
            print(f"  {r['image']:<16}{_fmt(r['rot_err_deg'], '.3f', ' deg'):>12}{_fmt(r['centre_err'], '.4f'):>10}"
                  f"{r['fx_err'] * 100:>+8.2f}%{r['fy_err'] * 100:>+8.2f}%{r['pp_err_px']:>6.1f} px")
        else:
            why = "not in cameras.json" if r["component"] is None else f"component {r['component']}"
            print(f"  {r['image']:<16}  not placed ({why})")
    if s["placed"]:
        print(f"  rotation error      median {_fmt(s['rot_err_deg_median'], '.3f')} deg  "
              f"max {_fmt(s['rot_err_deg_max'], '.3f')} deg")
        print(f"  centre error        median {_fmt(s['centre_err_median'], '.4f')}  "
              f"max {_fmt(s['centre_err_max'], '.4f')}")
        pct = {k: None if s[k] is None else 100 * s[k] for k in ("focal_err_median", "focal_err_max")}
        print(f"  focal error         median {_fmt(pct['focal_err_median'], '.2f', ' %')}  "
              f"max {_fmt(pct['focal_err_max'], '.2f', ' %')}  (the larger of fx's and fy's)")
    c = res["chamfer"]
    if c is None:
        print("  no scene.ply: no Chamfer distance")
    elif "skipped" in c:
        print(f"  Chamfer distance skipped: {c['skipped']}")
    else:
        print(f"  Chamfer (scene.ply, {c['points']} points, {c['points_used']} used, {c['true_points_used']} true)")
        print(f"    estimated -> true mean {c['accuracy_mean']:.4f}  median {c['accuracy_median']:.4f}")
        print(f"    true -> estimated mean {c['completeness_mean']:.4f}  median {c['completeness_median']:.4f}")
        print(f"    Chamfer (mean of both means) {c['chamfer_mean']:.4f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir", help="what `reconctl reconstruct --out` wrote (cameras.json, scene.ply)")
    ap.add_argument("gt", help="the scene's ground truth, e.g. samples/scene/scene_gt.npz")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    args = ap.parse_args()
    try:
        res = evaluate(args.out_dir, args.gt)
    except InputError as e:
        print(f"evaluate_reconstruction: {e}", file=sys.stderr)
        return 2
    if args.json:
        json.dump(res, sys.stdout, indent=1)
        print()
    else:
        print_report(res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
