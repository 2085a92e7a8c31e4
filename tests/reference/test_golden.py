"""The committed golden data in tests/golden/ is reproducible and consistent with the reference."""

import os
import sys
import tempfile
import unittest

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import make_golden as G  # noqa: E402
import safetensors_io as st  # noqa: E402
from mast3r_config import METADATA_KEY, config_from_json  # noqa: E402
from mast3r_ref import AsymmetricMASt3R, load_weights  # noqa: E402

GOLDEN = G.DEFAULT_OUT
OUTPUTS = [f"{k}_{v}" for k in ("pts3d", "conf", "desc", "desc_conf") for v in (1, 2)]
ENGINE_FP32_TOL = 1e-4  # max |a - b| / max |b| per tensor (README)


def norm_err(a, b):
    scale = float(np.abs(b).max())
    return float(np.abs(a - b).max()) / (scale if scale > 0 else 1.0)


def load_case(name):
    w, wm = st.load_file(os.path.join(GOLDEN, name, "model.safetensors"))
    io, im = st.load_file(os.path.join(GOLDEN, name, "io.safetensors"))
    return w, wm, io, im


class GoldenData(unittest.TestCase):
    def setUp(self):
        torch.set_num_threads(1)

    def test_cases_present_and_described(self):
        total = {"croco": 0, "dune": 0}
        for name, spec in G.CASES.items():
            w, wm, io, im = load_case(name)
            cfg = config_from_json(wm[METADATA_KEY])
            self.assertEqual(im[METADATA_KEY], wm[METADATA_KEY])
            self.assertEqual(im["golden.case"], name)
            B = spec["batch"]
            for v, (W, H) in ((1, spec["view1"]), (2, spec["view2"])):
                self.assertEqual(io[f"img{v}"].shape, (B, 3, H, W))
                self.assertEqual(io[f"img{v}_u8"].shape, (H, W, 3) if B == 1 else (B, H, W, 3))
                self.assertEqual(io[f"img{v}_u8"].dtype, np.uint8)
                u8 = io[f"img{v}_u8"].reshape(B, H, W, 3)
                np.testing.assert_array_equal(io[f"img{v}"], G.normalise_u8(u8).numpy())
                self.assertEqual(io[f"pts3d_{v}"].shape, (B, H, W, 3))
                self.assertEqual(io[f"desc_{v}"].shape, (B, H, W, int(cfg["output_mode"][10:])))
            for k in OUTPUTS:
                self.assertEqual(io[k].dtype, np.float32, k)
                self.assertTrue(np.isfinite(io[k]).all(), k)
            for f in ("model.safetensors", "io.safetensors"):
                total[cfg.get("encoder", "croco")] += os.path.getsize(os.path.join(GOLDEN, name, f))
        # dune_batch2's model.safetensors is dune_same's (one git blob), counted twice here
        self.assertLess(total["croco"], 5_000_000)
        self.assertLess(total["dune"], 4_500_000)

    def test_mixed_case_has_different_token_grids_with_odd_sides(self):
        spec = G.CASES["tiny_mixed"]
        (w1, h1), (w2, h2) = spec["view1"], spec["view2"]
        self.assertGreater(w1, h1)
        self.assertLess(w2, h2)
        self.assertNotEqual((w1 // 16) * (h1 // 16), (w2 // 16) * (h2 // 16))
        self.assertEqual((h2 // 16) % 2, 1)
        self.assertEqual((w1 // 16) % 2, 1)

    def test_outputs_are_not_degenerate(self):
        for name in G.CASES:
            _, _, io, _ = load_case(name)
            for v in (1, 2):
                pts, conf, desc, dconf = (io[f"{k}_{v}"] for k in ("pts3d", "conf", "desc", "desc_conf"))
                np.testing.assert_allclose(np.linalg.norm(desc, axis=-1), 1.0, rtol=1e-5)
                self.assertGreaterEqual(conf.min(), 1.0)
                self.assertGreater(dconf.min(), 0.0)
                d = np.linalg.norm(pts, axis=-1)
                self.assertGreater(np.percentile(d, 90) / np.percentile(d, 10), 2.0, f"{name} view {v}")
                self.assertGreater(conf.std(), 0.05)
                self.assertGreater(np.log(dconf).std(), 0.1)
                # per-pixel variation inside a patch (DPT upsampling and pixel_shuffle are exercised)
                self.assertGreater(np.abs(np.diff(desc[:, :16, :16], axis=2)).max(), 1e-2)

    def test_regeneration_reproduces_the_files(self):
        with tempfile.TemporaryDirectory() as tmp:
            for name in G.CASES:
                cfg, weights, io = G.build_case(name, G.CASES[name])
                G.write_case(tmp, name, cfg, weights, io)
                with open(os.path.join(tmp, name, "model.safetensors"), "rb") as a, \
                        open(os.path.join(GOLDEN, name, "model.safetensors"), "rb") as b:
                    self.assertTrue(a.read() == b.read(), f"{name}: model.safetensors differs")
                new, nm = st.load_file(os.path.join(tmp, name, "io.safetensors"))
                old, om = st.load_file(os.path.join(GOLDEN, name, "io.safetensors"))
                self.assertEqual(nm, om)
                self.assertEqual(sorted(new), sorted(old), name)
                for k in old:
                    self.assertEqual(new[k].shape, old[k].shape, k)
                    # identical bytes on the generating machine; allow last-bit BLAS differences elsewhere
                    self.assertLessEqual(norm_err(new[k].astype(np.float64), old[k].astype(np.float64)), 1e-6,
                                         f"{name}: {k}")

    def test_fp32_reference_meets_the_engine_tolerance(self):
        """A straightforward fp32 implementation (PyTorch CPU) lands well inside the engine's tolerance."""
        for name in G.CASES:
            w, wm, io, _ = load_case(name)
            model = AsymmetricMASt3R(config_from_json(wm[METADATA_KEY]), dtype=torch.float32)
            load_weights(model, w)
            taps = {}
            with torch.no_grad():
                out = model(torch.from_numpy(io["img1"]), torch.from_numpy(io["img2"]), taps=taps)
            for k in OUTPUTS:
                self.assertLess(norm_err(out[k].numpy(), io[k]), ENGINE_FP32_TOL / 10, f"{name}: {k}")
            for k in io:
                if k.startswith("tap."):
                    self.assertLess(norm_err(taps[k[4:]].numpy(), io[k]), ENGINE_FP32_TOL / 10, f"{name}: {k}")


if __name__ == "__main__":
    unittest.main()
