#!/usr/bin/env python3
"""N photos to an aligned scene through recond, end to end, with full-size MASt3R weights (opt-in,
never CI): `reconctl reconstruct` on synthetic 512x384 images, timed from the command's start to
its end, with the per-stage durations reconctl prints, recond's own job time, peak GPU memory and
recond's peak host memory.

    python3 bench/reconstruct/recond_reconstruct_fullsize.py --bin .gpu/bin --lib .gpu/lib:.gpu/librecon \\
        --out $OUT [--runs 20,50,20:pairs_per_step=8] [--precision fp16] [--iterations 300,300]
    python3 bench/reconstruct/recond_reconstruct_fullsize.py --bin .gpu/bin --lib .gpu/lib:.gpu/librecon \\
        --out $OUT --retrieval --runs 200:pairs=retrieval-20-10 [--deadline 560]

--runs lists the jobs, in order, against one recond: IMAGES[:NAME=VALUE[:NAME=VALUE...]], each
NAME=VALUE passed as `--param NAME=VALUE` (e.g. pairs_per_step=8), except pairs=GRAPH, which goes to
`reconctl reconstruct --pairs GRAPH` (complete, swin-W, logwin-W, oneref-R, retrieval-NA-K; default
complete). Every job runs at 512x384 and the official iteration counts (300 + 300) unless
--iterations says otherwise.

--retrieval builds a seeded random retrieval head of the official size and loads it in recond
(`--retrieval HEAD --retrieval-backbone mast3r`), which a retrieval-NA-K graph needs: the job then
runs the encoder and the head on every image ('retrieval' stage) and builds the official
make_pairs_fps graph (NA key images by farthest-point sampling, all pairs among them, each image
with its nearest key and with its K-1 most similar others). The head is the official
`..._retrieval_trainingfree` configuration as docs/RETRIEVAL.md infers it: retrieval.config
{"dim": 1024 (the ViT-L encoder width; the tiny config's 32 with --model-config tiny), "prewhiten":
true, "hdims": [], "residual": false, "postwhiten": false, "featweights": "l2norm", "nfeat": 300},
i.e. prewhiten.m f64 [1, D] and prewhiten.p f64 [D, D] (8 MiB at D = 1024), written through
tests/reference/retrieval_checkpoint.convert (exactly what tools/convert-checkpoint --retrieval
writes). Values: m ~ 0.1 N(0, 1); p = Q·diag(s), Q a random orthogonal matrix, s log-spaced from 2
to 0.5 (a well-conditioned whitening). Random, so the graph it picks means nothing; the work (the
encoder and head on every image, the similarity, the FPS, the number of pairs) is a real run's.
Each job's row then has the pairs the job chose (the 'pairs' stage's total) and the job's messages.

reconctl runs with its stderr on a pseudo-terminal, so it draws its progress (done/total per event)
and $OUT/reconctl_K.log keeps it with timestamps: --deadline S (seconds from the script's start)
cancels the job in flight at S (SIGINT, as Ctrl-C: the daemon stops at its next pair step) and still
records each stage's progress and rate, for a job that would not fit a time limit.
--bin holds recond and reconctl; --lib, if given, the folders (DIR[:DIR...]) of the shared libraries
they need that the machine lacks (on their LD_LIBRARY_PATH only, not on PyTorch's): reconctl needs
librecon.so.0 from the build (its RUNPATH names the build folder) and libjpeg.so.62, which the GPU
machine lacks: .gpu/librecon holds a stripped copy of build-ci/client/lib/librecon.so.0.1.0 (the
unstripped 9.6 MB one takes the carried tree over 64 MiB) and Debian's libjpeg.so.62.
Writes $OUT/reconstruct_fullsize.json after every job (so a call stopped at its time limit still
returns the jobs that finished) and $OUT/recond.log, and prints one table at the end.

Per job: wall seconds of `reconctl reconstruct` (image decoding, upload, the job, fetching the
result and writing cameras.json, sparse/0, scene.ply, scene.png, depth/), the stage durations
reconctl prints ('encode' the images' preparation on the device and the encoder; 'pairs' includes
accumulating the canonical views;
'align-coarse' also the canonical views' finish and the kinematic tree), recond's "Job
'reconstruct' finished in N ms", after_fine_s = that job time less the three stages (dense points,
clean-up, storing the tensors: reconctl's own 'outputs' line closes at that stage's first event),
client_side_s = wall less job time. Peak GPU memory is nvidia-smi's memory.used for the whole
device sampled every 0.5 s while the job runs; recond keeps what its pools grew to, so a job's
peak includes what earlier jobs of the same daemon left allocated. Host memory: recond's VmRSS
sampled likewise, and VmHWM over the daemon's life (model loading included) at the end.

The weights are the seeded random ones of the official ViT-L/ViT-B 512 configuration that
bench/daemon/recond_fullsize.py and bench/mast3r/mast3r_fullsize.py use (make_golden.
init_golden_weights), saved once under --work (default /tmp/recond-reconstruct) and reused while
the seed and the tweak below are the same.

BENCHMARK-ONLY WEIGHT TWEAK. With random weights the predicted points often lie behind the cameras,
and the job then refuses the scene (INVALID_ARGUMENT "... the points must lie in front of the
camera"). So, after init_golden_weights, the last conv of each DPT head (downstream_head{1,2}.
dpt.head.4, 1x1, last_dim -> 4 channels: x, y, z, conf) is changed: its weights are scaled by
--head-scale (0.01) and its bias set to (0, 0, --z-bias, --conf-bias) = (0, 0, 3, 1.5). The official
post-processing (depth_mode ('exp', -inf, inf): pts3d = xyz / |xyz| * expm1(|xyz|); conf_mode
('exp', 1, inf): conf = 1 + exp(c)) then gives raw xyz ~ (±0.0x, ±0.0x, 3), so every point has z ~
expm1(3) ~ 19 > 0, in front of its camera, and conf ~ 1 + e^1.5 ~ 5.5, so that the canonical views'
confidence (weights C - 0.999 ~ 4.5) stays above the default min_conf 1.5 and the output cloud is
not empty (with conf ~ 2 it would be, and the outputs stage would do less work). Only values change:
every tensor keeps its shape and dtype, the network runs the same operations at the same sizes, the
descriptors (which drive the matching) are untouched, and the alignment runs its fixed iteration
counts, so the amount of work is what a real model of this size costs. The scene itself is
meaningless (random weights); its figures are timings only. The tweak is checked once after building
the weights: the reference model (tests/reference/mast3r_ref.py) runs one pair on the CPU at
--check-size (128x96: the tweak acts per pixel, and the full model takes a minute a pair on the CPU
at 512x384) and all its pts3d z must be positive. Without the tweak that check fails (seed 0,
128x96: z from -58297 to 407); with it, z is 18.0..20.2, |x|/z and |y|/z at most 0.03, conf
5.2..5.6.

--model-config tiny (the TINY_A test configuration, 64x48 images, --size 64) runs the same steps in
a minute on lavapipe, for trying the script without a GPU; its figures mean nothing.
"""
import argparse
import json
import math
import os
import pty
import re
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
import zlib

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
import safetensors_io as st  # noqa: E402
from make_golden import TINY_A, init_golden_weights, make_image, normalise_u8  # noqa: E402
from mast3r_config import METADATA_KEY, config_to_json, resolve_config  # noqa: E402
from mast3r_ref import AsymmetricMASt3R, canonical_state_dict  # noqa: E402

STAGES = ("encode", "retrieval", "pairs", "align-coarse", "align-fine", "outputs")
JOB_STAGES = ("encode", "retrieval", "pairs", "align-coarse", "align-fine")  # before 'outputs' (after_fine_s)


# ------------------------------------------------------------------------------------------- weights


def apply_front_facing_tweak(model, head_scale, z_bias, conf_bias):
    """The benchmark-only tweak of the module docstring: the pts3d/conf conv of both DPT heads."""
    with torch.no_grad():
        for head in (model.downstream_head1, model.downstream_head2):
            conv = head.dpt.head[4]
            if conv.out_channels != 4:
                raise RuntimeError(f"dpt.head.4 has {conv.out_channels} channels, expected 4 (x, y, z, conf)")
            conv.weight.mul_(head_scale)
            conv.bias.copy_(torch.tensor([0.0, 0.0, z_bias, conf_bias], dtype=conv.bias.dtype))


def check_front_facing(model, width, height, seed):
    """One pair through the reference on the CPU: pts3d z and conf ranges (z must be > 0)."""
    u8 = [make_image(seed + 101, width, height), make_image(seed + 102, width, height)]
    with torch.no_grad():
        out = model(normalise_u8(u8[0][None]), normalise_u8(u8[1][None]))
    summary = {}
    for k in ("pts3d_1", "pts3d_2"):
        z = out[k][..., 2]
        xy_over_z = out[k][..., :2].abs().max(dim=-1).values / z
        summary[k] = {"z_min": float(z.min()), "z_max": float(z.max()), "max_abs_xy_over_z": float(xy_over_z.max())}
    for k in ("conf_1", "conf_2"):
        summary[k] = {"min": float(out[k].min()), "max": float(out[k].max())}
    if not (summary["pts3d_1"]["z_min"] > 0 and summary["pts3d_2"]["z_min"] > 0):
        raise RuntimeError(f"the tweak left points behind the camera: {summary}")
    return summary


def build_weights(args, cfg, work):
    """Seeded weights with the tweak, saved once under `work` (reused while the stamp matches)."""
    path = os.path.join(work, f"model-{args.model_config}.safetensors")
    stamp = {"model_config": args.model_config, "seed": args.seed, "head_scale": args.head_scale,
             "z_bias": args.z_bias, "conf_bias": args.conf_bias}
    stamp_path = path + ".json"
    if os.path.exists(path) and os.path.exists(stamp_path):
        with open(stamp_path) as f:
            old = json.load(f)
        if old.get("stamp") == stamp:
            print(f"weights: reusing {path}", flush=True)
            return path, old.get("check"), 0.0
    t0 = time.time()
    model = AsymmetricMASt3R(cfg, device="meta", dtype=torch.float32).to_empty(device="cpu")
    init_golden_weights(model, args.seed)
    apply_front_facing_tweak(model, args.head_scale, args.z_bias, args.conf_bias)
    model.eval()
    cw, ch = (int(v) for v in args.check_size.split("x"))
    check = check_front_facing(model, cw, ch, args.seed)
    print(f"tweak check at {args.check_size} (CPU reference): {json.dumps(check)}", flush=True)
    st.save_file(canonical_state_dict(model), path, metadata={METADATA_KEY: config_to_json(cfg)})
    del model
    with open(stamp_path, "w") as f:
        json.dump({"stamp": stamp, "check": check}, f)
    seconds = time.time() - t0
    print(f"weights: built {path} ({os.path.getsize(path) / 2**20:.0f} MiB) in {seconds:.1f} s", flush=True)
    return path, check, seconds


def build_retrieval_head(args, cfg, work):
    """The seeded random retrieval head of the module docstring, saved once under `work`."""
    from retrieval_checkpoint import convert
    from retrieval_ref import RetrievalHead

    dim = int(cfg["enc_embed_dim"])
    path = os.path.join(work, f"retrieval-{args.model_config}-d{dim}.safetensors")
    stamp = {"dim": dim, "seed": args.seed, "hdims": [], "nfeat": 300, "version": 1}
    stamp_path = path + ".json"
    if os.path.exists(path) and os.path.exists(stamp_path):
        with open(stamp_path) as f:
            if json.load(f).get("stamp") == stamp:
                print(f"retrieval head: reusing {path}", flush=True)
                return path
    gen = torch.Generator().manual_seed(args.seed + 1000)
    head = RetrievalHead(dim, prewhiten=True, hdims=[], residual=False, postwhiten=False, nfeat=300)
    with torch.no_grad():
        q = torch.linalg.qr(torch.randn(dim, dim, generator=gen, dtype=torch.float64))[0]
        head.prewhiten.m.copy_(0.1 * torch.randn(1, dim, generator=gen, dtype=torch.float64))
        head.prewhiten.p.copy_(q * torch.logspace(math.log10(2.0), math.log10(0.5), dim, dtype=torch.float64))
    ckpt = {"model": head.state_dict(), "args": {"hdims": "", "prewhiten": 1, "postwhiten": None, "residual": False,
                                                 "featweights": "l2norm", "nfeat": 300, "imsize": 512,
                                                 "note": "recond_reconstruct_fullsize.py: seeded random head"}}
    tensors, meta = convert(ckpt)
    st.save_file(tensors, path, metadata=meta)
    with open(stamp_path, "w") as f:
        json.dump({"stamp": stamp}, f)
    print(f"retrieval head: built {path} ({os.path.getsize(path) / 2**20:.1f} MiB), config {meta['retrieval.config']}",
          flush=True)
    return path


# -------------------------------------------------------------------------------------------- images


def write_png(path, rgb):
    """uint8 (H, W, 3) -> 8-bit RGB PNG (zlib only, no PIL needed)."""
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[y].tobytes() for y in range(h))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def write_images(directory, count, width, height, seed):
    """`count` views of one textured canvas, each panned a few pixels from the last (deterministic)."""
    os.makedirs(directory, exist_ok=True)
    step_x, step_y = max(width // 32, 1), max(height // 96, 1)
    cw, chh = width + step_x * (count - 1), height + step_y * 4
    canvas = make_image(seed, cw, chh).astype(np.float32)
    rs = np.random.RandomState(seed + 7)
    noise = rs.uniform(-1.0, 1.0, size=(chh // 4 + 1, cw // 4 + 1, 3)).astype(np.float32)
    noise = np.repeat(np.repeat(noise, 4, axis=0), 4, axis=1)[:chh, :cw]  # 4x4 blocks of texture
    canvas = np.clip(canvas + 24.0 * noise, 0, 255).astype(np.uint8)
    paths = []
    for i in range(count):
        x0, y0 = i * step_x, (i % 5) * step_y
        path = os.path.join(directory, f"img_{i:03d}.png")
        if not os.path.exists(path):
            write_png(path, np.ascontiguousarray(canvas[y0:y0 + height, x0:x0 + width]))
        paths.append(path)
    return paths


# ---------------------------------------------------------------------------------------- monitoring


class Sampler:
    """Every `period` s: GPU memory used (nvidia-smi, MiB) and recond's VmRSS (kB), with timestamps."""

    def __init__(self, period=0.5):
        self.period = period
        self.samples = []  # (monotonic time, gpu MiB or None, rss kB or None)
        self.pid = None
        self.smi = shutil.which("nvidia-smi")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self):
        self._thread.start()

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=10)

    def _gpu_mib(self):
        if not self.smi:
            return None
        try:
            out = subprocess.run([self.smi, "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                                 capture_output=True, text=True, timeout=5).stdout
            return max(int(v) for v in out.split()) if out.strip() else None
        except (subprocess.SubprocessError, ValueError):
            return None

    def _rss_kb(self):
        return proc_status_kb(self.pid, "VmRSS") if self.pid else None

    def _loop(self):
        while not self._stop.is_set():
            t = time.monotonic()
            self.samples.append((t, self._gpu_mib(), self._rss_kb()))
            self._stop.wait(max(0.0, self.period - (time.monotonic() - t)))

    def peak(self, t0, t1):
        window = [s for s in self.samples if t0 <= s[0] <= t1]
        gpu = [s[1] for s in window if s[1] is not None]
        rss = [s[2] for s in window if s[2] is not None]
        return (max(gpu) if gpu else None), (max(rss) if rss else None), len(window)

    def series(self, t0, t1, every=2.0):
        """[s from t0, GPU MiB, RSS MiB] about every `every` s (each the window's maxima), so that a
        peak can be placed in a stage (the stages' times are in the row's progress)."""
        out, bucket = [], None
        for t, g, r in (s for s in self.samples if t0 <= s[0] <= t1):
            b = int((t - t0) // every)
            if bucket is None or b != bucket[0]:
                bucket = [b, round(t - t0, 1), g, r]
                out.append(bucket)
            else:
                bucket[2], bucket[3] = max_or_none(bucket[2], g), max_or_none(bucket[3], r)
        return [[b[1], b[2], round(b[3] / 1024, 1) if b[3] else None] for b in out]


def max_or_none(a, b):
    return b if a is None else a if b is None else max(a, b)


def proc_status_kb(pid, key):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


# ------------------------------------------------------------------------------------------ the jobs


STAGE_LINE = re.compile(r"^(\S+)\s.*\((\d+(?:\.\d+)?) (s|ms)\)\s*$")
PROGRESS = re.compile(r"^(\S+)\s+\[[#.]*\]\s+(\d+)/(\d+)")
MESSAGE = re.compile(r"^([a-z][a-z-]*): (.*)$")
FINISHED = re.compile(r"Job 'reconstruct' finished in (\d+) ms")
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def clean_lines(text):
    """reconctl's stderr as drawn on a terminal (\r redraws, ESC[K) -> its lines, in order."""
    return [ln.strip() for ln in ANSI.sub("", text).replace("\r", "\n").splitlines() if ln.strip()]


def parse_stages(stderr):
    stages = {}
    for line in clean_lines(stderr):
        m = STAGE_LINE.match(line)
        if m and m.group(1) in STAGES:
            # reconctl may redraw a stage's line after an event with a message (then with ~0 s spent,
            # or part of the stage): each stage's longest line is its duration.
            seconds = float(m.group(2)) * (1.0 if m.group(3) == "s" else 1e-3)
            stages[m.group(1)] = max(seconds, stages.get(m.group(1), 0.0))
    return stages


def parse_progress(timed_chunks):
    """Per stage: its last done/total, and when (s from the job's start) it was first and last drawn."""
    progress, pending, pending_t = {}, "", 0.0
    timed_lines = []
    for t, chunk in timed_chunks + [(timed_chunks[-1][0] if timed_chunks else 0.0, "\n")]:
        # A line is timed when its first character arrives (reconctl draws "\r ESC[K line" and
        # flushes: the line's end is the next draw's \r); a chunk may end inside a line.
        if not pending:
            pending_t = t
        pending += chunk
        segments = re.split(r"[\r\n]", pending)
        pending = segments.pop()
        for j, seg in enumerate(segments):
            timed_lines.append((pending_t if j == 0 else t, seg))
        if pending:
            pending_t = t if segments else pending_t
    for t, text in timed_lines:
        for line in clean_lines(text):
            m = PROGRESS.match(line)
            if m and m.group(1) in STAGES:
                p = progress.setdefault(m.group(1), {"first_s": round(t, 2), "first_done": int(m.group(2))})
                p.update(done=int(m.group(2)), total=int(m.group(3)), last_s=round(t, 2))
    for p in progress.values():
        span = p["last_s"] - p["first_s"]
        p["rate_per_s_between_draws"] = round((p["done"] - p["first_done"]) / span, 3) if span > 0 else None
    return progress


def parse_messages(stderr):
    out = []
    for line in clean_lines(stderr):
        m = MESSAGE.match(line)
        if m and m.group(1) in STAGES and not STAGE_LINE.match(line):
            out.append(line)
    return out


def parse_run_spec(spec):
    parts = spec.split(":")
    params, graph = [], "complete"
    for p in parts[1:]:
        if "=" not in p:
            raise SystemExit(f"--runs: '{p}' in '{spec}' is not NAME=VALUE")
        if p.startswith("pairs="):
            graph = p[len("pairs="):]
        else:
            params.append(p)
    return int(parts[0]), params, graph


def run_reconctl_on_pty(cmd, env, stdout_path, log_path, stop_at):
    """Runs cmd with stderr on a pseudo-terminal (so reconctl draws its progress per event); returns
    (rc, stdout, stderr, [(s from start, chunk)], t0, t1, cancelled). At monotonic time `stop_at`
    (None: never) sends SIGINT (reconctl cancels the job), then SIGKILL 60 s later."""
    master, slave = pty.openpty()
    chunks = []
    with open(stdout_path, "w") as out:
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=out, stderr=slave, stdin=subprocess.DEVNULL, env=env)
    os.close(slave)

    def reader():
        with open(log_path, "w", errors="replace") as log:
            while True:
                try:
                    data = os.read(master, 65536)
                except OSError:
                    break
                if not data:
                    break
                t = time.monotonic() - t0
                text = data.decode(errors="replace")
                chunks.append((t, text))
                log.write(f"[{t:9.2f}] " + ANSI.sub("", text).replace("\r", "\n") +
                          ("" if text.endswith(("\n", "\r")) else "\n"))
                log.flush()

    th = threading.Thread(target=reader, daemon=True)
    th.start()
    cancelled = False
    while proc.poll() is None:
        if stop_at is not None and not cancelled and time.monotonic() >= stop_at:
            print(f"deadline: cancelling the job after {time.monotonic() - t0:.1f} s (SIGINT)", flush=True)
            proc.send_signal(signal.SIGINT)
            cancelled = True
            stop_at = time.monotonic() + 60
        elif cancelled and time.monotonic() >= stop_at:
            proc.kill()
        time.sleep(0.2)
    t1 = time.monotonic()
    th.join(timeout=10)
    os.close(master)
    with open(stdout_path, errors="replace") as f:
        stdout = f.read()
    return proc.returncode, stdout, "".join(c for _, c in chunks), chunks, t0, t1, cancelled


def run_job(reconctl, env, images, params, graph, args, out_dir, log_path, sampler, k, stop_at):
    cmd = reconctl + ["reconstruct"] + images + ["--out", out_dir, "--pairs", graph, "--size", str(args.size),
                                                 "--iterations", args.iterations]
    for p in params:
        cmd += ["--param", p]
    shown = " ".join(reconctl[1:] + ["reconstruct", f"<{len(images)} PNGs>"] + cmd[len(reconctl) + 1 + len(images):])
    print(f"\n$ {os.path.basename(reconctl[0])} {shown}", flush=True)
    log_offset = os.path.getsize(log_path)
    rc, stdout, stderr, chunks, t0, t1, cancelled = run_reconctl_on_pty(
        cmd, env, os.path.join(args.work, f"reconctl_{k}.stdout"), os.path.join(args.out, f"reconctl_{k}.log"),
        stop_at)
    time.sleep(0.3)  # let recond's log line land
    with open(log_path, errors="replace") as f:
        f.seek(log_offset)
        new_log = f.read()
    finished = FINISHED.findall(new_log)
    gpu_peak, rss_peak, samples = sampler.peak(t0, t1 + 0.01)
    final_lines = [ln for ln in clean_lines(stderr) if not PROGRESS.match(ln) or STAGE_LINE.match(ln)]
    sys.stderr.write("\n".join(final_lines) + "\n")
    sys.stdout.write(stdout)
    n = len(images)
    progress = parse_progress(chunks)
    row = {
        "images": n, "pair_graph": graph, "pairs_complete_graph": n * (n - 1) // 2,
        "pairs": progress.get("pairs", {}).get("total", n * (n - 1) // 2 if graph == "complete" else None),
        "params": params, "iterations": args.iterations,
        "resolution": f"{args.width}x{args.height}", "rc": rc, "cancelled_at_deadline": cancelled,
        "wall_s": round(t1 - t0, 3), "stages_s": parse_stages(stderr), "progress": progress,
        "messages": parse_messages(stderr),
        "recond_job_ms": int(finished[-1]) if finished else None,
        "client_side_s": round(t1 - t0 - int(finished[-1]) / 1000, 3) if finished else None,
        # reconctl's 'outputs' line closes at the stage's first event; the dense points, the
        # clean-up and storing the tensors come after it: the job's time after the fine stage.
        "after_fine_s": None,
        "peak_gpu_mem_mib": gpu_peak, "peak_recond_rss_sampled_mib": round(rss_peak / 1024, 1) if rss_peak else None,
        "samples": samples, "series_s_gpu_mib_rss_mib": sampler.series(t0, t1 + 0.01),
        "reconctl_stdout": stdout, "reconctl_stderr": "\n".join(final_lines)[-6000:],
    }
    st_s = row["stages_s"]
    needed = JOB_STAGES if graph.startswith("retrieval") else JOB_STAGES[1:]
    if finished and all(stage in st_s for stage in needed):
        row["after_fine_s"] = round(int(finished[-1]) / 1000 - sum(st_s.get(stage, 0.0) for stage in JOB_STAGES), 3)
    if rc != 0:
        row["error"] = (final_lines or ["(no output)"])[-1]
        if cancelled:
            row["error"] = f"cancelled at --deadline (SIGINT), rc {rc}; last line: {row['error']}"
        row["recond_log_tail"] = new_log[-3000:]
    else:
        row["outputs"] = sorted(os.listdir(out_dir))
    return row


def run_retrieve_bench(reconctl, env, images, args, sampler, chunk=64):
    """`reconctl retrieve` over `images` in requests of at most `chunk` (recond's max_batch_images,
    64): the retrieval head's own cost (decode + upload + encoder + head per image) without the job."""
    rows, t_all = [], time.monotonic()
    for i in range(0, len(images), chunk):
        part = images[i:i + chunk]
        cmd = reconctl + ["retrieve"] + part + ["--size", str(args.size), "--top-k", str(min(10, len(part) - 1)),
                                                "--json"]
        t0 = time.monotonic()
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        t1 = time.monotonic()
        row = {"images": len(part), "rc": r.returncode, "wall_s": round(t1 - t0, 3)}
        if r.returncode != 0:
            row["error"] = (r.stderr.strip().splitlines() or ["(no output)"])[-1]
        else:
            try:
                d = json.loads(r.stdout)
                row["embedding_dim"], row["pairs"] = d.get("embedding_dim"), len(d.get("pairs", []))
            except ValueError:
                row["stdout_tail"] = r.stdout[-500:]
        rows.append(row)
        print(f"retrieve {i}..{i + len(part) - 1}: {json.dumps(row)}", flush=True)
    t1 = time.monotonic()
    gpu_peak, rss_peak, _ = sampler.peak(t_all, t1 + 0.01)
    ok = [r for r in rows if r["rc"] == 0]
    return {"images": len(images), "requests": rows, "wall_s": round(t1 - t_all, 3),
            "ms_per_image": round(1000 * sum(r["wall_s"] for r in ok) / max(1, sum(r["images"] for r in ok)), 2),
            "peak_gpu_mem_mib": gpu_peak,
            "peak_recond_rss_sampled_mib": round(rss_peak / 1024, 1) if rss_peak else None}


def print_table(summary):
    print(f"\n== {summary['gpu']}, {summary['precision']}, {summary['resolution']}, "
          f"iterations {summary['iterations']}, retrieval head {'yes' if summary.get('retrieval_head') else 'no'} ==")
    print("images  graph             pairs  params          wall s  enc s  retr s  pairs s  coarse s  fine s  after fine s"
          "  recond job ms  client s  peak GPU MiB  peak RSS MiB (sampled)")
    for r in summary["runs"]:
        s = r["stages_s"]

        def f(k):
            return f"{s[k]:.2f}" if k in s else "-"
        print(f"{r['images']:6d}  {r['pair_graph']:16s} {str(r['pairs']):>6s}  {','.join(r['params']) or '-':14s} "
              f"{r['wall_s']:7.2f}  {f('encode'):>5s}  {f('retrieval'):>6s}  {f('pairs'):>7s}  {f('align-coarse'):>8s}  "
              f"{f('align-fine'):>6s}  {str(r['after_fine_s']):>12s}  "
              f"{str(r['recond_job_ms']):>13s}  {str(r.get('client_side_s')):>8s}  {str(r['peak_gpu_mem_mib']):>12s}  "
              f"{str(r['peak_recond_rss_sampled_mib']):>10s}" + ("" if r["rc"] == 0 else f"  FAILED: {r['error']}"))
        for m in r.get("messages", []):
            print(f"        {m}")
        if r["rc"] != 0:
            print(f"        progress: {json.dumps(r['progress'])}")
    if summary.get("retrieve_bench"):
        rb = summary["retrieve_bench"]
        print(f"reconctl retrieve, {rb['images']} images in {len(rb['requests'])} requests: {rb['wall_s']} s, "
              f"{rb['ms_per_image']} ms an image (client decode + upload + encoder + head), "
              f"peak GPU {rb['peak_gpu_mem_mib']} MiB")
    print(f"recond VmHWM (whole daemon life): {summary.get('recond_vmhwm_mib')} MiB; "
          f"ready in {summary.get('recond_ready_s')} s; GPU memory before recond {summary.get('gpu_mem_before_mib')} "
          f"MiB, after warm-up {summary.get('gpu_mem_ready_mib')} MiB")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="directory with recond and reconctl")
    ap.add_argument("--lib", default="", help="shared libraries for those binaries only (DIR[:DIR...])")
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default="/tmp/recond-reconstruct")
    ap.add_argument("--runs", default="20,50,20:pairs_per_step=8")
    ap.add_argument("--precision", default="fp16")
    ap.add_argument("--iterations", default="300,300")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--model-config", choices=("full", "tiny"), default="full")
    ap.add_argument("--head-scale", type=float, default=0.01)
    ap.add_argument("--z-bias", type=float, default=3.0)
    ap.add_argument("--conf-bias", type=float, default=1.5)
    ap.add_argument("--check-size", default=None, help="WxH of the CPU tweak check (default 128x96; tiny 64x48)")
    ap.add_argument("--stop-on-failure", action="store_true", help="skip the remaining jobs after a failed one")
    ap.add_argument("--retrieval", action="store_true",
                    help="build a seeded random retrieval head of the official size and load it in recond")
    ap.add_argument("--pause", type=float, default=0.0, metavar="S",
                    help="seconds with the daemon idle before each job after the first (default 0: back to back)")
    ap.add_argument("--deadline", type=float, default=None,
                    help="cancel the job in flight this many seconds after the script's start (default: never)")
    ap.add_argument("--retrieve-bench", type=int, default=0, metavar="N",
                    help="with --retrieval: time `reconctl retrieve` on N images (64 a request) before the jobs")
    ap.add_argument("--recond-arg", action="append", default=[],
                    help="one more recond argument (repeatable), e.g. --recond-arg=--max-result-bytes=8GiB")
    args = ap.parse_args()
    script_start = time.monotonic()
    full = args.model_config == "full"
    args.width, args.height = (512, 384) if full else (64, 48)
    args.size = args.width
    args.check_size = args.check_size or ("128x96" if full else "64x48")
    runs = [parse_run_spec(s) for s in args.runs.split(",")]
    if any(g.startswith("retrieval") for _, _, g in runs) and not args.retrieval:
        raise SystemExit("--runs names a retrieval-NA-K graph: add --retrieval (recond needs a retrieval head)")
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.work, exist_ok=True)
    torch.set_num_threads(os.cpu_count() or 1)

    env = dict(os.environ)
    if args.lib:
        libs = [os.path.abspath(d) for d in args.lib.split(":") if d]
        env["LD_LIBRARY_PATH"] = ":".join(libs + [env.get("LD_LIBRARY_PATH", "")])
    gpu = "unknown"
    if shutil.which("nvidia-smi"):
        gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True).stdout.strip() or gpu
    summary = {"gpu": gpu, "precision": args.precision, "model_config": args.model_config,
               "resolution": f"{args.width}x{args.height}", "iterations": args.iterations, "pair_graphs": [g for _, _, g in runs],
               "tweak": {"head_scale": args.head_scale, "z_bias": args.z_bias, "conf_bias": args.conf_bias},
               "cpu_count": os.cpu_count(), "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "runs": []}
    json_path = os.path.join(args.out, "reconstruct_fullsize.json")

    def save():
        with open(json_path, "w") as f:
            json.dump(summary, f, indent=1, sort_keys=True)

    cfg = resolve_config(None) if full else resolve_config(TINY_A)
    model_path, check, build_s = build_weights(args, cfg, args.work)
    summary["tweak_check"], summary["weights_build_s"] = check, round(build_s, 1)
    retrieval_path = build_retrieval_head(args, cfg, args.work) if args.retrieval else None
    summary["retrieval_head"] = retrieval_path and {"path": retrieval_path, "dim": int(cfg["enc_embed_dim"]),
                                                    "hdims": [], "nfeat": 300, "prewhiten": True, "postwhiten": False}
    t0 = time.time()
    image_paths = write_images(os.path.join(args.work, f"images-{args.width}x{args.height}"),
                               max([n for n, _, _ in runs] + [args.retrieve_bench]), args.width, args.height, args.seed + 1)
    print(f"images: {len(image_paths)} PNGs in {time.time() - t0:.1f} s", flush=True)

    sampler = Sampler()
    sampler.start()
    time.sleep(0.6)
    summary["gpu_mem_before_mib"] = sampler.peak(0, time.monotonic())[0]
    sockets = os.path.join(args.work, "sockets")
    shutil.rmtree(sockets, ignore_errors=True)
    os.makedirs(sockets)
    log_path = os.path.join(args.work, "recond.log")
    cmd = [os.path.join(args.bin, "recond"), "--foreground", "--config", "/dev/null", "--socket-dir", sockets,
           "--model", f"mast3r={model_path}", "--precision", args.precision, "--warmup", f"{args.width}x{args.height}",
           "--pipeline-cache", "off"]
    if retrieval_path:
        cmd += ["--retrieval", retrieval_path, "--retrieval-backbone", "mast3r"]
    for a in args.recond_arg:
        cmd += a.split("=", 1) if a.startswith("--") and "=" in a else [a]
    print("$ " + " ".join(cmd), flush=True)
    with open(log_path, "w") as log:
        daemon = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    sampler.pid = daemon.pid
    reconctl = [os.path.join(args.bin, "reconctl"), "--socket-dir", sockets]
    try:
        started = time.monotonic()
        subprocess.run(reconctl + ["wait-ready", "900", "--quiet"], check=True, env=env)
        summary["recond_ready_s"] = round(time.monotonic() - started, 1)
        time.sleep(0.6)
        summary["gpu_mem_ready_mib"] = sampler.peak(time.monotonic() - 0.6, time.monotonic())[0]
        print(f"recond ready in {summary['recond_ready_s']} s", flush=True)
        stop_at = None if args.deadline is None else script_start + args.deadline
        if args.retrieve_bench and retrieval_path:
            summary["retrieve_bench"] = run_retrieve_bench(reconctl, env, image_paths[:args.retrieve_bench], args,
                                                           sampler)
            save()
        for k, (n, params, graph) in enumerate(runs):
            if stop_at is not None and time.monotonic() >= stop_at:
                print(f"deadline: skipping the job of {n} images", flush=True)
                break
            if k > 0 and args.pause > 0:
                time.sleep(args.pause)
            out_dir = os.path.join(args.work, f"scene-{k}-{n}")
            shutil.rmtree(out_dir, ignore_errors=True)
            row = run_job(reconctl, env, image_paths[:n], params, graph, args, out_dir, log_path, sampler, k, stop_at)
            summary["runs"].append(row)
            summary["recond_vmhwm_mib"] = round((proc_status_kb(daemon.pid, "VmHWM") or 0) / 1024, 1)
            save()
            print(f"-> {n} images, {graph} ({row['pairs']} pairs): wall {row['wall_s']:.2f} s, stages "
                  f"{row['stages_s']}, recond {row['recond_job_ms']} ms, peak GPU {row['peak_gpu_mem_mib']} MiB, "
                  f"RSS {row['peak_recond_rss_sampled_mib']} MiB", flush=True)
            if row["rc"] != 0 and args.stop_on_failure:
                print("stopping after a failed job", flush=True)
                break
    finally:
        if daemon.poll() is None:
            summary["recond_vmhwm_mib"] = round((proc_status_kb(daemon.pid, "VmHWM") or 0) / 1024, 1)
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=60)
        except subprocess.TimeoutExpired:
            daemon.kill()
        sampler.stop()
        summary["recond_exit"] = daemon.returncode
        save()
        shutil.copy(log_path, os.path.join(args.out, "recond.log"))
    print_table(summary)


if __name__ == "__main__":
    main()
