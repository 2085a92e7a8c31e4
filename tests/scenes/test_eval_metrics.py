"""The evaluation's metrics score the ground truth itself as perfect and a known error as that error:
AbsRel 0 and delta 1 for the true depth (at any scale), the true relative pose recovered by PnP from
the true pointmap, every ground-truth correspondence counted as a match within 3 px."""

import unittest

import numpy as np
import torch

import _paths  # noqa: F401
import ground_truth
import metrics
from scenes import render, sampler


class Metrics(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        torch.set_num_threads(2)
        cls.views = render.render(sampler.sample_batch([11]), 64, 48, ss=1, dtype=torch.float64)
        cls.gt = ground_truth.pair_ground_truth(cls.views, 0)

    def test_true_depth_at_any_scale_scores_perfect(self):
        gt = self.gt
        m = metrics.depth_metrics(3.7 * gt["depth1"], gt["depth1"], gt["valid1"])
        self.assertAlmostEqual(m["abs_rel"], 0.0, places=9)
        self.assertEqual(m["delta1"], 1.0)

    def test_ten_percent_depth_error_scores_about_ten_percent(self):
        gt = self.gt
        noisy = gt["depth1"] * np.where(np.arange(gt["depth1"].size).reshape(gt["depth1"].shape) % 2, 1.1, 0.9)
        m = metrics.depth_metrics(noisy, gt["depth1"], gt["valid1"])
        self.assertAlmostEqual(m["abs_rel"], 0.1, delta=0.01)

    def test_pnp_recovers_the_true_pose_from_the_true_pointmap(self):
        pts2 = self.views["pts_v1"][0, 1].numpy()
        pts2 = np.where(self.gt["valid2"][..., None], pts2, np.nan)
        pose = metrics.relative_pose(2.5 * pts2, self.gt["K2"])  # the scale is free
        rot, trans = metrics.pose_errors(pose, self.gt["cam2_to_cam1"])
        self.assertLess(rot, 0.01)
        self.assertLess(trans, 0.05)

    def test_ground_truth_matches_are_all_within_3px(self):
        cov = self.gt["covisible"]
        ys, xs = np.nonzero(cov)
        xy1 = np.stack([xs, ys], 1)
        xy2 = np.round(self.gt["corr_xy"][ys, xs]).astype(np.int64)
        self.assertEqual(metrics.match_precision(xy1, xy2, self.gt["corr_xy"], cov), 1.0)
        self.assertEqual(metrics.match_precision(xy1, xy2 + 10, self.gt["corr_xy"], cov), 0.0)


if __name__ == "__main__":
    unittest.main()
