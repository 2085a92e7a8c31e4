#!/usr/bin/env bash
# Runs the GPU runtime benchmark suite (recon_bench_runtime) and prints a short table.
#
# Usage: bash bench/scripts/run-runtime-bench.sh OUT_DIR [BINARY] [BENCHMARK_ARGS...]
#   OUT_DIR         created if missing; receives
#                     runtime-bench.json  Google Benchmark JSON (counters, device in "context")
#                     runtime-bench.log   the console output and stderr
#                     runtime-bench.txt   the table printed at the end
#   BINARY          the prebuilt recon_bench_runtime; default $RECON_BENCH_BIN, else the first of
#                   build-bench/bench/gpu/ and build/bench/gpu/ (relative to the repo root) that
#                   has one. Give "" to take the default and still pass BENCHMARK_ARGS.
#   BENCHMARK_ARGS  passed on, e.g. --benchmark_filter=copy --recon_copy_mib=64,1024
#
# Environment:
#   RECON_BENCH_MIN_TIME     --benchmark_min_time in seconds (default 0.05: under a minute on
#                            lavapipe with 2 cores; raise it for steadier GPU figures)
#   RECON_BENCH_COPY_MIB     copy sizes in MiB, e.g. 1,4,16,64,256,1024 (default: 1..64 on lavapipe,
#                            1..1024 on a GPU; clamped to maxStorageBufferRange and the largest allocation)
#   RECON_BENCH_COPY_REP_MIB bytes each timed copy replay moves, in MiB (default 64 lavapipe, 1024 GPU)
#   RECON_BENCH_PIPELINE_ROUNDS  cold/warm pipeline-cache rounds (default 1 on lavapipe, 3 on a GPU)
#   RECON_DEVICE             device index or name substring (default: the best device)
#
# Here (lavapipe):  XDG_RUNTIME_DIR=/tmp bash bench/scripts/run-runtime-bench.sh /tmp/bench-out
# GPU machine:      bash bench/scripts/run-runtime-bench.sh $OUT build-bench/bench/gpu/recon_bench_runtime
#   with the build folder carried (it holds libbenchmark beside the binary, found via $ORIGIN) and
#   the Vulkan loader installed first (see the device README: unpack the carried .gl/*.deb, ldconfig).
#   If the loader finds no NVIDIA driver, this script points VK_DRIVER_FILES at the one under
#   /usr/local/nvidia when that exists.
#
# Exit status: the binary's, or 1 if any benchmark reported an error.
set -uo pipefail

if [ $# -lt 1 ] || [ -z "$1" ]; then
  sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  exit 2
fi
out=$1
bin=${2:-}
shift
[ $# -gt 0 ] && shift
repo=$(cd "$(dirname "$0")/../.." && pwd)

if [ -z "$bin" ]; then
  bin=${RECON_BENCH_BIN:-}
  if [ -z "$bin" ]; then
    for d in build-bench build; do
      if [ -x "$repo/$d/bench/gpu/recon_bench_runtime" ]; then bin="$repo/$d/bench/gpu/recon_bench_runtime"; break; fi
    done
  fi
fi
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
  echo "run-runtime-bench: no recon_bench_runtime binary (got '${bin}'); build it with" >&2
  echo "  cmake -S . -B build-bench -DRECON_ONLY_GPU=ON -DRECON_BUILD_TESTS=OFF && cmake --build build-bench --target recon_bench_runtime" >&2
  exit 2
fi
mkdir -p "$out" || exit 2

. "$repo/bench/scripts/gpu-env.sh"
recon_gpu_env run-runtime-bench "$bin"

json="$out/runtime-bench.json"
log="$out/runtime-bench.log"
table="$out/runtime-bench.txt"
echo "run-runtime-bench: $bin --benchmark_min_time=${RECON_BENCH_MIN_TIME:-0.05} $*"
rm -f "$json" "$table"  # never show a stale table
start=$(date +%s)
"$bin" --benchmark_min_time="${RECON_BENCH_MIN_TIME:-0.05}" --benchmark_out="$json" --benchmark_out_format=json \
  "$@" >"$log" 2>&1
status=$?
echo "run-runtime-bench: exit $status after $(($(date +%s) - start)) s; log in $log"
if [ ! -s "$json" ]; then
  tail -n 30 "$log"
  exit $((status ? status : 1))
fi

if ! command -v python3 >/dev/null; then
  echo "run-runtime-bench: no python3 for the table; the console output:"
  tail -n 40 "$log"
  exit "$status"
fi
python3 - "$json" >"$table" <<'EOF'
# One line per benchmark: the subject's figure, the baseline's, and the speed-up of the subject.
import json, sys

data = json.load(open(sys.argv[1]))
ctx = data.get("context", {})
print(f"device: {ctx.get('recon_device', '?')} ({ctx.get('recon_device_type', '?')}), "
      f"driver: {ctx.get('recon_driver', '?')}, {ctx.get('date', '')}")
# family prefix -> (subject counter, baseline counter, unit shown)
figures = {
    "pool_acquire_release": ("ns_per_pair", "baseline_ns_per_pair", "ns/pair"),
    "pipeline_creation": ("warm_ms_per_pipeline", "cold_ms_per_pipeline", "ms/pipeline"),
    "graph_replay": ("us_per_dispatch", "baseline_us_per_dispatch", "us/dispatch"),
    "copy": ("GB/s", "baseline_GB/s", "GB/s"),
}
baselines = {"pool_acquire_release": "raw alloc+free", "pipeline_creation": "cold (no cache)",
             "graph_replay": "run_once each", "copy": "vkCmdCopyBuffer"}
rows = [b for b in data.get("benchmarks", [])]
if any(b.get("run_type") == "aggregate" for b in rows):
    rows = [b for b in rows if b.get("aggregate_name") == "median"]
fmt = "{:<58} {:>10} {:>10} {:>8}  {}"
print(fmt.format("benchmark", "subject", "baseline", "ratio", "unit / baseline / notes"))
errors = 0
for b in rows:
    name = b.get("run_name", b["name"]).replace("/manual_time", "")
    family = name.split("/")[0]
    if b.get("error_occurred"):
        errors += 1
        print(fmt.format(name, "-", "-", "-", "ERROR: " + b.get("error_message", "")))
        continue
    subj, base, unit = figures.get(family, (None, None, ""))
    s, r = b.get(subj), b.get(base)
    note = f"{unit} / {baselines.get(family, '')}"
    if family == "graph_replay":
        note += f"; {b.get('us_per_replay', 0):.1f} us/replay, {int(b.get('barriers', 0))} barriers"
    elif family == "pipeline_creation":
        note += (f"; {int(b.get('pipelines', 0))} pipelines, cache file {int(b.get('cache_file_bytes', 0))} B, "
                 f"first cold round {b.get('first_cold_ms_per_pipeline', 0):.3g} ms/pipeline")
        if b.get("skipped_variants"):
            note += f", {int(b['skipped_variants'])} coopmat variants skipped"
        if b.get("failed_variants"):
            note += f", {int(b['failed_variants'])} variants failed to build"
    elif family == "copy" and not b.get("timestamps", 1):
        note += "; wall time (no timestamps)"
    g = lambda v: "-" if v is None else f"{v:.4g}"
    ratio = b.get("ratio_vs_baseline")
    print(fmt.format(name, g(s), g(r), "-" if ratio is None else f"{ratio:.3g}x", note))
print("ratio = how many times faster the subject is than its baseline (>1: faster); medians of iterations")
sys.exit(1 if errors else 0)
EOF
table_status=$?
cat "$table"
if [ "$status" -ne 0 ]; then exit "$status"; fi
exit "$table_status"
