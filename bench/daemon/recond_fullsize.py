#!/usr/bin/env python3
"""Full-size MASt3R through recond on the GPU machine (opt-in, never CI): the speed a user of the
daemon gets, against PyTorch and the in-process engine in the same call.

The weights are the seeded random ones of the official ViT-L/ViT-B configuration that
bench/mast3r/mast3r_fullsize.py uses. In one call:
  1. PyTorch (tests/reference/mast3r_ref.py on the device): fp16 autocast at batch 1 and 8;
  2. recon in-process (recon_bench_mast3r) at batch 1 and 8 for each precision;
  3. for each precision, recond on those weights (--max-batch 8 --batch-wait-us 3000, warm at
     512x384) and `reconctl bench` with synthetic 512x384 pairs at each concurrency, without and
     with fetching every output (43.5 MiB a pair, released in the same round trip).

    python3 bench/daemon/recond_fullsize.py --bin .gpu/bin --out $OUT \\
        [--precisions fp16,fp16-heads] [--concurrency 1,16] [--pairs 160] [--baseline-bin DIR]

--baseline-bin, if given, holds the recond and reconctl of an earlier commit: each precision is then
served by the baseline daemon first and this one second, in the same call (an A/B of a daemon change).
--device-sets "0;all" serves each precision once per set of GPUs (recond --device), in that order:
the scaling over the GPUs of the host. --no-reference skips PyTorch and the in-process engine.

--bin holds recond, reconctl and recon_bench_mast3r; --lib, if given, the shared libraries they
need that the machine lacks (put on their LD_LIBRARY_PATH only, not on PyTorch's). Writes
$OUT/recond_fullsize.json and prints one table.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
sys.path.insert(0, os.path.join(ROOT, "bench", "mast3r"))
import safetensors_io as st  # noqa: E402
from make_golden import init_golden_weights, make_image, normalise_u8  # noqa: E402
from mast3r_config import METADATA_KEY, config_to_json, resolve_config  # noqa: E402
from mast3r_fullsize import cuda_time_ms, warm_gpu  # noqa: E402
from mast3r_ref import AsymmetricMASt3R, canonical_state_dict  # noqa: E402


def pytorch_fp16(model, u8):
    warm_gpu()
    model = model.cuda().eval()
    img1 = normalise_u8(u8[0][None]).cuda()
    img2 = normalise_u8(u8[1][None]).cuda()
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.float16):
        batch1 = cuda_time_ms(lambda: model(img1, img2))
        i1, i2 = img1.repeat(8, 1, 1, 1), img2.repeat(8, 1, 1, 1)
        batch8 = cuda_time_ms(lambda: model(i1, i2), warmup=2, runs=8) / 8
    return {"fp16_autocast_ms": batch1, "fp16_autocast_batch8_ms_per_pair": batch8}


def in_process(binary, model_path, pair_dir, precisions, out, env):
    bench_json = os.path.join(out, "recon_bench_mast3r.json")
    cmd = [binary, "--model", model_path, "--width", "512", "--height", "384", "--pair", pair_dir, "--batches", "1,8",
           "--precisions", ",".join(precisions), f"--benchmark_out={bench_json}", "--benchmark_out_format=json"]
    print(" ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
    with open(bench_json) as f:
        return {r["name"]: {"ms_per_pair": r["ms_per_pair"], "pairs_per_s": r["pairs_per_s"]}
                for r in json.load(f)["benchmarks"] if "ms_per_pair" in r}


def through_recond(bindir, build, model_path, precision, concurrencies, pairs, work, env, devices=""):
    sockets = tempfile.mkdtemp(prefix="recond-", dir=work)
    log_path = os.path.join(work, f"recond-{build}-{precision}{'-' + devices if devices else ''}.log")
    cmd = [os.path.join(bindir, "recond"), "--foreground", "--config", "/dev/null", "--socket-dir", sockets,
           "--model", f"mast3r={model_path}", "--precision", precision, "--warmup", "512x384",
           "--max-batch", "8", "--batch-wait-us", "3000", "--pipeline-cache", "off"]
    if devices:
        cmd += ["--device", devices]
    print(" ".join(cmd), flush=True)
    with open(log_path, "w") as log:
        daemon = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    reconctl = [os.path.join(bindir, "reconctl"), "--socket-dir", sockets]
    rows = []
    try:
        started = time.time()
        subprocess.run(reconctl + ["wait-ready", "900", "--quiet"], check=True, env=env)
        print(f"recond {precision} ready in {time.time() - started:.1f} s", flush=True)
        for concurrency in concurrencies:
            for fetch in (False, True):
                args = ["bench", "--pairs", str(pairs), "--concurrency", str(concurrency), "--warmup", "16", "--json"]
                result = subprocess.run(reconctl + args + (["--fetch"] if fetch else []), check=True,
                                        capture_output=True, text=True, env=env)
                row = json.loads(result.stdout)
                row["precision"] = precision
                row["build"] = build
                row["devices"] = devices or "default"
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=60)
        except subprocess.TimeoutExpired:
            daemon.kill()
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="directory with recond, reconctl and recon_bench_mast3r")
    ap.add_argument("--lib", default="", help="shared libraries for those binaries only")
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default="/tmp/recond-fullsize")
    ap.add_argument("--precisions", default="fp16,fp16-heads")
    ap.add_argument("--concurrency", default="1,16")
    ap.add_argument("--pairs", type=int, default=160)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--baseline-bin", default="", help="recond and reconctl of an earlier commit, run first")
    ap.add_argument("--device-sets", default="", help="recond --device values separated by ';' (e.g. '0;all')")
    ap.add_argument("--no-reference", action="store_true", help="skip PyTorch and the in-process engine")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.work, exist_ok=True)
    precisions = args.precisions.split(",")
    concurrencies = [int(c) for c in args.concurrency.split(",")]
    summary = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__}
    env = dict(os.environ)
    if args.lib:
        env["LD_LIBRARY_PATH"] = os.path.abspath(args.lib) + ":" + env.get("LD_LIBRARY_PATH", "")

    cfg = resolve_config(None)
    model = AsymmetricMASt3R(cfg, device="meta", dtype=torch.float32).to_empty(device="cpu")
    init_golden_weights(model, args.seed)
    model_path = os.path.join(args.work, "model.safetensors")
    st.save_file(canonical_state_dict(model), model_path, metadata={METADATA_KEY: config_to_json(cfg)})
    u8 = [make_image(args.seed + 1, 512, 384), make_image(args.seed + 2, 512, 384)]
    pair_dir = os.path.join(args.work, "pair")
    os.makedirs(pair_dir, exist_ok=True)
    for i, img in enumerate(u8):
        img.tofile(os.path.join(pair_dir, f"img{i + 1}_u8.bin"))

    if not args.no_reference:
        summary["pytorch"] = pytorch_fp16(model, u8)
        print(f"PyTorch: {summary['pytorch']}", flush=True)
    del model
    torch.cuda.empty_cache()
    if not args.no_reference:
        summary["in_process"] = in_process(os.path.join(args.bin, "recon_bench_mast3r"), model_path, pair_dir,
                                           precisions, args.out, env)
    summary["recond"] = []
    builds = ([("baseline", args.baseline_bin)] if args.baseline_bin else []) + [("this", args.bin)]
    device_sets = args.device_sets.split(";") if args.device_sets else [""]
    for precision in precisions:
        for devices in device_sets:
            for build, bindir in builds:
                summary["recond"] += through_recond(bindir, build, model_path, precision, concurrencies, args.pairs,
                                                    args.work, env, devices)
    with open(os.path.join(args.out, "recond_fullsize.json"), "w") as f:
        json.dump(summary, f, indent=1, sort_keys=True)

    print(f"\n== {summary['device']} (x{torch.cuda.device_count()}): 512x384 pairs ==")
    torch_b8 = None
    if not args.no_reference:
        torch_b8 = summary["pytorch"]["fp16_autocast_batch8_ms_per_pair"]
        print(f"PyTorch fp16 autocast: batch 1 {summary['pytorch']['fp16_autocast_ms']:.1f} ms, "
              f"batch 8 {torch_b8:.2f} ms/pair = {1000 / torch_b8:.1f} pairs/s")
        for name, r in summary["in_process"].items():
            print(f"recon in-process {name:32s} {r['ms_per_pair']:7.2f} ms/pair {r['pairs_per_s']:6.1f} pairs/s")
    print("build     devices  precision   clients fetch  pairs/s  vs PyTorch b8  p50 ms  p99 ms  daemon compute ms  "
          "fetch ms")
    for r in summary["recond"]:
        vs = f"x{r['pairs_per_s'] * torch_b8 / 1000:.2f}" if torch_b8 else "  -  "
        print(f"{r['build']:9s} {r['devices']:8s} {r['precision']:11s} {r['concurrency']:7d} "
              f"{'yes' if r['fetch'] else 'no':5s} {r['pairs_per_s']:8.1f}  {vs}        "
              f"{r['latency_ms']['p50']:6.1f}  {r['latency_ms']['p99']:6.1f}  {r['daemon_compute_ms_mean']:17.1f}  "
              f"{r.get('fetch_ms_mean', 0):8.1f}")


if __name__ == "__main__":
    main()
