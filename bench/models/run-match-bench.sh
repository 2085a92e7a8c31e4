#!/usr/bin/env bash
# Runs recon_bench_match (GPU descriptor matching vs a CPU baseline) and prints its counters.
#
# Usage: bash bench/models/run-match-bench.sh OUT_DIR [BINARY] [BENCHMARK_ARGS...]
#   OUT_DIR   receives match-bench.json (Google Benchmark JSON) and match-bench.log
#   BINARY    default: $RECON_BENCH_BIN, else the first of build-bench/, build-match/, build/
#             (relative to the repo root) holding bench/models/recon_bench_match
# Environment: RECON_MATCH_SIZE=WxH (default 512x384 on a GPU, 128x96 on lavapipe),
#   RECON_MATCH_TUNING=grid,qpt,pair,fixed,workgroup,tail_grid,update_grid,dedup,tensor (0 = default),
#   RECON_MATCH_SWEEP=1 (built-in list of settings) or "setting;setting;..." (one benchmark per
#   setting, then a table sorted by GPU ms), RECON_DEVICE, RECON_BENCH_MIN_TIME (default 0.5 s).
# GPU machine: carry the build folder's bench/models (binary + libbenchmark, found via $ORIGIN)
# and .gl; unpack .gl/*.deb and ldconfig first (see bench/gpu/README.md).
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
  for d in build-bench build-match build; do
    [ -z "$bin" ] && [ -x "$repo/$d/bench/models/recon_bench_match" ] && bin="$repo/$d/bench/models/recon_bench_match"
  done
fi
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
  echo "run-match-bench: no recon_bench_match binary; build it with" >&2
  echo "  cmake -S . -B build-bench -DRECON_ONLY_GPU=ON -DRECON_BUILD_TESTS=OFF && cmake --build build-bench --target recon_bench_match" >&2
  exit 2
fi
mkdir -p "$out" || exit 2
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
nv_icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ -z "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ] && [ -f "$nv_icd" ] &&
  ! grep -qs nvidia /usr/share/vulkan/icd.d/*.json /etc/vulkan/icd.d/*.json; then
  export VK_DRIVER_FILES=$nv_icd
fi
"$bin" --benchmark_min_time="${RECON_BENCH_MIN_TIME:-0.5}" --benchmark_out="$out/match-bench.json" \
  --benchmark_out_format=json "$@" 2>&1 | tee "$out/match-bench.log"
exit "${PIPESTATUS[0]}"
