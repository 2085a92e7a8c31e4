"""The generator's ground truth is self-consistent: view 2's depth, lifted with its intrinsics and moved
by the true pose into view 1's frame, lands on view 1's pointmap at the true correspondences; the
pointmaps agree with depth and intrinsics; overlaps of generated pairs lie mostly in 30-90 %."""

import unittest

import numpy as np
import torch

import _paths  # noqa: F401
from scenes import correspond, render, sampler

W, H = 96, 72
SEEDS = [3, 41, 977]


class GroundTruth(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        torch.set_num_threads(2)
        cls.views = render.render(sampler.sample_batch(SEEDS), W, H, ss=1, dtype=torch.float64)
        cls.xy, cls.cov = correspond.correspondences(cls.views, 0, 1)

    def test_view2_depth_moved_by_true_pose_lands_on_view1_pointmap(self):
        v = self.views
        for b in range(len(SEEDS)):
            K2 = v["K"][b, 1].numpy()
            pose = v["cam_to_world"][b].numpy()
            cam2_to_cam1 = np.linalg.inv(pose[0]) @ pose[1]
            depth2 = v["depth"][b, 1].numpy()
            cov = self.cov[b].numpy()
            self.assertGreater(cov.sum(), 200, "too few covisible pixels to test")
            xy = self.xy[b].numpy()[cov]
            xi, yi = np.round(xy[:, 0]).astype(int), np.round(xy[:, 1]).astype(int)
            z = depth2[yi, xi]
            # lift view 2's pixel with its own depth and intrinsics, move it into view 1's frame
            p2 = np.stack([(xi - K2[0, 2]) / K2[0, 0] * z, (yi - K2[1, 2]) / K2[1, 1] * z, z], -1)
            p1 = p2 @ cam2_to_cam1[:3, :3].T + cam2_to_cam1[:3, 3]
            target = v["pts_v1"][b, 0].numpy()[cov]
            err = np.linalg.norm(p1 - target, axis=1)
            # rounding to view 2's pixel moves the point by up to ~a pixel's footprint
            footprint = target[:, 2] / v["K"][b, 0, 0, 0].item()
            self.assertLess(np.median(err / footprint), 1.0)
            self.assertGreater(np.mean(err / footprint < 3.0), 0.97)

    def test_pointmap_in_view1_frame_of_view2_equals_pose_applied_to_its_camera_pointmap(self):
        v = self.views
        pose = v["cam_to_world"].numpy()
        for b in range(len(SEEDS)):
            rel = np.linalg.inv(pose[b, 0]) @ pose[b, 1]
            cam = v["pts_cam"][b, 1].numpy()
            moved = cam @ rel[:3, :3].T + rel[:3, 3]
            valid = v["valid"][b, 1].numpy()
            np.testing.assert_allclose(moved[valid], v["pts_v1"][b, 1].numpy()[valid], atol=1e-9)

    def test_depth_is_the_z_of_the_camera_pointmap_and_projects_to_its_pixel(self):
        v = self.views
        pts, K = v["pts_cam"][0, 0], v["K"][0, 0]
        xy, z = correspond.project(pts, K)
        valid = v["valid"][0, 0]
        jj, ii = np.meshgrid(np.arange(W), np.arange(H))
        np.testing.assert_allclose(xy[..., 0][valid].numpy(), jj[valid.numpy()], atol=1e-6)
        np.testing.assert_allclose(xy[..., 1][valid].numpy(), ii[valid.numpy()], atol=1e-6)
        np.testing.assert_allclose(z[valid].numpy(), v["depth"][0, 0][valid].numpy())

    def test_generated_pairs_overlap_mostly_between_30_and_90_percent(self):
        views = render.render(sampler.sample_batch(range(100, 124)), 48, 36, ss=1)
        ov = correspond.overlap(views).numpy()
        self.assertGreater(np.mean((ov >= 0.3) & (ov <= 0.9)), 0.6, f"overlaps {np.round(ov, 2)}")


if __name__ == "__main__":
    unittest.main()
