#!/usr/bin/env python3
"""recon.Engine against the PyTorch reference in the same Python process (GPU machine, opt-in).

The seeded random weights of the official ViT-L/ViT-B configuration (bench/daemon/recond_fullsize.py
writes them the same way), one 512x384 pair. In one process, one after the other:
  1. PyTorch (tests/reference/mast3r_ref.py): fp16 autocast forward at batch 1 and 8;
  2. recon.Engine at --precision: infer() per pair without reading the outputs, infer() and
     reading all eight outputs into numpy, and infer_batch() over 9 images (8 consecutive pairs,
     each image encoded once);
  3. PyTorch again (its batch-1 time is host-bound and moves between runs: both are reported).
Medians of --pairs calls after warm-up; ms per pair.

    PYTHONPATH=<built package> python3 bench/client/python_engine_bench.py --out $OUT [--precision fp16-heads]
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "daemon"))
import recond_fullsize as fullsize  # noqa: E402  (its imports put tests/reference and bench/mast3r on the path)

import recon  # noqa: E402

OUTPUTS = ["pts3d_1", "pts3d_2", "conf_1", "conf_2", "desc_1", "desc_2", "desc_conf_1", "desc_conf_2"]


def median_ms(fn, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default="/tmp/recon-engine-bench")
    ap.add_argument("--precision", default="fp16-heads")
    ap.add_argument("--pairs", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.work, exist_ok=True)

    cfg = fullsize.resolve_config(None)
    model = fullsize.AsymmetricMASt3R(cfg, device="meta", dtype=torch.float32).to_empty(device="cpu")
    fullsize.init_golden_weights(model, args.seed)
    model_path = os.path.join(args.work, "model.safetensors")
    fullsize.st.save_file(fullsize.canonical_state_dict(model), model_path,
                          metadata={fullsize.METADATA_KEY: fullsize.config_to_json(cfg)})
    u8 = [fullsize.make_image(args.seed + 1, 512, 384), fullsize.make_image(args.seed + 2, 512, 384)]
    summary = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "precision": args.precision}
    summary["pytorch"] = fullsize.pytorch_fp16(model, u8)

    engine = recon.Engine(model_path, precision=args.precision)
    engine.warmup(512, 384)
    a, b = u8
    for _ in range(3):
        engine.infer(a, b)

    def infer_and_read():
        result = engine.infer(a, b)
        for name in OUTPUTS:
            result[name]

    images = [a, b] * 4 + [a]
    for _ in range(2):
        engine.infer_batch(images)
    summary["engine"] = {
        "device": engine.device,
        "infer_ms": median_ms(lambda: engine.infer(a, b), args.pairs),
        "infer_read_ms": median_ms(infer_and_read, args.pairs),
        "infer_batch_ms_per_pair": median_ms(lambda: engine.infer_batch(images), max(3, args.pairs // 4)) / 8,
    }
    summary["pytorch_after"] = fullsize.pytorch_fp16(model, u8)
    with open(os.path.join(args.out, "python_engine_bench.json"), "w") as f:
        json.dump(summary, f, indent=1, sort_keys=True)
    e = summary["engine"]
    print(f"\n== {summary['device']}, 512x384 pairs, one Python process ==")
    for when in ("pytorch", "pytorch_after"):
        p = summary[when]
        print(f"PyTorch fp16 autocast ({'before' if when == 'pytorch' else 'after'} the Engine): batch 1 "
              f"{p['fp16_autocast_ms']:.1f} ms, batch 8 {p['fp16_autocast_batch8_ms_per_pair']:.2f} ms/pair")
    p = {k: min(summary["pytorch"][k], summary["pytorch_after"][k]) for k in summary["pytorch"]}
    print(f"recon.Engine {args.precision}: infer {e['infer_ms']:.2f} ms (x{p['fp16_autocast_ms'] / e['infer_ms']:.2f}), "
          f"infer + read all outputs {e['infer_read_ms']:.2f} ms, infer_batch {e['infer_batch_ms_per_pair']:.2f} "
          f"ms/pair (x{p['fp16_autocast_batch8_ms_per_pair'] / e['infer_batch_ms_per_pair']:.2f} PyTorch batch 8; "
          f"ratios against PyTorch's faster run)")


if __name__ == "__main__":
    main()
