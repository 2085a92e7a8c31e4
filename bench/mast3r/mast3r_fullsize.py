#!/usr/bin/env python3
"""Full-size MASt3R on the GPU machine (opt-in, never CI): recon against the independent PyTorch
reference (tests/reference/mast3r_ref.py) on the same device, the same seeded random weights of the
official ViT-L/ViT-B configuration and the same 512x384 pair.

--variants runs several models in one go, each as NAME@WxH: vitl (the released ViT-L/ViT-B
configuration), dune_s and dune_b (DUNE-MASt3R with the DUNE ViT-S/14 or ViT-B/14 encoder, its
448-px position table, and the MASt3R ViT-B decoder and heads). A DUNE model's seeded weights are
written as the two official checkpoints (tests/reference/dune_checkpoint.py: to_official) and
converted with tools/convert-checkpoint --dune-encoder, so the converter runs at full size too;
the reference then loads the converted file. The closing table gives each variant's ms/pair
against the first variant's (put vitl@512x384 first):

    python3 bench/mast3r/mast3r_fullsize.py --bench PATH/recon_bench_mast3r --out $OUT \
        --variants vitl@512x384,dune_s@336x252,dune_s@448x336,dune_b@336x252,dune_b@448x336

It checks that recon's outputs equal the reference's (fp32 with TF32 off; recon's fp32 and the
fp32 reference also against the same reference in float64), and times both in the same run: recon
(recon_bench_mast3r, Google Benchmark) in fp32 and fp16 at batch 1 and 8, and PyTorch eager on the
reference in fp32 (TF32 off), fp16 autocast, and fp16 autocast at batch 8.
With --sequence N, recon also runs an N-image consecutive sequence through infer_batch against the
same pairs one by one (pairs/s, GPU busy fraction, speed-up; no PyTorch counterpart).

    python3 bench/mast3r/mast3r_fullsize.py --bench PATH/recon_bench_mast3r --out $OUT [--sequence 16]

--sweep "NAME=VALUE;..." runs recon again once per setting, with NAME=VALUE in its environment
(--sweep-precisions, --sweep-batches), and gives each run's time and worst error against the fp32
reference and float64 beside the main run's (sweep.json): for switches a change is measured with.

--profile PRECISIONS skips the reference and runs only recon's batch-1 cases of those precisions
with RECON_PROFILE_DISPATCHES=1: each case prints its GPU time per dispatch (profiled runs are
slower; the tables are for finding where the time goes, not for the figures above).
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
import safetensors_io as st  # noqa: E402
from make_golden import init_golden_weights, make_image, normalise_u8  # noqa: E402
from mast3r_config import METADATA_KEY, config_from_json, config_to_json, resolve_config  # noqa: E402
from mast3r_ref import AsymmetricMASt3R, canonical_state_dict, load_weights  # noqa: E402

OUTPUTS = ["pts3d_1", "pts3d_2", "conf_1", "conf_2", "desc_1", "desc_2", "desc_conf_1", "desc_conf_2"]
TFLOP_PER_PAIR = {("vitl", 512, 384): 2.037}  # spec §10; other variants print no TFLOP/s

# DUNE-MASt3R: the DUNE ViT (naver/dune vision_transformer vit_small / vit_base, EncoderOptions'
# defaults: 4 registers, layer scale; the 448 encoders' table) under the released MASt3R decoder.
DUNE_VARIANTS = {
    "dune_s": dict(arch="vit_small", enc_embed_dim=384, enc_depth=12, enc_num_heads=6,
                   dune_backbone="dune_vitsmall_14_448_encoder"),
    "dune_b": dict(arch="vit_base", enc_embed_dim=768, enc_depth=12, enc_num_heads=12,
                   dune_backbone="dune_vitbase_14_448_paper_encoder"),
}
DUNE_IMAGE_SIZE = 448


def warm_gpu(seconds=5.0):
    """Busy the GPU until its clocks are up: a machine fresh from idle runs its first seconds slower,
    and the reference is timed first (measured: PyTorch's fp16 pair took 117 ms on a cold start
    against 86-99 ms in other runs)."""
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
    t0 = time.time()
    while time.time() - t0 < seconds:
        for _ in range(20):
            a @ a
        torch.cuda.synchronize()


def cuda_time_ms(fn, warmup=3, runs=15):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return float(np.median(times))


def dune_config(name):
    v = DUNE_VARIANTS[name]
    return resolve_config(dict(
        encoder="dune", patch_size=14, enc_embed_dim=v["enc_embed_dim"], enc_depth=v["enc_depth"],
        enc_num_heads=v["enc_num_heads"], dune_backbone=v["dune_backbone"], dune_num_register_tokens=4,
        dune_pos_embed_grid=DUNE_IMAGE_SIZE // 14, dune_interpolate_offset=0.1, dune_interpolate_antialias=False,
        dune_layerscale=True))


def build_weights(variant, seed, work):
    """(config, model_path, fp32 state dict) of a variant's seeded weights, as recon loads them."""
    if variant == "vitl":
        cfg = resolve_config(None)
    elif variant in DUNE_VARIANTS:
        cfg = dune_config(variant)
    else:
        raise SystemExit(f"unknown variant {variant!r} (vitl, {', '.join(DUNE_VARIANTS)})")
    model = AsymmetricMASt3R(cfg, device="meta", dtype=torch.float32).to_empty(device="cpu")
    init_golden_weights(model, seed)
    state = canonical_state_dict(model)
    model_path = os.path.join(work, f"{variant}.safetensors")
    if variant == "vitl":
        st.save_file(state, model_path, metadata={METADATA_KEY: config_to_json(cfg)})
        return cfg, model_path, state
    # DUNE: the official two-file layout, through the converter.
    from dune_checkpoint import to_official
    mast3r_ckpt, dune_ckpt = to_official(cfg, state, DUNE_VARIANTS[variant]["arch"], DUNE_IMAGE_SIZE)
    m_path, d_path = os.path.join(work, f"{variant}_mast3r.pth"), os.path.join(work, f"{variant}_dune.pth")
    torch.save(mast3r_ckpt, m_path)
    torch.save(dune_ckpt, d_path)
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "convert-checkpoint"), m_path, "--dune-encoder", d_path,
                    "--out", model_path, "--force"], check=True)
    tensors, meta = st.load_file(model_path)
    converted = config_from_json(meta[METADATA_KEY])
    if config_to_json(converted) != config_to_json(cfg):
        raise SystemExit(f"{variant}: the converted config differs from the one written")
    return converted, model_path, {k: torch.from_numpy(v) for k, v in tensors.items()}


def run_variant(args, variant, width, height):
    """Reference and recon for one model at one size; returns the variant's summary."""
    tag = f"{variant}_{width}x{height}"
    out_dir = os.path.join(args.out, tag)
    os.makedirs(out_dir, exist_ok=True)
    summary = {"variant": variant, "width": width, "height": height}

    # 1. Weights and images.
    t0 = time.time()
    cfg, model_path, state = build_weights(variant, args.seed, args.work)
    u8 = [make_image(args.seed + 1, width, height), make_image(args.seed + 2, width, height)]
    pair_dir = os.path.join(args.work, "pair_" + tag)
    os.makedirs(pair_dir, exist_ok=True)
    for i, img in enumerate(u8):
        img.tofile(os.path.join(pair_dir, f"img{i + 1}_u8.bin"))
    print(f"[{tag}] weights and images ready in {time.time() - t0:.1f} s", flush=True)
    if args.profile:
        cmd = [args.bench, "--model", model_path, "--width", str(width), "--height", str(height),
               "--pair", pair_dir, "--batches", "1", "--precisions", args.profile]
        print(" ".join(cmd), flush=True)
        subprocess.run(cmd, check=True, env=dict(os.environ, RECON_PROFILE_DISPATCHES="1"))
        return summary

    # 2. The reference on the device: fp32 with TF32 off is the equality baseline.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    warm_gpu()
    model = AsymmetricMASt3R(cfg, device="meta", dtype=torch.float32).to_empty(device="cpu")
    load_weights(model, state)
    model = model.cuda().eval()
    img1 = normalise_u8(u8[0][None]).cuda()
    img2 = normalise_u8(u8[1][None]).cuda()
    with torch.no_grad():
        ref = {k: v.float().cpu().numpy() for k, v in model(img1, img2).items()}
        torch.cuda.reset_peak_memory_stats()
        t_fp32 = cuda_time_ms(lambda: model(img1, img2))
        peak_fp32 = torch.cuda.max_memory_allocated() / 2**30
        with torch.autocast("cuda", dtype=torch.float16):
            # PyTorch's own fp16 error, measured like recon's below: the yardstick for recon's fp16 modes.
            autocast_out = {k: v.float().cpu().numpy() for k, v in model(img1, img2).items()}
            torch.cuda.reset_peak_memory_stats()
            t_fp16 = cuda_time_ms(lambda: model(img1, img2))
            peak_fp16 = torch.cuda.max_memory_allocated() / 2**30
            b8 = max(int(b) for b in args.batches.split(","))
            i1, i2 = img1.repeat(b8, 1, 1, 1), img2.repeat(b8, 1, 1, 1)
            t_fp16_b8 = cuda_time_ms(lambda: model(i1, i2), warmup=2, runs=8) / b8
    summary["pytorch"] = {"fp32_tf32_off_ms": t_fp32, "fp16_autocast_ms": t_fp16,
                          f"fp16_autocast_batch{b8}_ms_per_pair": t_fp16_b8,
                          "peak_GiB_fp32": peak_fp32, "peak_GiB_fp16": peak_fp16}
    print(f"[{tag}] PyTorch reference: fp32 {t_fp32:.1f} ms, fp16 {t_fp16:.1f} ms, fp16 batch {b8} "
          f"{t_fp16_b8:.1f} ms/pair", flush=True)
    i1 = i2 = None
    # The same reference in float64: the truth that recon's fp32 and the fp32 reference are both
    # measured against, so a difference between the two can be laid at the door of the one that errs
    # (cuDNN's fp32 convolution algorithms are not all as accurate as a direct sum).
    model = model.double()
    with torch.no_grad():
        truth = {k: v.cpu().numpy() for k, v in model(img1.double(), img2.double()).items()}
    model = None
    torch.cuda.empty_cache()

    # 3. recon, in its own process.
    dump_dir = os.path.join(args.work, "dump_" + tag)
    os.makedirs(dump_dir, exist_ok=True)
    bench_json = os.path.join(out_dir, "recon_bench_mast3r.json")
    cmd = [args.bench, "--model", model_path, "--width", str(width), "--height", str(height),
           "--pair", pair_dir, "--dump", dump_dir, "--batches", args.batches, "--sequence", str(args.sequence),
           "--pair-batches", args.pair_batches, "--inputs", args.inputs,
           f"--benchmark_out={bench_json}", "--benchmark_out_format=json"]
    print(" ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    with open(bench_json) as f:
        runs = json.load(f)["benchmarks"]
    summary["recon"] = {r["name"]: {k: r[k] for k in r if k.endswith("_ms") or k in (
        "ms_per_pair", "pairs_per_s", "gpu_ms_per_pair", "device_heap_used_GiB", "activations_GiB", "gpu_busy",
        "speedup_vs_pairwise", "second_queue")} for r in runs}

    # 4. Equality: max |recon - ref| / max |ref| per output, and the worst descriptor cosine (and
    # the same for PyTorch's own fp16 autocast); then recon's fp32 and the fp32 reference against
    # the float64 truth.
    def scaled_errors(against, precisions):
        errors = {}
        for prec in precisions:
            for name in OUTPUTS:
                path = os.path.join(dump_dir, f"{prec}_{name}.f32")
                if prec == "pytorch-fp16-autocast":
                    got = autocast_out[name].reshape(ref[name].shape)
                elif prec == "reference-fp32":
                    got = ref[name]
                elif os.path.exists(path):
                    got = np.fromfile(path, dtype=np.float32).reshape(ref[name].shape)
                else:
                    continue
                want = against[name]
                errors[f"{prec}/{name}"] = float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))
                if name.startswith("desc_") and not name.startswith("desc_conf"):
                    cos = (got * want).sum(-1) / (np.linalg.norm(got, axis=-1) * np.linalg.norm(want, axis=-1))
                    errors[f"{prec}/{name}/min_cosine"] = float(cos.min())
        return errors

    errors = scaled_errors(ref, ("fp32", "fp16", "fp16-heads", "pytorch-fp16-autocast"))
    summary["max_scaled_error"] = errors
    summary["max_scaled_error_vs_fp64"] = scaled_errors(truth, ("fp32", "reference-fp32"))
    if args.sweep:
        summary["sweep"] = run_sweep(args, model_path, width, height, pair_dir, out_dir, ref, truth)
    summary["batch8"] = b8
    with open(os.path.join(out_dir, "fullsize_summary.json"), "w") as f:
        json.dump(summary, f, indent=1, sort_keys=True)

    print(f"\n== [{tag}] equality against the reference (fp32, TF32 off) ==")
    for k, v in errors.items():
        print(f"  {k:32s} {v:.3e}")
    print(f"\n== [{tag}] fp32 against the float64 reference ==")
    for k, v in summary["max_scaled_error_vs_fp64"].items():
        if not k.endswith("min_cosine"):
            print(f"  {k:32s} {v:.3e}")
    print(f"\n== [{tag}] time per pair ==")
    print(f"  PyTorch fp32 (TF32 off)        {t_fp32:8.2f} ms")
    print(f"  PyTorch fp16 autocast          {t_fp16:8.2f} ms")
    print(f"  PyTorch fp16 autocast batch {b8}  {t_fp16_b8:8.2f} ms/pair")
    tflop = TFLOP_PER_PAIR.get((variant, width, height))
    for name, r in summary["recon"].items():
        if name.startswith("mast3r_sequence/"):
            continue
        # The reference is timed at batch 1 (fp32 and fp16) and at batch 8 in fp16 only: an fp32
        # batch-8 row has nothing of its own kind to compare with.
        if "batch:1/" in name:
            base = t_fp32 if "fp32" in name else t_fp16
        else:
            base = None if "fp32" in name else t_fp16_b8
        versus = f"x{base / r['ms_per_pair']:.2f} vs PyTorch" if base else "(no PyTorch run)"
        rate = f"{tflop / r['ms_per_pair'] * 1e3:6.1f} TFLOP/s  " if tflop else ""
        print(f"  recon {name:34s} {r['ms_per_pair']:8.2f} ms/pair  {r['pairs_per_s']:7.1f} pairs/s  "
              f"GPU {r.get('gpu_ms_per_pair', 0):7.2f} ms  {rate}{versus}  heap {r.get('device_heap_used_GiB', 0):.1f} GiB")

    sequence = {n: r for n, r in summary["recon"].items() if n.startswith("mast3r_sequence/")}
    if sequence:
        print(f"\n== [{tag}] consecutive sequence: infer_batch against pair by pair (same run) ==")
        for name, r in sequence.items():
            speedup = f"x{r['speedup_vs_pairwise']:.2f} vs pairwise" if "speedup_vs_pairwise" in r else ""
            print(f"  {name:44s} {r['ms_per_pair']:8.2f} ms/pair  {r['pairs_per_s']:7.1f} pairs/s  "
                  f"GPU busy {r.get('gpu_busy', 0):5.2f}  {speedup}")
    return summary


def run_sweep(args, model_path, width, height, pair_dir, out_dir, ref, truth):
    """recon again under each --sweep setting (NAME=VALUE in its environment), --sweep-precisions at
    --sweep-batches: time per pair and the worst output error against the fp32 reference and float64."""
    rows = []
    for setting in [x for x in args.sweep.split(";") if x]:
        name, _, value = setting.partition("=")
        label = "".join(c if c.isalnum() else "_" for c in setting)
        dump = os.path.join(args.work, "sweep_" + label)
        os.makedirs(dump, exist_ok=True)
        bench_json = os.path.join(out_dir, f"sweep_{label}.json")
        cmd = [args.bench, "--model", model_path, "--width", str(width), "--height", str(height), "--pair", pair_dir,
               "--dump", dump, "--batches", args.sweep_batches, "--precisions", args.sweep_precisions,
               "--inputs", args.inputs, f"--benchmark_out={bench_json}", "--benchmark_out_format=json"]
        env = dict(os.environ)
        if name:
            env[name] = value
        print(f"[sweep] {setting}: {' '.join(cmd)}", flush=True)
        subprocess.run(cmd, check=True, env=env)
        with open(bench_json) as f:
            times = {r["name"]: r["ms_per_pair"] for r in json.load(f)["benchmarks"]}
        for prec in args.sweep_precisions.split(","):
            worst = {}
            for against, tag in ((ref, "vs_fp32_reference"), (truth, "vs_float64")):
                worst[tag] = 0.0
                for out in OUTPUTS:
                    path = os.path.join(dump, f"{prec}_{out}.f32")
                    got = np.fromfile(path, dtype=np.float32).reshape(ref[out].shape)
                    want = against[out]
                    worst[tag] = max(worst[tag], float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)))
            row = {"setting": setting, "precision": prec, **worst,
                   "ms_per_pair": {n: t for n, t in times.items() if f"/{prec}/" in n}}
            rows.append(row)
            with open(os.path.join(out_dir, "sweep.json"), "w") as f:
                json.dump(rows, f, indent=1)
            print(f"[sweep] {setting:32s} {prec:10s} error {worst['vs_fp32_reference']:.2e} (vs float64 "
                  f"{worst['vs_float64']:.2e})  " + "  ".join(f"{n.split('/')[2]} {t:.2f} ms"
                                                              for n, t in row["ms_per_pair"].items()), flush=True)
    return rows


def parse_variants(text, width, height):
    out = []
    for item in (text or f"vitl@{width}x{height}").split(","):
        name, _, size = item.strip().partition("@")
        w, _, h = (size or f"{width}x{height}").partition("x")
        out.append((name, int(w), int(h)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", required=True, help="recon_bench_mast3r binary")
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default="/tmp/recon-fullsize")
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--height", type=int, default=384)
    ap.add_argument("--variants", default="", help="NAME@WxH,... (vitl, dune_s, dune_b); default vitl at --width/--height")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--inputs", default="host",
                    help="recon_bench_mast3r --inputs: host (pointers packed into staging per call) and/or device")
    ap.add_argument("--sequence", type=int, default=0, help="images in the infer_batch sequence comparison")
    ap.add_argument("--pair-batches", default="4", help="infer_batch pair_batch values of the sequence comparison")
    ap.add_argument("--profile", default="", help="e.g. fp16,fp16-heads: dispatch profile only, no reference")
    ap.add_argument("--sweep", default="",
                    help="NAME=VALUE;...: recon again with each setting in its environment (an empty NAME runs as is)")
    ap.add_argument("--sweep-precisions", default="fp32")
    ap.add_argument("--sweep-batches", default="1")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.work, exist_ok=True)
    variants = parse_variants(args.variants, args.width, args.height)
    summaries = [run_variant(args, *v) for v in variants]
    if args.profile:
        return
    with open(os.path.join(args.out, "fullsize_summary.json"), "w") as f:
        json.dump({"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "variants": summaries},
                  f, indent=1, sort_keys=True)
    if len(summaries) < 2:
        return
    # Every variant's recon time per pair against the first variant's, case by case (same run).
    first = summaries[0]
    first_tag = f"{first['variant']}@{first['width']}x{first['height']}"
    print(f"\n== recon ms/pair by variant (ratio: the first variant, {first_tag}, over this one) ==")
    for s in summaries:
        tag = f"{s['variant']}@{s['width']}x{s['height']}"
        for name, r in s["recon"].items():
            if name.startswith("mast3r_sequence/"):
                continue
            case = name.split("/", 1)[1] if "/" in name else name
            base = next((fr["ms_per_pair"] for fn, fr in first["recon"].items()
                         if (fn.split("/", 1)[1] if "/" in fn else fn) == case), None)
            ratio = f"x{base / r['ms_per_pair']:.2f}" if base else ""
            worst = max((v for k, v in s["max_scaled_error"].items()
                         if k.startswith("fp32/") and not k.endswith("min_cosine")), default=float("nan"))
            truth = s["max_scaled_error_vs_fp64"]
            worst64 = {who: max((v for k, v in truth.items() if k.startswith(who + "/") and not k.endswith("min_cosine")),
                                default=float("nan")) for who in ("fp32", "reference-fp32")}
            print(f"  {tag:18s} {case:28s} {r['ms_per_pair']:8.2f} ms/pair  {ratio:7s}  fp32 max error {worst:.2e}"
                  f" (vs float64: recon {worst64['fp32']:.2e}, reference {worst64['reference-fp32']:.2e})")

if __name__ == "__main__":
    main()
