#!/usr/bin/env python3
"""ResNet-50 through recon's ONNX engine against PyTorch eager (CUDA, cuDNN) and ONNX Runtime
(CPU) on the same machine, with the same seeded random weights and inputs.

  resnet50.py export DIR            model.onnx (dynamic batch) and input_b1/b32.npy in DIR
  resnet50.py torch DIR             PyTorch eager CUDA: fp32 (TF32 off and on) and fp16, batch 1/32;
                                    writes torch_b*.npy (fp32, TF32 off) and prints JSON lines
  resnet50.py ort DIR               ONNX Runtime CPU, batch 1/32, prints JSON lines
  resnet50.py compare DIR OUT NAME  max error of OUT/y.npy against torch_NAME.npy

The architecture is torchvision's resnet50 (bottleneck blocks 3-4-6-3, stride on the 3x3 conv),
written here so the script needs nothing beyond torch; batch norms get random statistics so the
load-time folding is exercised.
"""
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn


class Bottleneck(nn.Module):
    def __init__(self, cin, width, stride):
        super().__init__()
        cout = width * 4
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return self.relu(y + (x if self.down is None else self.down(x)))


class ResNet50(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
                                  nn.MaxPool2d(3, 2, 1))
        layers, cin = [], 64
        for width, blocks, stride in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
            for i in range(blocks):
                layers.append(Bottleneck(cin, width, stride if i == 0 else 1))
                cin = width * 4
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(2048, 1000)

    def forward(self, x):
        y = self.layers(self.stem(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(y, 1), 1))


def model():
    torch.manual_seed(0)
    m = ResNet50().eval()
    g = torch.Generator().manual_seed(1)
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            mod.running_mean.copy_(torch.randn(mod.num_features, generator=g) * 0.1)
            mod.running_var.copy_(torch.rand(mod.num_features, generator=g) * 0.5 + 0.75)
            mod.weight.data.copy_(torch.rand(mod.num_features, generator=g) * 0.5 + 0.5)
    return m


BATCHES = (1, 32)


def export(d):
    os.makedirs(d, exist_ok=True)
    m = model()
    g = torch.Generator().manual_seed(2)
    for b in BATCHES:
        np.save(os.path.join(d, f"input_b{b}.npy"), torch.randn(b, 3, 224, 224, generator=g).numpy())
    x = torch.from_numpy(np.load(os.path.join(d, "input_b1.npy")))
    torch.onnx.export(m, x, os.path.join(d, "model.onnx"), opset_version=13, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})


def timed(fn, iters):
    # 0.3 s of untimed runs first, as recon-run does: an idle GPU raises its clock only under load.
    t = time.perf_counter()
    while time.perf_counter() - t < 0.3:
        fn()
        torch.cuda.synchronize()
    ms = []
    for _ in range(iters):
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        ms.append((time.perf_counter() - t) * 1e3)
    ms.sort()
    return ms[len(ms) // 2], ms[0]


def bench_torch(d):
    dev = torch.device("cuda")
    name = torch.cuda.get_device_name(0)
    m = model().to(dev)
    for b in BATCHES:
        x = torch.from_numpy(np.load(os.path.join(d, f"input_b{b}.npy"))).to(dev)
        with torch.no_grad():
            for label, tf32, half in [("fp32", False, False), ("fp32-tf32", True, False), ("fp16", False, True)]:
                torch.backends.cudnn.allow_tf32 = tf32
                torch.backends.cuda.matmul.allow_tf32 = tf32
                mm = model().to(dev).half() if half else m
                xx = x.half() if half else x
                med, best = timed(lambda: mm(xx), 30 if b == 1 else 10)
                if label == "fp32":
                    np.save(os.path.join(d, f"torch_b{b}.npy"), mm(xx).float().cpu().numpy())
                print(json.dumps({"runtime": "pytorch-eager", "gpu": name, "precision": label, "batch": b,
                                  "median_ms": round(med, 3), "best_ms": round(best, 3),
                                  "images_per_s": round(b * 1e3 / med, 1), "torch": torch.__version__}), flush=True)


def bench_ort(d):
    import onnxruntime as ort
    s = ort.InferenceSession(os.path.join(d, "model.onnx"), providers=["CPUExecutionProvider"])
    for b in BATCHES:
        x = np.load(os.path.join(d, f"input_b{b}.npy"))
        fn = lambda: s.run(None, {"x": x})
        fn()
        ms = []
        for _ in range(10 if b == 1 else 3):
            t = time.perf_counter()
            fn()
            ms.append((time.perf_counter() - t) * 1e3)
        ms.sort()
        med = ms[len(ms) // 2]
        print(json.dumps({"runtime": "onnxruntime-cpu", "threads": os.cpu_count(), "batch": b,
                          "median_ms": round(med, 3), "images_per_s": round(b * 1e3 / med, 1),
                          "ort": ort.__version__}), flush=True)


def compare(d, out, name):
    got = np.load(os.path.join(out, "y.npy"))
    want = np.load(os.path.join(d, f"torch_{name}.npy"))
    err = float(np.abs(got - want).max() / np.abs(want).max())
    print(json.dumps({"compare": out, "against": f"torch_{name} (fp32, TF32 off)", "max_error_of_max": err}))


if __name__ == "__main__":
    cmd, d = sys.argv[1], sys.argv[2]
    {"export": lambda: export(d), "torch": lambda: bench_torch(d), "ort": lambda: bench_ort(d),
     "compare": lambda: compare(d, sys.argv[3], sys.argv[4])}[cmd]()
