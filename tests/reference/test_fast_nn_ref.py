"""The fast reciprocal NN reference (fast_nn_ref.py) and the golden data in tests/golden/match/."""

import os
import sys
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import fast_nn_ref as R  # noqa: E402
import safetensors_io as st  # noqa: E402

try:
    import torch
except ImportError:  # the numpy parts still run
    torch = None


def walk_per_seed(desc1, desc2, subsample, max_iter):
    """An independent formulation: every seed follows its own A->B->A chain.

    Seed state (a, b, prev_b): in each iteration b' = NN_B(a) converges if b' == b; otherwise
    a' = NN_A(b') converges if a' == a. Returns merged pairs, the per-step active counts and the
    per-step numbers of distinct query pixels.
    """
    h1, w1, d = desc1.shape
    pa = desc1.reshape(-1, d).astype(np.float64)
    pb = desc2.reshape(-1, d).astype(np.float64)
    seeds = R.seed_grid(h1, w1, subsample)
    active = np.zeros(2 * max_iter + 1, dtype=np.int64)
    queried = [set() for _ in range(2 * max_iter)]
    pairs = []
    for s in seeds:
        a, b = int(s), -1
        done = False
        for it in range(max_iter):
            active[2 * it] += 1
            queried[2 * it].add(a)
            nb = int(np.argmax(pa[a] @ pb.T))
            if nb == b:
                done = True
                break
            b = nb
            active[2 * it + 1] += 1
            queried[2 * it + 1].add(b)
            na = int(np.argmax(pb[b] @ pa.T))
            if na == a:
                done = True
                break
            a = na
        if done:
            pairs.append((a, b))
        else:
            active[2 * max_iter] += 1
    i1 = np.array([p[0] for p in pairs], dtype=np.int32)
    i2 = np.array([p[1] for p in pairs], dtype=np.int32)
    return R.merge_corres(i1, i2), active, np.array([len(q) for q in queried], dtype=np.int64)


class SeedsAndMerge(unittest.TestCase):
    def test_seed_grid_of_the_official_resolution(self):
        seeds = R.seed_grid(384, 512, 8)
        self.assertEqual(len(seeds), 48 * 64)
        self.assertEqual(seeds.dtype, np.int32)
        self.assertEqual(int(seeds[0]), 4 * 512 + 4)
        self.assertEqual(int(seeds[-1]), 380 * 512 + 508)
        self.assertTrue(np.all(np.diff(seeds) > 0))

    def test_seed_grid_with_odd_step_starts_at_half_step(self):
        seeds = R.seed_grid(7, 8, 3)
        want = [y * 8 + x for y in (1, 4) for x in (1, 4, 7)]
        self.assertEqual(seeds.tolist(), want)

    def test_merge_sorts_by_first_then_second_and_drops_duplicates(self):
        i1 = np.array([5, 2, 5, 2, 9, 2], dtype=np.int32)
        i2 = np.array([1, 7, 0, 7, 3, 4], dtype=np.int32)
        m1, m2 = R.merge_corres(i1, i2)
        self.assertEqual(list(zip(m1.tolist(), m2.tolist())), [(2, 4), (2, 7), (5, 0), (5, 1), (9, 3)])

    def test_merge_agrees_with_the_int64_view_packing(self):
        # The official packs [idx2, idx1] int32 pairs as one little-endian int64 (idx1 high).
        rng = np.random.default_rng(3)
        i1 = rng.integers(0, 200, 500).astype(np.int32)
        i2 = rng.integers(0, 200, 500).astype(np.int32)
        packed = np.unique(np.c_[i2, i1].view(np.int64))
        w2, w1 = packed[:, None].view(np.int32).T
        m1, m2 = R.merge_corres(i1, i2)
        np.testing.assert_array_equal(m1, w1)
        np.testing.assert_array_equal(m2, w2)

    def test_border_filter_keeps_the_inner_rectangle(self):
        xy = np.array([[3, 3], [2, 5], [9, 5], [10, 5], [5, 7], [5, 6]], dtype=np.int32)
        keep = R.border_mask(xy, h=10, w=13, border=3)
        self.assertEqual(keep.tolist(), [True, False, True, False, False, True])


class NearestNeighbour(unittest.TestCase):
    def test_ties_go_to_the_lowest_index(self):
        db = np.array([[0, 1], [1, 0], [1, 0], [0.6, 0.8]], dtype=np.float64)
        q = np.array([[1, 0], [0, 1], [0.6, 0.8]])
        self.assertEqual(R.nn_dot(q, db).tolist(), [1, 0, 3])

    @unittest.skipIf(torch is None, "torch not installed")
    def test_ties_match_torch_max(self):
        rng = np.random.default_rng(5)
        db = R.random_unit(rng, (64, 8)).astype(np.float64)
        db = np.repeat(db, 3, axis=0)  # every row three times
        q = db[rng.integers(0, len(db), 50)]
        _, want = torch.max(torch.from_numpy(q) @ torch.from_numpy(db).T, dim=1)
        np.testing.assert_array_equal(R.nn_dot(q, db), want.numpy())


class Algorithm(unittest.TestCase):
    def check_against_walk(self, a, b, subsample, max_iter):
        trace = {}
        i1, i2 = R.fast_reciprocal_nns(a, b, subsample, max_iter, trace)
        (w1, w2), active, searches = walk_per_seed(a, b, subsample, max_iter)
        np.testing.assert_array_equal(i1, w1)
        np.testing.assert_array_equal(i2, w2)
        np.testing.assert_array_equal(trace["active"], active)
        np.testing.assert_array_equal(trace["searches"], searches)
        return i1, i2, trace

    def test_seeds_that_meet_share_a_search(self):
        # Constant 4x4 blocks of quantised descriptors (exact ties): the four seeds of a block
        # (S = 2) all reach the lowest pixel of the best block, so from step b on they share it.
        rng = np.random.default_rng(15)
        blocks_a = rng.integers(-2, 3, (5, 6, 4)) * 0.5
        blocks_b = rng.integers(-2, 3, (4, 7, 4)) * 0.5
        a = np.repeat(np.repeat(blocks_a, 4, 0), 4, 1)
        b = np.repeat(np.repeat(blocks_b, 4, 0), 4, 1)
        _, _, trace = self.check_against_walk(a, b, 2, 10)
        self.assertEqual(trace["searches"][0], trace["active"][0])  # the seeds are distinct pixels
        self.assertLess(trace["searches"][1] * 2, trace["active"][1])
        self.assertTrue((trace["searches"] <= trace["active"][:-1]).all())

    def test_vectorised_loop_equals_per_seed_walks_on_random_maps(self):
        rng = np.random.default_rng(11)
        for shape_a, shape_b, d, s, it in [((21, 25), (19, 23), 8, 4, 10), ((16, 30), (24, 14), 5, 3, 3),
                                           ((12, 12), (12, 12), 24, 2, 1)]:
            a = R.random_unit(rng, shape_a + (d,))
            b = R.random_unit(rng, shape_b + (d,))
            self.check_against_walk(a, b, s, it)

    def test_converged_pairs_are_mutual_nearest_neighbours(self):
        rng = np.random.default_rng(12)
        a = R.smooth_unit(rng, 24, 20, 12)
        b = R.smooth_unit(rng, 22, 26, 12)
        i1, i2, _ = self.check_against_walk(a, b, 4, 10)
        self.assertGreater(len(i1), 0)
        pa, pb = a.reshape(-1, 12), b.reshape(-1, 12)
        np.testing.assert_array_equal(R.nn_dot(pa[i1], pb), i2)
        np.testing.assert_array_equal(R.nn_dot(pb[i2], pa), i1)

    def test_identical_maps_match_every_seed_to_itself(self):
        rng = np.random.default_rng(13)
        a = R.random_unit(rng, (16, 24, 24))
        trace = {}
        i1, i2 = R.fast_reciprocal_nns(a, a, 8, 10, trace)
        seeds = R.seed_grid(16, 24, 8)
        np.testing.assert_array_equal(i1, seeds)
        np.testing.assert_array_equal(i2, seeds)
        # Step a of iteration 1 cannot converge (old xy2 = -1); step b does for every seed.
        self.assertEqual(trace["active"][:3].tolist(), [len(seeds), len(seeds), 0])

    def test_unconverged_seeds_are_dropped_at_max_iter(self):
        rng = np.random.default_rng(14)
        a = R.random_unit(rng, (20, 20, 6))
        b = R.random_unit(rng, (20, 20, 6))
        trace = {}
        i1, _ = R.fast_reciprocal_nns(a, b, 2, 1, trace)
        n = len(R.seed_grid(20, 20, 2))
        self.assertEqual(trace["active"][0], n)
        self.assertGreater(trace["active"][2], 0)  # some seeds have not converged after one iteration
        self.assertLessEqual(len(i1), n - trace["active"][2])

    @unittest.skipIf(torch is None, "torch not installed")
    def test_float32_torch_blocks_give_the_same_matches_on_golden_data(self):
        # The official matcher: fp32 (A @ B.T).max(dim=1) in 8192-row blocks. On maps without
        # near-ties it must agree with the float64 reference.
        for name in R.CASES:
            t, meta = st.load_file(os.path.join(R.DEFAULT_GOLDEN, f"{name}.safetensors"))
            pa = torch.from_numpy(t["desc_a"].reshape(-1, t["desc_a"].shape[-1]))
            pb = torch.from_numpy(t["desc_b"].reshape(-1, t["desc_b"].shape[-1]))
            for q, db in ((pa, pb), (pb, pa)):
                _, nn = torch.max(q @ db.T, dim=1)
                np.testing.assert_array_equal(nn.numpy(), R.nn_dot(q.numpy(), db.numpy()), err_msg=name)


class GoldenData(unittest.TestCase):
    def test_golden_files_are_reproducible(self):
        total = 0
        for name in R.CASES:
            path = os.path.join(R.DEFAULT_GOLDEN, f"{name}.safetensors")
            total += os.path.getsize(path)
            t, meta = st.load_file(path)
            case = R.build_case(name)
            self.assertEqual(meta["match.case"], name)
            self.assertEqual(int(meta["match.subsample"]), case["subsample"])
            self.assertEqual(int(meta["match.max_iter"]), case["max_iter"])
            self.assertEqual(int(meta["match.border"]), case["border"])
            np.testing.assert_array_equal(t["desc_a"], case["a"], err_msg=name)
            np.testing.assert_array_equal(t["desc_b"], case["b"], err_msg=name)
            for key, want in (("idx_a", case["idx1"]), ("idx_b", case["idx2"]), ("xy_a", case["xy1"]),
                              ("xy_b", case["xy2"]), ("active", case["active"])):
                self.assertEqual(t[key].dtype, np.int32, f"{name}/{key}")
                np.testing.assert_array_equal(t[key], want, err_msg=f"{name}/{key}")
        self.assertLess(total, 1_000_000)

    def test_golden_cases_exercise_every_path(self):
        dropped_by_merge = dropped_by_iter = converged_in_a = border_drops = 0
        for name in R.CASES:
            c = R.build_case(name)
            act = c["active"]
            trace = {}
            i1, _ = R.fast_reciprocal_nns(c["a"], c["b"], c["subsample"], c["max_iter"], trace)
            n = len(R.seed_grid(*c["a"].shape[:2], c["subsample"]))
            dropped_by_merge += (n - act[-1]) - len(i1)
            dropped_by_iter += act[-1]
            converged_in_a += sum(int(act[k] - act[k + 1]) for k in range(2, len(act) - 1, 2))
            border_drops += len(i1) - len(c["idx1"])
            self.assertGreaterEqual(c["margin"], R.MIN_MARGIN)
        self.assertGreater(dropped_by_merge, 0)
        self.assertGreater(dropped_by_iter, 0)
        self.assertGreater(converged_in_a, 0)
        self.assertGreater(border_drops, 0)


if __name__ == "__main__":
    unittest.main()
