"""The DUSt3R / MASt3R training losses.

Pointmaps (DUSt3R, eq. 2-4): both views' predicted points are in view 1's frame; prediction and ground
truth are each divided by their own mean distance to the origin over the valid pixels of both views
(scale-invariant regression), the per-pixel error is the Euclidean distance, and the confidence-aware
form is  C * err - alpha * log C  (C = 1 + exp(raw), conf_mode 'exp' from 1).

Matching (MASt3R, eq. 6-7): InfoNCE over descriptors at ground-truth correspondences, both directions,
temperature TAU. The descriptor confidences (desc_conf, 'exp' from 0) are trained in the same
confidence-aware form on each correspondence's InfoNCE loss (detached), so the matcher's confidence
threshold means something.
"""

import torch
import torch.nn.functional as F

ALPHA = 0.2
TAU = 0.05
N_MATCH = 1024  # correspondences sampled per pair


def _mean_dist(p1, p2, v1, v2):
    d = (p1.norm(dim=-1) * v1).flatten(1).sum(1) + (p2.norm(dim=-1) * v2).flatten(1).sum(1)
    n = v1.flatten(1).sum(1) + v2.flatten(1).sum(1)
    return (d / n.clamp(min=1)).clamp(min=1e-8)


def pointmap_loss(out, batch):
    """Confidence-aware regression of both views. Returns (loss, plain regression error)."""
    v1, v2 = batch["valid1"].float(), batch["valid2"].float()
    g1, g2 = batch["pts1"].float(), batch["pts2"].float()
    p1, p2 = out["pts3d_1"].float(), out["pts3d_2"].float()
    zg = _mean_dist(g1, g2, v1, v2)[:, None, None, None]
    zp = _mean_dist(p1, p2, v1, v2)[:, None, None, None]
    total, reg, n = 0.0, 0.0, (v1.sum() + v2.sum()).clamp(min=1)
    for p, g, v, c in ((p1, g1, v1, out["conf_1"]), (p2, g2, v2, out["conf_2"])):
        err = (p / zp - g / zg).norm(dim=-1)
        c = c.float()
        total = total + ((c * err - ALPHA * torch.log(c)) * v).sum()
        reg = reg + (err * v).sum()
    return total / n, (reg / n).detach()


def sample_correspondences(batch, n, generator=None):
    """n covisible pixels of view 1 per pair and their pixels in view 2: flat indices (B, n) each, and
    a mask of which samples are real (pairs with fewer covisible pixels repeat none)."""
    cov = batch["covisible"]
    B, H, W = cov.shape
    score = torch.rand(B, H * W, generator=generator, device="cpu").to(cov.device)
    score = torch.where(cov.flatten(1), score, torch.full_like(score, -1.0))
    top, idx1 = score.topk(n, dim=1)
    ok = top >= 0
    xy = batch["corr_xy"].reshape(B, H * W, 2)
    sel = torch.gather(xy, 1, idx1[..., None].expand(-1, -1, 2))
    xi = torch.round(sel[..., 0]).clamp(0, W - 1).long()
    yi = torch.round(sel[..., 1]).clamp(0, H - 1).long()
    return idx1, yi * W + xi, ok


def matching_loss(out, batch, generator=None):
    """InfoNCE at ground-truth correspondences plus the desc_conf term. Returns (loss, accuracy)."""
    d1, d2 = out["desc_1"], out["desc_2"]
    B, H, W, D = d1.shape
    idx1, idx2, ok = sample_correspondences(batch, N_MATCH, generator)
    f1 = torch.gather(d1.reshape(B, H * W, D), 1, idx1[..., None].expand(-1, -1, D)).float()
    f2 = torch.gather(d2.reshape(B, H * W, D), 1, idx2[..., None].expand(-1, -1, D)).float()
    logits = f1 @ f2.transpose(1, 2) / TAU  # (B, n, n)
    mask = ok[:, None, :] & ok[:, :, None]
    logits = logits.masked_fill(~mask, -1e4)
    target = torch.arange(logits.shape[1], device=logits.device).expand(B, -1)
    l12 = F.cross_entropy(logits.transpose(1, 2), target, reduction="none")  # rows of view 1
    l21 = F.cross_entropy(logits, target, reduction="none")
    okf = ok.float()
    n = okf.sum().clamp(min=1)
    loss = ((l12 + l21) * 0.5 * okf).sum() / n
    acc = ((logits.argmax(2) == target).float() * okf).sum() / n
    c1 = torch.gather(out["desc_conf_1"].reshape(B, -1), 1, idx1).float().clamp(min=1e-6)
    c2 = torch.gather(out["desc_conf_2"].reshape(B, -1), 1, idx2).float().clamp(min=1e-6)
    lc = ((c1 * l12.detach() - ALPHA * torch.log(c1)) + (c2 * l21.detach() - ALPHA * torch.log(c2))) * 0.5
    return loss + 0.1 * (lc * okf).sum() / n, acc.detach()
