"""Retrieval head: the PyTorch reference (retrieval_ref.py), tools/convert-checkpoint --retrieval on
synthetic official-style .pth files, and the committed golden data (tests/golden/retrieval)."""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import retrieval_make_golden as golden  # noqa: E402
import safetensors_io as st  # noqa: E402
from retrieval_checkpoint import RetrievalCheckpointError, convert  # noqa: E402
from retrieval_ref import METADATA_KEY, RetrievalHead, head_from_config, top_pairs  # noqa: E402

TOOL = os.path.normpath(os.path.join(HERE, "..", "..", "tools", "convert-checkpoint"))
GOLDEN = os.path.normpath(os.path.join(HERE, "..", "golden", "retrieval"))


def run_tool(*args):
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True)


def official_args(**kw):
    """Namespace like the official training script's, as stored in ckpt['args']."""
    a = dict(pretrained="MASt3R_ViTLarge_BaseDecoder_512_catmlpdpt_metric.pth", freeze_backbone=1, prewhiten=1.0,
             hdims="", residual=False, postwhiten=None, featweights="l2norm", nfeat=300, nclusters=65536, imsize=512)
    a.update(kw)
    return argparse.Namespace(**a)


def random_head(dim=16, **kw):
    torch.manual_seed(0)
    head = RetrievalHead(dim, **kw)
    with torch.no_grad():
        for p in head.parameters():
            p.copy_(torch.randn_like(p) * 0.5)
    return head


class Reference(unittest.TestCase):
    def test_whitener_runs_in_float64_and_returns_the_input_dtype(self):
        head = random_head()
        x = torch.randn(2, 5, 16)
        feat, attn = head.features_and_attention(x)
        self.assertEqual(feat.dtype, torch.float32)
        want = ((x.double().reshape(-1, 16) - head.prewhiten.m) @ head.prewhiten.p).reshape(2, 5, 16).float()
        self.assertTrue(torch.equal(feat, want))
        self.assertTrue(torch.allclose(attn, want.norm(dim=-1)))

    def test_local_keeps_the_top_tokens_best_first_with_ties_to_the_lower_index(self):
        head = RetrievalHead(4, prewhiten=False, nfeat=3)
        x = torch.tensor([[[1.0, 0, 0, 0], [3, 0, 0, 0], [0, 2, 0, 0], [0, 0, 3, 0], [0, 0, 0, 0.5]]])
        feat, attn, idx = head.local(x)
        self.assertEqual(idx.tolist(), [[1, 3, 2]])
        self.assertEqual(attn.tolist(), [[3.0, 3.0, 2.0]])
        self.assertTrue(torch.equal(feat[0], x[0, [1, 3, 2]]))

    def test_negative_nfeat_is_a_fraction_of_the_tokens(self):
        self.assertEqual(RetrievalHead(4, nfeat=-0.25).kept_tokens(20), 5)
        self.assertEqual(RetrievalHead(4, nfeat=-0.25).kept_tokens(3), 0)
        self.assertEqual(RetrievalHead(4, nfeat=300).kept_tokens(20), 20)

    def test_global_is_the_normalised_attention_weighted_sum(self):
        head = random_head(hdims=[24, 16], residual=True, postwhiten=True)
        x = torch.randn(3, 7, 16)
        feat, attn = head.features_and_attention(x)
        g = head.global_embedding(x)
        want = (feat * attn[:, :, None]).sum(1)
        self.assertTrue(torch.allclose(g, want / want.norm(dim=1, keepdim=True), atol=1e-6))
        self.assertTrue(torch.allclose(g.norm(dim=1), torch.ones(3)))

    def test_projector_layout_matches_the_official_sequential(self):
        head = RetrievalHead(16, hdims=[32, 24, 8])
        names = sorted(k for k in head.state_dict() if k.startswith("projector."))
        self.assertEqual(names, ["projector.0.bias", "projector.0.weight", "projector.1.bias", "projector.1.weight",
                                 "projector.3.bias", "projector.3.weight", "projector.4.bias", "projector.4.weight",
                                 "projector.6.bias", "projector.6.weight"])

    def test_top_pairs_never_pick_the_image_itself(self):
        g = torch.ones(4, 3)
        sim, idx, scores = top_pairs(g, 2)
        self.assertEqual(idx.tolist(), [[1, 2], [0, 2], [0, 1], [0, 1]])
        self.assertTrue(torch.allclose(scores, torch.ones(4, 2, dtype=torch.float64)))


class ConvertRetrieval(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def save(self, name, state, args):
        path = os.path.join(self.tmp.name, name + ".pth")
        torch.save({"model": state, "args": args, "epoch": 0}, path)
        return path

    def convert(self, path, *extra):
        out = path.replace(".pth", ".safetensors")
        r = run_tool("--retrieval", path, "--out", out, "--force", *extra)
        return r, out

    def test_trainingfree_round_trip_keeps_float64_whitening(self):
        head = random_head(32)
        path = self.save("tf", head.state_dict(), official_args())
        r, out = self.convert(path)
        self.assertEqual(r.returncode, 0, r.stderr)
        header = st.read_header(out)[0]
        self.assertEqual(sorted(k for k in header if k != "__metadata__"), ["prewhiten.m", "prewhiten.p"])
        self.assertEqual(header["prewhiten.p"]["dtype"], "F64")
        cfg = json.loads(st.load_metadata(out)[METADATA_KEY])
        self.assertEqual(cfg, {"dim": 32, "prewhiten": True, "hdims": [], "residual": False, "postwhiten": False,
                               "featweights": "l2norm", "nfeat": 300.0, "layer_norm_eps": 1e-5})
        tensors = st.load_file(out)[0]
        self.assertTrue(np.array_equal(tensors["prewhiten.p"], head.prewhiten.p.detach().numpy()))
        self.assertIn("nclusters", json.loads(st.load_metadata(out)["retrieval.source_args"]))

    def test_projector_head_round_trip_gives_identical_outputs(self):
        head = random_head(16, hdims=[24, 16], residual=True, postwhiten=True, nfeat=-0.5)
        args = official_args(hdims="24_16", residual=True, postwhiten=1, nfeat=-0.5)
        r, out = self.convert(self.save("proj", head.state_dict(), args))
        self.assertEqual(r.returncode, 0, r.stderr)
        back = head_from_config(json.loads(st.load_metadata(out)[METADATA_KEY]))
        back.load_state_dict({k: torch.from_numpy(v) for k, v in st.load_file(out)[0].items()})
        x = torch.randn(2, 10, 16)
        for a, b in zip(head.local(x), back.local(x)):
            self.assertTrue(torch.equal(a, b))

    def test_backbone_tensors_are_dropped_with_a_warning(self):
        head = random_head(16)
        state = dict(head.state_dict(), **{"backbone.enc_norm.weight": torch.ones(16)})
        r, out = self.convert(self.save("bb", state, official_args()))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("dropping 1 backbone", r.stderr)
        self.assertNotIn("backbone.enc_norm.weight", st.read_header(out)[0])

    def test_refusals_name_the_problem(self):
        # In-process (starting the tool loads torch, seconds each); the tool's own error path is
        # test_the_tool_reports_a_refusal.
        good = random_head(16, hdims=[24, 16]).state_dict()
        cases = {
            "missing": ({k: v for k, v in good.items() if k != "projector.0.bias"}, official_args(hdims="24_16"),
                        "missing tensor(s): projector.0.bias"),
            "unexpected": (dict(good, extra=torch.zeros(1)), official_args(hdims="24_16"),
                           "unexpected tensor(s): extra"),
            "shape": (good, official_args(hdims="32_16"), "projector.0.weight is [24, 16], expected [32, 16]"),
            "featweights": (good, official_args(hdims="24_16", featweights="softmax"), "featweights='softmax'"),
            "hdims": (good, official_args(hdims="24x16"), "hdims='24x16'"),
            "residual": (random_head(16, hdims=[24, 8]).state_dict(), official_args(hdims="24_8", residual=True),
                         "inconsistent head arguments"),
        }
        for name, (state, args, message) in cases.items():
            with self.subTest(name):
                with self.assertRaises(RetrievalCheckpointError) as e:
                    convert({"model": state, "args": args})
                self.assertIn(message, str(e.exception))

    def test_the_tool_reports_a_refusal(self):
        state = {k: v for k, v in random_head(16).state_dict().items() if k != "prewhiten.p"}
        r, out = self.convert(self.save("refused", state, official_args()))
        self.assertEqual(r.returncode, 2)
        self.assertIn("missing tensor(s): prewhiten.p", r.stderr)
        self.assertFalse(os.path.exists(out))

    def test_mast3r_mode_points_to_retrieval(self):
        path = self.save("hint", random_head(16).state_dict(), official_args())
        r = run_tool(path, "--out", path + ".st")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("pass --retrieval", r.stderr)


class Golden(unittest.TestCase):
    def assert_reproduced(self, key, committed, made):
        # The maker goes through LAPACK (QR, eigendecomposition) and float32 BLAS, whose round-off
        # depends on the host's BLAS build and CPU: bitwise equality holds only on the machine that
        # wrote the files (on another: 1e-16..2e-8 relative in the float64 whitening, which is learnt
        # from float32 features, and up to 9e-7 in the float32 outputs). Integers (the chosen pairs)
        # must be equal, floats within 1e-5 of the largest value: a change of the maker is far larger.
        if np.issubdtype(made.dtype, np.floating):
            tolerance = 1e-5
            scale = max(float(np.max(np.abs(made))), 1e-30) if made.size else 1.0
            error = float(np.max(np.abs(committed.astype(np.float64) - made))) / scale if made.size else 0.0
            self.assertEqual(committed.shape, made.shape, key)
            self.assertLessEqual(error, tolerance, key)
        else:
            self.assertTrue(np.array_equal(committed, made), key)

    def test_committed_golden_files_are_reproduced_by_the_maker(self):
        for name in golden.CASES:
            with self.subTest(name):
                io, meta = st.load_file(os.path.join(GOLDEN, name, "io.safetensors"))[0], \
                    st.load_metadata(os.path.join(GOLDEN, name, "io.safetensors"))
                ok, ckpt, want, k = golden.make_case(name, int(meta["seed"]))
                self.assertTrue(ok)
                self.assertEqual(int(meta["k"]), k)
                for key, t in want.items():
                    self.assert_reproduced(key, io[key], t.numpy())
                model = st.load_file(os.path.join(GOLDEN, name, "model.safetensors"))[0]
                for key, t in ckpt["model"].items():
                    self.assert_reproduced(key, model[key], t.detach().numpy())


if __name__ == "__main__":
    unittest.main()
