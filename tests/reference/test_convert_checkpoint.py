"""tools/convert-checkpoint: synthetic official-style .pth -> safetensors, round trip and refusals."""

import argparse
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import safetensors_io as st  # noqa: E402
from mast3r_config import METADATA_KEY, config_from_json, model_string_from_config, resolve_config  # noqa: E402
from mast3r_ref import AsymmetricMASt3R, canonical_name, load_weights  # noqa: E402

TOOL = os.path.normpath(os.path.join(HERE, "..", "..", "tools", "convert-checkpoint"))
TINY = dict(enc_embed_dim=32, enc_depth=2, enc_num_heads=2, dec_embed_dim=24, dec_depth=4, dec_num_heads=2,
            mlp_ratio=2, dpt_layer_dims=(8, 12, 16, 24), dpt_feature_dim=8, dpt_last_dim=8, local_mlp_ratio=0.08,
            patch_embed_cls="ManyAR_PatchEmbed", landscape_only=True, img_size=(512, 512))
TINY_KEYS = ["enc_depth", "dec_depth", "enc_embed_dim", "dec_embed_dim", "enc_num_heads", "dec_num_heads",
             "mlp_ratio", "pos_embed", "patch_embed_cls", "img_size", "head_type", "output_mode", "depth_mode",
             "conf_mode", "landscape_only", "two_confs", "desc_conf_mode", "dpt_layer_dims", "dpt_feature_dim",
             "dpt_last_dim", "local_mlp_ratio"]


def run_tool(*args):
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True)


class ConvertCheckpoint(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        torch.manual_seed(0)
        cfg = dict(resolve_config(None), **TINY)
        cfg["landscape_only"] = False  # the reference only builds the inference form
        model = AsymmetricMASt3R(cfg)
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(torch.randn_like(p))
        cls.model = model
        cls.state = model.state_dict()  # both DPT alias names, like the official state_dict
        train_cfg = dict(cfg, landscape_only=True)
        cls.model_string = model_string_from_config(train_cfg, TINY_KEYS)
        cls.args = argparse.Namespace(model=cls.model_string, lr=1e-4, epochs=10, train_dataset="x")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def save_pth(self, name, state, args=None):
        path = os.path.join(self.tmp.name, name)
        torch.save({"model": state, "args": args or self.args, "epoch": 3}, path)
        return path

    def test_round_trip_f32(self):
        pth = self.save_pth("ok.pth", self.state)
        out = os.path.join(self.tmp.name, "ok.safetensors")
        r = run_tool(pth, "--out", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("trust", r.stderr)
        tensors, meta = st.load_file(out)
        cfg = config_from_json(meta[METADATA_KEY])
        self.assertEqual(cfg["patch_embed_cls"], "PatchEmbedDust3R")  # load_model's inference rewrites
        self.assertFalse(cfg["landscape_only"])
        self.assertEqual(cfg["depth_mode"], ("exp", -float("inf"), float("inf")))
        self.assertEqual(cfg["dpt_layer_dims"], (8, 12, 16, 24))
        self.assertIn('"depth_mode":["exp","-inf","inf"]', meta[METADATA_KEY])
        self.assertEqual(meta["mast3r.source_model"], self.model_string)
        self.assertFalse(any(".layer_rn." in k for k in tensors))  # one name per aliased tensor
        expected = {canonical_name(k) for k in self.state}
        self.assertEqual(set(tensors), expected)
        for k, v in self.state.items():
            np.testing.assert_array_equal(tensors[canonical_name(k)], v.numpy(), err_msg=k)
            self.assertEqual(tensors[canonical_name(k)].dtype, np.float32)
        # the converted file drives the reference to the same outputs
        m2 = AsymmetricMASt3R(cfg)
        load_weights(m2, tensors)
        x1, x2 = torch.randn(1, 3, 32, 48), torch.randn(1, 3, 48, 32)
        with torch.no_grad():
            a, b = self.model(x1, x2), m2(x1, x2)
        for k in a:
            self.assertTrue(torch.equal(a[k], b[k]), k)
        r = run_tool(pth, "--out", out)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("exists", r.stderr)

    def test_f16_and_single_alias_input(self):
        state = {k: v for k, v in self.state.items() if not ("_rn." in k and ".layer_rn." not in k)}
        self.assertEqual(len(state), len(self.state) - 8)
        pth = self.save_pth("f16.pth", state, args={"model": self.model_string})
        out = os.path.join(self.tmp.name, "f16.safetensors")
        r = run_tool(pth, "--out", out, "--dtype", "f16")
        self.assertEqual(r.returncode, 0, r.stderr)
        tensors, _ = st.load_file(out)
        for k, v in self.state.items():
            t = tensors[canonical_name(k)]
            self.assertEqual(t.dtype, np.float16)
            np.testing.assert_array_equal(t, v.numpy().astype(np.float16), err_msg=k)

    def test_refuses_missing_unexpected_and_misshaped(self):
        state = dict(self.state)
        del state["dec_blocks2.3.mlp.fc2.bias"]
        state["downstream_head3.dpt.head.0.weight"] = torch.zeros(3)
        state["enc_norm.weight"] = torch.zeros(33)
        pth = self.save_pth("bad.pth", state)
        out = os.path.join(self.tmp.name, "bad.safetensors")
        r = run_tool(pth, "--out", out)
        self.assertEqual(r.returncode, 2)
        for name in ("dec_blocks2.3.mlp.fc2.bias", "downstream_head3.dpt.head.0.weight", "enc_norm.weight",
                     "missing", "unexpected", "shape"):
            self.assertIn(name, r.stderr)
        self.assertFalse(os.path.exists(out))

    def test_refuses_unknown_constructor_args(self):
        args = argparse.Namespace(model=self.model_string[:-1] + ", use_offsets=True)")
        pth = self.save_pth("unk.pth", self.state, args=args)
        r = run_tool(pth, "--out", os.path.join(self.tmp.name, "unk.safetensors"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("use_offsets", r.stderr)


if __name__ == "__main__":
    unittest.main()
