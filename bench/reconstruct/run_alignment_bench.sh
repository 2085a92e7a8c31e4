#!/usr/bin/env bash
# The sparse alignment on the GPU machine, in one call: makes the 20- and 50-image cases
# (make_alignment_case.py), times recon_bench_alignment (CPU, every core, 300 + 300 iterations) and
# alignment_torch.py (the PyTorch reference, float32 on CUDA) on each, and prints the ratio table.
# The reference is launch-bound on the GPU (about 0.6 s an iteration at 20 images), so it runs
# RECON_TORCH_NITER + RECON_TORCH_NITER iterations and its 300 + 300 time is projected from its time
# per iteration (an iteration costs the same at any learning rate); the reprojection errors are only
# compared when both ran the same iterations.
#
# Usage: bash bench/reconstruct/run_alignment_bench.sh --bin DIR --out DIR [--cases DIR] [--images "20 50"]
#   --bin     folder holding recon_bench_alignment
#   --out     receives <impl>-<N>.json (one JSON line each) and table.txt
#   --cases   where the cases go, kept for the next call (default --out; 1.2 GB at 20 images, 3.0 GB at 50)
#   --images  the case sizes (default "20 50")
# Environment: PYTHON (default python3), RECON_TORCH_NITER (default 20), RECON_TORCH_ARGS (more
# alignment_torch.py flags), RECON_REPEAT (recon's timed runs, default 3).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin="" out="" cases="" images="20 50"
while [ $# -gt 0 ]; do
  case $1 in
    --bin) bin=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --cases) cases=$2; shift 2 ;;
    --images) images=$2; shift 2 ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
  esac
done
if [ ! -x "$bin/recon_bench_alignment" ] || [ -z "$out" ]; then
  echo "need --bin DIR (with recon_bench_alignment) and --out DIR" >&2
  exit 2
fi
py=${PYTHON:-python3}
cases=${cases:-$out}
mkdir -p "$out" "$cases"
for n in $images; do
  case_file=$cases/align$n.safetensors
  [ -f "$case_file" ] || PYTHONUNBUFFERED=1 "$py" "$here/make_alignment_case.py" --images "$n" --out "$case_file"
  "$bin/recon_bench_alignment" --case "$case_file" --repeat "${RECON_REPEAT:-3}" | tee "$out/recon-$n.json"
  niter=${RECON_TORCH_NITER:-20}
  # shellcheck disable=SC2086
  PYTHONUNBUFFERED=1 "$py" "$here/alignment_torch.py" --case "$case_file" --device cuda --dtype float32 \
    --niter1 "$niter" --niter2 "$niter" ${RECON_TORCH_ARGS:-} | tee "$out/torch-$n.json"
done
# shellcheck disable=SC2086
"$py" - "$out" $images <<'EOF' | tee "$out/table.txt"
import json, sys
out, sizes = sys.argv[1], sys.argv[2:]
print(f"{'images':>6} {'pairs':>5} {'matches':>7} | {'recon s (thr)':>13} {'ms/it':>6} | {'torch ms/it':>11} {'(iters)':>7}"
      f" {'s proj.':>7} | {'torch/recon':>11} | {'canon s r/t':>11} {'dense s r/t':>11} | {'reproj px r/t':>13}")
for n in sizes:
    r, t = (json.load(open(f"{out}/{impl}-{n}.json")) for impl in ("recon", "torch"))
    iters = r["niter1"] + r["niter2"]
    same = (t["niter1"], t["niter2"]) == (r["niter1"], r["niter2"])
    reproj = f"{r['reprojection_px']:6.2f}/{t['reprojection_px']:<6.2f}" if same else "-"
    print(f"{r['images']:>6} {r['pairs']:>5} {r['matches']:>7} | {r['align_s']:>7.3f} ({r['threads']:>3})"
          f" {r['ms_per_iteration']:>6.2f} | {t['ms_per_iteration']:>11.2f} {t['niter1'] + t['niter2']:>7}"
          f" {t['ms_per_iteration'] * iters / 1e3:>7.1f} | {t['ms_per_iteration'] / r['ms_per_iteration']:>10.1f}x |"
          f" {r['canonical_s']:>5.2f}/{t['canonical_s']:<5.2f} {r['dense_s']:>5.2f}/{t['dense_s']:<5.2f} | {reproj:>13}")
print(f"recon: float64 on the CPU, {r['niter1']} + {r['niter2']} iterations (align = tree + iterations; canon: one "
      f"thread); torch: tests/reference/sparse_ga_ref.py, {t['dtype']} on {t['device']}, 's proj.' = its ms/it x "
      f"{iters}; torch/recon = ratio of ms per iteration. Issue target: recon align <= 1 s at 20 images.")
EOF
