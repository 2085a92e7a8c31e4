"""Unit tests of the MASt3R PyTorch reference against the spec (names, RoPE, pixel_shuffle, ConvTranspose, postprocess)."""

import math
import os
import sys
import unittest

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import mast3r_ref as R  # noqa: E402
from mast3r_config import resolve_config  # noqa: E402

TINY = dict(enc_embed_dim=32, enc_depth=2, enc_num_heads=2, dec_embed_dim=24, dec_depth=4, dec_num_heads=2,
            mlp_ratio=2, dpt_layer_dims=(8, 12, 16, 24), dpt_feature_dim=8, dpt_last_dim=8, local_mlp_ratio=0.25)


def tiny_model(dtype=torch.float64, seed=0, **over):
    torch.manual_seed(seed)
    m = R.AsymmetricMASt3R(dict(TINY, **over), dtype=dtype)
    with torch.no_grad():  # default init is fine for structure tests; give biases/norms some spread
        for p in m.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    return m.eval()


class StateDictNames(unittest.TestCase):
    def test_full_config_matches_official_tsv(self):
        rows = []
        with open(os.path.join(HERE, "official_state_dict_keys.tsv")) as f:
            for line in f:
                if line.startswith("#") or not line.strip():
                    continue
                name, shape, _ = line.rstrip("\n").split("\t")
                rows.append((name, shape))
        model = R.AsymmetricMASt3R(device="meta")
        got = [(k, str(tuple(v.shape))) for k, v in model.state_dict().items()]
        self.assertEqual(len(rows), 1017)
        self.assertEqual(sorted(got), sorted(rows))
        self.assertEqual(got, rows, "same names and shapes, but the order differs from the official state_dict")
        self.assertEqual(sum(p.numel() for p in model.parameters()), 688_638_856)

    def test_dpt_aliases_are_the_same_tensor(self):
        m = tiny_model()
        sd = m.state_dict()
        pairs = R.dpt_alias_pairs(sd.keys())
        self.assertEqual(len(pairs), 8)
        for a, b in pairs:
            self.assertEqual(sd[a].data_ptr(), sd[b].data_ptr())

    def test_load_weights_accepts_either_alias_and_names_problems(self):
        m = tiny_model()
        sd = {k: v.clone() for k, v in m.state_dict().items()}
        only_old = {k: v for k, v in sd.items() if ".layer_rn." in k or "_rn." not in k}
        m2 = R.AsymmetricMASt3R(TINY, dtype=torch.float64)
        R.load_weights(m2, only_old)
        for k, v in m2.state_dict().items():
            self.assertTrue(torch.equal(v, sd[k]), k)
        bad = dict(R.canonical_state_dict(m))
        del bad["dec_blocks2.1.norm_y.weight"]
        bad["dec_blocks.9.norm1.weight"] = torch.zeros(24)
        with self.assertRaises(R.WeightError) as cm:
            R.load_weights(m2, bad)
        self.assertIn("dec_blocks2.1.norm_y.weight", str(cm.exception))
        self.assertIn("dec_blocks.9.norm1.weight", str(cm.exception))


def rope_formula_f64(t, pos, omega, fp32_angle):
    """Hand-written per-element RoPE2D (spec 3.2) with python floats; omega: the D/4 frequencies."""
    B, H, N, D = t.shape
    q = D // 4
    out = np.empty_like(t)
    om = [float(w) for w in omega]
    for b in range(B):
        for n in range(N):
            for half in range(2):
                p = float(pos[b, n, half])
                for i in range(q):
                    if fp32_angle:
                        theta = float(np.float32(p) * np.float32(om[i]))
                    else:
                        theta = p * om[i]
                    c, s = math.cos(theta), math.sin(theta)
                    lo, hi = half * 2 * q + i, half * 2 * q + i + q
                    a, bb = t[b, :, n, lo], t[b, :, n, hi]
                    out[b, :, n, lo] = a * c - bb * s
                    out[b, :, n, hi] = bb * c + a * s
    return out


class RoPE(unittest.TestCase):
    def test_matches_hand_formula(self):
        g = torch.Generator().manual_seed(3)
        for D in (12, 16, 64):
            t = torch.randn(2, 3, 6, D, generator=g, dtype=torch.float64)
            pos = torch.stack([torch.randint(0, 40, (2, 6), generator=g), torch.randint(0, 40, (2, 6), generator=g)], -1)
            got = R.RoPE2D(100.0)(t, pos).numpy()
            # omega and p*omega in fp32 (as the official table), the rest in float64
            om32 = R.rope_inv_freq(D, 100.0).numpy()
            np.testing.assert_allclose(om32, [100.0 ** (-i / (D // 4)) for i in range(D // 4)], rtol=2e-7)
            exact = rope_formula_f64(t.numpy(), pos.numpy(), om32, fp32_angle=True)
            np.testing.assert_allclose(got, exact, rtol=0, atol=1e-12)
            # an all-float64 formula differs only by the fp32 rounding of omega and of p*omega
            ideal = rope_formula_f64(t.numpy(), pos.numpy(), [100.0 ** (-i / (D // 4)) for i in range(D // 4)],
                                     fp32_angle=False)
            np.testing.assert_allclose(got, ideal, rtol=0, atol=2e-5 * np.abs(ideal).max())

    def test_halves_and_pairing(self):
        D = 16
        rope = R.RoPE2D(100.0)
        pos = torch.tensor([[[2, 0]]])  # y = 2, x = 0
        for i in range(D):
            t = torch.zeros(1, 1, 1, D, dtype=torch.float64)
            t[..., i] = 1.0
            out = rope(t, pos)[0, 0, 0]
            changed = set(torch.nonzero(out).flatten().tolist())
            if i < D // 2:  # y half rotates: i pairs with i + D/4 inside the half
                partner = i + D // 4 if (i % (D // 2)) < D // 4 else i - D // 4
                self.assertEqual(changed, {i, partner}, f"element {i}")
            else:  # x = 0: identity
                self.assertEqual(changed, {i})
                self.assertEqual(out[i].item(), 1.0)
        omega = R.rope_inv_freq(64, 100.0)
        np.testing.assert_allclose(omega.numpy(), [100.0 ** (-i / 16) for i in range(16)], rtol=1e-6)

    def test_positions_are_row_major_yx(self):
        pos = R.token_positions(1, 3, 4)[0]
        self.assertEqual(pos[5].tolist(), [1, 1])
        self.assertEqual(pos[7].tolist(), [1, 3])
        self.assertEqual(pos[11].tolist(), [2, 3])


class Layouts(unittest.TestCase):
    def test_pixel_shuffle_channel_order(self):
        """raw channel 4+c at pixel (16ty+dy, 16tx+dx) == local MLP output c*256 + dy*16 + dx of token ty*w+tx."""
        m = tiny_model()
        g = torch.Generator().manual_seed(5)
        img1 = torch.randn(1, 3, 48, 64, generator=g, dtype=torch.float64)
        img2 = torch.randn(1, 3, 32, 48, generator=g, dtype=torch.float64)
        taps = {}
        with torch.no_grad():
            m(img1, img2, taps=taps)
        for sfx, (H, W) in (("_1", (48, 64)), ("_2", (32, 48))):
            loc, raw = taps["local_mlp" + sfx][0], taps["raw" + sfx][0]
            w = W // 16
            C = raw.shape[-1] - 4
            self.assertEqual(loc.shape[-1], C * 256)
            rs = np.random.RandomState(0)
            for _ in range(200):
                c, y, x = rs.randint(C), rs.randint(H), rs.randint(W)
                ty, dy, tx, dx = y // 16, y % 16, x // 16, x % 16
                self.assertEqual(raw[y, x, 4 + c].item(), loc[ty * w + tx, c * 256 + dy * 16 + dx].item())

    def test_dpt_token_reshape_is_channel_major_row_major(self):
        """act_postprocess[2] is a 1x1 conv: its output at (y, x) must use token y*w + x."""
        m = tiny_model()
        g = torch.Generator().manual_seed(6)
        img = torch.randn(1, 3, 48, 64, generator=g, dtype=torch.float64)
        taps = {}
        with torch.no_grad():
            m(img, img, taps=taps)
        tok = taps["dec3_1"][0]  # hook 2 of dec_depth 4 is entry 3
        conv = m.downstream_head1.dpt.act_postprocess[2][0]
        Wt, b = conv.weight[:, :, 0, 0], conv.bias
        act = taps["dpt_act2_1"][0]
        for y in range(3):
            for x in range(4):
                np.testing.assert_allclose(act[:, y, x].numpy(), (Wt @ tok[y * 4 + x] + b).detach().numpy(), atol=1e-12)

    def test_convtranspose_layout(self):
        """ConvTranspose2d weight is (in, out, k, k); with k == stride: out[o, s*y+i, s*x+j] = b[o] + sum_c in[c,y,x] W[c,o,i,j]."""
        m = tiny_model()
        ct = m.downstream_head1.dpt.act_postprocess[0][1]
        self.assertEqual(tuple(ct.weight.shape), (8, 8, 4, 4))
        ct2 = m.downstream_head1.dpt.act_postprocess[1][1]
        self.assertEqual(tuple(ct2.weight.shape), (12, 12, 2, 2))
        g = torch.Generator().manual_seed(7)
        with torch.no_grad():
            ct.weight.copy_(torch.randn(8, 8, 4, 4, generator=g, dtype=torch.float64))  # asymmetric in (in, out)
            x = torch.randn(1, 8, 3, 2, generator=g, dtype=torch.float64)
            got = ct(x)[0].numpy()
        Wn, bn, xn = ct.weight.detach().numpy(), ct.bias.detach().numpy(), x[0].numpy()
        want = np.zeros((8, 12, 8))
        for o in range(8):
            for y in range(3):
                for xx in range(2):
                    for i in range(4):
                        for j in range(4):
                            want[o, 4 * y + i, 4 * xx + j] = bn[o] + sum(xn[c, y, xx] * Wn[c, o, i, j] for c in range(8))
        np.testing.assert_allclose(got, want, atol=1e-12)

    def test_bilinear_align_corners(self):
        x = torch.randn(1, 1, 3, 5, dtype=torch.float64)
        got = R.Interpolate(2)(x)[0, 0].numpy()
        H, W = 3, 5
        want = np.zeros((6, 10))
        xn = x[0, 0].numpy()
        for oy in range(6):
            for ox in range(10):
                sy, sx = oy * (H - 1) / 5, ox * (W - 1) / 9
                y0, x0 = min(int(sy), H - 2), min(int(sx), W - 2)
                fy, fx = sy - y0, sx - x0
                want[oy, ox] = ((1 - fy) * (1 - fx) * xn[y0, x0] + (1 - fy) * fx * xn[y0, x0 + 1]
                                + fy * (1 - fx) * xn[y0 + 1, x0] + fy * fx * xn[y0 + 1, x0 + 1])
        np.testing.assert_allclose(got, want, atol=1e-12)

    def test_refinenet4_crop_for_odd_grids(self):
        m = tiny_model()
        g = torch.Generator().manual_seed(8)
        taps = {}
        with torch.no_grad():
            m(torch.randn(1, 3, 48, 80, generator=g, dtype=torch.float64),
              torch.randn(1, 3, 80, 48, generator=g, dtype=torch.float64), taps=taps)
        # grid 3x5: layer 4 is 2x3, refinenet4 doubles to 4x6, cropped to layer 3's 3x5
        self.assertEqual(tuple(taps["dpt_rn3_1"].shape[2:]), (2, 3))
        self.assertEqual(tuple(taps["dpt_refinenet4_1"].shape[2:]), (3, 5))
        self.assertEqual(tuple(taps["dpt_refinenet4_2"].shape[2:]), (5, 3))
        self.assertEqual(tuple(taps["dpt_out_2"].shape), (1, 4, 80, 48))


class Postprocess(unittest.TestCase):
    def test_default_modes(self):
        cfg = resolve_config(None)
        g = torch.Generator().manual_seed(9)
        raw = torch.randn(2, 3, 4, 29, generator=g, dtype=torch.float64) * 2
        raw[0, 0, 0, :3] = 0.0  # zero vector: pts must be 0 (norm clipped at 1e-8)
        res = R.postprocess(raw, cfg)
        r = raw[..., :3].numpy()
        d = np.linalg.norm(r, axis=-1, keepdims=True)
        np.testing.assert_allclose(res["pts3d"].numpy(), r / np.maximum(d, 1e-8) * np.expm1(d), rtol=1e-14, atol=0)
        self.assertEqual(res["pts3d"][0, 0, 0].abs().max().item(), 0.0)
        np.testing.assert_allclose(res["conf"].numpy(), 1 + np.exp(raw[..., 3].numpy()), rtol=1e-14)
        desc = raw[..., 4:28].numpy()
        np.testing.assert_allclose(res["desc"].numpy(), desc / np.linalg.norm(desc, axis=-1, keepdims=True), rtol=1e-14)
        np.testing.assert_allclose(res["desc_conf"].numpy(), np.exp(raw[..., 28].numpy()), rtol=1e-14)

    def test_general_modes(self):
        x = torch.linspace(-3, 3, 13, dtype=torch.float64)
        np.testing.assert_allclose(R.reg_dense_conf(x, ("exp", 0.5, 3.0)).numpy(),
                                   0.5 + np.minimum(np.exp(x.numpy()), 2.5))
        np.testing.assert_allclose(R.reg_dense_conf(x, ("sigmoid", -1.0, 2.0)).numpy(),
                                   3.0 / (1 + np.exp(-x.numpy())) - 1.0)
        xyz = torch.randn(5, 3, dtype=torch.float64)
        d = xyz.norm(dim=-1, keepdim=True)
        inf = float("inf")
        self.assertTrue(torch.equal(R.reg_dense_depth(xyz, ("linear", -inf, inf)), xyz))
        np.testing.assert_allclose(R.reg_dense_depth(xyz, ("square", -inf, inf)).numpy(), (xyz * d).numpy())
        with self.assertRaises(NotImplementedError):
            R.reg_dense_depth(xyz, ("exp", 0, inf))

    def test_desc_conf_falls_back_to_conf_mode_and_one_conf(self):
        cfg = resolve_config(dict(desc_conf_mode=None))
        self.assertEqual(cfg["desc_conf_mode"], cfg["conf_mode"])
        raw = torch.randn(1, 2, 2, 29, dtype=torch.float64)
        np.testing.assert_allclose(R.postprocess(raw, cfg)["desc_conf"].numpy(), 1 + np.exp(raw[..., 28].numpy()))
        cfg1 = resolve_config(dict(two_confs=False))
        raw = torch.randn(1, 2, 2, 28, dtype=torch.float64)
        res = R.postprocess(raw, cfg1)
        self.assertTrue(torch.equal(res["desc_conf"], res["conf"]))


class Forward(unittest.TestCase):
    def test_batch_equals_single_and_shapes(self):
        m = tiny_model()
        g = torch.Generator().manual_seed(10)
        a = torch.randn(2, 3, 32, 48, generator=g, dtype=torch.float64)
        b = torch.randn(2, 3, 64, 32, generator=g, dtype=torch.float64)
        with torch.no_grad():
            both = m(a, b)
            one = m(a[1:], b[1:])
        self.assertEqual(set(both), {f"{k}_{v}" for k in ("pts3d", "conf", "desc", "desc_conf") for v in (1, 2)})
        self.assertEqual(tuple(both["pts3d_1"].shape), (2, 32, 48, 3))
        self.assertEqual(tuple(both["desc_2"].shape), (2, 64, 32, 24))
        self.assertEqual(tuple(both["desc_conf_2"].shape), (2, 64, 32))
        for k in both:
            np.testing.assert_allclose(both[k][1:].numpy(), one[k].numpy(), rtol=1e-10, atol=1e-12)

    def test_decoder_views_read_previous_layer(self):
        """Swapping views changes roles (different stacks and heads) - outputs are not a permutation."""
        m = tiny_model()
        g = torch.Generator().manual_seed(11)
        a = torch.randn(1, 3, 32, 32, generator=g, dtype=torch.float64)
        b = torch.randn(1, 3, 32, 32, generator=g, dtype=torch.float64)
        with torch.no_grad():
            ab, ba = m(a, b), m(b, a)
        self.assertGreater((ab["pts3d_1"] - ba["pts3d_2"]).abs().max().item(), 1e-6)
        # synchronous update: dec1 of view 1 depends only on layer-0 tokens of both views
        taps = {}
        with torch.no_grad():
            m(a, b, taps=taps)
            e1, p1 = m.encode(a)
            e2, p2 = m.encode(b)
            f1, f2 = m.decoder_embed(e1), m.decoder_embed(e2)
            x1 = m.dec_blocks[0](f1, f2, p1, p2)
        np.testing.assert_allclose(taps["dec1_1"].numpy(), x1.numpy(), atol=1e-12)


if __name__ == "__main__":
    unittest.main()
