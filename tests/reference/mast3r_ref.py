"""Independent PyTorch reference of MASt3R (AsymmetricMASt3R, 'catmlp+dpt' head, 'pts3d+desc<N>' output).

Written from /work/shared/notes/mast3r-spec.md for the recon engine's numerical-equivalence tests and
golden data. Module and parameter names equal the official state_dict names (including the aliased
`dpt.scratch.layerN_rn` / `dpt.scratch.layer_rn.{N-1}` pairs), so official checkpoints load as-is.
Only the inference path is implemented (no training, masking, landscape transposition or curope).

This file must not depend on the official naver code, and nothing in the engine may import it.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from dune_ref import DuneViT
from mast3r_config import dpt_hooks, is_dune, local_feat_dim, resolve_config

LN_EPS = 1e-6  # croco norm_layer = partial(nn.LayerNorm, eps=1e-6), used for every norm in the model


def _tap(taps, name, t):
    if taps is not None:
        taps[name] = t.detach().clone()


# ---------------------------------------------------------------------------------------------- RoPE


def rope_inv_freq(head_dim, base):
    """Frequencies of one half (head_dim/2 wide): omega_i = 1 / base^(2i / (head_dim/2)), in fp32.

    Computed in float32 like croco's RoPE2D (arange(...).float() / D, base ** that, then 1/x)."""
    half = head_dim // 2
    return 1.0 / (base ** (torch.arange(0, half, 2, dtype=torch.float32) / half))


class RoPE2D(nn.Module):
    """2D rotary embedding: first half of each head rotated with y, second half with x.

    Inside each half the GPT-NeoX 'rotate-half' pairing is used: element i pairs with i + D/4.
    Angles p * omega are formed in fp32 (as the official table is), then cast to the tensor dtype
    before cos/sin. No parameters."""

    def __init__(self, base=100.0):
        super().__init__()
        self.base = float(base)

    def forward(self, t, pos):
        # t: (B, heads, N, D); pos: (B, N, 2) integer (y, x)
        D = t.shape[-1]
        if D % 4 != 0:
            raise ValueError(f"RoPE2D needs a head dim divisible by 4, got {D}")
        half, quarter = D // 2, D // 4
        inv = rope_inv_freq(D, self.base).to(t.device)
        ang = (pos.to(torch.float32)[..., None] * inv).to(t.dtype)  # (B, N, 2, D/4)
        cos = ang.cos()[:, None]  # (B, 1, N, 2, D/4)
        sin = ang.sin()[:, None]
        parts = []
        for axis in range(2):  # 0: y on t[:half], 1: x on t[half:]
            x = t[..., axis * half:(axis + 1) * half]
            x1, x2 = x[..., :quarter], x[..., quarter:]
            c, s = cos[..., axis, :], sin[..., axis, :]
            parts.append(x1 * c - x2 * s)
            parts.append(x2 * c + x1 * s)
        return torch.cat(parts, dim=-1)


def token_positions(B, h, w, device=None):
    """(B, h*w, 2) int64 positions (y, x), token n = y*w + x."""
    y = torch.arange(h, device=device)
    x = torch.arange(w, device=device)
    yy, xx = torch.meshgrid(y, x, indexing="ij")
    pos = torch.stack([yy.reshape(-1), xx.reshape(-1)], dim=-1)
    return pos[None].expand(B, -1, -1)


# ------------------------------------------------------------------------------- transformer blocks


def attend(q, k, v, scale):
    """softmax((q k^T) * scale) v, explicit (torch 1.13 has no scaled_dot_product_attention)."""
    scores = (q @ k.transpose(-2, -1)) * scale
    return scores.softmax(dim=-1) @ v


class Mlp(nn.Module):
    def __init__(self, in_features, hidden_features, out_features, fk):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features, bias=True, **fk)
        self.act = nn.GELU()  # exact (erf)
        self.fc2 = nn.Linear(hidden_features, out_features, bias=True, **fk)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Attention(nn.Module):
    def __init__(self, dim, num_heads, rope, fk):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=True, **fk)
        self.proj = nn.Linear(dim, dim, bias=True, **fk)
        self.rope = rope

    def forward(self, x, pos):
        B, N, C = x.shape
        H = self.num_heads
        # output features laid out [3][heads][head_dim]
        qkv = self.qkv(x).reshape(B, N, 3, H, C // H).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        q = self.rope(q, pos)
        k = self.rope(k, pos)
        o = attend(q, k, v, self.scale)
        return self.proj(o.transpose(1, 2).reshape(B, N, C))


class CrossAttention(nn.Module):
    def __init__(self, dim, num_heads, rope, fk):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.projq = nn.Linear(dim, dim, bias=True, **fk)
        self.projk = nn.Linear(dim, dim, bias=True, **fk)
        self.projv = nn.Linear(dim, dim, bias=True, **fk)
        self.proj = nn.Linear(dim, dim, bias=True, **fk)
        self.rope = rope

    def forward(self, query, key, value, qpos, kpos):
        B, Nq, C = query.shape
        Nk = key.shape[1]
        H = self.num_heads
        q = self.projq(query).reshape(B, Nq, H, C // H).permute(0, 2, 1, 3)
        k = self.projk(key).reshape(B, Nk, H, C // H).permute(0, 2, 1, 3)
        v = self.projv(value).reshape(B, Nk, H, C // H).permute(0, 2, 1, 3)
        q = self.rope(q, qpos)
        k = self.rope(k, kpos)
        o = attend(q, k, v, self.scale)
        return self.proj(o.transpose(1, 2).reshape(B, Nq, C))


class Block(nn.Module):
    """Encoder block (pre-norm ViT block + RoPE)."""

    def __init__(self, dim, num_heads, mlp_ratio, rope, fk):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=LN_EPS, **fk)
        self.attn = Attention(dim, num_heads, rope, fk)
        self.norm2 = nn.LayerNorm(dim, eps=LN_EPS, **fk)
        self.mlp = Mlp(dim, int(dim * mlp_ratio), dim, fk)

    def forward(self, x, pos):
        x = x + self.attn(self.norm1(x), pos)
        return x + self.mlp(self.norm2(x))


class DecoderBlock(nn.Module):
    """Decoder block: self-attn, cross-attn to the other view (normalised by norm_y), MLP."""

    def __init__(self, dim, num_heads, mlp_ratio, rope, norm_mem, fk):
        super().__init__()
        # registration order = official state_dict order
        self.norm1 = nn.LayerNorm(dim, eps=LN_EPS, **fk)
        self.attn = Attention(dim, num_heads, rope, fk)
        self.cross_attn = CrossAttention(dim, num_heads, rope, fk)
        self.norm2 = nn.LayerNorm(dim, eps=LN_EPS, **fk)
        self.norm3 = nn.LayerNorm(dim, eps=LN_EPS, **fk)
        self.mlp = Mlp(dim, int(dim * mlp_ratio), dim, fk)
        self.norm_y = nn.LayerNorm(dim, eps=LN_EPS, **fk) if norm_mem else nn.Identity()

    def forward(self, x, y, xpos, ypos):
        x = x + self.attn(self.norm1(x), xpos)
        y_ = self.norm_y(y)
        x = x + self.cross_attn(self.norm2(x), y_, y_, xpos, ypos)
        return x + self.mlp(self.norm3(x))


class PatchEmbed(nn.Module):
    def __init__(self, patch_size, embed_dim, fk):
        super().__init__()
        self.patch_size = patch_size
        self.proj = nn.Conv2d(3, embed_dim, kernel_size=patch_size, stride=patch_size, bias=True, **fk)

    def forward(self, img):
        B, _, H, W = img.shape
        p = self.patch_size
        if H % p or W % p:
            raise ValueError(f"image size {W}x{H} is not a multiple of the patch size {p}")
        x = self.proj(img)  # (B, C, h, w)
        pos = token_positions(B, H // p, W // p, device=img.device)
        return x.flatten(2).transpose(1, 2), pos  # row-major tokens


# ------------------------------------------------------------------------------------------ DPT head


class Interpolate(nn.Module):
    def __init__(self, scale_factor):
        super().__init__()
        self.scale_factor = scale_factor

    def forward(self, x):
        return F.interpolate(x, scale_factor=self.scale_factor, mode="bilinear", align_corners=True)


class ResidualConvUnit(nn.Module):
    def __init__(self, features, fk):
        super().__init__()
        self.conv1 = nn.Conv2d(features, features, 3, 1, 1, bias=True, **fk)
        self.conv2 = nn.Conv2d(features, features, 3, 1, 1, bias=True, **fk)

    def forward(self, x):
        out = self.conv2(F.relu(self.conv1(F.relu(x))))  # ReLU not in place: the skip uses x itself
        return out + x


class FeatureFusionBlock(nn.Module):
    def __init__(self, features, fk):
        super().__init__()
        self.out_conv = nn.Conv2d(features, features, 1, 1, 0, bias=True, **fk)
        self.resConfUnit1 = ResidualConvUnit(features, fk)
        self.resConfUnit2 = ResidualConvUnit(features, fk)

    def forward(self, x, skip=None):
        out = x
        if skip is not None:
            out = out + self.resConfUnit1(skip)
        out = self.resConfUnit2(out)
        out = F.interpolate(out, scale_factor=2, mode="bilinear", align_corners=True)
        return self.out_conv(out)


class Scratch(nn.Module):
    def __init__(self, layer_dims, feature_dim, fk):
        super().__init__()
        self.layer1_rn = nn.Conv2d(layer_dims[0], feature_dim, 3, 1, 1, bias=False, **fk)
        self.layer2_rn = nn.Conv2d(layer_dims[1], feature_dim, 3, 1, 1, bias=False, **fk)
        self.layer3_rn = nn.Conv2d(layer_dims[2], feature_dim, 3, 1, 1, bias=False, **fk)
        self.layer4_rn = nn.Conv2d(layer_dims[3], feature_dim, 3, 1, 1, bias=False, **fk)
        # the official DPT registers the same four convs a second time under this name
        self.layer_rn = nn.ModuleList([self.layer1_rn, self.layer2_rn, self.layer3_rn, self.layer4_rn])
        self.refinenet1 = FeatureFusionBlock(feature_dim, fk)
        self.refinenet2 = FeatureFusionBlock(feature_dim, fk)
        self.refinenet3 = FeatureFusionBlock(feature_dim, fk)
        self.refinenet4 = FeatureFusionBlock(feature_dim, fk)


class DPTOutputAdapter(nn.Module):
    def __init__(self, dim_tokens, layer_dims, feature_dim, last_dim, num_channels, hooks, patch_size, fk):
        super().__init__()
        if patch_size not in (14, 16):
            raise ValueError("the DPT head is implemented for patch_size 16 and (DUNE) 14 only")
        self.hooks = list(hooks)
        self.patch_size = patch_size
        self.scratch = Scratch(layer_dims, feature_dim, fk)
        # The refinenets bring the 1/16-scale tokens to 8x their grid; this x2 makes 16x. DUNE-MASt3R's
        # 14-pixel patches need 14x, so AsymmetricMASt3RWithDUNEBackbone multiplies the scale factor by
        # 14/16: 1.75 (with align_corners=True the output size floor(8h * 1.75) = 14h is all it changes).
        self.head = nn.Sequential(
            nn.Conv2d(feature_dim, feature_dim // 2, 3, 1, 1, bias=True, **fk),
            Interpolate(2 if patch_size == 16 else 2 * 14 / 16),
            nn.Conv2d(feature_dim // 2, last_dim, 3, 1, 1, bias=True, **fk),
            nn.ReLU(),
            nn.Conv2d(last_dim, num_channels, 1, 1, 0, bias=True, **fk),
        )
        d, ld = dim_tokens, layer_dims
        self.act_postprocess = nn.ModuleList([
            nn.Sequential(nn.Conv2d(d[0], ld[0], 1, 1, 0, **fk),
                          nn.ConvTranspose2d(ld[0], ld[0], kernel_size=4, stride=4, padding=0, bias=True, **fk)),
            nn.Sequential(nn.Conv2d(d[1], ld[1], 1, 1, 0, **fk),
                          nn.ConvTranspose2d(ld[1], ld[1], kernel_size=2, stride=2, padding=0, bias=True, **fk)),
            nn.Sequential(nn.Conv2d(d[2], ld[2], 1, 1, 0, **fk)),
            nn.Sequential(nn.Conv2d(d[3], ld[3], 1, 1, 0, **fk),
                          nn.Conv2d(ld[3], ld[3], kernel_size=3, stride=2, padding=1, **fk)),
        ])

    def forward(self, dec_list, H, W, taps=None, sfx=""):
        h, w = H // self.patch_size, W // self.patch_size
        layers = []
        for i, hook in enumerate(self.hooks):
            t = dec_list[hook]  # (B, N, C), token n = y*w + x
            B, N, C = t.shape
            t = t.transpose(1, 2).reshape(B, C, h, w)
            t = self.act_postprocess[i](t)
            _tap(taps, f"dpt_act{i}{sfx}", t)
            t = self.scratch.layer_rn[i](t)
            _tap(taps, f"dpt_rn{i}{sfx}", t)
            layers.append(t)
        sc = self.scratch
        path4 = sc.refinenet4(layers[3])[:, :, :layers[2].shape[2], :layers[2].shape[3]]
        _tap(taps, f"dpt_refinenet4{sfx}", path4)
        path3 = sc.refinenet3(path4, layers[2])
        _tap(taps, f"dpt_refinenet3{sfx}", path3)
        path2 = sc.refinenet2(path3, layers[1])
        _tap(taps, f"dpt_refinenet2{sfx}", path2)
        path1 = sc.refinenet1(path2, layers[0])
        _tap(taps, f"dpt_refinenet1{sfx}", path1)
        return self.head(path1)


# ------------------------------------------------------------------------------------ post-processing


def reg_dense_depth(xyz, mode):
    kind, vmin, vmax = mode
    if not (vmin == -math.inf and vmax == math.inf):
        raise NotImplementedError(f"bounded depth_mode {mode} (the official code asserts no bounds)")
    if kind == "linear":
        return xyz
    d = xyz.norm(dim=-1, keepdim=True)
    xyz = xyz / d.clip(min=1e-8)
    if kind == "square":
        return xyz * d.square()
    if kind == "exp":
        return xyz * torch.expm1(d)
    raise ValueError(f"bad depth_mode {mode}")


def reg_dense_conf(x, mode):
    kind, vmin, vmax = mode
    if kind == "exp":
        return vmin + x.exp().clip(max=vmax - vmin)
    if kind == "sigmoid":
        return (vmax - vmin) * torch.sigmoid(x) + vmin
    raise ValueError(f"bad conf mode {mode}")


def reg_desc(desc, mode):
    if "norm" in mode:
        return desc / desc.norm(dim=-1, keepdim=True)  # no epsilon, as in the official code
    raise ValueError(f"bad desc_mode {mode}")


def postprocess(raw_nhwc, cfg):
    """raw (B, H, W, C) -> dict pts3d, conf, desc, desc_conf (official mast3r postprocess)."""
    dd = local_feat_dim(cfg)
    conf_mode = cfg["conf_mode"]
    res = {"pts3d": reg_dense_depth(raw_nhwc[..., 0:3], cfg["depth_mode"])}
    if conf_mode is not None:
        res["conf"] = reg_dense_conf(raw_nhwc[..., 3], conf_mode)
    start = 3 + int(conf_mode is not None)
    res["desc"] = reg_desc(raw_nhwc[..., start:start + dd], cfg["desc_mode"])
    if cfg["two_confs"]:
        res["desc_conf"] = reg_dense_conf(raw_nhwc[..., start + dd], cfg["desc_conf_mode"] or conf_mode)
    else:
        res["desc_conf"] = res["conf"].clone()
    return res


class CatMLPDPTHead(nn.Module):
    """downstream_head{1,2}: DPT (pts3d + conf) and the local-feature MLP (desc + desc_conf)."""

    def __init__(self, cfg, fk):
        super().__init__()
        self.cfg = cfg
        ed, dd, p = cfg["enc_embed_dim"], cfg["dec_embed_dim"], cfg["patch_size"]
        self.patch_size = p
        self.desc_dim = local_feat_dim(cfg)
        has_conf = bool(cfg["conf_mode"])
        self.dpt = DPTOutputAdapter(
            dim_tokens=[ed, dd, dd, dd],
            layer_dims=list(cfg["dpt_layer_dims"]),
            feature_dim=cfg["dpt_feature_dim"],
            last_dim=cfg["dpt_last_dim"],
            num_channels=3 + int(has_conf),
            hooks=dpt_hooks(cfg),
            patch_size=p,
            fk=fk,
        )
        idim = ed + dd
        self.head_local_features = Mlp(idim, int(cfg["local_mlp_ratio"] * idim),
                                       (self.desc_dim + int(cfg["two_confs"])) * p * p, fk)

    def forward(self, dec_list, H, W, taps=None, sfx=""):
        dpt_out = self.dpt(dec_list, H, W, taps, sfx)  # (B, 3+conf, H, W)
        _tap(taps, f"dpt_out{sfx}", dpt_out)
        cat = torch.cat([dec_list[0], dec_list[-1]], dim=-1)  # encoder features first
        B, N, _ = cat.shape
        p = self.patch_size
        loc = self.head_local_features(cat)  # (B, N, (desc+1)*p*p)
        _tap(taps, f"local_mlp{sfx}", loc)
        loc = loc.transpose(-1, -2).reshape(B, -1, H // p, W // p)
        loc = F.pixel_shuffle(loc, p)  # channel c at (p*ty+dy, p*tx+dx) <- index c*p*p + dy*p + dx
        raw = torch.cat([dpt_out, loc], dim=1).permute(0, 2, 3, 1)  # (B, H, W, 29)
        _tap(taps, f"raw{sfx}", raw)
        return postprocess(raw, self.cfg)


# ------------------------------------------------------------------------------------------- model


def _validate(cfg):
    if cfg["head_type"] != "catmlp+dpt":
        raise NotImplementedError(f"head_type {cfg['head_type']!r} (only 'catmlp+dpt')")
    local_feat_dim(cfg)
    if not str(cfg["pos_embed"]).startswith("RoPE"):
        raise NotImplementedError(f"pos_embed {cfg['pos_embed']!r} (only RoPE<base>)")
    if cfg["landscape_only"]:
        raise NotImplementedError("landscape_only=True (portrait transposition); inference uses False")
    if cfg["patch_embed_cls"] not in ("PatchEmbedDust3R", "ManyAR_PatchEmbed"):
        raise NotImplementedError(f"patch_embed_cls {cfg['patch_embed_cls']!r}")
    if not cfg["norm_im2_in_dec"]:
        pass  # supported: norm_y becomes Identity (no parameters), as in croco
    for part in ("dec",) if is_dune(cfg) else ("enc", "dec"):  # DUNE's attention has no RoPE
        dim, heads = cfg[f"{part}_embed_dim"], cfg[f"{part}_num_heads"]
        if dim % heads or (dim // heads) % 4:
            raise ValueError(f"{part}: embed dim {dim} / {heads} heads must give a head dim divisible by 4")
    if cfg["conf_mode"] is None and not cfg["two_confs"]:
        raise ValueError("conf_mode=None needs two_confs=True (desc_conf would copy a missing conf)")
    if len(set(dpt_hooks(cfg))) != 4 or cfg["dec_depth"] < 2:
        raise ValueError(f"dec_depth {cfg['dec_depth']} gives degenerate DPT hooks {dpt_hooks(cfg)}")


class AsymmetricMASt3R(nn.Module):
    """forward(img1, img2, taps=None) -> dict pts3d_1/2 (B,H,W,3), conf_1/2, desc_1/2, desc_conf_1/2.

    config: dict of official constructor arguments (+ non-official dpt_*/local_mlp_ratio keys), merged
    onto the official ViT-L/ViT-B 512 config. device/dtype are passed to every parameter (use
    device='meta' to build the full model without allocating it)."""

    def __init__(self, config=None, device=None, dtype=None):
        super().__init__()
        cfg = resolve_config(config)
        _validate(cfg)
        self.config = cfg
        fk = {"device": device, "dtype": dtype}
        ed, dd = cfg["enc_embed_dim"], cfg["dec_embed_dim"]
        self.rope = RoPE2D(float(cfg["pos_embed"][len("RoPE"):]))
        if is_dune(cfg):
            # AsymmetricMASt3RWithDUNEBackbone: the DUNE ViT and its own LayerNorm (PyTorch's default
            # eps) replace the CroCo encoder; decoder and heads below are the MASt3R ones (`mast3r.`
            # upstream, unprefixed here as in every recon file).
            self.dune_backbone = DuneViT(cfg, fk)
            self.norm = nn.LayerNorm(ed, eps=cfg["dune_norm_eps"], **fk)
        else:
            # registration order reproduces the official state_dict order
            self.mask_token = nn.Parameter(torch.zeros(1, 1, dd, **fk))  # pre-training leftover, unused
            self.patch_embed = PatchEmbed(cfg["patch_size"], ed, fk)
            self.enc_blocks = nn.ModuleList(
                [Block(ed, cfg["enc_num_heads"], cfg["mlp_ratio"], self.rope, fk) for _ in range(cfg["enc_depth"])])
            self.enc_norm = nn.LayerNorm(ed, eps=LN_EPS, **fk)
        self.decoder_embed = nn.Linear(ed, dd, bias=True, **fk)
        self.dec_blocks = nn.ModuleList([
            DecoderBlock(dd, cfg["dec_num_heads"], cfg["mlp_ratio"], self.rope, cfg["norm_im2_in_dec"], fk)
            for _ in range(cfg["dec_depth"])])
        self.dec_norm = nn.LayerNorm(dd, eps=LN_EPS, **fk)
        self.dec_blocks2 = nn.ModuleList([
            DecoderBlock(dd, cfg["dec_num_heads"], cfg["mlp_ratio"], self.rope, cfg["norm_im2_in_dec"], fk)
            for _ in range(cfg["dec_depth"])])
        self.downstream_head1 = CatMLPDPTHead(cfg, fk)
        self.downstream_head2 = CatMLPDPTHead(cfg, fk)

    def encode(self, img, taps=None, sfx=""):
        """Encoder of one view: returns enc_out (B, N, enc_dim) after enc_norm, and positions."""
        if is_dune(self.config):
            return self._encode_dune(img, taps, sfx)
        x, pos = self.patch_embed(img)
        _tap(taps, f"patch_embed{sfx}", x)
        for i, blk in enumerate(self.enc_blocks):
            x = blk(x, pos)
            _tap(taps, f"enc_block{i}{sfx}", x)
        x = self.enc_norm(x)
        _tap(taps, f"enc_out{sfx}", x)
        return x, pos

    def _encode_dune(self, img, taps, sfx):
        """DUNE-MASt3R: the patch tokens of the last DUNE block through `norm`; RoPE positions of the
        decoder on the 14-pixel grid."""
        B, _, H, W = img.shape
        p = self.config["patch_size"]
        x = self.dune_backbone(img, taps, sfx)
        x = self.norm(x[:, 1 + self.config["dune_num_register_tokens"]:])
        _tap(taps, f"enc_out{sfx}", x)
        return x, token_positions(B, H // p, W // p, device=img.device)

    def decode(self, e1, pos1, e2, pos2, taps=None):
        """Both decoder stacks. Returns the two 13-entry lists [enc_out, f^1, ..., dec_norm(f^L)]."""
        f1, f2 = self.decoder_embed(e1), self.decoder_embed(e2)
        _tap(taps, "dec_embed_1", f1)
        _tap(taps, "dec_embed_2", f2)
        out1, out2 = [e1], [e2]
        for blk1, blk2 in zip(self.dec_blocks, self.dec_blocks2):
            # synchronous update: both views read the other view's previous-layer tokens
            f1, f2 = blk1(f1, f2, pos1, pos2), blk2(f2, f1, pos2, pos1)
            out1.append(f1)
            out2.append(f2)
        out1[-1] = self.dec_norm(out1[-1])
        out2[-1] = self.dec_norm(out2[-1])
        for i in range(1, len(out1)):
            _tap(taps, f"dec{i}_1", out1[i])
            _tap(taps, f"dec{i}_2", out2[i])
        return out1, out2

    def forward(self, img1, img2, taps=None):
        if img1.shape[0] != img2.shape[0]:
            raise ValueError("img1 and img2 must have the same batch size")
        (H1, W1), (H2, W2) = img1.shape[-2:], img2.shape[-2:]
        e1, pos1 = self.encode(img1, taps, "_1")
        e2, pos2 = self.encode(img2, taps, "_2")
        d1, d2 = self.decode(e1, pos1, e2, pos2, taps)
        r1 = self.downstream_head1(d1, H1, W1, taps, "_1")
        r2 = self.downstream_head2(d2, H2, W2, taps, "_2")
        out = {}
        for k in ("pts3d", "conf", "desc", "desc_conf"):
            if k in r1:
                out[f"{k}_1"] = r1[k]
                out[f"{k}_2"] = r2[k]
        return out


# ------------------------------------------------------------------------------ state-dict utilities


def dpt_alias_pairs(keys):
    """(layerN_rn name, layer_rn.{N-1} name) pairs present in an official-style key set."""
    pairs = []
    for k in keys:
        if ".dpt.scratch.layer_rn." in k:
            prefix, rest = k.split(".dpt.scratch.layer_rn.", 1)
            idx, tail = rest.split(".", 1)
            pairs.append((f"{prefix}.dpt.scratch.layer{int(idx) + 1}_rn.{tail}", k))
    return pairs


def canonical_name(key):
    """Map a layer_rn.{N-1} alias to its layerN_rn name; other names are unchanged."""
    if ".dpt.scratch.layer_rn." in key:
        prefix, rest = key.split(".dpt.scratch.layer_rn.", 1)
        idx, tail = rest.split(".", 1)
        return f"{prefix}.dpt.scratch.layer{int(idx) + 1}_rn.{tail}"
    return key


def expected_shapes(model):
    """Canonical (alias-free) name -> shape tuple of every state_dict tensor."""
    out = {}
    for k, v in model.state_dict().items():
        out.setdefault(canonical_name(k), tuple(v.shape))
    return out


def check_tensor_names(expected, given):
    """Compare canonical expected shapes with given name -> shape (either DPT alias accepted).

    Returns (missing, unexpected, mismatched, mapping canonical name -> given name)."""
    mapping, unexpected, mismatched = {}, [], []
    for name, shape in given.items():
        c = canonical_name(name)
        if c not in expected:
            unexpected.append(name)
            continue
        if tuple(shape) != tuple(expected[c]):
            mismatched.append(f"{name}: {tuple(shape)} != expected {tuple(expected[c])}")
            continue
        if c in mapping:
            continue  # both aliases given: keep the first (they must be the same tensor)
        mapping[c] = name
    missing = sorted(set(expected) - set(mapping))
    return missing, sorted(unexpected), mismatched, mapping


class WeightError(ValueError):
    pass


def load_weights(model, tensors):
    """Load name -> array/tensor (official names, either DPT alias) into model; refuses bad sets."""
    expected = expected_shapes(model)
    given = {k: tuple(v.shape) for k, v in tensors.items()}
    missing, unexpected, mismatched, mapping = check_tensor_names(expected, given)
    problems = []
    if missing:
        problems.append("missing tensors: " + ", ".join(missing))
    if unexpected:
        problems.append("unexpected tensors: " + ", ".join(unexpected))
    if mismatched:
        problems.append("shape mismatches: " + "; ".join(mismatched))
    if problems:
        raise WeightError("; ".join(problems))
    sd = model.state_dict()
    with torch.no_grad():
        for k, dst in sd.items():
            src = tensors[mapping[canonical_name(k)]]
            src = src if isinstance(src, torch.Tensor) else torch.from_numpy(src)
            dst.copy_(src.to(dst.dtype))


def canonical_state_dict(model):
    """state_dict without the layer_rn.{N-1} aliases (the form written to safetensors)."""
    return {k: v for k, v in model.state_dict().items() if canonical_name(k) == k}
