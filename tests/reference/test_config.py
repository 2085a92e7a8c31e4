"""Tests of the MASt3R config: JSON with "inf" strings, model-string parsing without eval."""

import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import mast3r_config as C  # noqa: E402

INF = float("inf")

# the training command of the released checkpoint (mast3r README), as stored in ckpt['args'].model
README_STRING = ("AsymmetricMASt3R(enc_depth=24, dec_depth=12, enc_embed_dim=1024, dec_embed_dim=768, "
                 "enc_num_heads=16, dec_num_heads=12, pos_embed='RoPE100', patch_embed_cls='ManyAR_PatchEmbed', "
                 "img_size=(512, 512), head_type='catmlp+dpt', output_mode='pts3d+desc24', "
                 "depth_mode=('exp', -inf, inf), conf_mode=('exp', 1, inf), two_confs=True, "
                 "desc_conf_mode=('exp', 0, inf))")


class ConfigJson(unittest.TestCase):
    def test_round_trip_with_infinities(self):
        cfg = C.resolve_config(None)
        text = C.config_to_json(cfg)
        raw = json.loads(text)
        self.assertEqual(raw["depth_mode"], ["exp", "-inf", "inf"])
        self.assertEqual(raw["conf_mode"], ["exp", 1, "inf"])
        self.assertEqual(raw["desc_conf_mode"], ["exp", 0, "inf"])
        self.assertEqual(raw["img_size"], [512, 512])
        back = C.config_from_json(text)
        self.assertEqual(back, cfg)
        self.assertEqual(back["depth_mode"], ("exp", -INF, INF))
        self.assertEqual(C.config_to_json(back), text)

    def test_defaults_are_the_official_checkpoint(self):
        cfg = C.resolve_config(None)
        for k, v in dict(enc_embed_dim=1024, enc_depth=24, enc_num_heads=16, dec_embed_dim=768, dec_depth=12,
                         dec_num_heads=12, patch_size=16, mlp_ratio=4, head_type="catmlp+dpt",
                         output_mode="pts3d+desc24", two_confs=True, landscape_only=False,
                         dpt_layer_dims=(96, 192, 384, 768), dpt_feature_dim=256, dpt_last_dim=128,
                         local_mlp_ratio=4.0).items():
            self.assertEqual(cfg[k], v, k)
        self.assertEqual(C.dpt_hooks(cfg), [0, 6, 9, 12])
        self.assertEqual(C.local_feat_dim(cfg), 24)

    def test_unknown_keys_and_reserved_strings(self):
        with self.assertRaisesRegex(C.ConfigError, "bogus"):
            C.resolve_config(dict(bogus=1))
        with self.assertRaises(C.ConfigError):
            C.config_to_json(dict(pos_embed="inf"))
        with self.assertRaises(C.ConfigError):
            C.config_to_json(dict(x=float("nan")))

    def test_partial_json_takes_constructor_defaults(self):
        cfg = C.config_from_json('{"enc_depth": 3, "depth_mode": ["exp", "-inf", "inf"]}')
        self.assertEqual(cfg["enc_depth"], 3)
        self.assertEqual(cfg["enc_embed_dim"], 768)  # CroCoNet default, not the checkpoint's 1024
        self.assertEqual(cfg["desc_conf_mode"], cfg["conf_mode"])


class ModelString(unittest.TestCase):
    def test_readme_string(self):
        cfg, dropped = C.config_from_model_string(README_STRING)
        self.assertEqual(dropped, [])
        self.assertEqual(cfg, C.resolve_config(None))  # == the inference config (rewrites applied)

    def test_variants(self):
        name, kw = C.parse_model_string("AsymmetricMASt3R(a=float('inf'), b=-np.inf, c=[1, 2], d=None, e=+3)")
        self.assertEqual(name, "AsymmetricMASt3R")
        self.assertEqual(kw, dict(a=INF, b=-INF, c=(1, 2), d=None, e=3))
        s = C.model_string_from_config(C.resolve_config(None))
        self.assertEqual(C.config_from_model_string(s)[0], C.resolve_config(None))

    def test_refuses_code_and_unknowns(self):
        for bad in ("AsymmetricMASt3R(x=__import__('os').system('true'))",
                    "AsymmetricMASt3R(enc_depth=2*12)",
                    "AsymmetricMASt3R(24)",
                    "AsymmetricMASt3R(**kw)",
                    "AsymmetricMASt3R(norm_layer=partial(nn.LayerNorm, eps=1e-6))",
                    "import os"):
            with self.assertRaises(C.ConfigError, msg=bad):
                C.config_from_model_string(bad)
        with self.assertRaisesRegex(C.ConfigError, "AsymmetricCroCo3DStereo"):
            C.config_from_model_string("AsymmetricCroCo3DStereo(enc_depth=24)")
        with self.assertRaisesRegex(C.ConfigError, "use_offsets"):
            C.config_from_model_string("AsymmetricMASt3R(use_offsets=True)")
        cfg, dropped = C.config_from_model_string("AsymmetricMASt3R(use_offsets=True)", allow_unknown=True)
        self.assertEqual(dropped, ["use_offsets"])
        self.assertNotIn("use_offsets", cfg)


if __name__ == "__main__":
    unittest.main()
