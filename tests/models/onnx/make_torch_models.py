#!/usr/bin/env python3
"""Exports small models from PyTorch to ONNX with their inputs and torch's CPU outputs, for
tests/models/onnx/onnx_torch_models_test.cpp. Seeded; written at build time into OUT_DIR:

  OUT_DIR/<model>/model.onnx, input_<k>.npy, expected_<k>.npy   (k-th set: one batch size)

Models: a ResNet-style CNN (conv + batch norm + ReLU, strided residual blocks, max pool, global
average pool, linear, softmax), a small ViT (patch embedding, class token, position embedding,
pre-norm attention blocks with GELU MLPs, written with reshape/permute on the traced shapes so the
export carries Shape/Gather/Concat shape arithmetic), an MLP, and a MobileNet-style CNN (reflect
padding, depthwise, grouped and dilated convolutions, instance norm, PReLU, bilinear and nearest
resizing), and recurrent layers (a bidirectional LSTM, a two-layer GRU, a ReLU RNN); all with a
dynamic batch axis.
Also an attention head over padded sequences with a bool mask input and a bool output
(masked/model.onnx, with masked/{x,mask,y,positive}_<k>.npy), and a head reading the MLP's output (head/model.onnx) and what the chain MLP → head gives for
the MLP's inputs (head/chain_expected_<k>.npy).
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


class ResNetSmall(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.layers = nn.Sequential(Block(16, 16, 1), Block(16, 32, 2), Block(32, 64, 2))
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        y = F.max_pool2d(self.stem(x), 2)
        y = self.layers(y)
        y = F.adaptive_avg_pool2d(y, 1).flatten(1)
        return torch.softmax(self.fc(y), dim=-1)


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        att = torch.softmax((q @ k.transpose(-2, -1)) * (c // self.heads) ** -0.5, dim=-1)
        return self.proj((att @ v).transpose(1, 2).reshape(b, n, c))


class VitBlock(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.n1 = nn.LayerNorm(dim)
        self.att = Attention(dim, heads)
        self.n2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        x = x + self.att(self.n1(x))
        return x + self.mlp(self.n2(x))


class VitSmall(nn.Module):
    def __init__(self, dim=32, heads=4, patch=4, size=16):
        super().__init__()
        self.embed = nn.Conv2d(3, dim, patch, patch)
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.5)
        self.pos = nn.Parameter(torch.randn(1, (size // patch) ** 2 + 1, dim) * 0.5)
        self.blocks = nn.Sequential(VitBlock(dim, heads), VitBlock(dim, heads))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, 7)

    def forward(self, x):
        t = self.embed(x).flatten(2).transpose(1, 2)
        t = torch.cat([self.cls.expand(t.shape[0], -1, -1), t], dim=1) + self.pos
        t = self.norm(self.blocks(t))
        return self.head(t[:, 0])


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 5),
                                 nn.Sigmoid())

    def forward(self, x):
        return self.net(x)


class MobileSmall(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, 2, 1)
        self.pad = nn.ReflectionPad2d((1, 2, 1, 0))
        self.dw = nn.Conv2d(16, 16, 3, 1, 0, groups=16)
        self.pw = nn.Conv2d(16, 24, 1)
        self.norm = nn.InstanceNorm2d(24, affine=True)
        self.act = nn.PReLU(24)
        self.grouped = nn.Conv2d(24, 24, 3, 1, 2, dilation=2, groups=4)
        self.head = nn.Conv2d(24, 4, 1)

    def forward(self, x):
        y = F.relu(self.stem(x))
        y = self.act(self.norm(self.pw(self.dw(self.pad(y)))))
        y = F.relu(self.grouped(y) + y)
        y = F.interpolate(y, scale_factor=2, mode="bilinear", align_corners=False)
        return F.interpolate(self.head(y), size=(20, 45), mode="nearest")


class MaskedAttention(nn.Module):
    """One attention head over a padded batch, as sequence models export it: the caller's bool key
    mask (False: padding) and a causal mask from comparisons of positions, applied with masked_fill;
    a leaky gate by torch.where on run-time values; padded rows zeroed by the mask cast to float.
    Returns the output and which of its elements are positive in real rows (bool)."""

    def __init__(self, dim=16):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.scale = dim**-0.5

    def forward(self, x, mask):
        n = x.shape[1]
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(1, 2) * self.scale
        pos = torch.arange(n)
        allowed = (pos[None, :] <= pos[:, None])[None] & mask[:, None, :]
        y = scores.masked_fill(~allowed, float("-inf")).softmax(-1) @ v
        y = torch.where(y > 0, y, 0.1 * y)
        keep = mask[..., None]
        y = y * keep.to(y.dtype)
        return y, (y > 0) & keep


class Head(nn.Module):
    """Reads the MLP's output: the second model of a chain (tests/client/recond_onnx_test.cpp)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 3)

    def forward(self, x):
        return torch.relu(self.fc(x))


class Recurrent(nn.Module):
    """A bidirectional LSTM, a two-layer GRU and a ReLU RNN, batch first; the output mixes in the
    GRU's last hidden state."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(6, 8, batch_first=True, bidirectional=True)
        self.gru = nn.GRU(16, 5, num_layers=2, batch_first=True)
        self.rnn = nn.RNN(5, 4, nonlinearity="relu", batch_first=True)

    def forward(self, x):
        y, _ = self.lstm(x)
        y, h = self.gru(y)
        y, _ = self.rnn(y)
        return y + h[-1].sum(-1, keepdim=True)[:, None, :]


def randomise_norms(model):
    """Batch-norm statistics and norm affines away from identity, so folding them is tested."""
    g = torch.Generator().manual_seed(7)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.2)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
        if isinstance(m, (nn.BatchNorm2d, nn.LayerNorm, nn.InstanceNorm2d)):
            m.weight.data.copy_(torch.rand(m.weight.shape, generator=g) + 0.5)
            m.bias.data.copy_(torch.randn(m.bias.shape, generator=g) * 0.1)


def export(out_dir, name, model, batches, make_input, opset):
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    model.eval()
    randomise_norms(model)
    example = make_input(batches[0])
    torch.onnx.export(model, example, os.path.join(d, "model.onnx"), opset_version=opset, input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    for k, b in enumerate(batches):
        x = make_input(b)
        with torch.no_grad():
            y = model(x)
        np.save(os.path.join(d, f"input_{k}.npy"), x.numpy())
        np.save(os.path.join(d, f"expected_{k}.npy"), y.numpy())


def main():
    out_dir = sys.argv[1]
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    export(out_dir, "resnet_small", ResNetSmall(), [2, 1], lambda b: torch.randn(b, 3, 32, 32, generator=g), 13)
    export(out_dir, "vit_small", VitSmall(), [2, 3], lambda b: torch.randn(b, 3, 16, 16, generator=g), 13)
    export(out_dir, "mobile_small", MobileSmall(), [2, 1], lambda b: torch.randn(b, 3, 32, 32, generator=g), 13)
    mlp = Mlp()
    export(out_dir, "mlp", mlp, [1, 5], lambda b: torch.randn(b, 20, generator=g), 13)
    # Two inputs and a bool one, a bool output: masked/{x,mask,y,positive}_<k>.npy per batch size,
    # each sequence padded after a length of at least 1.
    masked = MaskedAttention().eval()
    d = os.path.join(out_dir, "masked")
    os.makedirs(d, exist_ok=True)
    lengths = [[5, 1], [3, 8, 6]]
    for k, batch_lengths in enumerate(lengths):
        x = torch.randn(len(batch_lengths), 8, 16, generator=g)
        mask = torch.arange(8)[None, :] < torch.tensor(batch_lengths)[:, None]
        if k == 0:
            torch.onnx.export(masked, (x, mask), os.path.join(d, "model.onnx"), opset_version=13,
                              input_names=["x", "mask"], output_names=["y", "positive"],
                              dynamic_axes={n: {0: "batch"} for n in ["x", "mask", "y", "positive"]})
        with torch.no_grad():
            y, positive = masked(x, mask)
        for name, t in [("x", x), ("mask", mask), ("y", y), ("positive", positive)]:
            np.save(os.path.join(d, f"{name}_{k}.npy"), t.numpy())
    # The head on the MLP's own outputs for its inputs: what a chain of the two gives.
    head = Head().eval()
    d = os.path.join(out_dir, "head")
    os.makedirs(d, exist_ok=True)
    torch.onnx.export(head, torch.zeros(1, 5), os.path.join(d, "model.onnx"), opset_version=13, input_names=["x"],
                      output_names=["z"], dynamic_axes={"x": {0: "batch"}, "z": {0: "batch"}})
    for k in range(2):
        with torch.no_grad():
            y = torch.from_numpy(np.load(os.path.join(out_dir, "mlp", f"expected_{k}.npy")))
            np.save(os.path.join(d, f"chain_expected_{k}.npy"), head(y).numpy())
    export(out_dir, "recurrent", Recurrent(), [2, 3], lambda b: torch.randn(b, 7, 6, generator=g), 13)
    open(os.path.join(out_dir, "stamp"), "w").close()


if __name__ == "__main__":
    main()
