#!/usr/bin/env python3
"""PyTorch side of the op benchmark: the cases recon_bench_ops runs, on the same device, in PyTorch.

The case list comes from the recon binary (`recon_bench_ops --recon_list_cases=cases.json`), so both
sides run the same ops at the same shapes, dtypes and plan (ring length and applications per
timed round; see bench/ops/op_cases.h). Prints JSON (or writes it to --out):

    {"torch": "2.11.0+cu130", "device": "cuda", "device_name": "NVIDIA H200", "tf32": false,
     "cases": {"linear/enc_qkv/f16": {"ms_per_op": 0.012, "impl": "F.linear", ...}, ...}}

How it measures:
  - CUDA: a round of `ops_per_replay` applications is captured into a CUDA graph after warm-up
    rounds (cuDNN autotuning happens there) and replayed, timed with CUDA events; the median round
    over at least --min-time seconds. So PyTorch's figure is its kernels' time without Python and
    launch overhead, as recon's is a replayed command buffer. The eager time (how models run it)
    is reported beside it as "ms_per_op_eager"; --no-cuda-graphs times eager only. CPU: eager
    rounds with a wall clock.
  - fp32 runs in IEEE fp32: TF32 is switched OFF for matmul and cuDNN (torch.backends.*.allow_tf32
    = False), as recon's fp32 path does not use TF32. fp16 runs on fp16 tensors (no autocast), with
    fp32 accumulation in GEMMs (allow_fp16_reduced_precision_reduction = False), as recon's.
  - cuDNN autotuning is on (torch.backends.cudnn.benchmark = True): convolutions get PyTorch's
    best algorithm, found during warm-up.
  - Memory-bound ops run the chain of op_cases.h over a ring of tensors, so their reads come from
    device memory, not the cache. Their outputs are new tensors (PyTorch's functional form, as
    models call it); the ring keeps the last `ring` of them alive.
  - attention: F.scaled_dot_product_attention (the fused kernel PyTorch picks, on [b, h, n, d]
    views of the same layouts), and, as "ms_per_op_manual", croco's own form
    softmax(q·kᵀ·scale)·v in three kernels (what the official MASt3R code runs).
A case PyTorch cannot run on this device (fp16 matmul on the CPU build, say) is reported with
"error" instead of a time.
"""
import argparse
import json
import re
import statistics
import sys
import time

import torch
import torch.nn.functional as F

DTYPES = {"f32": torch.float32, "f16": torch.float16}


class Timer:
    """Times a round of work on `device`: CUDA events there, the wall clock on the CPU."""

    def __init__(self, device):
        self.cuda = device.type == "cuda"

    def time_ms(self, fn):
        if self.cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end)
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3


def rand(shape, dtype, device):
    """Uniform values in [-1, 1), generated on the device (the global generator, seeded per case)."""
    return (torch.rand(shape, dtype=torch.float32, device=device) * 2 - 1).to(dtype)


def compute_case(case, device):
    """Returns (apply, impl, extra): apply() runs one application on fixed operands."""
    op, p = case["op"], case["params"]
    dt = DTYPES[case["dtype"]]
    if op == "linear":
        x, w, b = rand((p["m"], p["k"]), dt, device), rand((p["n"], p["k"]), dt, device), rand(
            (p["n"],), dt, device)
        return (lambda: F.linear(x, w, b)), "F.linear", {}
    if op == "matmul":
        a, b = rand((p["m"], p["k"]), dt, device), rand((p["k"], p["n"]), dt, device)
        out = torch.empty((p["m"], p["n"]), dtype=dt, device=device)
        return (lambda: torch.mm(a, b, out=out)), "torch.mm", {}
    if op == "attention":
        bsz, h, nq, nk, d = p["b"], p["h"], p["nq"], p["nk"], p["d"]
        if p["packed"]:  # heads read in place from one packed qkv projection [b, n, 3, h, d]
            qkv = rand((bsz, nq, 3, h, d), dt, device).permute(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
        else:
            q = rand((bsz, nq, h, d), dt, device).transpose(1, 2)
            k = rand((bsz, nk, h, d), dt, device).transpose(1, 2)
            v = rand((bsz, nk, h, d), dt, device).transpose(1, 2)
        scale = d ** -0.5

        def manual():  # croco's Attention / CrossAttention
            return ((q @ k.transpose(-2, -1)) * scale).softmax(dim=-1) @ v

        if hasattr(F, "scaled_dot_product_attention"):
            return (lambda: F.scaled_dot_product_attention(q, k, v, scale=scale)), "F.scaled_dot_product_attention", {
                "manual": manual}
        return manual, "manual softmax(q·kᵀ·scale)·v (this torch has no SDPA)", {}
    if op == "conv2d":
        x = rand((p["b"], p["cin"], p["h"], p["w"]), dt, device)
        w = rand((p["cout"], p["cin"], p["k"], p["k"]), dt, device)
        b = rand((p["cout"],), dt, device)
        return (lambda: F.conv2d(x, w, b, stride=p["stride"], padding=p["pad"])), "F.conv2d", {}
    raise ValueError(f"unknown compute op {op}")


class Chain:
    """The memory-bound chain of op_cases.h: application i reads ring[i] and replaces ring[i - 1]."""

    def __init__(self, case, device):
        op, p = case["op"], case["params"]
        self.op, self.p, self.k = op, p, case["ring"]
        self.i = 0
        dt = DTYPES.get(case["dtype"], torch.float32)
        if op in ("layer_norm", "softmax"):
            shapes = [(p["rows"], p["cols"])] * self.k
            self.w, self.b = rand((p["cols"],), dt, device), rand((p["cols"],), dt, device)
            dtypes = [dt] * self.k
        elif op == "sub":
            shapes, dtypes = [(p["numel"],)] * self.k, [dt] * self.k
        elif op == "cast":  # even slots f32, odd slots f16
            shapes = [(p["numel"],)] * self.k
            dtypes = [torch.float32 if s % 2 == 0 else torch.float16 for s in range(self.k)]
        elif op == "transpose":  # even slots [b, n, c], odd slots [b, c, n]
            shapes = [(p["b"], p["n"], p["c"]) if s % 2 == 0 else (p["b"], p["c"], p["n"]) for s in range(self.k)]
            dtypes = [dt] * self.k
        elif op == "upsample":
            shapes = [(p["b"], p["c"], 2 * p["h"], 2 * p["w"])] * self.k
            dtypes = [dt] * self.k
        else:
            raise ValueError(f"unknown memory-bound op {op}")
        self.ring = [rand(s, d, device) for s, d in zip(shapes, dtypes)]
        self.pinned = []
        self.impl = {"layer_norm": "F.layer_norm", "softmax": "torch.softmax", "sub": "torch.sub",
                     "cast": "Tensor.to", "transpose": "transpose(1, 2).contiguous()",
                     "upsample": "F.interpolate(bilinear, align_corners=True)"}[op]

    def pin(self):
        """Keeps the ring's current tensors alive: a captured graph reads their memory on every replay."""
        self.pinned.extend(self.ring)

    def step(self):
        k, i, p, r = self.k, self.i, self.p, self.ring
        x = r[i % k]
        if self.op == "layer_norm":
            y = F.layer_norm(x, (p["cols"],), self.w, self.b, 1e-6)
        elif self.op == "softmax":
            y = torch.softmax(x, dim=-1)
        elif self.op == "sub":
            y = torch.sub(x, r[(i + k // 2) % k])
        elif self.op == "cast":
            y = x.to(torch.float16 if x.dtype == torch.float32 else torch.float32)
        elif self.op == "transpose":
            y = x.transpose(1, 2).contiguous()
        else:  # upsample: the first quarter of the slot as [b, c, h, w]
            n_in = p["b"] * p["c"] * p["h"] * p["w"]
            y = F.interpolate(x.view(-1)[:n_in].view(p["b"], p["c"], p["h"], p["w"]), scale_factor=2,
                              mode="bilinear", align_corners=True)
        r[(i - 1) % k] = y
        self.i += 1


def measure(round_, device, timer, min_time, warmup_rounds, max_rounds, graph, before_capture=None):
    """Median ms of one round, and the number of timed rounds. With `graph` (CUDA only), the round is
    captured once into a CUDA graph after warm-up and the graph is replayed: no launch overhead, as
    recon replays a recorded command buffer."""
    run = round_
    if graph:
        side = torch.cuda.Stream()  # warm-up off the default stream, as torch.cuda.graphs asks
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(warmup_rounds):
                round_()
        torch.cuda.current_stream().wait_stream(side)
        if before_capture:
            before_capture()
        captured = torch.cuda.CUDAGraph()
        with torch.cuda.graph(captured):
            round_()
        run = captured.replay
    run()  # warm-up (eager: its first rounds; graph: the first replay)
    for _ in range(0 if graph else warmup_rounds - 1):
        run()
    if device.type == "cuda":
        torch.cuda.synchronize()
    samples, spent = [], 0.0
    while len(samples) < max_rounds and (len(samples) < 3 or spent < min_time):
        ms = timer.time_ms(run)
        samples.append(ms)
        spent += ms / 1e3
        if device.type == "cpu" and spent > 4 * max(min_time, 0.5):
            break  # a slow CPU case: enough
    return statistics.median(samples), len(samples)


def run_case(case, device, timer, args):
    torch.manual_seed(0)
    ops = case["ops_per_replay"]
    extra = {}
    if case["flops"] > 0:
        apply, impl, extra = compute_case(case, device)
        chain = None
    else:
        chain = Chain(case, device)
        apply, impl = chain.step, chain.impl

    def per_op(fn, graph):
        def round_():
            for _ in range(ops):
                fn()

        ms, rounds = measure(round_, device, timer, args.min_time, args.warmup, args.max_rounds, graph,
                             chain.pin if chain else None)
        return ms / ops, rounds

    use_graph = device.type == "cuda" and not args.no_cuda_graphs
    note = " (CUDA graph)" if use_graph else ""
    try:
        ms, rounds = per_op(apply, use_graph)
    except RuntimeError as e:  # capture refused: time the eager launches instead, and say so
        if not use_graph:
            raise
        use_graph = False
        note = f" (eager: CUDA graph capture failed: {str(e).splitlines()[0]})"
        ms, rounds = per_op(apply, False)
    out = {"ms_per_op": ms, "rounds": rounds, "impl": impl + note}
    if use_graph:
        out["ms_per_op_eager"], _ = per_op(apply, False)
    if "manual" in extra:
        out["ms_per_op_manual"], _ = per_op(extra["manual"], use_graph)
    if case["flops"] > 0:
        out["TFLOP/s"] = case["flops"] / (ms / 1e3) / 1e12
    else:
        out["GB/s"] = case["bytes"] / (ms / 1e3) / 1e9
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", required=True, help="JSON from recon_bench_ops --recon_list_cases=PATH")
    ap.add_argument("--out", help="write the JSON here (default: stdout)")
    ap.add_argument("--device", default="auto", choices=["auto", "cuda", "cpu"])
    ap.add_argument("--min-time", type=float, default=0.05, help="seconds of timed rounds per case (default 0.05)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed rounds per case (default 2)")
    ap.add_argument("--max-rounds", type=int, default=200)
    ap.add_argument("--no-cuda-graphs", action="store_true", help="time eager launches only")
    ap.add_argument("--filter", default="", help="run only cases whose name matches this regex (as --benchmark_filter)")
    args = ap.parse_args()

    cases = json.load(open(args.cases))
    want_cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    if want_cuda and not torch.cuda.is_available():
        sys.exit("torch_ops: --device cuda, but this PyTorch sees no CUDA device")
    device = torch.device("cuda" if want_cuda else "cpu")
    # IEEE fp32 on both sides: recon's fp32 path has no TF32.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    # fp32 accumulation in fp16 GEMMs, as recon's (cuBLAS may otherwise reduce split-K parts in fp16).
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    torch.backends.cudnn.benchmark = True
    result = {
        "torch": torch.__version__,
        "device": device.type,
        "device_name": torch.cuda.get_device_name(device) if want_cuda else "CPU",
        "cpu_threads": torch.get_num_threads(),
        "tf32": False,
        "fp16_reduced_precision_reduction": False,
        "cudnn_benchmark": True,
        "cuda_graphs": want_cuda and not args.no_cuda_graphs,
        "recon_device": cases.get("device", ""),
        "shapes": cases.get("shapes", ""),
        "cases": {},
    }
    timer = Timer(device)
    for case in cases["cases"]:
        if args.filter and not re.search(args.filter, case["name"]):
            continue
        try:
            result["cases"][case["name"]] = run_case(case, device, timer, args)
        except (RuntimeError, TypeError, ValueError) as e:  # e.g. an fp16 kernel missing from a CPU build
            result["cases"][case["name"]] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0]}"}
        if want_cuda:
            torch.cuda.empty_cache()
        print(f"torch_ops: {case['name']}: {result['cases'][case['name']]}", file=sys.stderr)
    text = json.dumps(result, indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
