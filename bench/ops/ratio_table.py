#!/usr/bin/env python3
"""Writes the markdown table of recon_bench_ops against torch_ops.py, measured in the same run.

Usage: ratio_table.py RECON_JSON TORCH_JSON > table.md
  RECON_JSON  Google Benchmark JSON of recon_bench_ops (--benchmark_out)
  TORCH_JSON  the output of torch_ops.py (may be missing or empty: recon's figures alone)

ratio = PyTorch's time per op / recon's (> 1: recon is faster). Exit status 1 if any recon case
reported an error.
"""
import json
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def fmt(v, digits=3):
    if v is None:
        return "-"
    if v >= 100:
        return f"{v:.0f}"
    return f"{v:.{digits}g}"


def main():
    recon = load(sys.argv[1])
    if recon is None:
        sys.exit(f"ratio_table: no recon results in {sys.argv[1]}")
    torch = load(sys.argv[2]) if len(sys.argv) > 2 else None
    ctx = recon.get("context", {})
    tcases = (torch or {}).get("cases", {})
    torch_on_cpu = torch is not None and torch.get("device") != "cuda"

    print(f"recon: {ctx.get('recon_device', '?')} ({ctx.get('recon_device_type', '?')}), "
          f"driver {ctx.get('recon_driver', '?')}, shapes {ctx.get('recon_shapes', '?')}, "
          f"ring ≥ {int(ctx.get('recon_cold_bytes', '0')) >> 20} MiB, {ctx.get('date', '')}  ")
    peak_src = ctx.get("recon_peak_source", "unknown")
    if peak_src != "unknown":
        print(f"peaks ({peak_src}): {float(ctx.get('recon_peak_gbps', 0)):.0f} GB/s, "
              f"{float(ctx.get('recon_peak_tflops_f16', 0)):.1f} TFLOP/s fp16 tensor, "
              f"{float(ctx.get('recon_peak_tflops_f32', 0)):.1f} TFLOP/s fp32  ")
    if torch is None:
        print("PyTorch: no results (see torch-ops.log)  ")
    else:
        print(f"PyTorch {torch.get('torch', '?')} on {torch.get('device_name', '?')} ({torch.get('device', '?')}), "
              f"TF32 {'on' if torch.get('tf32') else 'off'}, cudnn.benchmark "
              f"{'on' if torch.get('cudnn_benchmark') else 'off'}, "
              f"{'CUDA graphs' if torch.get('cuda_graphs') else 'eager launches'}  ")
    if torch_on_cpu:
        print("\n**PyTorch ran on the CPU (this PyTorch has no CUDA device), recon on the Vulkan device above: "
              "the ratios compare different hardware and are not meaningful.**")
    print()
    print("| op / shape | dtype | recon µs | recon rate | recon % peak | PyTorch µs | PyTorch rate | "
          "ratio | recon path · params | PyTorch impl |")
    print("|---|---|---|---|---|---|---|---|---|---|")

    rows = recon.get("benchmarks", [])
    if any(b.get("run_type") == "aggregate" for b in rows):
        rows = [b for b in rows if b.get("aggregate_name") == "median"]
    errors = 0
    for b in rows:
        name = b.get("run_name", b["name"]).replace("/manual_time", "")
        op_shape, _, dtype = name.rpartition("/")
        if b.get("error_occurred"):
            errors += 1
            print(f"| {op_shape} | {dtype} | ERROR: {b.get('error_message', '')} | | | | | | | |")
            continue
        unit = "TFLOP/s" if "TFLOP/s" in b else "GB/s"
        us = b.get("us_per_op")
        peak = b.get("peak_fraction")
        t = tcases.get(name, {})
        t_us = t["ms_per_op"] * 1e3 if "ms_per_op" in t else None
        ratio = t_us / us if (t_us and us) else None
        impl = t.get("error", t.get("impl", "-"))
        if "ms_per_op_eager" in t:
            impl += f"; eager launches: {fmt(t['ms_per_op_eager'] * 1e3)} µs"
        if "ms_per_op_manual" in t and us:
            m_us = t["ms_per_op_manual"] * 1e3
            impl += f"; croco's manual form: {fmt(m_us)} µs (ratio {fmt(m_us / us)}×)"
        print(f"| {op_shape} | {dtype} | {fmt(us)} | {fmt(b.get(unit))} {unit} | "
              f"{'-' if peak is None else f'{100 * peak:.1f}%'} | {fmt(t_us)} | "
              f"{fmt(t.get(unit))}{' ' + unit if unit in t else ''} | "
              f"{'-' if ratio is None else fmt(ratio) + '×'} | {b.get('label', '')} | {impl} |")
    print()
    print("µs: time per application (median round); rate: FLOP counted as 2 per multiply-add (attention: "
          "q·kᵀ and p·v), bytes as the least the op must move (inputs read once, output written once), "
          "1 GB = 1e9 B; ratio = PyTorch µs / recon µs (> 1: recon faster).")
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
