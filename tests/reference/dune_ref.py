"""Independent PyTorch reference of the DUNE encoder as DUNE-MASt3R runs it.

Written from the published architecture (naver/dune model/encoder/vision_transformer.py, a DINOv2 ViT,
and naver/mast3r mast3r/model.py AsymmetricMASt3RWithDUNEBackbone._encode_image / forward), without
importing either. Parameter names are the official state_dict names of the DUNE ViT
(`patch_embed.proj`, `cls_token`, `pos_embed`, `register_tokens`, `blocks.0.{i}.…` — block_chunks=1
wraps every block in one chunk — with `ls1.gamma` / `ls2.gamma`), so the names under
`dune_backbone.` in a converted file load as they are. The DUNE ViT's own final `norm` and
`mask_token` are not modelled: DUNE-MASt3R reads the last block's tokens before that norm.

What the encoder computes for an image batch `img` in MASt3R's normalisation (2·v/255 − 1):
  1. img·0.5 + 0.5, then (· − ImageNet mean) / ImageNet std (float32 constants);
  2. patch_embed: Conv2d(3, C, 14, stride 14), tokens row-major;
  3. [cls, patches] + pos_embed, the table's patch part bicubically interpolated to the grid
     (skipped when the grid is the table's own and the image square, as upstream);
  4. register tokens inserted after cls (they get no position embedding): [cls, reg×R, patches];
  5. blocks: x += ls1·attn(norm1(x)); x += ls2·mlp(norm2(x)) (LayerNorm eps dune_ln_eps, plain
     softmax attention with qkv bias and no RoPE, GELU(erf) MLP);
  6. the patch tokens x[:, 1 + R:], then the wrapper's LayerNorm `norm` (eps dune_norm_eps): what the
     decoder and the heads receive as the encoder output.

This file must not depend on the official naver code, and nothing in the engine may import it.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def _tap(taps, name, t):
    if taps is not None:
        taps[name] = t.detach().clone()


def interpolate_pos_table(pos_embed, grid, rows, cols, offset, antialias, square_image):
    """The patch position embeddings for a rows x cols token grid: (1, rows*cols, C).

    pos_embed: (1, 1 + grid^2, C); row 0 is the class token's. As DinoVisionTransformer
    .interpolate_pos_encoding: the table is returned unchanged when the grid holds as many tokens as
    the table and the image is square; otherwise bicubic (align_corners=False, antialias as
    configured) from grid x grid, with scale factors (rows + offset)/grid, (cols + offset)/grid when
    offset is non-zero (PyTorch then samples with 1/scale, not grid/rows), else to the size."""
    C = pos_embed.shape[-1]
    patch = pos_embed[:, 1:]
    if rows * cols == grid * grid and square_image:
        return patch
    table = patch.reshape(1, grid, grid, C).permute(0, 3, 1, 2)
    if offset:
        kw = {"scale_factor": ((rows + offset) / grid, (cols + offset) / grid)}
    else:
        kw = {"size": (rows, cols)}
    out = F.interpolate(table, mode="bicubic", antialias=antialias, **kw)
    if tuple(out.shape[-2:]) != (rows, cols):
        raise ValueError(f"position table interpolated to {tuple(out.shape[-2:])}, wanted {(rows, cols)}")
    return out.permute(0, 2, 3, 1).reshape(1, rows * cols, C)


class LayerScale(nn.Module):
    def __init__(self, dim, fk):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(dim, **fk))

    def forward(self, x):
        return x * self.gamma


class DuneAttention(nn.Module):
    def __init__(self, dim, num_heads, fk):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=True, **fk)
        self.proj = nn.Linear(dim, dim, bias=True, **fk)

    def forward(self, x):
        B, N, C = x.shape
        H = self.num_heads
        qkv = self.qkv(x).reshape(B, N, 3, H, C // H).permute(2, 0, 3, 1, 4)  # [3][heads][head_dim]
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = (q @ k.transpose(-2, -1)) * (C // H) ** -0.5
        o = scores.softmax(dim=-1) @ v
        return self.proj(o.transpose(1, 2).reshape(B, N, C))


class DuneMlp(nn.Module):
    def __init__(self, dim, hidden, fk):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden, bias=True, **fk)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, dim, bias=True, **fk)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class DuneBlock(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio, eps, layerscale, fk):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=eps, **fk)
        self.attn = DuneAttention(dim, num_heads, fk)
        self.ls1 = LayerScale(dim, fk) if layerscale else nn.Identity()
        self.norm2 = nn.LayerNorm(dim, eps=eps, **fk)
        self.mlp = DuneMlp(dim, int(dim * mlp_ratio), fk)
        self.ls2 = LayerScale(dim, fk) if layerscale else nn.Identity()

    def forward(self, x):
        x = x + self.ls1(self.attn(self.norm1(x)))
        return x + self.ls2(self.mlp(self.norm2(x)))


class DuneViT(nn.Module):
    """The DUNE ViT's parameters that DUNE-MASt3R uses (`dune_backbone.*`)."""

    def __init__(self, cfg, fk):
        super().__init__()
        C, p, grid, R = cfg["enc_embed_dim"], cfg["patch_size"], cfg["dune_pos_embed_grid"], \
            cfg["dune_num_register_tokens"]
        self.cfg = cfg
        self.patch_size = p
        self.num_register_tokens = R
        self.cls_token = nn.Parameter(torch.zeros(1, 1, C, **fk))
        self.pos_embed = nn.Parameter(torch.zeros(1, 1 + grid * grid, C, **fk))
        self.register_tokens = nn.Parameter(torch.zeros(1, R, C, **fk)) if R else None
        self.patch_embed = nn.Module()
        self.patch_embed.proj = nn.Conv2d(3, C, kernel_size=p, stride=p, bias=True, **fk)
        blocks = [DuneBlock(C, cfg["enc_num_heads"], cfg["mlp_ratio"], cfg["dune_ln_eps"], cfg["dune_layerscale"], fk)
                  for _ in range(cfg["enc_depth"])]
        self.blocks = nn.ModuleList([nn.ModuleList(blocks)])  # one chunk: names blocks.0.{i}

    def forward(self, img, taps=None, sfx=""):
        """img in MASt3R's normalisation (B, 3, H, W) -> all tokens after the last block (B, 1+R+N, C)."""
        B, _, H, W = img.shape
        p, cfg = self.patch_size, self.cfg
        if H % p or W % p:
            raise ValueError(f"image size {W}x{H} is not a multiple of the patch size {p}")
        mean = torch.tensor(IMAGENET_MEAN, dtype=torch.float32).to(img.device, img.dtype).view(1, 3, 1, 1)
        std = torch.tensor(IMAGENET_STD, dtype=torch.float32).to(img.device, img.dtype).view(1, 3, 1, 1)
        x = ((img * 0.5 + 0.5) - mean) / std
        _tap(taps, f"dune_input{sfx}", x)
        x = self.patch_embed.proj(x).flatten(2).transpose(1, 2)
        _tap(taps, f"patch_embed{sfx}", x)
        pos = interpolate_pos_table(self.pos_embed, cfg["dune_pos_embed_grid"], H // p, W // p,
                                    cfg["dune_interpolate_offset"], cfg["dune_interpolate_antialias"], H == W)
        cls = self.cls_token + self.pos_embed[:, :1]
        x = torch.cat([cls.expand(B, -1, -1), x + pos], dim=1)
        if self.register_tokens is not None:
            x = torch.cat([x[:, :1], self.register_tokens.expand(B, -1, -1), x[:, 1:]], dim=1)
        _tap(taps, f"dune_tokens{sfx}", x)
        for i, blk in enumerate(self.blocks[0]):
            x = blk(x)
            _tap(taps, f"enc_block{i}{sfx}", x)
        return x
