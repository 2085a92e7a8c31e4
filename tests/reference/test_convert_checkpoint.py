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
from dune_checkpoint import to_official  # noqa: E402
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


def assert_same_outputs(test, model, cfg, tensors, size1, size2):
    """The reference built from converted `tensors` gives `model`'s outputs exactly, on a random
    pair of images of (H, W) size1 and size2."""
    converted = AsymmetricMASt3R(cfg)
    load_weights(converted, tensors)
    x1, x2 = torch.randn(1, 3, *size1), torch.randn(1, 3, *size2)
    with torch.no_grad():
        a, b = model(x1, x2), converted(x1, x2)
    for k in a:
        test.assertTrue(torch.equal(a[k], b[k]), k)


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
        assert_same_outputs(self, self.model, cfg, tensors, (32, 48), (48, 32))
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


# DUNE-MASt3R: a DUNE ViT-Tiny (the smallest official arch: 192 wide, 12 blocks, 3 heads) under a tiny
# MASt3R decoder, saved as the two official files are laid out (dune_checkpoint.py).
DUNE_TINY = dict(TINY, enc_embed_dim=192, enc_depth=12, enc_num_heads=3, mlp_ratio=4, patch_embed_cls="PatchEmbedDust3R",
                 landscape_only=False, encoder="dune", patch_size=14, dune_num_register_tokens=4,
                 dune_pos_embed_grid=4, dune_interpolate_offset=0.1, dune_interpolate_antialias=False,
                 dune_layerscale=True, dune_backbone="dune_vittiny_14_56_encoder")


class ConvertDuneCheckpoint(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        torch.manual_seed(1)
        cfg = resolve_config(DUNE_TINY)
        model = AsymmetricMASt3R(cfg)
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(torch.randn_like(p) * 0.3)
        cls.model, cls.cfg = model, cfg
        sd = model.state_dict()
        mast3r, student = to_official(cfg, sd, "vit_tiny", 56,
                                      extra_model_keys=("dpt_layer_dims", "dpt_feature_dim", "dpt_last_dim",
                                                        "local_mlp_ratio"))
        cls.model_str = mast3r["mast3r_model_str"]
        # what the official files hold besides: DDP's module. prefix, the ViT's final norm and mask token,
        # a projector; the unused CroCo encoder of the MASt3R part and the ImageNet buffers
        student = {"module." + k: v for k, v in student["model"].items()}
        student["module.encoder.norm.weight"] = torch.ones(192)
        student["module.encoder.norm.bias"] = torch.zeros(192)
        student["module.encoder.mask_token"] = torch.zeros(1, 192)
        student["module.projectors.dino2reg_vitlarge_14.fc.weight"] = torch.zeros(4, 192)
        cls.student = student
        cls.dune_args = argparse.Namespace(image_size=56, enc_args={"arch": "vit_tiny", "patch_size": 14},
                                           teachers=["dino2reg_vitlarge_14"])
        mast3r = dict(mast3r["model"])
        mast3r["mast3r.mask_token"] = torch.zeros(1, 1, 24)
        mast3r["mast3r.patch_embed.proj.weight"] = torch.zeros(192, 3, 14, 14)
        mast3r["mast3r.enc_blocks.0.norm1.weight"] = torch.zeros(192)
        mast3r["mast3r.enc_norm.weight"] = torch.zeros(192)
        mast3r["imagenet_mean"] = torch.tensor([0.485, 0.456, 0.406]).float().view(1, 3, 1, 1)
        mast3r["imagenet_std"] = torch.tensor([0.229, 0.224, 0.225]).float().view(1, 3, 1, 1)
        cls.mast3r = mast3r

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def save(self, name, mast3r=None, student=None, dune_args=None, model_str=None):
        m = os.path.join(self.tmp.name, name + ".pth")
        d = os.path.join(self.tmp.name, name + "_dune.pth")
        torch.save({"model": self.mast3r if mast3r is None else mast3r, "dune_backbone_name": self.cfg["dune_backbone"],
                    "mast3r_model_str": model_str or self.model_str}, m)
        torch.save({"model": self.student if student is None else student, "args": dune_args or self.dune_args,
                    "iter": 5}, d)
        return m, d

    def test_two_official_files_make_one_model_equal_to_the_reference(self):
        m, d = self.save("ok")
        out = os.path.join(self.tmp.name, "ok.safetensors")
        r = run_tool(m, "--dune-encoder", d, "--out", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        tensors, meta = st.load_file(out)
        cfg = config_from_json(meta[METADATA_KEY])
        self.assertEqual(cfg, self.cfg)
        self.assertEqual(meta["mast3r.source_dune_encoder"], "ok_dune.pth")
        self.assertFalse(any(k.startswith(("mast3r.", "enc_blocks.", "imagenet")) or k == "mask_token" for k in tensors))
        self.assertIn("dune_backbone.blocks.0.11.ls2.gamma", tensors)
        self.assertNotIn("dune_backbone.norm.weight", tensors)
        assert_same_outputs(self, self.model, cfg, tensors, (42, 56), (56, 28))

    def test_refusals_name_the_problem(self):
        student = dict(self.student)
        del student["module.encoder.blocks.0.3.mlp.fc1.bias"]
        student["module.encoder.pos_embed"] = torch.zeros(1, 26, 192)
        giant = argparse.Namespace(image_size=56, enc_args={"arch": "vit_giant2"})
        swiglu = argparse.Namespace(image_size=56, enc_args={"arch": "vit_tiny", "ffn_layer": "swiglufused"})
        wide = self.model_str.replace("enc_embed_dim=192", "enc_embed_dim=384")
        cases = [
            (dict(student=student), ["dune_backbone.blocks.0.3.mlp.fc1.bias", "dune_backbone.pos_embed", "missing",
                                     "shape"]),
            (dict(dune_args=giant), ["vit_giant2"]),
            (dict(dune_args=swiglu), ["ffn_layer='swiglufused'"]),
            (dict(model_str=wide), ["enc_embed_dim=384", "192 wide"]),
            (dict(mast3r=dict(self.mast3r, imagenet_std=torch.ones(1, 3, 1, 1))), ["imagenet_std"]),
        ]
        for i, (kw, needles) in enumerate(cases):
            m, d = self.save(f"bad{i}", **kw)
            out = os.path.join(self.tmp.name, f"bad{i}.safetensors")
            r = run_tool(m, "--dune-encoder", d, "--out", out)
            self.assertEqual(r.returncode, 2, r.stderr)
            for n in needles:
                self.assertIn(n, r.stderr, f"case {i}")
            self.assertFalse(os.path.exists(out))

    def test_a_dune_checkpoint_without_its_encoder_is_refused(self):
        m, _ = self.save("alone")
        r = run_tool(m, "--out", os.path.join(self.tmp.name, "alone.safetensors"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("--dune-encoder", r.stderr)


if __name__ == "__main__":
    unittest.main()
