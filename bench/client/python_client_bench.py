#!/usr/bin/env python3
"""The Python client's overhead per pair against the C++ client on the same daemon.

One recond, one model; in each round, for fetching nothing and fetching every output (released in
the same round trip), alternately:
  C++:    `reconctl bench --pairs N --concurrency 1` (librecon; its two images written once into a
          registered buffer);
  Python: N sequential `recon.Client.infer(a, b)` on numpy arrays (each call copies them into the
          client's registered buffers, as a user's call does), with `Result.fetch(release=True)`.
Reports ms per pair of both and their ratio (target: Python within 5 % of C++). With --threads N
(N > 1) both keep N pairs in flight: `reconctl bench --concurrency N` against N Python threads
sharing one Client (every wait releases the GIL).

    PYTHONPATH=build/client/python python3 bench/client/python_client_bench.py --bin build \\
        [--model M.safetensors | --fullsize] [--precision fp16-heads] [--resolution 512x384] [--pairs 100]

--bin: a directory holding recond and reconctl (or the build tree: daemon/recond,
client/reconctl/reconctl). --fullsize writes the official ViT-L/ViT-B configuration with seeded
random weights (needs torch; the GPU machine). Without either, the tests' tiny model. --out DIR
writes python_client_bench.json.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy

import recon

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def find_binary(bindir, name, nested):
    for path in (os.path.join(bindir, name), os.path.join(bindir, nested)):
        if os.path.exists(path):
            return path
    sys.exit(f"no {name} in {bindir}")


def fullsize_model(work, seed=0):
    """The official configuration with seeded random weights (bench/daemon/recond_fullsize.py's)."""
    import torch

    sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
    import safetensors_io as st
    from make_golden import init_golden_weights
    from mast3r_config import METADATA_KEY, config_to_json, resolve_config
    from mast3r_ref import AsymmetricMASt3R, canonical_state_dict

    cfg = resolve_config(None)
    model = AsymmetricMASt3R(cfg, device="meta", dtype=torch.float32).to_empty(device="cpu")
    init_golden_weights(model, seed)
    path = os.path.join(work, "model.safetensors")
    st.save_file(canonical_state_dict(model), path, metadata={METADATA_KEY: config_to_json(cfg)})
    return path


def python_run(client, images, size, pairs, warmup, fetch, threads):
    h, w = size

    def some(count):
        for _ in range(count):
            r = client.infer(images[0], images[1], resolution=(h, w))
            if fetch:
                r.fetch(release=True)
            del r

    some(warmup)
    workers = [threading.Thread(target=some, args=(pairs // threads,)) for _ in range(threads)]
    start = time.perf_counter()
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    return (time.perf_counter() - start) * 1e3 / (pairs // threads * threads)


def cpp_run(reconctl, size, pairs, warmup, fetch, threads, env):
    h, w = size
    cmd = reconctl + ["bench", "--pairs", str(pairs // threads * threads), "--concurrency", str(threads),
                      "--warmup", str(warmup),
                      "--resolution", f"{w}x{h}", "--json"] + (["--fetch"] if fetch else [])
    row = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout)
    return row["wall_s"] * 1e3 / row["pairs"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--lib", default="", help="shared libraries for recond and reconctl only")
    ap.add_argument("--model", default="")
    ap.add_argument("--fullsize", action="store_true")
    ap.add_argument("--precision", default="fp16-heads")
    ap.add_argument("--resolution", default="512x384", help="WxH")
    ap.add_argument("--pairs", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", default="1", help="comma-separated pairs in flight, e.g. 1,16")
    ap.add_argument("--recond-args", default="", help="more recond flags, e.g. '--max-batch 8 --batch-wait-us 3000'")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    w, h = (int(x) for x in args.resolution.split("x"))
    work = tempfile.mkdtemp(prefix="recon-python-bench-")
    model = args.model or (fullsize_model(work) if args.fullsize
                           else os.path.join(ROOT, "tests/golden/tiny_same/model.safetensors"))
    env = dict(os.environ)
    if args.lib:
        env["LD_LIBRARY_PATH"] = os.path.abspath(args.lib) + ":" + env.get("LD_LIBRARY_PATH", "")
    sockets = os.path.join(work, "run")
    recond = find_binary(args.bin, "recond", "daemon/recond")
    reconctl = [find_binary(args.bin, "reconctl", "client/reconctl/reconctl"), "--socket-dir", sockets]
    cmd = [recond, "--foreground", "--config", "/dev/null", "--socket-dir", sockets, "--model", f"mast3r={model}",
           "--precision", args.precision, "--warmup", f"{w}x{h}", "--pipeline-cache", "off"] + args.recond_args.split()
    log = open(os.path.join(work, "recond.log"), "w")
    daemon = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    rows = []
    try:
        subprocess.run(reconctl + ["wait-ready", "900", "--quiet"], check=True, env=env)
        client = recon.Client(sockets, client_name="python-bench", timeout=300)
        rng = numpy.random.default_rng(1)
        images = [rng.integers(0, 256, (h, w, 3), dtype=numpy.uint8) for _ in range(2)]
        for round_index in range(args.rounds):
            for threads in (int(t) for t in args.threads.split(",")):
                for fetch in (False, True):
                    cpp = cpp_run(reconctl, (h, w), args.pairs, args.warmup, fetch, threads, env)
                    py = python_run(client, images, (h, w), args.pairs, args.warmup, fetch, threads)
                    row = {"round": round_index, "threads": threads, "fetch": fetch, "cpp_ms_per_pair": cpp,
                           "python_ms_per_pair": py, "ratio": py / cpp}
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=60)
    summary = {"model": "fullsize" if args.fullsize else model, "precision": args.precision, "width": w, "height": h,
               "pairs": args.pairs, "recond_args": args.recond_args, "rows": rows}
    try:
        import torch
        summary["device"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    except ImportError:
        summary["device"] = "unknown"
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "python_client_bench.json"), "w") as f:
            json.dump(summary, f, indent=1)
    print(f"{'in flight':>9} {'fetch':>5} {'C++ ms/pair':>12} {'Python ms/pair':>15} {'ratio':>7}")
    for r in rows:
        print(f"{r['threads']:>9} {str(r['fetch']):>5} {r['cpp_ms_per_pair']:12.2f} {r['python_ms_per_pair']:15.2f} "
              f"{r['ratio']:7.3f}")


if __name__ == "__main__":
    main()
