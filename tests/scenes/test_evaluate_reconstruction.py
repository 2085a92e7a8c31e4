"""evaluate_reconstruction.py scores the ground truth itself as perfect and a known error as that error:
the sample scene's true cameras and surface (samples/scene/scene_gt.npz) moved by a similarity
(rotation, translation, scale 2.5) and written as `reconctl reconstruct` writes them (cameras.json
at another image size, a binary PLY) score 0 everywhere; one camera turned by 5 degrees scores
5 degrees; cameras of another component, or missing, are not placed; unreadable inputs exit with
status 2, large errors with 0."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import _paths
import evaluate_reconstruction as er

GT = os.path.join(_paths.ROOT, "samples", "scene", "scene_gt.npz")
SCRIPT = os.path.join(_paths.ROOT, "tools", "eval", "evaluate_reconstruction.py")
SCALE = 2.5


def rotation(axis, degrees):
    axis = np.asarray(axis, dtype=np.float64) / np.linalg.norm(axis)
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    th = np.radians(degrees)
    return np.eye(3) + np.sin(th) * K + (1 - np.cos(th)) * K @ K


R_SIM, T_SIM = rotation([1, 2, 3], 40), np.array([3.0, -1.0, 7.0])  # true world -> estimated world


def write_reconstruction(out, gt, components=None, skip=(), turn=None, ply=True):
    """cameras.json (intrinsics at 1024x768, twice the truth's grid) and scene.ply of the truth moved
    by the similarity; turn = (camera, degrees) turns that camera about its own centre."""
    os.makedirs(out, exist_ok=True)
    cams = []
    for i, name in enumerate(gt["images"]):
        if i in skip:
            continue
        pose, K = gt["cam_to_world"][i], gt["intrinsics"][i]
        R = R_SIM @ pose[:3, :3]
        if turn is not None and turn[0] == i:
            R = R @ rotation([0.3, -1.0, 0.2], turn[1])
        est = np.eye(4)
        est[:3, :3], est[:3, 3] = R, SCALE * R_SIM @ pose[:3, 3] + T_SIM
        cams.append({"image": str(name), "width": 1024, "height": 768, "fx": 2 * K[0, 0], "fy": 2 * K[1, 1],
                     "cx": 2 * K[0, 2], "cy": 2 * K[1, 2], "cam_to_world": est.tolist(),
                     "component": 0 if components is None else components[i]})
    with open(os.path.join(out, "cameras.json"), "w") as f:
        json.dump({"cameras": cams}, f)
    if ply:
        pts = (gt["surface_points"].astype(np.float64) @ (SCALE * R_SIM).T + T_SIM).astype(np.float32)
        rows = np.zeros(len(pts), dtype=[("x", "<f4"), ("y", "<f4"), ("z", "<f4"),
                                         ("red", "u1"), ("green", "u1"), ("blue", "u1")])
        rows["x"], rows["y"], rows["z"] = pts.T
        rows["red"] = 200
        with open(os.path.join(out, "scene.ply"), "wb") as f:  # as recon_io's write_scene_ply
            f.write(b"ply\nformat binary_little_endian 1.0\ncomment made by recon\n"
                    b"element vertex %d\nproperty float x\nproperty float y\nproperty float z\n"
                    b"property uchar red\nproperty uchar green\nproperty uchar blue\nend_header\n" % len(pts))
            f.write(rows.tobytes())


def run(*args):
    p = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


class EvaluateReconstruction(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.gt = er.load_ground_truth(GT)
        cls.tmp = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def dir(self, name):
        return os.path.join(self.tmp.name, name)

    def test_truth_moved_by_a_similarity_scores_zero(self):
        write_reconstruction(self.dir("exact"), self.gt)
        rc, out, err = run(self.dir("exact"), GT, "--json")
        self.assertEqual(rc, 0, err)
        res = json.loads(out)
        s, c = res["summary"], res["chamfer"]
        self.assertEqual(s["placed"], 8)
        self.assertEqual(res["alignment"]["method"], "umeyama")
        self.assertAlmostEqual(res["alignment"]["scale"], 1 / SCALE, places=9)
        self.assertLess(s["rot_err_deg_max"], 1e-9)
        self.assertLess(s["centre_err_max"], 1e-9)
        self.assertLess(s["focal_err_max"], 1e-12)  # 1024x768 intrinsics brought to 512x384
        self.assertLess(s["pp_err_px_max"], 1e-9)
        self.assertEqual((c["points"], c["points_used"]), (50000, 50000))
        for key in ("accuracy_mean", "accuracy_median", "completeness_mean", "completeness_median"):
            self.assertLess(c[key], 1e-6, key)  # float32 in the PLY

    def test_one_camera_turned_by_5_degrees_reports_5_degrees(self):
        write_reconstruction(self.dir("turned"), self.gt, turn=(3, 5.0), ply=False)
        rc, out, err = run(self.dir("turned"), GT, "--json")
        self.assertEqual(rc, 0, err)  # it measures, it does not judge
        res = json.loads(out)
        rot = [r["rot_err_deg"] for r in res["cameras"]]
        self.assertAlmostEqual(rot[3], 5.0, places=9)
        self.assertLess(max(rot[:3] + rot[4:]), 1e-9)
        self.assertAlmostEqual(res["summary"]["rot_err_deg_max"], 5.0, places=9)
        self.assertLess(res["summary"]["centre_err_max"], 1e-9)  # the centre did not move
        self.assertIsNone(res["chamfer"])

    def test_cameras_of_another_component_or_missing_are_not_placed(self):
        components = [0, 0, 1, 0, 0, 0, 0, 0]
        write_reconstruction(self.dir("split"), self.gt, components=components, skip=(6,), ply=False)
        res = er.evaluate(self.dir("split"), GT)
        placed = [r["placed"] for r in res["cameras"]]
        self.assertEqual(placed, [True, True, False, True, True, True, False, True])
        self.assertEqual(res["summary"]["placed"], 6)
        self.assertIsNone(res["cameras"][2]["rot_err_deg"])
        self.assertLess(res["summary"]["rot_err_deg_max"], 1e-9)
        rc, out, err = run(self.dir("split"), GT)
        self.assertEqual(rc, 0, err)
        self.assertRegex(out, r"view_02.png +not placed \(component 1\)")
        self.assertRegex(out, r"view_06.png +not placed \(not in cameras.json\)")
        self.assertIn("placed 6 of 8 cameras", out)

    def test_two_cameras_are_aligned_by_their_orientations(self):
        components = [1, 1, 1, 0, 0, 1, 1, 1]
        write_reconstruction(self.dir("two"), self.gt, components=components, ply=False)
        res = er.evaluate(self.dir("two"), GT)
        self.assertEqual(res["alignment"]["method"], "orientations")
        self.assertAlmostEqual(res["alignment"]["scale"], 1 / SCALE, places=9)
        self.assertLess(res["summary"]["rot_err_deg_max"], 1e-9)
        self.assertLess(res["summary"]["centre_err_max"], 1e-9)

    def test_unreadable_inputs_exit_with_status_2(self):
        bad = self.dir("bad")
        os.makedirs(bad, exist_ok=True)
        self.assertEqual(run(bad, GT)[0], 2)  # no cameras.json
        with open(os.path.join(bad, "cameras.json"), "w") as f:
            f.write("{not json")
        rc, _, err = run(bad, GT)
        self.assertEqual(rc, 2)
        self.assertIn("cameras.json", err)
        write_reconstruction(bad, self.gt, ply=False)
        self.assertEqual(run(bad, os.path.join(bad, "missing.npz"))[0], 2)
        with open(os.path.join(bad, "scene.ply"), "wb") as f:
            f.write(b"ply\nformat binary_little_endian 1.0\nelement vertex 10\nproperty float x\nend_header\n")
        self.assertEqual(run(bad, GT)[0], 2)  # no y, z (and truncated)


if __name__ == "__main__":
    unittest.main()
