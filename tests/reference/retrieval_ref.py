"""PyTorch reference of MASt3R's retrieval head (mast3r/retrieval/model.py semantics, spec §8).

Written from the official behaviour, independently of the C++ engine:
  prewhiten  y = (x − m) · p in float64, cast back to the input dtype (Whitener, l2norm=None)
  projector  [Linear, LayerNorm, GELU] × (len(hdims) − 1) + Linear, plus x when `residual`
  attention  L2 norm of the projector output (featweights='l2norm')
  postwhiten a Whitener on the projector output, or identity
  local      the top-nfeat tokens by attention (how_select_local), with their post-whitened features
  global     normalize(Σ_n feat[n]·attn[n]) (weighted_spoc, F.normalize eps 1e-12)

Ties in the top-nfeat selection: torch.topk does not specify an order among equal values; this
reference sorts stably (equal attention: lower token index first), the rule the engine implements.
Pair selection (not in the official code, which scores pairs with ASMK): cosine similarity of the
global embeddings, per image its k most similar other images, ties to the lower index.
"""

import json

import torch
import torch.nn as nn

METADATA_KEY = "retrieval.config"


class Whitener(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.m = nn.Parameter(torch.zeros((1, dim), dtype=torch.float64))
        self.p = nn.Parameter(torch.eye(dim, dtype=torch.float64))

    def forward(self, x):
        shape, dtype = x.shape, x.dtype
        y = (x.reshape(-1, shape[-1]).to(torch.float64) - self.m) @ self.p
        return y.reshape(shape).to(dtype)


class RetrievalHead(nn.Module):
    """The RetrievalModel without its backbone: it takes encoder tokens (B, N, D)."""

    def __init__(self, dim, prewhiten=True, hdims=(), residual=False, postwhiten=False, nfeat=300):
        super().__init__()
        hdims = list(hdims)
        if residual:
            assert hdims and hdims[-1] == dim
        if postwhiten:
            assert hdims
        self.dim, self.hdims, self.residual, self.nfeat = dim, hdims, residual, nfeat
        self.prewhiten = Whitener(dim) if prewhiten else nn.Identity()
        layers, d = [], dim
        for h in hdims[:-1]:
            layers += [nn.Linear(d, h), nn.LayerNorm(h), nn.GELU()]
            d = h
        if hdims:
            layers.append(nn.Linear(d, hdims[-1]))
        self.projector = nn.Sequential(*layers) if layers else nn.Identity()
        self.out_dim = hdims[-1] if hdims else dim
        self.postwhiten = Whitener(self.out_dim) if postwhiten else nn.Identity()

    def config(self):
        return {"dim": self.dim, "prewhiten": isinstance(self.prewhiten, Whitener), "hdims": self.hdims,
                "residual": self.residual, "postwhiten": isinstance(self.postwhiten, Whitener),
                "featweights": "l2norm", "nfeat": float(self.nfeat), "layer_norm_eps": 1e-5}

    def features_and_attention(self, tokens):
        x = self.prewhiten(tokens)
        proj = self.projector(x) + (x if self.residual else 0.0)
        attn = proj.norm(dim=-1)
        return self.postwhiten(proj), attn

    def kept_tokens(self, n):
        k = int(-self.nfeat * n) if self.nfeat < 0 else int(self.nfeat)
        return min(k, n)

    def local(self, tokens):
        feat, attn = self.features_and_attention(tokens)
        k = self.kept_tokens(attn.shape[1])
        order = torch.sort(attn, dim=1, descending=True, stable=True).indices[:, :k]
        top_attn = torch.gather(attn, 1, order)
        top_feat = torch.gather(feat, 1, order[:, :, None].expand(-1, -1, feat.shape[2]))
        return top_feat, top_attn, order

    def global_embedding(self, tokens):
        feat, attn = self.features_and_attention(tokens)
        return nn.functional.normalize((feat * attn[:, :, None]).sum(dim=1), dim=1)


def top_pairs(global_emb, k):
    """Cosine similarity (B, B) and each row's k best other images (indices, scores), in float64."""
    g = nn.functional.normalize(global_emb.to(torch.float64), dim=1)
    sim = g @ g.T
    masked = sim.clone()
    masked.fill_diagonal_(float("-inf"))
    order = torch.sort(masked, dim=1, descending=True, stable=True).indices[:, :k]
    return sim, order, torch.gather(sim, 1, order)


def head_from_config(cfg):
    return RetrievalHead(cfg["dim"], cfg.get("prewhiten", True), cfg.get("hdims", []), cfg.get("residual", False),
                         cfg.get("postwhiten", False), cfg.get("nfeat", 300))


def config_json(cfg):
    return json.dumps(cfg, separators=(",", ":"))
