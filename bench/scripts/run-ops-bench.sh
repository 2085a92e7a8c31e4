#!/usr/bin/env bash
# Runs the op benchmark suite (recon_bench_ops) and the same cases in PyTorch on the same machine,
# one after the other, and writes the table of ratios.
#
# Usage: bash bench/scripts/run-ops-bench.sh OUT_DIR BENCH_BINARY [BENCHMARK_ARGS...]
#   OUT_DIR         created if missing; receives
#                     ops-cases.json  the cases and their plans (recon_bench_ops --recon_list_cases)
#                     ops-bench.json  Google Benchmark JSON of recon_bench_ops (device in "context")
#                     torch-ops.json  torch_ops.py's results
#                     ops-bench.md    the table: recon, PyTorch, ratio = PyTorch time / recon time
#                     *.log           console output and stderr of each step
#   BENCH_BINARY    the prebuilt recon_bench_ops (build-ops/bench/ops/ or .gpu/bin/)
#   BENCHMARK_ARGS  passed on to recon_bench_ops, e.g. --recon_shapes=small --recon_cold_mib=512
#
# Environment:
#   RECON_BENCH_MIN_TIME  seconds of timed replays per case, both sides (default 0.05)
#   RECON_OPS_FILTER      regex of case names to run, both sides (e.g. 'linear|attention')
#   RECON_PYTHON          a python3 that imports torch (default: python3, else /usr/bin/python3)
#   RECON_DEVICE          Vulkan device index or name substring (default: the best device)
#   RECON_OPS_SHAPES, RECON_OPS_COLD_MIB, RECON_OPS_PEAK_*: see bench/ops/ops_options.h
#
# Here (lavapipe, CPU-only PyTorch: the table says the ratios are not meaningful):
#   XDG_RUNTIME_DIR=/tmp bash bench/scripts/run-ops-bench.sh /tmp/ops-out build-ops/bench/ops/recon_bench_ops
# GPU machine (binary and libbenchmark.so.1debian carried in .gpu/bin; Vulkan loader from .gl):
#   for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig; \
#   export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; \
#   bash bench/scripts/run-ops-bench.sh $OUT .gpu/bin/recon_bench_ops
#
# Exit status: 2 for bad usage, else 1 if either side failed or any case reported an error.
set -uo pipefail

if [ $# -lt 2 ] || [ -z "$1" ] || [ -z "$2" ]; then
  sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  exit 2
fi
out=$1
bin=$2
shift 2
repo=$(cd "$(dirname "$0")/../.." && pwd)
if [ ! -x "$bin" ]; then
  echo "run-ops-bench: no recon_bench_ops binary at '$bin'; build it with" >&2
  echo "  cmake --build build-ops --target recon_bench_ops" >&2
  exit 2
fi
mkdir -p "$out" || exit 2

. "$repo/bench/scripts/gpu-env.sh"
recon_gpu_env run-ops-bench "$bin"

python=${RECON_PYTHON:-}
if [ -z "$python" ]; then
  for p in python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null && "$p" -c 'import torch' 2>/dev/null; then python=$p; break; fi
  done
fi

min_time=${RECON_BENCH_MIN_TIME:-0.05}
filter=${RECON_OPS_FILTER:-}
filter_args=()
[ -n "$filter" ] && filter_args=(--benchmark_filter="$filter")
rm -f "$out/ops-cases.json" "$out/ops-bench.json" "$out/torch-ops.json" "$out/ops-bench.md"  # no stale results
start=$(date +%s)

if ! "$bin" --recon_list_cases="$out/ops-cases.json" "$@" >"$out/ops-cases.log" 2>&1; then
  cat "$out/ops-cases.log" >&2
  exit 1
fi

echo "run-ops-bench: $bin --benchmark_min_time=$min_time ${filter_args[*]} $*"
"$bin" --benchmark_min_time="$min_time" --benchmark_out="$out/ops-bench.json" --benchmark_out_format=json \
  "${filter_args[@]}" "$@" >"$out/ops-bench.log" 2>&1
recon_status=$?
echo "run-ops-bench: recon exit $recon_status after $(($(date +%s) - start)) s; log in $out/ops-bench.log"
[ "$recon_status" -ne 0 ] && tail -n 20 "$out/ops-bench.log"

torch_status=1
if [ -z "$python" ]; then
  echo "run-ops-bench: no python3 with torch (set RECON_PYTHON); the table has recon's side only" >&2
else
  "$python" "$repo/bench/ops/torch_ops.py" --cases "$out/ops-cases.json" --out "$out/torch-ops.json" \
    --min-time "$min_time" --filter "$filter" >"$out/torch-ops.log" 2>&1
  torch_status=$?
  echo "run-ops-bench: PyTorch exit $torch_status after $(($(date +%s) - start)) s; log in $out/torch-ops.log"
  [ "$torch_status" -ne 0 ] && tail -n 20 "$out/torch-ops.log"
fi

if [ ! -s "$out/ops-bench.json" ]; then
  echo "run-ops-bench: recon_bench_ops wrote no results" >&2
  exit 1
fi
python3 "$repo/bench/ops/ratio_table.py" "$out/ops-bench.json" "$out/torch-ops.json" >"$out/ops-bench.md"
table_status=$?
cat "$out/ops-bench.md"
if [ "$recon_status" -ne 0 ] || [ "$torch_status" -ne 0 ] || [ "$table_status" -ne 0 ]; then exit 1; fi
exit 0
