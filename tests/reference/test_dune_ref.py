"""The DUNE encoder reference (dune_ref.py) and the DUNE keys of the config (mast3r_config.py)."""

import os
import sys
import unittest

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import dune_ref  # noqa: E402
from mast3r_config import ConfigError, config_from_json, config_to_json, resolve_config  # noqa: E402

TINY = dict(encoder="dune", patch_size=14, enc_embed_dim=16, enc_depth=1, enc_num_heads=2, mlp_ratio=2,
            dec_embed_dim=16, dec_depth=4, dec_num_heads=2, dune_num_register_tokens=3, dune_pos_embed_grid=4)


class PositionTable(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)
        self.table = torch.randn(1, 1 + 16, 8, dtype=torch.float64)

    def test_table_is_used_as_it_is_on_its_own_grid_of_a_square_image(self):
        out = dune_ref.interpolate_pos_table(self.table, 4, 4, 4, 0.1, False, square_image=True)
        self.assertTrue(torch.equal(out, self.table[:, 1:]))

    def test_same_grid_of_a_non_square_image_is_still_resampled(self):
        # 2x8 has the table's 16 tokens, but the image is not square: upstream interpolates
        out = dune_ref.interpolate_pos_table(self.table, 4, 2, 8, 0.1, False, square_image=False)
        self.assertEqual(tuple(out.shape), (1, 16, 8))

    def test_offset_samples_with_the_scale_factor_not_the_size_ratio(self):
        with_offset = dune_ref.interpolate_pos_table(self.table, 4, 3, 4, 0.1, False, square_image=False)
        by_size = dune_ref.interpolate_pos_table(self.table, 4, 3, 4, 0.0, False, square_image=False)
        self.assertGreater((with_offset - by_size).abs().max().item(), 1e-3)
        grid = self.table[:, 1:].reshape(1, 4, 4, 8).permute(0, 3, 1, 2)
        manual = F.interpolate(grid, scale_factor=(3.1 / 4, 4.1 / 4), mode="bicubic", align_corners=False)
        torch.testing.assert_close(with_offset, manual.permute(0, 2, 3, 1).reshape(1, 12, 8), rtol=0, atol=0)

    def test_antialias_changes_downsampling(self):
        plain = dune_ref.interpolate_pos_table(self.table, 4, 2, 2, 0.0, False, square_image=True)
        aa = dune_ref.interpolate_pos_table(self.table, 4, 2, 2, 0.0, True, square_image=True)
        self.assertGreater((plain - aa).abs().max().item(), 1e-3)


class DuneTokens(unittest.TestCase):
    def test_layout_is_cls_registers_patches_and_registers_get_no_position(self):
        cfg = resolve_config(TINY)
        vit = dune_ref.DuneViT(cfg, {"dtype": torch.float64})
        with torch.no_grad():
            for p in vit.parameters():
                p.copy_(torch.randn_like(p))
        taps = {}
        with torch.no_grad():
            vit(torch.zeros(1, 3, 28, 42, dtype=torch.float64), taps)
        tokens = taps["dune_tokens"]
        self.assertEqual(tuple(tokens.shape), (1, 1 + 3 + 6, 16))
        torch.testing.assert_close(tokens[:, 0], (vit.cls_token + vit.pos_embed[:, :1])[:, 0], rtol=0, atol=0)
        torch.testing.assert_close(tokens[:, 1:4], vit.register_tokens, rtol=0, atol=0)

    def test_state_dict_names_are_the_official_ones(self):
        names = set(dune_ref.DuneViT(resolve_config(TINY), {"device": "meta"}).state_dict())
        for n in ("cls_token", "pos_embed", "register_tokens", "patch_embed.proj.weight",
                  "blocks.0.0.norm1.weight", "blocks.0.0.attn.qkv.bias", "blocks.0.0.ls1.gamma",
                  "blocks.0.0.mlp.fc2.weight", "blocks.0.0.ls2.gamma"):
            self.assertIn(n, names)


class DuneConfig(unittest.TestCase):
    def test_dune_keys_round_trip_and_croco_configs_do_not_store_them(self):
        cfg = resolve_config(TINY)
        self.assertEqual(config_from_json(config_to_json(cfg)), cfg)
        self.assertNotIn("dune_", config_to_json(resolve_config(None)))
        self.assertNotIn("encoder", config_to_json(resolve_config(None)))

    def test_bad_dune_settings_are_refused_by_name(self):
        for bad, word in ((dict(patch_size=16), "patch_size"), (dict(dune_ffn_layer="swiglufused"), "dune_ffn_layer"),
                          (dict(dune_interpolate_offset=1.5), "dune_interpolate_offset"),
                          (dict(encoder="vit"), "encoder")):
            with self.assertRaises(ConfigError) as ctx:
                resolve_config(dict(TINY, **bad))
            self.assertIn(word, str(ctx.exception))


if __name__ == "__main__":
    unittest.main()
